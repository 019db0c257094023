package protocol

import (
	"context"
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
