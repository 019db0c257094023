package seaweedmq

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/schema_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
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

// errBrokerRead is a broker that could not read an offset past the
// segments as last listed.
var errBrokerRead = fmt.Errorf("%w: broker read", ErrUnavailable)

// stored is one stored message with its offset.
type stored struct {
	offset int64
	key    []byte
	value  []byte
	tsNs   int64
}

// readRaw returns stored messages from offset on, up to about maxBytes,
// with the partition's offsets: flushed data from the filer's log segments,
// the rest from the leader broker's memory.
func (c *Client) readRaw(ctx context.Context, topic string, a *mq_pb.BrokerPartitionAssignment, offset int64, maxBytes int) ([]stored, protocol.Offsets, error) {
	st, err := c.flushed(ctx, partitionDir(topic, a), false)
	if err != nil {
		return nil, protocol.Offsets{}, err
	}
	if offset < st.end {
		entries, err := c.readFlushed(ctx, st, offset, maxBytes)
		if err != nil && ctx.Err() == nil {
			// The log cleaner may have rewritten or removed a
			// segment since it was listed: list them all again.
			c.segs.drop(st.listing.dir)
			if st, err = c.flushed(ctx, st.listing.dir, true); err == nil {
				entries, err = c.readFlushed(ctx, st, offset, maxBytes)
			}
		}
		if err != nil {
			return nil, protocol.Offsets{}, err
		}
		out := make([]stored, len(entries))
		for i, e := range entries {
			out[i] = stored{offset: e.Offset, key: e.Key, value: e.Data, tsNs: e.TsNs}
		}
		offs := protocol.Offsets{LogStart: st.start, HighWatermark: st.end}
		if offset < st.start {
			return nil, offs, kerr.OffsetOutOfRange
		}
		if len(out) > 0 {
			// From the offset on, or past a hole in the segments (no
			// record holds the offset; Kafka's readers skip such gaps).
			// The broker is not asked: it labels what it returns by
			// counting, which a hole would shift.
			return out, offs, nil
		}
	}
	msgs, offs, err := c.fetchFromBroker(ctx, topic, a, st, offset, maxBytes)
	if errors.Is(err, errBrokerRead) {
		// Flushed since the segments were listed? Then they have it.
		if st2, lerr := c.flushed(ctx, st.listing.dir, true); lerr == nil && offset < st2.end && st2.end > st.end {
			return c.readRaw(ctx, topic, a, offset, maxBytes)
		}
	}
	return msgs, offs, err
}

