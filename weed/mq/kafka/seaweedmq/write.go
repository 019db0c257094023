package seaweedmq

// The write path. The gateway leading a partition is its one writer: it
// gives each batch its offsets, puts it into the write-ahead log (group
// committed with every other partition's batches) and keeps it in the
// partition's tail until the tail goes into a log segment (tail.go). No MQ
// broker is on the way: a partition costs a broker nothing, and a record
// costs no gRPC message of its own.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/logentry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/wal"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// maxFutureTimestamp is how far ahead of this gateway's clock a record's
// timestamp may be and still become SeaweedMQ's ts_ns. SeaweedMQ keeps ts_ns
// increasing per partition and files data by it, so a timestamp far in the
// future would drag every later record's ts_ns along; such records keep
// their timestamp in the envelope instead. (Kafka's own default
// message.timestamp.after.max.ms is one hour too.)
const maxFutureTimestamp = time.Hour

// Append implements storage.Backend. A durable append is done when its
// records are in the write-ahead log; any other at once (the gateway holds
// it, and the log gets it a few milliseconds later).
func (c *Client) Append(ctx context.Context, topic string, index int32, records []record.Record, durable bool) *storage.Appended {
	return c.appendTo(ctx, topic, index, &records[0], len(records), nil, records, durable)
}

// AppendBatch implements storage.Backend: the batch is stored as one
// batch entry (package logentry).
func (c *Client) AppendBatch(ctx context.Context, topic string, index int32, batch []byte, durable bool) *storage.Appended {
	head, n, err := record.Head(batch)
	if err != nil {
		return storage.FailedAppend(fmt.Errorf("%w: %v", kerr.CorruptMessage, err))
	}
	return c.appendTo(ctx, topic, index, &head, n, batch, nil, durable)
}

// appendTo appends n records: batch if it is not nil, else records. head
// is the first record, or one with its marks (record.Head).
func (c *Client) appendTo(ctx context.Context, topic string, index int32, head *record.Record, n int, batch []byte, records []record.Record, durable bool) *storage.Appended {
	if t := head.Txn; t == nil || t.Control == record.NotControl {
		c.waitForTailRoom(ctx, topic, index)
	}
	var app *storage.Appended
	if _, err := c.withPartition(ctx, topic, index, func(p *partition) { app = c.appendLocked(ctx, p, head, n, batch, records, durable) }); err != nil {
		return storage.FailedAppend(err)
	}
	return app
}

// tailCapWait bounds how long an append waits for room in a partition's
// tail at its cap (waitForTailRoom).
const tailCapWait = 10 * time.Second

