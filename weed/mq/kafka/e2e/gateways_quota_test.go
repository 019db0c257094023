package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A client's producer_byte_rate holds across the gateways it talks to: a
// producer whose partitions are led by two or three gateways sends at its
// quota in all, not at the quota on each, while a producer without a quota
// runs beside it at full speed. The gateways share the rates they measure
// every second. Run by TestGatewaysClients, on its three gateways.
//
// A quota's rate is Kafka's: measured over 11 windows of a second, the
// first burst spread over ten. A producer that sends as fast as it can
// sends a whole window's worth at once, is throttled until the window has
// moved past that burst, and then sends the next: its bursts are 11 s
// apart, and any stretch of time holds one burst more than its whole
// windows. Two windows from the producer's start hold two bursts, so the
// quota over those 22 s is what it may send in them, whenever the bursts
// fall: the test counts the acknowledgements in that time.
func sharedQuota(t *testing.T, g *gateways) {
	procs := g.all()
	topic := spreadTopic(t, procs[0], 6)
	_, leaders := leadersFrom(t, procs[0], topic)
	spread := map[string]int{}
	for _, l := range leaders {
		spread[l]++
	}
	clientID := newTopic(t) + "-quota"
	const rate = 256 << 10
	adm := kadm.NewClient(newClient(t, kgo.SeedBrokers(procs[1].addr)))
	entity := kadm.ClientQuotaEntity{{Type: "client-id", Name: &clientID}}
	setQuota := func(remove bool) {
		res, err := adm.AlterClientQuotas(ctxT(t), []kadm.AlterClientQuotaEntry{{Entity: entity,
			Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: rate, Remove: remove}}}})
		if err == nil && len(res) == 1 {
			err = res[0].Err
		}
		if err != nil {
			t.Fatalf("producer_byte_rate of %s: %v", clientID, err)
		}
	}
	setQuota(false)
	t.Cleanup(func() { setQuota(true) })
	eventually(t, 15*time.Second, "every gateway holds the quota", func() error {
		for _, p := range procs {
			req := kmsg.NewPtrDescribeClientQuotasRequest()
			c := kmsg.NewDescribeClientQuotasRequestComponent()
			c.EntityType, c.MatchType, c.Match = "client-id", 0, &clientID
			req.Components = append(req.Components, c)
			if resp := askOne[*kmsg.DescribeClientQuotasResponse](t, p.addr, req); len(resp.Entries) != 1 {
				return fmt.Errorf("%s describes %d entries", p.addr, len(resp.Entries))
			}
		}
		return nil
	})

	value := make([]byte, 4<<10)
	rand.Read(value)
	// produce sends as fast as it can for 22 s and returns the value
	// bytes per second acknowledged in that time.
	produce := func(id string) float64 {
		cl := newClient(t, kgo.SeedBrokers(g.seeds()...), kgo.ClientID(id), kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0),
			kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(16))
		from := time.Now()
		to := from.Add(22 * time.Second)
		ctx, cancel := context.WithDeadline(ctxT(t), to)
		defer cancel()
		var bytes atomic.Int64
		var wg sync.WaitGroup
		for ctx.Err() == nil {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err == nil && time.Now().Before(to) {
					bytes.Add(int64(len(r.Value)))
				}
			})
		}
		wg.Wait()
		return float64(bytes.Load()) / to.Sub(from).Seconds()
	}
	var limited, free float64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); limited = produce(clientID) }()
	go func() { defer wg.Done(); free = produce(clientID + "-free") }()
	wg.Wait()
	t.Logf("partitions by leader %v: with a quota of %d B/s %.0f B/s in all; without %.0f B/s", spread, rate, limited, free)
	if limited > rate*1.1 || limited < rate*0.8 {
		t.Errorf("a producer with a quota of %d B/s on %d gateways sent %.0f B/s in all", rate, len(spread), limited)
	}
	if free < 2*rate {
		t.Errorf("the producer without a quota sent %.0f B/s only", free)
	}
}
