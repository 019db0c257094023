package seaweedmq

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/glog"
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

// appendVerifying is the first append on a new stream. The broker's offset
// counter cannot be read reliably (its reported high watermark also counts
// the stored data), so the first record goes alone and its acknowledged
// offset is compared with the end of the stored records. If the broker is
// behind, that copy sits at an offset already taken, where readers never
// see it (they keep the first message stored at an offset); fillers then
// use up the offsets up to the end, and the records are sent again.
//
// A broker ahead of the stored records (its counter came back from a
// checkpoint past what it had flushed, of records it lost) would leave a
// hole: fillers are written there as a segment.
func (c *Client) appendVerifying(ctx context.Context, p *partition, pub *publisher, records []record.Record, durable bool) *protocol.Appended {
	lastTs := p.lastTsNs
	// The probe goes into the write-ahead log only once its offset is
	// known to be its own.
	pb, probe := p.sendBatch(ctx, pub, records[:1], false, true)
	select {
	case <-probe.Done:
	case <-ctx.Done():
		pub.fail(ctx.Err())
		probe.Then(func(probe *protocol.Appended) {
			if probe.Err == nil {
				p.mark(pb, batchFailed) // in the broker, not acknowledged: recovery logs it
			}
		})
		return protocol.FailedAppend(ctx.Err())
	}
	if probe.Err != nil {
		return protocol.FailedAppend(probe.Err)
	}
	base := probe.Base
	if base < p.storedEnd {
		p.mark(pb, batchFailed) // a copy at an offset taken already: readers never see it
		if err := c.fillGap(ctx, p, pub, base+1, p.storedEnd); err != nil {
			pub.fail(err)
			glog.Errorf("kafka partition %s/%d: broker %s assigned offset %d but records are stored up to offset %d, and moving it past them failed (%v); refusing writes so that no offset is handed out twice",
				p.topic, p.index, pub.leader, base, p.storedEnd-1, err)
			return protocol.FailedAppend(fmt.Errorf("%w: broker offset counter behind stored data", kerr.LeaderNotAvailable))
		}
		pub.verified, pub.next = true, p.storedEnd
		return p.send(ctx, pub, records, durable)
	}
	if base > p.storedEnd {
		glog.Warningf("kafka partition %s/%d: broker %s assigned offset %d but the stored records end at offset %d; filling the %d offsets between so that readers get past them",
			p.topic, p.index, pub.leader, base, p.storedEnd, base-p.storedEnd)
		if err := c.fillOffsets(ctx, p.dir, p.storedEnd, base, lastTs); err != nil {
			p.mark(pb, batchFailed)
			pub.fail(err)
			glog.Errorf("kafka partition %s/%d: filling offsets %d-%d failed: %v", p.topic, p.index, p.storedEnd, base-1, err)
			return protocol.FailedAppend(fmt.Errorf("%w: filling a hole in the offsets", kerr.LeaderNotAvailable))
		}
	}
	pub.verified, pub.next = true, base+1
	app := protocol.NewAppended()
	// Alone and durable, the probe is done once the log holds it; with
	// more records, once they are (in order behind it).
	durableProbe := durable && len(records) == 1
	p.mark(pb, batchAcked)
	c.wal.add(walBatch{dir: p.dir, base: base, n: 1, recs: pb.wal.buf}, func(err error) {
		p.walDone(pb, err)
		if !durableProbe {
			return
		}
		if err != nil {
			app.Finish(-1, err)
		} else {
			app.Finish(base, nil)
		}
	})
	switch {
	case len(records) > 1:
		p.send(ctx, pub, records[1:], durable).Then(func(rest *protocol.Appended) { app.Finish(base, rest.Err) })
	case !durable:
		app.Finish(base, nil)
	}
	return app
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

// openPublisher recovers the partition from the write-ahead logs
// (recover.go), opens its publish stream and notes where the stored records
// end, which appendVerifying checks the broker against.
//
// The broker recovers its offset counter after a restart from a checkpoint
// it writes every two seconds, which can lag what it flushed; the gateway
// moves the checkpoint up to the flushed data first, so that a broker that
// loads the counter afterwards starts at the right place.
//
// It also learns the ts_ns of the partition's last record, so that the
// ts_ns it sends stay increasing and SeaweedMQ keeps them as they are.
func (c *Client) openPublisher(ctx context.Context, p *partition, a *mq_pb.BrokerPartitionAssignment) (*publisher, error) {
	dir := partitionDir(p.topic, a)
	p.dir = dir
	end, err := c.recoverPartition(ctx, p, a)
	if err != nil {
		return nil, err
	}
	st, err := c.flushed(ctx, dir, false)
	if err != nil {
		return nil, err
	}
	if st.end > 0 {
		cp, err := c.readCheckpoint(ctx, dir)
		if err != nil {
			return nil, err
		}
		if cp < st.end-1 {
			glog.V(1).Infof("kafka partition %s/%d: broker checkpoint at offset %d lags the stored records (up to %d); moving it up", p.topic, p.index, cp, st.end-1)
			if err := c.writeCheckpoint(ctx, dir, st.end-1); err != nil {
				return nil, err
			}
		}
	}
	if p.lastTsNs == 0 {
		offs, err := c.offsetsOf(ctx, p.topic, a, p.knownHW())
		if err != nil {
			return nil, err
		}
		if hw := offs.HighWatermark; hw > 0 {
			tail, err := c.rawAt(ctx, p.topic, a, hw-1)
			if err != nil {
				return nil, err
			}
			if tail != nil {
				p.lastTsNs = tail.tsNs
			}
		}
	}
	p.storedEnd = max(end, st.end)
	pub, err := c.openStream(ctx, p, a)
	if err == nil {
		p.streamOpened(p.storedEnd)
	}
	return pub, err
}

// maxFillerGap bounds how far the gateway moves a broker's offset counter
// with fillers; a larger gap is not a lost checkpoint and is left to an
// operator.
const maxFillerGap = 10_000_000

// fillGap moves a broker whose offset counter restarted behind the stored
// records (it recovers it from a checkpoint saved every two seconds) to the
// end of them, by publishing fillers for the offsets from..to-1. Readers keep
// the first message stored at an offset, the real record, so fillers are
// never read; the broker then assigns new records the offsets after them.
func (c *Client) fillGap(ctx context.Context, p *partition, pub *publisher, from, to int64) error {
	n := to - from
	if n > maxFillerGap {
		return fmt.Errorf("gap of %d offsets", n)
	}
	if n <= 0 {
		return nil
	}
	glog.Warningf("kafka partition %s/%d: broker would assign offset %d but records are stored up to offset %d; using up %d offsets with fillers so that none is handed out twice",
		p.topic, p.index, from, to-1, n)
	app := protocol.NewAppended()
	if err := pub.enqueue(ctx, &pendingBatch{n: int(n), app: app, part: p}); err != nil { // not logged
		return err
	}
	pub.data.Key = nil
	pub.data.Value = record.AppendFiller(pub.buf[:0])
	for i := int64(0); i < n; i++ {
		pub.data.TsNs, _ = p.nextTs(-1)
		if err := pub.stream.Send(&pub.req); err != nil {
			pub.fail(err)
			break
		}
	}
	select {
	case <-app.Done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if app.Err != nil {
		return app.Err
	}
	if app.Base != from {
		return fmt.Errorf("fillers got offsets from %d, expected %d", app.Base, from)
	}
	return nil
}
