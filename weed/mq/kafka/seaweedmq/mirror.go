package seaweedmq

// Mirrored writes: a topic link (package link) stores the batches it
// fetched from another Kafka cluster at their own offsets, bytes as the
// source's log holds them, so that every record keeps its offset and a
// consumer's committed offsets mean the same on both sides. The offsets
// the source had no batch for (its cleaner removed them) become a gap
// batch (record.Gap), which readers skip, so that the partition's entries
// stay dense for the write-ahead log, recovery and the segments.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/logentry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// AppendMirrored implements storage.Mirror.
func (c *Client) AppendMirrored(ctx context.Context, topic string, index int32, batches [][]byte) *storage.Appended {
	var app *storage.Appended
	if _, err := c.withPartition(ctx, topic, index, func(p *partition) { app = c.mirrorLocked(ctx, p, batches) }); err != nil {
		return storage.FailedAppend(err)
	}
	return app
}

// mirrored is a source batch to store, read from its header.
type mirrored struct {
	data []byte
	base int64
	end  int64 // one past its last offset
	hdr  kmsg.RecordBatch
}

// maxGap is the most offsets one gap batch takes (its last offset delta
// is an int32).
const maxGap = 1 << 30

// mirrorLocked is AppendMirrored with writeMu held.
func (c *Client) mirrorLocked(ctx context.Context, p *partition, batches [][]byte) *storage.Appended {
	if err := c.readyToWrite(ctx, p); err != nil {
		return storage.FailedAppend(err)
	}
	var todo []mirrored
	next := p.next
	for _, data := range batches {
		h, err := record.ReadHeader(data)
		if err != nil {
			return storage.FailedAppend(fmt.Errorf("%w: a batch of %s/%d's source: %v", kerr.CorruptMessage, p.topic, p.index, err))
		}
		m := mirrored{data: data, base: h.FirstOffset, end: h.FirstOffset + int64(h.LastOffsetDelta) + 1, hdr: h}
		switch {
		case m.end <= next:
			continue // stored before: fetched again after a restart
		case m.base < next:
			return storage.FailedAppend(fmt.Errorf("%w: the source's batch at offsets %d-%d overlaps %s/%d's records, which end at %d", kerr.CorruptMessage, m.base, m.end-1, p.topic, p.index, next))
		}
		todo = append(todo, m)
		next = m.end
	}
	if len(todo) == 0 {
		app := storage.NewAppended()
		app.Finish(p.next, nil)
		return app
	}
	if !p.producers.loaded {
		if err := c.loadProducers(ctx, p); err != nil {
			return storage.FailedAppend(fmt.Errorf("%w: loading producer state: %v", kerr.NotLeaderForPartition, err))
		}
	}
	size := 0
	for _, m := range todo {
		size += len(m.data) + 2*record.BatchHeaderLen + 32
	}
	w := logentry.Records{Buf: make([]byte, 0, size)}
	b := &pendingBatch{base: p.next, n: int(next - p.next), durable: true, app: storage.NewAppended()}
	at := p.next
	for _, m := range todo {
		for at < m.base {
			n := min(m.base-at, maxGap)
			ts, _ := p.nextTs(m.hdr.FirstTimestamp)
			w.AddBatch(ts, record.Gap(at, int32(n), m.hdr.FirstTimestamp), at)
			at += n
		}
		b.lastTs, _ = p.nextTs(m.hdr.MaxTimestamp)
		w.AddBatch(b.lastTs, m.data, m.base)
		at = m.end
	}
	b.recs = w.Buf
	app := p.log(b)
	// The producers' state follows the source's: their sequences and
	// epochs, so that an idempotent producer goes on here after a
	// promotion, and their transactions, for the last stable offset and
	// read_committed readers. A write that fails leaves the state to be
	// read again from what is stored.
	for _, m := range todo {
		c.followProducer(p, &m)
	}
	app.Then(func(a *storage.Appended) {
		if a.Err != nil {
			go func() {
				p.writeMu.Lock()
				p.producers.loaded = false
				p.writeMu.Unlock()
			}()
		}
	})
	return app
}

