package e2e

import (
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/waitfor"

	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Helpers the tests share for franz-go (and kcat) clients of the package's
// gateway: contexts and eventually-style waits, topics, clients, producing
// and consuming, checks of what a topic holds, and a dialer that cuts a
// client off.

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	waitfor.Until(t, timeout, what, cond)
}

// newTopic returns a unique topic name for a test.
func newTopic(t *testing.T) string {
	name := strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())
	return fmt.Sprintf("%s-%d", strings.ToLower(name), time.Now().UnixNano()%1e9)
}

func createTopic(t *testing.T, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	createTopicVia(t, newClient(t), name, partitions, configs)
}

// createTopicVia creates a topic through the client's gateways.
func createTopicVia(t *testing.T, cl *kgo.Client, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, name)
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	if resp.Err != nil {
		t.Fatalf("create topic %s: %v", name, resp.Err)
	}
}

func newClient(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(gw.addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func produceSync(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// produceBatch produces n records spread over the topic's partitions and
// notes where each landed.
func produceBatch(t *testing.T, topic string, from, n int, produced map[int32][]string) {
	t.Helper()
	cl := newClient(t, kgo.ProducerLinger(5*time.Millisecond))
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i % 13)), Value: []byte(fmt.Sprintf("record-%d", i))})
	}
	produceSync(t, cl, recs...)
	for _, r := range recs {
		if r.Offset != int64(len(produced[r.Partition])) {
			t.Fatalf("record %s acknowledged at %d/%d, want offset %d", r.Value, r.Partition, r.Offset, len(produced[r.Partition]))
		}
		produced[r.Partition] = append(produced[r.Partition], string(r.Value))
	}
}

// produceIdempotent produces n records (values p<i>) over the partitions
// with a franz-go idempotent producer, one at a time per partition so that
// the order per partition is the produce order, while disturb runs; every
// record must be acknowledged.
func produceIdempotent(t *testing.T, cl *kgo.Client, topic string, partitions int32, n int, disturb func(done <-chan struct{})) map[int32][]string {
	t.Helper()
	produced := map[int32][]string{}
	var mu sync.Mutex
	done := make(chan struct{})
	var dwg sync.WaitGroup
	dwg.Add(1)
	go func() { defer dwg.Done(); disturb(done) }()
	var wg sync.WaitGroup
	errs := make(chan error, partitions)
	for p := int32(0); p < partitions; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n/int(partitions); i++ {
				v := fmt.Sprintf("p%d-%d", p, i)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).FirstErr()
				cancel()
				if err != nil {
					errs <- fmt.Errorf("record %s: %w", v, err)
					return
				}
				mu.Lock()
				produced[p] = append(produced[p], v)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(done)
	dwg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return produced
}

// consumeN reads n records of topic from the start with a new consumer.
func consumeN(t *testing.T, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := newClient(t, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond)}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s before the deadline", len(out), n, topic)
		}
		fetches.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		out = append(out, fetches.Records()...)
	}
	return out
}

// exactlyOnce reads every partition of topic and checks that it holds each
// record of produced (partition -> values in produce order) exactly once,
// in order, at offsets 0, 1, 2, ...
func exactlyOnce(t *testing.T, topic string, produced map[int32][]string) {
	t.Helper()
	total := 0
	for _, vals := range produced {
		total += len(vals)
	}
	got := map[int32][]*kgo.Record{}
	for _, r := range consumeN(t, topic, total) {
		got[r.Partition] = append(got[r.Partition], r)
	}
	for p, vals := range produced {
		recs := got[p]
		if len(recs) != len(vals) {
			t.Errorf("partition %d holds %d records, %d were produced", p, len(recs), len(vals))
		}
		for i := 0; i < min(len(recs), len(vals)); i++ {
			if recs[i].Offset != int64(i) || string(recs[i].Value) != vals[i] {
				t.Fatalf("partition %d: record %d is %q at offset %d, want %q at %d", p, i, recs[i].Value, recs[i].Offset, vals[i], i)
			}
		}
	}
}

// highWatermarks is each partition's end as produced, checked against the
// end the gateway lists.
func highWatermarks(t *testing.T, topic string, produced map[int32][]string) map[int32]int64 {
	t.Helper()
	ends, err := kadm.NewClient(newClient(t)).ListEndOffsets(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	hwm := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != int64(len(produced[o.Partition])) {
			t.Fatalf("partition %d: high watermark %d (%v), produced %d", o.Partition, o.Offset, o.Err, len(produced[o.Partition]))
		}
		hwm[o.Partition] = o.Offset
	})
	return hwm
}

// listEnd is a partition's high watermark, asked over PLAINTEXT.
func listEnd(t *testing.T, topic string, partition int32) int64 {
	t.Helper()
	return listEndVia(t, newClient(t), topic, partition)
}

// listEndVia is listEnd through the client's gateways.
func listEndVia(t *testing.T, cl *kgo.Client, topic string, partition int32) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = partition, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	return resp.Topics[0].Partitions[0].Offset
}

// cutDialer dials the gateway for one client and can cut it off: it closes
// the client's connections and refuses new ones, so that to the gateway the
// client is gone as if its process had been killed.
type cutDialer struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (d *cutDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	cut := d.cut
	d.mu.Unlock()
	if cut {
		return nil, errors.New("member crashed")
	}
	c, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		c.Close()
		return nil, errors.New("member crashed")
	}
	d.conns = append(d.conns, c)
	return c, nil
}

// cutConns closes the connections open now; new ones may be dialed.
func (d *cutDialer) cutConns() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}

func (d *cutDialer) cutOff() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, c := range d.conns {
		c.Close()
	}
}

// kcatAt runs kcat against the listener at addr and returns its output.
func kcatAt(t *testing.T, addr, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", append([]string{"-b", addr}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("kcat %v: %v\n%s%s", args, err, out, stderr)
	}
	return string(out)
}

// kcatFails runs kcat against addr expecting it to fail, and returns what
// it printed.
func kcatFails(t *testing.T, addr string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "kcat", append([]string{"-b", addr}, args...)...).CombinedOutput()
	if err == nil {
		t.Fatalf("kcat %v succeeded:\n%s", args, out)
	}
	return string(out)
}