// fetchFromBroker asks the partition's leader for messages from offset on.
func (c *Client) fetchFromBroker(ctx context.Context, topic string, a *mq_pb.BrokerPartitionAssignment, st *flushedState, offset int64, maxBytes int) ([]stored, protocol.Offsets, error) {
	cc, err := c.conn(ctx, a.LeaderBroker)
	if err != nil {
		return nil, protocol.Offsets{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, brokerRPCTimeout)
	defer cancel()
	resp, err := mq_pb.NewSeaweedMessagingClient(cc).FetchMessage(ctx, &mq_pb.FetchMessageRequest{
		Topic:       &schema_pb.Topic{Namespace: Namespace, Name: topic},
		Partition:   a.Partition,
		StartOffset: offset,
		MaxBytes:    int32(min(maxBytes, 100<<20)),
		MaxMessages: maxMessagesPerFetch,
	})
	if err != nil {
		c.brokerUnreachable(topic, a.LeaderBroker, err)
		return nil, protocol.Offsets{}, fmt.Errorf("%w: fetch from %s: %v", ErrUnavailable, a.LeaderBroker, err)
	}
	// The log starts where the filer's segments start (0 before the first
	// flush); the broker's own log start is where its memory starts. The
	// broker's high watermark is not used: it is a second counter that
	// drifts from the offsets it assigns after a reload; the messages it
	// returns carry the real ones.
	offs := protocol.Offsets{LogStart: st.start, HighWatermark: st.end}
	switch resp.ErrorCode {
	case 0:
	case fetchPartitionNotFound:
		// Not loaded on the broker (it restarted, or the partition just
		// moved to it): it holds nothing past the segments. The topic is
		// read again in case the partition moved elsewhere.
		c.topics.forget(topic)
		return nil, offs, nil
	case fetchReadError:
		if offset < offs.LogStart {
			return nil, offs, kerr.OffsetOutOfRange
		}
		// Past the segments as last listed: the broker may just have
		// flushed the offset out of its memory, or it is the end.
		return nil, offs, fmt.Errorf("%w: fetch from %s: %s", errBrokerRead, a.LeaderBroker, resp.Error)
	default:
		return nil, offs, fmt.Errorf("%w: fetch from %s: %s (code %d)", ErrUnavailable, a.LeaderBroker, resp.Error, resp.ErrorCode)
	}
	base := resp.NextOffset - int64(len(resp.Messages))
	if len(resp.Messages) > 0 && base != offset {
		return nil, offs, fmt.Errorf("%w: broker %s answered offset %d for %d", ErrUnavailable, a.LeaderBroker, base, offset)
	}
	out := make([]stored, len(resp.Messages))
	for i, m := range resp.Messages {
		out[i] = stored{offset: base + int64(i), key: m.Key, value: m.Value, tsNs: m.TsNs}
	}
	if len(out) > 0 {
		offs.HighWatermark = max(offs.HighWatermark, out[len(out)-1].offset+1)
	}
	return out, offs, nil
}

// Read implements protocol.Backend. The partition is recovered first if
// this gateway has no working stream to its broker (recover.go): a broker
// that restarted lost what it had not flushed, and readers must not see
// the log shorter than it was.
func (c *Client) Read(ctx context.Context, topic string, index int32, offset int64, maxBytes int) (protocol.ReadResult, error) {
	if err := c.ensureStream(ctx, topic, index); err != nil {
		return protocol.ReadResult{}, err
	}
	return c.read(ctx, topic, index, offset, maxBytes)
}

// read is Read without the recovery.
func (c *Client) read(ctx context.Context, topic string, index int32, offset int64, maxBytes int) (protocol.ReadResult, error) {
	a, err := c.assignment(ctx, topic, index)
	if err != nil {
		return protocol.ReadResult{}, err
	}
	p := c.parts.get(c, topic, index)
	var res protocol.ReadResult
	if start := c.logStartOf(ctx, topic, index); offset < start {
		offs, err := c.offsets(ctx, topic, index)
		res.Offsets = offs
		if err != nil {
			return res, err
		}
		return res, kerr.OffsetOutOfRange
	}
	size := 0
	for {
		msgs, offs, err := c.readRaw(ctx, topic, a, offset, maxBytes-size)
		if errors.Is(err, errBrokerRead) && offset <= max(offs.HighWatermark, p.knownHW(), res.HighWatermark) {
			// Nothing past a known end yet.
			if res.Records == nil {
				res.Offsets = offs
			}
			res.HighWatermark = max(res.HighWatermark, offs.HighWatermark, p.knownHW())
			break
		}
		if errors.Is(err, errBrokerRead) && len(res.Records) == 0 {
			res.Offsets = offs
			return res, kerr.OffsetOutOfRange
		}
		if err != nil {
			if len(res.Records) > 0 {
				break // return what was read; the next fetch sees the error
			}
			res.Offsets = offs
			return res, err
		}
		if res.Records == nil {
			res.Offsets = offs
			res.LogStart = max(res.LogStart, c.logStartOf(ctx, topic, index))
		}
		res.HighWatermark = max(res.HighWatermark, offs.HighWatermark, p.knownHW())
		for _, m := range msgs {
			r, err := record.FromStored(m.key, m.value, m.tsNs/int64(time.Millisecond))
			if errors.Is(err, record.ErrFiller) {
				continue
			}
			if err != nil {
				// A stored record no Kafka client could read (a
				// SeaweedMQ client's value that looks like the
				// gateway's envelope): it is left out, as a compacted
				// offset is, rather than block the partition.
				metrics.RecordsSkipped.WithLabelValues(metrics.Topic(topic)).Inc()
				glog.Warningf("kafka partition %s/%d: offset %d cannot be read as a Kafka record, left out: %v", topic, index, m.offset, err)
				continue
			}
			res.Records = append(res.Records, protocol.StoredRecord{Offset: m.offset, Record: r})
			size += len(m.key) + len(m.value) + 16
		}
		if len(msgs) == 0 {
			break
		}
		offset = msgs[len(msgs)-1].offset + 1
		if size >= maxBytes || offset >= res.HighWatermark {
			break
		}
	}
	if v := p.visibleEnd(); v >= 0 && res.HighWatermark > v {
		// Acknowledged by the broker, not yet in the write-ahead log.
		n := sort.Search(len(res.Records), func(i int) bool { return res.Records[i].Offset >= v })
		res.Records = res.Records[:n]
		res.HighWatermark = max(v, res.Offsets.LogStart)
		return res, nil
	}
	p.advance(res.HighWatermark)
	return res, nil
}

// Offsets implements protocol.Backend, after recovery as Read.
func (c *Client) Offsets(ctx context.Context, topic string, index int32) (protocol.Offsets, error) {
	if err := c.ensureStream(ctx, topic, index); err != nil {
		return protocol.Offsets{}, err
	}
	return c.offsets(ctx, topic, index)
}

// HighWatermark returns a partition's high watermark from what the filer and
// its broker hold, without recovering the partition or opening a stream to
// it, which only the gateway leading the partition may do: for observers,
// such as the lag metrics of a group's coordinator, of partitions another
// gateway may lead.
func (c *Client) HighWatermark(ctx context.Context, topic string, index int32) (int64, error) {
	offs, err := c.offsets(ctx, topic, index)
	return offs.HighWatermark, err
}

// offsets is Offsets without the recovery.
func (c *Client) offsets(ctx context.Context, topic string, index int32) (protocol.Offsets, error) {
	a, err := c.assignment(ctx, topic, index)
	if err != nil {
		return protocol.Offsets{}, err
	}
	p := c.parts.get(c, topic, index)
	offs, err := c.offsetsOf(ctx, topic, a, p.knownHW())
	if err != nil {
		return offs, err
	}
	if v := p.visibleEnd(); v >= 0 && offs.HighWatermark > v {
		offs.HighWatermark = max(v, offs.LogStart)
	}
	offs.LogStart = min(max(offs.LogStart, c.logStartOf(ctx, topic, index)), offs.HighWatermark)
	p.advance(offs.HighWatermark)
	return offs, nil
}

// offsetsOf returns a partition's log start and high watermark: the end of
// what the filer holds, of what this gateway saw acknowledged, and of what
// the leader broker still holds in memory past both.
func (c *Client) offsetsOf(ctx context.Context, topic string, a *mq_pb.BrokerPartitionAssignment, known int64) (protocol.Offsets, error) {
	st, err := c.flushed(ctx, partitionDir(topic, a), false)
	if err != nil {
		return protocol.Offsets{}, err
	}
	end := max(st.end, known)
	for {
		msgs, _, err := c.fetchFromBroker(ctx, topic, a, st, end, 1<<20)
		if err != nil && !errors.Is(err, kerr.OffsetOutOfRange) && !errors.Is(err, errBrokerRead) {
			return protocol.Offsets{}, err
		}
		if len(msgs) == 0 {
			break
		}
		end = msgs[len(msgs)-1].offset + 1
	}
	return protocol.Offsets{LogStart: st.start, HighWatermark: end}, nil
}

// rawAt returns the stored message at offset, or nil past the end.
func (c *Client) rawAt(ctx context.Context, topic string, a *mq_pb.BrokerPartitionAssignment, offset int64) (*stored, error) {
	msgs, _, err := c.readRaw(ctx, topic, a, offset, 1)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 || msgs[0].offset != offset {
		return nil, nil
	}
	return &msgs[0], nil
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
		if m == nil || m.tsNs >= want {
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
	r, err := record.FromStored(m.key, m.value, m.tsNs/int64(time.Millisecond))
	if err != nil {
		return -1, -1, err
	}
	return offset, r.Timestamp, nil
}
