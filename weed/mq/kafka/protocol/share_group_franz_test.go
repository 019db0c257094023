package protocol_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// setGroupConfigs sets a group's configs (IncrementalAlterConfigs on the
// GROUP resource).
func setGroupConfigs(t *testing.T, addr, group string, kvs ...string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i+1 < len(kvs); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kvs[i], kmsg.StringPtr(kvs[i+1])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp := roundTrip(t, addr, req, 1).(*kmsg.IncrementalAlterConfigsResponse)
	if code := resp.Resources[0].ErrorCode; code != 0 {
		t.Fatalf("setting %v of %s: %s (%v)", kvs, group, errName(code), resp.Resources[0].ErrorMessage)
	}
}

// Three franz-go members of a share group read a topic's records from its
// start (share.auto.offset.reset earliest) between them, each record once:
// every record is accepted by the member that got it.
func TestShareGroupFranz(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	const topic, group, parts, per = "sg-franz", "sg-franz-group", 3, 100
	g.topic(t, topic, parts, nil)
	for p := int32(0); p < parts; p++ {
		vals := make([]string, per)
		for i := range vals {
			vals[i] = fmt.Sprintf("%d-%d", p, i)
		}
		g.write(t, topic, p, 0, vals...)
	}
	setGroupConfigs(t, g.addr, group, "share.auto.offset.reset", "earliest")
	var mu sync.Mutex
	seen := map[string][]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, name := range []string{"s1", "s2", "s3"} {
		cl := client(t, g.addr, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID(name), kgo.FetchMaxWait(200*time.Millisecond))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollRecords(ctx, 50)
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)] = append(seen[string(r.Value)], name)
					mu.Unlock()
					r.Ack(kgo.AckAccept)
				})
				cl.FlushAcks(ctx) //nolint:errcheck // checked by what is read
				mu.Lock()
				done := len(seen) == parts*per
				mu.Unlock()
				if done {
					cancel() // everything read: the others stop too
					return
				}
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != parts*per {
		t.Fatalf("%d of %d records read", len(seen), parts*per)
	}
	for v, who := range seen {
		if len(who) != 1 {
			t.Errorf("%s read %d times: %v", v, len(who), who)
		}
	}
}
