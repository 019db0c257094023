package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIdempotentProducerConnectionsCut: a franz-go idempotent producer
// (acks=all, its default) whose connections are
// cut again and again retries the batches whose answers it lost; every
// record is stored exactly once, in order, at dense offsets.
func TestIdempotentProducerConnectionsCut(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 2, nil)
	d := &cutDialer{}
	cl := newClient(t, kgo.Dialer(d.dial), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.MaxBufferedRecords(100))
	stop := make(chan struct{})
	var stopOnce sync.Once
	stopCutting := func() { stopOnce.Do(func() { close(stop) }) }
	t.Cleanup(stopCutting) // before the client closes, if the test ends early
	cuts := make(chan int, 1)
	go func() {
		n := 0
		defer func() { cuts <- n }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				d.cutConns()
				n++
			}
		}
	}()
	// Records are produced in order per partition; an idempotent producer
	// keeps that order through its retries.
	produced := map[int32][]string{}
	var mu sync.Mutex
	var failed []error
	for i := 0; i < 1000; i++ {
		p := int32(i % 2)
		v := fmt.Sprintf("p%d-%d", p, i/2)
		produced[p] = append(produced[p], v)
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}, func(r *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				failed = append(failed, fmt.Errorf("record %s: %w", r.Value, err))
				mu.Unlock()
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	stopCutting()
	t.Logf("%d connection cuts while producing", <-cuts)
	if len(failed) > 0 {
		t.Fatalf("%d records failed, first: %v", len(failed), failed[0])
	}
	exactlyOnce(t, topic, produced)
}

// TestIdempotentProducerGatewayKilled: the gateway is killed (SIGKILL) and
// restarted while an idempotent producer writes; retries of batches stored
// before the kill but never acknowledged are recognized by the new gateway
// (from the producer state it saved and the records stored since), so
// every record is stored exactly once.
func TestIdempotentProducerGatewayKilled(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 2, nil)
	cl := newClient(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RetryTimeout(2*time.Minute))
	produced := produceIdempotent(t, cl, topic, 2, 600, func(done <-chan struct{}) {
		for i := 0; i < 2; i++ {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Second):
			}
			gw.kill()
			g, err := startGateway(cluster.master, gw.port)
			if err != nil {
				t.Error(err)
				return
			}
			gw = g
		}
	})
	exactlyOnce(t, topic, produced)
}

// TestIdempotentSequences: Kafka's answers to an idempotent producer's
// sequence numbers, with raw requests.
func TestIdempotentSequences(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	cl := newClient(t)
	// The raw requests below name the topic by id, as a client does once
	// its metadata has it.
	eventually(t, 30*time.Second, "the topic's id in the metadata", func() error {
		if topicID(t, cl, topic) == [16]byte{} {
			return fmt.Errorf("no id for %s yet", topic)
		}
		return nil
	})
	init := kmsg.NewPtrInitProducerIDRequest()
	resp, err := init.RequestWith(ctxT(t), cl)
	if err != nil || resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
		t.Fatalf("InitProducerId: %+v, %v", resp, err)
	}
	again, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctxT(t), cl)
	if err != nil || again.ProducerID == resp.ProducerID {
		t.Fatalf("a second InitProducerId: %+v, %v", again, err)
	}
	id := resp.ProducerID
	expect := func(what string, got kmsg.ProduceResponseTopicPartition, want *kerr.Error, offset int64) {
		t.Helper()
		var code int16
		if want != nil {
			code = want.Code
		}
		if got.ErrorCode != code || (want == nil && got.BaseOffset != offset) {
			t.Errorf("%s: %v at offset %d, want %v at %d", what, kerr.ErrorForCode(got.ErrorCode), got.BaseOffset, kerr.ErrorForCode(code), offset)
		}
	}
	// A producer the partition does not know is taken at any sequence,
	// as Kafka takes it (it may have outlived its state there).
	expect("a first batch at sequence 3", produceRaw(t, cl, topic, 0, idempotentBatch(id, 0, 3, "a")), nil, 0)
	expect("sequence 4", produceRaw(t, cl, topic, 0, idempotentBatch(id, 0, 4, "b")), nil, 1)
	expect("sequence 4 again", produceRaw(t, cl, topic, 0, idempotentBatch(id, 0, 4, "b")), nil, 1)
	expect("sequence 3 again", produceRaw(t, cl, topic, 0, idempotentBatch(id, 0, 3, "a")), nil, 0)
	expect("sequence 6 after 4", produceRaw(t, cl, topic, 0, idempotentBatch(id, 0, 6, "d")), kerr.OutOfOrderSequenceNumber, 0)
	expect("epoch 1 from sequence 5", produceRaw(t, cl, topic, 0, idempotentBatch(id, 1, 5, "e")), kerr.OutOfOrderSequenceNumber, 0)
	expect("epoch 1 sequence 0", produceRaw(t, cl, topic, 0, idempotentBatch(id, 1, 0, "c")), nil, 2)
	expect("epoch 0 after epoch 1", produceRaw(t, cl, topic, 0, idempotentBatch(id, 0, 2, "z")), kerr.InvalidProducerEpoch, 0)

	// A gateway restarted in between still knows the producer.
	restartGateway(t)
	cl2 := newClient(t)
	expect("after a restart, the last batch again", produceRaw(t, cl2, topic, 0, idempotentBatch(id, 1, 0, "c")), nil, 2)
	expect("after a restart, the next batch", produceRaw(t, cl2, topic, 0, idempotentBatch(id, 1, 1, "f")), nil, 3)

	recs := consumeN(t, topic, 4)
	for i, want := range []string{"a", "b", "c", "f"} {
		if recs[i].Offset != int64(i) || string(recs[i].Value) != want {
			t.Fatalf("record %d: %q at %d, want %q", i, recs[i].Value, recs[i].Offset, want)
		}
	}
}
