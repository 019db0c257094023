package seaweedmq

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// maxFutureTimestamp is how far ahead of this gateway's clock a record's
// timestamp may be and still become SeaweedMQ's ts_ns. SeaweedMQ keeps ts_ns
// strictly increasing per partition and files data by it, so a timestamp far
// in the future would drag every later record's ts_ns along; such records
// keep their timestamp in the envelope instead. (Kafka's own default
// message.timestamp.after.max.ms is one hour too.)
const maxFutureTimestamp = time.Hour

// Append implements protocol.Backend. A durable append is done when its
// records are in the write-ahead log; otherwise when the broker holds them
// (the log gets them too, a few milliseconds later).
func (c *Client) Append(ctx context.Context, topic string, index int32, records []record.Record, durable bool) *protocol.Appended {
	a, err := c.assignment(ctx, topic, index)
	if err != nil {
		return protocol.FailedAppend(err)
	}
	p := c.parts.get(c, topic, index)
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if err := c.openIfNeeded(ctx, p, a); err != nil {
		return protocol.FailedAppend(err)
	}
	pub := p.pub
	write := func() *protocol.Appended {
		if !pub.verified {
			return c.appendVerifying(ctx, p, pub, records, durable)
		}
		return p.send(ctx, pub, records, durable)
	}
	if records[0].Producer != nil {
		return c.appendIdempotent(ctx, p, records, write)
	}
	return write()
}

// openIfNeeded gives the partition a working stream to its current leader
// broker, recovering the partition first when a new one is opened. Called
// with writeMu held.
func (c *Client) openIfNeeded(ctx context.Context, p *partition, a *mq_pb.BrokerPartitionAssignment) error {
	if p.pub != nil && (p.pub.broken() != nil || p.pub.leader != a.LeaderBroker) {
		p.pub.close(0)
		p.pub = nil
	}
	if p.pub != nil {
		return nil
	}
	pub, err := c.openPublisher(ctx, p, a)
	if err != nil {
		return err
	}
	p.pub = pub
	return nil
}

// ensureStream makes sure a partition has a working stream to its broker,
// and so was recovered since the broker last restarted, before it is read.
func (c *Client) ensureStream(ctx context.Context, topic string, index int32) error {
	a, err := c.assignment(ctx, topic, index)
	if err != nil {
		return err
	}
	p := c.parts.get(c, topic, index)
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	return c.openIfNeeded(ctx, p, a)
}

// send publishes records as one batch on pub.
func (p *partition) send(ctx context.Context, pub *publisher, records []record.Record, durable bool) *protocol.Appended {
	_, app := p.sendBatch(ctx, pub, records, durable, false)
	return app
}

func (p *partition) sendBatch(ctx context.Context, pub *publisher, records []record.Record, durable, deferLog bool) (*pendingBatch, *protocol.Appended) {
	app := protocol.NewAppended()
	b := &pendingBatch{n: len(records), app: app, part: p, durable: durable, log: true, deferLog: deferLog, expected: -1}
	b.wal.buf = make([]byte, 0, walRecordsSize(records))
	if err := pub.enqueue(ctx, b); err != nil {
		return b, protocol.FailedAppend(fmt.Errorf("%w (%v)", kerr.NotLeaderForPartition, err))
	}
	if pub.verified && !deferLog {
		b.expected = pub.next
		pub.next += int64(len(records))
	}
	sent := true
	for i := range records {
		r := &records[i]
		ts, exact := p.nextTs(r.Timestamp)
		pub.data.TsNs = ts
		pub.data.Key = r.Key
		if record.Plain(r, exact) {
			pub.data.Value = r.Value
		} else {
			pub.buf = record.AppendEnvelope(pub.buf[:0], r, !exact)
			pub.data.Value = pub.buf
		}
		b.wal.add(ts, pub.data.Key, pub.data.Value)
		if err := pub.stream.Send(&pub.req); err != nil {
			// The ack reader fails this batch and the ones before it.
			pub.fail(fmt.Errorf("publish to %s: %w", pub.leader, err))
			sent = false
			break
		}
	}
	if sent && b.expected >= 0 {
		p.c.wal.add(walBatch{dir: p.dir, base: b.expected, n: b.n, recs: b.wal.buf}, func(err error) { p.walDone(b, err) })
	}
	return b, app
}

// walRecordsSize is about what records take in log form: their keys and
// values and, per record, room for the length, the tags, ts_ns and a small
// envelope, so that a batch's log buffer is allocated once.
func walRecordsSize(records []record.Record) int {
	n := 0
	for i := range records {
		n += len(records[i].Key) + len(records[i].Value) + 32
	}
	return n
}

// nextTs returns the ts_ns for a record with timestamp tsMs, and whether
// ts_ns alone carries the timestamp exactly (it does unless the timestamp
// is negative, far in the future, or behind the partition's last ts_ns by
// more than its own millisecond).
func (p *partition) nextTs(tsMs int64) (int64, bool) {
	now := time.Now().UnixNano()
	ts := tsMs * int64(time.Millisecond)
	if tsMs >= 0 && ts <= now+int64(maxFutureTimestamp) {
		if ts > p.lastTsNs {
			p.lastTsNs = ts
			return ts, true
		}
		if p.lastTsNs+1 < ts+int64(time.Millisecond) { // same millisecond
			p.lastTsNs++
			return p.lastTsNs, true
		}
	}
	p.lastTsNs = max(p.lastTsNs+1, now)
	return p.lastTsNs, false
}

// maxFillerGap bounds how far the gateway moves a broker's offset counter
// with fillers; a larger gap is not a lost checkpoint and is left to an
// operator.
const maxFillerGap = 10_000_000
