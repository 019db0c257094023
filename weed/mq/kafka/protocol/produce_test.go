package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// stalledBackend has one topic whose appends never finish: a broker that
// takes records and does not answer.
type stalledBackend struct {
	Backend // not called
	appends int
}

func (b *stalledBackend) DescribeTopic(_ context.Context, name string) (TopicInfo, error) {
	return TopicInfo{Name: name, Partitions: 3}, nil
}

func (b *stalledBackend) Append(context.Context, string, int32, []record.Record, bool) *Appended {
	b.appends++
	return NewAppended()
}

func produceTo(partitions int, acks int16, timeoutMs int32) *kmsg.ProduceRequest {
	var rb record.Builder
	rb.Reset(0)
	rb.Add(&record.Record{Value: []byte("v"), Timestamp: 1})
	batch := rb.AppendTo(nil)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(12)
	req.Acks, req.TimeoutMillis = acks, timeoutMs
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	for p := 0; p < partitions; p++ {
		rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: int32(p), Records: batch})
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func handle(t *testing.T, h *Handler, req kmsg.Request) kmsg.Response {
	t.Helper()
	r := &Request{Header: Header{Key: req.Key(), Version: req.GetVersion()}, Body: req}
	done := make(chan kmsg.Response, 1)
	go func() {
		resp, err := h.Handle(context.Background(), r)()
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	select {
	case resp := <-done:
		return resp
	case <-time.After(5 * time.Second):
		t.Fatal("no answer within 5 s")
		return nil
	}
}

// The produce timeout is the request's across all its partitions: it once
// covered only the first partition waited on, and a request to three
// stalled partitions was never answered.
func TestProduceTimeoutCoversEveryPartition(t *testing.T) {
	b := &stalledBackend{}
	resp := handle(t, New(Config{}, b, nil, nil), produceTo(3, -1, 100)).(*kmsg.ProduceResponse)
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != kerr.RequestTimedOut.Code {
			t.Errorf("partition %d: %v, want REQUEST_TIMED_OUT", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
}

// acks other than 0, 1 and -1 get INVALID_REQUIRED_ACKS (they were taken
// as 1), and nothing is written.
func TestProduceInvalidRequiredAcks(t *testing.T) {
	for _, acks := range []int16{2, -2, 5} {
		b := &stalledBackend{}
		resp := handle(t, New(Config{}, b, nil, nil), produceTo(2, acks, 100)).(*kmsg.ProduceResponse)
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != kerr.InvalidRequiredAcks.Code {
				t.Errorf("acks %d, partition %d: %v, want INVALID_REQUIRED_ACKS", acks, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
		if b.appends != 0 {
			t.Errorf("acks %d: %d appends", acks, b.appends)
		}
	}
}

// compressedBatch is one zstd batch of n records of size bytes each (all
// 'x': it compresses to almost nothing).
func compressedBatch(t *testing.T, n, size int) []byte {
	t.Helper()
	var rb record.Builder
	rb.Reset(0)
	for i := 0; i < n; i++ {
		rb.Add(&record.Record{Value: bytes.Repeat([]byte("x"), size), Timestamp: 1})
	}
	var b kmsg.RecordBatch
	if err := b.ReadFrom(rb.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	comp, err := record.Compress(record.CodecZstd, nil, b.Records)
	if err != nil {
		t.Fatal(err)
	}
	b.Records = comp
	b.Attributes |= int16(record.CodecZstd)
	b.Length = int32(record.BatchHeaderLen - 12 + len(comp))
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// gatedBackend holds each Append until gate is closed, counting them.
type gatedBackend struct {
	stalledBackend
	gate    chan struct{}
	mu      sync.Mutex
	entered int
	values  int
}

func (b *gatedBackend) Append(_ context.Context, _ string, _ int32, records []record.Record, _ bool) *Appended {
	b.mu.Lock()
	b.entered++
	b.values += len(records)
	b.mu.Unlock()
	<-b.gate
	app := NewAppended()
	app.Finish(0, nil)
	return app
}

func (b *gatedBackend) appends() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.entered
}

func produceRaw(batch []byte, timeoutMs int32) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(12)
	req.Acks, req.TimeoutMillis = -1, timeoutMs
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batch}}
	req.Topics = append(req.Topics, rt)
	return req
}

// The gateway's decompressed bytes are bounded as a whole, not only per
// batch: a partition whose batch needs room that others hold waits for it,
// up to the request's timeout. Each connection's own limit once allowed
// any number of them to hold 128 MiB each at once.
func TestDecompressionBudget(t *testing.T) {
	b := &gatedBackend{gate: make(chan struct{})}
	h := New(Config{DecompressionMaxBytes: 4 << 20}, b, nil, nil)
	// 3 MiB decompressed from a few KiB: the first guess of room is too
	// small, and the batch is decompressed again in a larger one.
	big := compressedBatch(t, 3, 1<<20)
	if len(big) > 64<<10 {
		t.Fatalf("the batch compressed to %d bytes", len(big))
	}
	first := make(chan kmsg.Response, 1)
	go func() { first <- handle(t, h, produceRaw(big, 10_000)) }()
	for b.appends() == 0 {
		time.Sleep(time.Millisecond)
	}
	// The first holds its room while its Append runs: the second finds
	// none and times out, decompressing nothing.
	resp := handle(t, h, produceRaw(big, 200)).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.RequestTimedOut.Code {
		t.Fatalf("second produce while the room is held: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
	}
	if n := b.appends(); n != 1 {
		t.Fatalf("%d appends while the room was held", n)
	}
	// Once the first is handed to the log its room is free again.
	close(b.gate)
	if code := (<-first).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("first produce: %v", kerr.ErrorForCode(code))
	}
	resp = handle(t, h, produceRaw(big, 200)).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce after the room was freed: %v", kerr.ErrorForCode(code))
	}
	if b.values != 6 {
		t.Fatalf("%d records appended, want 6", b.values)
	}
	// More than the whole budget can never fit: MESSAGE_TOO_LARGE at once.
	resp = handle(t, h, produceRaw(compressedBatch(t, 5, 1<<20), 10_000)).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.MessageTooLarge.Code {
		t.Fatalf("a batch larger than the budget: %v, want MESSAGE_TOO_LARGE", kerr.ErrorForCode(code))
	}
	// Every room taken was given back.
	if !h.inflate.TryAcquire(4 << 20) {
		t.Fatal("room still held after every produce ended")
	}
}
