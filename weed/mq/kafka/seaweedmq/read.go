package seaweedmq

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/schema_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// Broker fetch error codes (FetchMessageResponse.error_code).
const (
	fetchPartitionNotFound = 1
	fetchReadError         = 2
)

// maxMessagesPerFetch is the most records asked of the broker at once (the
// broker's own cap is 10000).
const maxMessagesPerFetch = 10000

// rawBatch is a run of stored messages starting at offset base.
type rawBatch struct {
	base     int64
	messages []*mq_pb.DataMessage
	offsets  protocol.Offsets
}

// fetchRaw asks the partition's leader for stored messages from offset on.
func (c *Client) fetchRaw(ctx context.Context, topic string, a *mq_pb.BrokerPartitionAssignment, offset int64, maxBytes, maxMessages int) (rawBatch, error) {
	cc, err := c.conn(ctx, a.LeaderBroker)
	if err != nil {
		return rawBatch{}, err
	}
	resp, err := mq_pb.NewSeaweedMessagingClient(cc).FetchMessage(ctx, &mq_pb.FetchMessageRequest{
		Topic:       &schema_pb.Topic{Namespace: Namespace, Name: topic},
		Partition:   a.Partition,
		StartOffset: offset,
		MaxBytes:    int32(min(maxBytes, 100<<20)),
		MaxMessages: int32(min(maxMessages, maxMessagesPerFetch)),
	})
	if err != nil {
		if isUnavailable(err) {
			return rawBatch{}, fmt.Errorf("%w: fetch from %s: %v", ErrUnavailable, a.LeaderBroker, err)
		}
		return rawBatch{}, err
	}
	rb := rawBatch{offsets: protocol.Offsets{LogStart: resp.LogStartOffset, HighWatermark: resp.HighWaterMark}}
	switch resp.ErrorCode {
	case 0:
	case fetchPartitionNotFound:
		c.topics.forget(topic)
		return rb, kerr.NotLeaderForPartition
	case fetchReadError:
		if offset < resp.LogStartOffset || offset > resp.HighWaterMark {
			return rb, kerr.OffsetOutOfRange
		}
		return rb, fmt.Errorf("%w: fetch from %s: %s", ErrUnavailable, a.LeaderBroker, resp.Error)
	default:
		return rb, fmt.Errorf("%w: fetch from %s: %s (code %d)", ErrUnavailable, a.LeaderBroker, resp.Error, resp.ErrorCode)
	}
	rb.messages = resp.Messages
	rb.base = resp.NextOffset - int64(len(resp.Messages))
	if len(resp.Messages) == 0 {
		rb.base = offset
	}
	return rb, nil
}

// Read implements protocol.Backend.
func (c *Client) Read(ctx context.Context, topic string, index int32, offset int64, maxBytes int) (protocol.ReadResult, error) {
	a, err := c.assignment(ctx, topic, index)
	if err != nil {
		return protocol.ReadResult{}, err
	}
	var res protocol.ReadResult
	size := 0
	for {
		rb, err := c.fetchRaw(ctx, topic, a, offset, maxBytes-size, maxMessagesPerFetch)
		if err != nil {
			if len(res.Records) > 0 {
				break // return what was read; the next fetch sees the error
			}
			return rb.asResult(), err
		}
		res.Offsets = rb.offsets
		for i, m := range rb.messages {
			r, err := record.FromStored(m.Key, m.Value, m.TsNs/int64(time.Millisecond))
			if err != nil {
				return res, fmt.Errorf("%w: %s/%d offset %d: %v", kerr.CorruptMessage, topic, index, rb.base+int64(i), err)
			}
			res.Records = append(res.Records, protocol.StoredRecord{Offset: rb.base + int64(i), Record: r})
			size += len(m.Key) + len(m.Value) + 16
		}
		if len(rb.messages) == 0 {
			break
		}
		offset = rb.base + int64(len(rb.messages))
		if size >= maxBytes || offset >= rb.offsets.HighWatermark {
			break
		}
	}
	c.parts.get(topic, index).advance(res.HighWatermark)
	return res, nil
}

func (rb rawBatch) asResult() protocol.ReadResult { return protocol.ReadResult{Offsets: rb.offsets} }

// Offsets implements protocol.Backend.
func (c *Client) Offsets(ctx context.Context, topic string, index int32) (protocol.Offsets, error) {
	a, err := c.assignment(ctx, topic, index)
	if err != nil {
		return protocol.Offsets{}, err
	}
	offs, err := c.offsetsOf(ctx, topic, a)
	if err != nil {
		return offs, err
	}
	c.parts.get(topic, index).advance(offs.HighWatermark)
	return offs, nil
}