// followProducer notes a mirrored batch's producer in the partition's
// state. Called with writeMu held.
func (c *Client) followProducer(p *partition, m *mirrored) {
	h := &m.hdr
	if h.ProducerID < 0 {
		return
	}
	ps := &p.producers
	if e := ps.m[h.ProducerID]; e != nil && h.ProducerEpoch < e.epoch {
		return // the source took it before a later epoch's batches; not ours to judge
	}
	transactional := h.Attributes&record.AttrTransactional != 0
	if h.Attributes&record.AttrControl != 0 {
		if !transactional {
			return
		}
		control, coordinatorEpoch, ok := record.ControlOf(m.data)
		if !ok {
			return
		}
		now := clock.Now()
		ps.txnMu.Lock()
		ps.applyTxnMark(&record.TxnMark{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, Control: control}, m.base)
		ps.noteCoordinator(h.ProducerID, coordinatorEpoch, now)
		ps.noteFence(h.ProducerID, h.ProducerEpoch, now)
		ps.txnMu.Unlock()
		return
	}
	if transactional {
		ps.txnMu.Lock()
		ps.applyTxnMark(&record.TxnMark{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, Control: record.NotControl}, m.base)
		ps.txnMu.Unlock()
	}
	if h.FirstSequence < 0 {
		return // transactional ids of producers that keep no sequence
	}
	pb := record.ProducerBatch{ID: h.ProducerID, Epoch: h.ProducerEpoch, FirstSeq: h.FirstSequence, LastSeq: record.LastSequence(h.FirstSequence, h.LastOffsetDelta)}
	ps.add(&pb, nil, m.base, m.base)
}

// MirroredProducers returns the largest producer id the partition's state
// holds (-1 for none): the gateways' producer ids must go past it before
// a mirrored topic takes produce (storage.Mirror).
func (c *Client) MirroredProducers(ctx context.Context, topic string, index int32) (int64, error) {
	p, err := c.ensureProducers(ctx, topic, index)
	if err != nil {
		return -1, err
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	top := int64(-1)
	for id := range p.producers.m {
		top = max(top, id)
	}
	return top, nil
}

// RaiseProducerIDs makes every producer id handed out from now on, on any
// gateway of the cluster, larger than floor (storage.Mirror): the next
// free id in the filer is moved past it, and this gateway's block below
// it dropped. The other gateways drop theirs when told (DropProducerIDs).
func (c *Client) RaiseProducerIDs(ctx context.Context, floor int64) error {
	// Reserved on the turn NewProducerID reserves on: a block it reserved
	// before the floor moved never replaces the one reserved after.
	if err := c.pids.reserving.take(ctx); err != nil {
		return err
	}
	defer c.pids.reserving.give()
	for {
		first, err := c.reserveProducerIDs(ctx, producerIDBlock)
		if err != nil {
			return err
		}
		if first > floor {
			c.pids.mu.Lock()
			if c.pids.next <= floor || c.pids.next >= c.pids.end {
				c.pids.next, c.pids.end = first, first+producerIDBlock
			}
			c.pids.mu.Unlock()
			return nil
		}
		if end := first + producerIDBlock; end <= floor {
			// Far below: one reservation takes the rest up to the floor.
			if _, err := c.reserveProducerIDs(ctx, floor+1-end); err != nil {
				return err
			}
		}
	}
}

// DropProducerIDs forgets this gateway's reserved producer ids if any of
// them is at most floor: the next one is reserved afresh, past it once
// RaiseProducerIDs moved the filer's.
func (c *Client) DropProducerIDs(floor int64) {
	c.pids.mu.Lock()
	if c.pids.next <= floor {
		c.pids.next = c.pids.end
	}
	c.pids.mu.Unlock()
}
