package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConcurrentProducersOnePartition: producers on separate connections
// write one partition at once; every acknowledged offset is distinct and
// together they are dense, and each record is where its ack said.
func TestConcurrentProducersOnePartition(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	const producers, perProducer = 4, 500
	var mu sync.Mutex
	at := map[int64]string{}
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		cl := newClient(t, kgo.ProducerLinger(2*time.Millisecond), kgo.MaxProduceRequestsInflightPerBroker(3), kgo.DisableIdempotentWrite())
		wg.Add(1)
		go func(p int, cl *kgo.Client) {
			defer wg.Done()
			for i := 0; i < perProducer; i++ {
				v := fmt.Sprintf("p%d-%d", p, i)
				cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: []byte(v)}, func(r *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce %s: %v", v, err)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					if prev, dup := at[r.Offset]; dup {
						t.Errorf("offset %d acknowledged for %s and %s", r.Offset, prev, v)
					}
					at[r.Offset] = v
				})
			}
			if err := cl.Flush(context.Background()); err != nil {
				t.Error(err)
			}
		}(p, cl)
	}
	wg.Wait()
	got := consumeN(t, topic, producers*perProducer)
	for i, r := range got {
		if r.Offset != int64(i) || at[r.Offset] != string(r.Value) {
			t.Fatalf("offset %d holds %q, acknowledged %q", r.Offset, r.Value, at[r.Offset])
		}
	}
}

// TestFetchLongPollWakes: a fetch waiting for data is answered when a
// record arrives, not when its (long) max wait ends.
func TestFetchLongPollWakes(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	cl := newClient(t)
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 25000 // longer than the context below allows
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, topicID(t, cl, topic)
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)

	done := make(chan *kmsg.FetchResponse, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Errorf("fetch: %v", err)
		}
		done <- resp
	}()
	time.Sleep(time.Second) // let the fetch start waiting
	produceSync(t, newClient(t), &kgo.Record{Topic: topic, Value: []byte("wake up")})
	resp := <-done
	if resp == nil {
		t.Fatal("no fetch response before the deadline: the long poll was not woken")
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.HighWatermark != 1 || len(p.RecordBatches) == 0 {
		t.Fatalf("error %d high watermark %d, %d bytes", p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
	}
}

// TestGatewayKilledMidProduce: records acknowledged with acks=all survive a
// SIGKILL of the gateway; offsets go on after it.
func TestGatewayKilledMidProduce(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	// Not idempotent: an idempotent producer keeps retrying a record whose
	// outcome it does not know (see TestIdempotentProducerGatewayKilled);
	// this one gives up, so that what was acknowledged is what counts.
	cl := newClient(t, kgo.RecordRetries(0), kgo.ProducerLinger(time.Millisecond), kgo.DisableIdempotentWrite())
	acked := map[int64]string{}
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("r%d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			res := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)})
			cancel()
			if r, err := res.First(); err == nil {
				mu.Lock()
				acked[r.Offset] = v
				mu.Unlock()
			}
		}
	}()
	// Each acks=all produce waits for a flush, so this takes a few seconds.
	eventually(t, 60*time.Second, "some records acknowledged", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(acked) < 30 {
			return fmt.Errorf("%d acknowledged", len(acked))
		}
		return nil
	})
	gw.kill()
	close(stop)
	wg.Wait()
	g, err := startGateway(cluster.master, gw.port)
	if err != nil {
		t.Fatal(err)
	}
	gw = g

	mu.Lock()
	defer mu.Unlock()
	var last int64
	for off := range acked {
		last = max(last, off)
	}
	got := consumeN(t, topic, int(last)+1)
	for _, r := range got {
		if v, ok := acked[r.Offset]; ok && v != string(r.Value) {
			t.Fatalf("offset %d holds %q, acknowledged %q", r.Offset, r.Value, v)
		}
		delete(acked, r.Offset)
	}
	if len(acked) != 0 {
		t.Fatalf("%d acknowledged records missing after the kill", len(acked))
	}
	res := newClient(t).ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Value: []byte("after")})
	if r, err := res.First(); err != nil || r.Offset < last+1 {
		t.Fatalf("produce after restart: %v at %d, want past %d", err, r.Offset, last)
	}
}