// offsetsOf asks a partition's leader for its log start and high watermark.
func (c *Client) offsetsOf(ctx context.Context, topic string, a *mq_pb.BrokerPartitionAssignment) (protocol.Offsets, error) {
	cc, err := c.conn(ctx, a.LeaderBroker)
	if err != nil {
		return protocol.Offsets{}, err
	}
	resp, err := mq_pb.NewSeaweedMessagingClient(cc).GetPartitionRangeInfo(ctx, &mq_pb.GetPartitionRangeInfoRequest{
		Topic:     &schema_pb.Topic{Namespace: Namespace, Name: topic},
		Partition: a.Partition,
	})
	if err != nil {
		return protocol.Offsets{}, fmt.Errorf("%w: offsets from %s: %v", ErrUnavailable, a.LeaderBroker, err)
	}
	if resp.Error != "" {
		return protocol.Offsets{}, fmt.Errorf("%w: offsets from %s: %s", ErrUnavailable, a.LeaderBroker, resp.Error)
	}
	offs := protocol.Offsets{HighWatermark: resp.OffsetRange.GetHighWaterMark(), LogStart: resp.OffsetRange.GetEarliestOffset()}
	if offs.LogStart > offs.HighWatermark {
		offs.LogStart = offs.HighWatermark
	}
	return offs, nil
}

// rawAt returns the stored message at offset, or nil past the end.
func (c *Client) rawAt(ctx context.Context, topic string, a *mq_pb.BrokerPartitionAssignment, offset int64) (*mq_pb.DataMessage, error) {
	rb, err := c.fetchRaw(ctx, topic, a, offset, 1, 1)
	if err != nil {
		return nil, err
	}
	if len(rb.messages) == 0 || rb.base != offset {
		return nil, nil
	}
	return rb.messages[0], nil
}

// lastRaw returns the partition's last stored message, or nil if empty.
func (c *Client) lastRaw(ctx context.Context, topic string, a *mq_pb.BrokerPartitionAssignment) (*mq_pb.DataMessage, error) {
	offs, err := c.offsetsOf(ctx, topic, a)
	if err != nil || offs.HighWatermark <= offs.LogStart {
		return nil, err
	}
	return c.rawAt(ctx, topic, a, offs.HighWatermark-1)
}

// OffsetForTime implements protocol.Backend. Stored ts_ns increase with the
// offset, so the first record at or after ts is found by binary search.
func (c *Client) OffsetForTime(ctx context.Context, topic string, index int32, ts int64) (int64, int64, error) {
	a, err := c.assignment(ctx, topic, index)
	if err != nil {
		return -1, -1, err
	}
	offs, err := c.Offsets(ctx, topic, index)
	if err != nil {
		return -1, -1, err
	}
	lo, hi := offs.LogStart, offs.HighWatermark // answer in [lo, hi]
	want := ts * int64(time.Millisecond)
	for lo < hi {
		mid := lo + (hi-lo)/2
		m, err := c.rawAt(ctx, topic, a, mid)
		if err != nil {
			return -1, -1, err
		}
		if m == nil || m.TsNs >= want {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo >= offs.HighWatermark {
		return -1, -1, nil
	}
	return c.timestampAt(ctx, topic, a, lo)
}

// MaxTimestamp implements protocol.Backend: stored ts_ns increase with the
// offset, so it is the last record's.
func (c *Client) MaxTimestamp(ctx context.Context, topic string, index int32) (int64, int64, error) {
	a, err := c.assignment(ctx, topic, index)
	if err != nil {
		return -1, -1, err
	}
	offs, err := c.Offsets(ctx, topic, index)
	if err != nil || offs.HighWatermark == offs.LogStart {
		return -1, -1, err
	}
	return c.timestampAt(ctx, topic, a, offs.HighWatermark-1)
}

func (c *Client) timestampAt(ctx context.Context, topic string, a *mq_pb.BrokerPartitionAssignment, offset int64) (int64, int64, error) {
	m, err := c.rawAt(ctx, topic, a, offset)
	if err != nil || m == nil {
		return -1, -1, err
	}
	r, err := record.FromStored(m.Key, m.Value, m.TsNs/int64(time.Millisecond))
	if err != nil {
		return -1, -1, err
	}
	return offset, r.Timestamp, nil
}
