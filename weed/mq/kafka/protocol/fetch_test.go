package protocol

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// readsBackend has one empty topic and remembers what each Read asked.
type readsBackend struct {
	Backend // not called
	asked   []int
}

func (b *readsBackend) DescribeTopic(_ context.Context, name string) (TopicInfo, error) {
	return TopicInfo{Name: name, Partitions: 2}, nil
}

func (b *readsBackend) Read(_ context.Context, _ string, _ int32, _ int64, maxBytes int) (ReadResult, error) {
	b.asked = append(b.asked, maxBytes)
	return ReadResult{}, nil
}

func (b *readsBackend) Changed(string, int32, int64) <-chan struct{} { return closedChan }

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// A Fetch asking for 2 GiB reads at most the gateway's fetch.max.bytes in
// all: it once honoured any size a client asked and built it in memory.
func TestFetchMaxBytesCapped(t *testing.T) {
	b := &readsBackend{}
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.MaxBytes, req.MaxWaitMillis = 1<<31-1, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	for p := int32(0); p < 2; p++ {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, 1<<31-1
		rt.Partitions = append(rt.Partitions, fp)
	}
	req.Topics = append(req.Topics, rt)
	handle(t, New(Config{}, b, nil, nil), req)
	if len(b.asked) != 2 {
		t.Fatalf("%d reads", len(b.asked))
	}
	for _, n := range b.asked {
		if n > DefaultFetchMaxBytes {
			t.Fatalf("a read of up to %d bytes, past fetch.max.bytes %d", n, DefaultFetchMaxBytes)
		}
	}
}

// quietBackend has one empty topic that never changes.
type quietBackend struct{ readsBackend }

func (b *quietBackend) Changed(string, int32, int64) <-chan struct{} { return make(chan struct{}) }

// A fetch long-polling when the gateway stops answers at once, empty: the
// gateway's stop once waited out every consumer's max wait.
func TestDrainAnswersWaitingFetches(t *testing.T) {
	h := New(Config{}, &quietBackend{}, nil, nil)
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.MaxWaitMillis, req.MinBytes = 25_000, 1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	rt.Partitions = []kmsg.FetchRequestTopicPartition{kmsg.NewFetchRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	go func() {
		time.Sleep(200 * time.Millisecond)
		h.Drain()
	}()
	resp := handle(t, h, req).(*kmsg.FetchResponse) // handle gives up after 5 s
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 || len(resp.Topics[0].Partitions[0].RecordBatches) != 0 {
		t.Fatalf("the drained fetch's answer: %+v", resp.Topics)
	}
	// Fetches that come while draining do not wait either.
	handle(t, h, req)
}