// waitForTailRoom holds an append to a partition whose tail is at its cap
// until a segment write makes room, for at most tailCapWait (or ctx): a
// producer faster than the partition's segments are written is slowed, as
// a Kafka broker's disk slows it, rather than refused. (Refused, a
// producer that is not idempotent and has several requests in flight,
// librdkafka's default, retries its batch after later ones: its records
// out of order.) Past the wait the segments are not being written (a
// volume server hung or full), and appendLocked refuses the append.
func (c *Client) waitForTailRoom(ctx context.Context, topic string, index int32) {
	p := c.parts.peek(topic, index)
	if p == nil {
		return
	}
	var deadline time.Time
	for {
		p.notifyMu.Lock()
		full := p.tailBytes >= tailCap
		p.notifyMu.Unlock()
		if !full {
			return
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(tailCapWait)
			metrics.TailWaits.Inc()
		}
		if time.Now().After(deadline) {
			return
		}
		c.flusher.wake()
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// withPartition runs fn on this gateway's partition of topic, with its
// writeMu held; a partition dropped meanwhile (released, idle, its topic
// deleted) is taken afresh.
func (c *Client) withPartition(ctx context.Context, topic string, index int32, fn func(*partition)) (*partition, error) {
	if _, err := c.assignment(ctx, topic, index); err != nil {
		return nil, err
	}
	for {
		p := c.parts.get(c, topic, index)
		p.writeMu.Lock()
		if !p.dropped && p.isReleased() {
			p.dropped = true // left the map; fenced now
		}
		if p.dropped {
			p.writeMu.Unlock()
			continue
		}
		// The objects this one took the place of, released while an
		// operation held them: those end before this one recovers the
		// partition.
		for q := p.prev; q != nil; q = q.fence() {
		}
		p.prev = nil
		fn(p)
		p.writeMu.Unlock()
		return p, nil
	}
}

// appendLocked is appendTo with writeMu held.
func (c *Client) appendLocked(ctx context.Context, p *partition, head *record.Record, n int, batch []byte, records []record.Record, durable bool) *storage.Appended {
	if err := c.readyToWrite(ctx, p); err != nil {
		return storage.FailedAppend(err)
	}
	if t := head.Txn; t == nil || t.Control == record.NotControl {
		// Markers always go in: they end transactions, and are small.
		p.notifyMu.Lock()
		held := p.tailBytes
		p.notifyMu.Unlock()
		if held >= tailCap {
			metrics.TailFull.Inc()
			return storage.FailedAppend(fmt.Errorf("%w: partition %s-%d holds %d bytes no segment holds yet (its segments are not being written)", kerr.KafkaStorageError, p.topic, p.index, held))
		}
	}
	write := func() *storage.Appended {
		if batch != nil {
			return p.writeBatch(batch, n, durable)
		}
		return p.write(records, durable)
	}
	if head.Producer != nil {
		return c.appendIdempotent(ctx, p, head, write)
	}
	if t := head.Txn; t != nil && t.Control != record.NotControl {
		// A marker of an epoch older than the producer's batches here
		// ends a transaction the producer no longer runs: a request sent
		// before a cut and delivered after it healed, after the
		// transaction's own marker and the producer's next batches. Let
		// through, it would end their transaction with the old one's
		// outcome (a fault run had a committed transaction's records
		// aborted so). Refused as Kafka's producer state refuses it. A
		// marker whose end raised the epoch (transactions v2) comes after
		// batches of the epoch before: one of the epoch of the batches
		// here is late as well (the producer's next transaction runs in
		// the epoch the end raised it to).
		if e := p.producers.m[t.ProducerID]; e != nil && (t.Epoch < e.epoch || t.Bumped && t.Epoch == e.epoch) {
			return storage.FailedAppend(fmt.Errorf("%w: a marker of producer %d's epoch %d (raised by its end: %v), after its batches of epoch %d", kerr.InvalidProducerEpoch, t.ProducerID, t.Epoch, t.Bumped, e.epoch))
		}
		// Noted by WriteMarker before, and again here, on the object
		// that gives it its offset (it may have taken the place of the
		// one WriteMarker saw), before any batch after it.
		ps := &p.producers
		ps.txnMu.Lock()
		ps.noteFence(t.ProducerID, t.Epoch, clock.Now())
		ps.txnMu.Unlock()
	}
	return write()
}

// readyToWrite makes the partition ready to be given offsets, in this
// gateway's term over it. Offsets are given only in the term the partition
// was opened in: an append admitted before the leadership ended, that
// waited for the partition's recovery meanwhile, gives none; a partition
// opened in no term (read here before this gateway led it) or an earlier
// one is recovered again first. Called with writeMu held.
func (c *Client) readyToWrite(ctx context.Context, p *partition) error {
	if err := c.ensureReady(ctx, p); err != nil {
		return err
	}
	if c.opts.Term != nil {
		now := c.opts.Term(p.topic, p.index)
		if now == 0 {
			return fmt.Errorf("%w: not led here", kerr.NotLeaderForPartition)
		}
		if now != p.term {
			p.ready = false
			if err := c.ensureReady(ctx, p); err != nil {
				return err
			}
			if p.term != now {
				return fmt.Errorf("%w: the leadership changed while the partition was recovered", kerr.NotLeaderForPartition)
			}
		}
	}
	p.touch()
	return nil
}

// ensureReady recovers the partition if it is not yet (recover.go), or
// was in another term than the one this gateway leads it in now: what it
// holds may miss what the leaders in between wrote. A fault run had a
// gateway answer a read, in its new term, from an object it had
// recovered while it led nothing: its end was behind the partition's, and
// a consumer asking it for its leader epoch's end went back. Called with
// writeMu held.
func (c *Client) ensureReady(ctx context.Context, p *partition) error {
	if p.ready && c.opts.Term != nil {
		if now := c.opts.Term(p.topic, p.index); now != 0 && now != p.term {
			p.ready = false
		}
	}
	if p.ready {
		return nil
	}
	return c.openPartition(ctx, p)
}

// ensureOpen makes sure this gateway has recovered a partition before it is
// read: a gateway that led it before may have left records in its log that
// no segment holds, and readers must not see the log shorter than it was.
func (c *Client) ensureOpen(ctx context.Context, topic string, index int32) (*partition, error) {
	var err error
	p, lookup := c.withPartition(ctx, topic, index, func(p *partition) { err = c.ensureReady(ctx, p) })
	if lookup != nil {
		return nil, lookup
	}
	p.touch()
	return p, err
}

// write gives records the partition's next offsets and hands them to the
// write-ahead log. Called with writeMu held, on a ready partition.
func (p *partition) write(records []record.Record, durable bool) *storage.Appended {
	b := &pendingBatch{base: p.next, n: len(records), durable: durable, app: storage.NewAppended()}
	w := logentry.Records{Buf: make([]byte, 0, walRecordsSize(records))}
	var env []byte
	for i := range records {
		r := &records[i]
		ts, exact := p.nextTs(r.Timestamp)
		value := r.Value
		if !record.Plain(r, exact) {
			env = record.AppendEnvelope(env[:0], r, !exact)
			value = env
		}
		w.Add(ts, r.Key, value)
		b.lastTs = ts
	}
	b.recs = w.Buf
	return p.log(b)
}

// writeBatch gives a produced batch of n records the partition's next
// offsets and hands it to the write-ahead log as one batch entry. Called
// with writeMu held, on a ready partition.
func (p *partition) writeBatch(batch []byte, n int, durable bool) *storage.Appended {
	b := &pendingBatch{base: p.next, n: n, durable: durable, app: storage.NewAppended()}
	b.lastTs, _ = p.nextTs(record.MaxTimestamp(batch))
	w := logentry.Records{Buf: make([]byte, 0, len(batch)+32)}
	w.AddBatch(b.lastTs, batch, b.base)
	b.recs = w.Buf
	return p.log(b)
}

// errTermEnded fails a batch logged after the term it was given its
// offsets in had ended (see logged).
var errTermEnded = errors.New("logged after this gateway's term over the partition ended")

// errReleased fails a batch logged after this gateway released the
// partition: it enters no tail, so no segment holds it, and another
// writer of the partition (the next leader, or this gateway again in a
// new object, in the same term) may have given its offsets to other
// records.
var errReleased = errors.New("logged after this gateway released the partition")

// log hands a batch with its offsets to the write-ahead log.
func (p *partition) log(b *pendingBatch) *storage.Appended {
	b.term = p.term
	p.next += int64(b.n)
	p.notifyMu.Lock()
	p.pending = append(p.pending, b)
	p.notifyMu.Unlock()
	p.c.logBatch(wal.Batch{Dir: p.walKey, Term: p.term, Base: b.base, N: b.n, Recs: b.recs, Replication: p.replication}, func(err error) { p.logged(b, err) })
	if !b.durable {
		b.app.Finish(b.base, nil)
	}
	return b.app
}

// logged takes the write-ahead log's outcome for a batch. The batches at
// the head of the pending ones that are logged move to the tail, where
// readers see them (Kafka's high watermark); a batch the log could not take
// (it is closing) leaves its offsets to recovery, which the partition
// needs again.
//
// A batch logged once the term it was given its offsets in had ended,
// before this gateway learned it (it was paused, or cut off, while the
// log's commit waited), fails as one the log refused: its successor,
// which recovered before the batch was logged, may have given its offsets
// to other records. The partition is recovered again before its next use.
// So does a batch logged after the partition was released: it is never
// acknowledged as stored (the leadership check alone did not stop that
// when this gateway led the partition again in the same term, a fault run
// found).
func (p *partition) logged(b *pendingBatch, err error) {
	cur := int64(-1)
	if p.c != nil && p.c.opts.Term != nil {
		cur = p.c.opts.Term(p.topic, p.index)
	}
	p.notifyMu.Lock()
	b.done, b.err = true, err
	var answer []*pendingBatch
	failed := false
	for len(p.pending) > 0 && p.pending[0].done {
		h := p.pending[0]
		p.pending[0] = nil
		p.pending = p.pending[1:]
		if h.err == nil && !failed && !p.released && h.term != 0 && cur >= 0 && cur != h.term {
			h.err = errTermEnded
		}
		if h.err == nil && !failed && p.released {
			h.err = errReleased
		}
		if h.err != nil || failed {
			// Every batch after one the log refused fails with it:
			// a producer's batches are answered in their order.
			failed = true
			if h.err == nil {
				h.err = wal.ErrClosed
			}
		} else {
			p.tail = append(p.tail, &tailBatch{base: h.base, n: h.n, recs: h.recs, lastTs: h.lastTs, logged: time.Now()})
			p.tailBytes += len(h.recs)
			p.advanceLocked(h.base + int64(h.n))
		}
		if h.durable {
			answer = append(answer, h)
		}
	}
	big := p.tailBytes >= p.flushAtLocked()
	p.notifyMu.Unlock()
	if failed {
		go p.unready()
	}
	for _, h := range answer {
		if h.err != nil {
			h.app.Finish(-1, fmt.Errorf("%w (%v)", kerr.NotLeaderForPartition, h.err))
		} else {
			h.app.Finish(h.base, nil)
		}
	}
	if big {
		p.c.flusher.wake()
	}
}

// unready makes the next use of the partition recover it again.
func (p *partition) unready() {
	p.writeMu.Lock()
	p.ready = false
	p.writeMu.Unlock()
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
	now := clock.Now().UnixNano()
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
