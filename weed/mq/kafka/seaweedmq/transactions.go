package seaweedmq

// Transactions in a partition: the records of a transaction carry their
// producer (record.TxnMark); a marker (control record) ends the producer's
// transaction there. The partition knows each open transaction's first
// offset (the last stable offset stays below the first of them) and every
// aborted transaction's range, which read_committed fetches get.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// applyTxnMark follows a transaction record or marker stored at offset.
// Called with txnMu held.
func (ps *producerState) applyTxnMark(t *record.TxnMark, offset int64) {
	switch t.Control {
	case record.NotControl:
		if _, open := ps.ongoing[t.ProducerID]; !open {
			ps.ongoing[t.ProducerID] = offset
		}
	default:
		first, open := ps.ongoing[t.ProducerID]
		delete(ps.ongoing, t.ProducerID)
		if t.Control == record.ControlAbort && open {
			for _, a := range ps.aborted {
				if a.LastOffset == offset {
					return // read again after a restart
				}
			}
			ps.aborted = append(ps.aborted, storage.AbortedTxn{ProducerID: t.ProducerID, FirstOffset: first, LastOffset: offset})
		}
	}
	ps.dirty.Store(true)
}

// admitMarker takes a marker for the producer from coordinatorEpoch, or
// refuses it if a later coordinator's came before; the epoch is noted
// before the marker is written, so that a deposed coordinator's marker
// written meanwhile is refused too. Called with txnMu held.
func (ps *producerState) admitMarker(producerID int64, coordinatorEpoch int32, now time.Time) error {
	if last, ok := ps.coordinators[producerID]; ok && coordinatorEpoch < last.Epoch {
		return fmt.Errorf("producer %d's marker from coordinator epoch %d, after one from %d: %w", producerID, coordinatorEpoch, last.Epoch, kerr.TransactionCoordinatorFenced)
	}
	ps.noteCoordinator(producerID, coordinatorEpoch, now)
	return nil
}

// ensureProducers loads the partition's producer state if it is not yet.
// It returns the partition, recovered first if it was not.
func (c *Client) ensureProducers(ctx context.Context, topic string, index int32) (*partition, error) {
	var err error
	p, lookup := c.withPartition(ctx, topic, index, func(p *partition) {
		if err = c.ensureReady(ctx, p); err == nil && !p.producers.loaded {
			err = c.loadProducers(ctx, p)
		}
	})
	if lookup != nil {
		return nil, lookup
	}
	p.touch()
	return p, err
}

// WriteMarker implements storage.Backend: it ends the producer's
// transaction in the partition with a commit or abort marker, durably. A
// marker from a coordinator epoch below the producer's last one here is
// refused: once a transaction's new coordinator has written its markers,
// its producer may begin the next one, which a late marker from the
// deposed coordinator would end. So is a marker of a producer epoch the
// producer's batches here went past (appendLocked).
func (c *Client) WriteMarker(ctx context.Context, topic string, index int32, m storage.Marker) error {
	producerID, epoch, coordinatorEpoch, commit := m.ProducerID, m.Epoch, m.CoordinatorEpoch, m.Commit
	p, err := c.ensureProducers(ctx, topic, index)
	if err != nil {
		return err
	}
	control := int8(record.ControlAbort)
	if commit {
		control = record.ControlCommit
	}
	mark := &record.TxnMark{ProducerID: producerID, Epoch: epoch, Control: control, Bumped: m.Bumped}
	ps := &p.producers
	ps.txnMu.Lock()
	now := clock.Now()
	if err := ps.admitMarker(producerID, coordinatorEpoch, now); err != nil {
		ps.txnMu.Unlock()
		return fmt.Errorf("marker for %s/%d: %w", topic, index, err)
	}
	// From now on no batch of an earlier epoch of the producer is taken:
	// it would be stored past the marker (producerState.fences).
	ps.noteFence(producerID, epoch, now)
	ps.markSeq++
	id := ps.markSeq
	ps.pendingMarks[id] = max(p.knownHW(), 0)
	ps.txnMu.Unlock()
	defer func() {
		ps.txnMu.Lock()
		delete(ps.pendingMarks, id)
		ps.txnMu.Unlock()
	}()
	rec := record.Record{Key: record.ControlKey(control), Value: record.ControlValue(coordinatorEpoch), Timestamp: now.UnixMilli(), Txn: mark}
	app := c.Append(ctx, topic, index, []record.Record{rec}, true)
	select {
	case <-app.Done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if app.Err != nil {
		return fmt.Errorf("writing the transaction marker to %s/%d: %w", topic, index, app.Err)
	}
	ps.txnMu.Lock()
	ps.applyTxnMark(mark, app.Base)
	ps.txnMu.Unlock()
	return nil
}

// Transactions implements storage.Backend.
func (c *Client) Transactions(ctx context.Context, topic string, index int32, from, to int64) (storage.PartitionTxns, error) {
	p, err := c.ensureProducers(ctx, topic, index)
	if err != nil {
		return storage.PartitionTxns{}, err
	}
	logStart := c.logStartOf(ctx, topic, index)
	ps := &p.producers
	ps.txnMu.Lock()
	defer ps.txnMu.Unlock()
	ps.trimAborted(logStart)
	out := storage.PartitionTxns{FirstUnstable: -1, Aborted: ps.abortedBetween(from, to)}
	for _, first := range ps.ongoing {
		if out.FirstUnstable < 0 || first < out.FirstUnstable {
			out.FirstUnstable = first
		}
	}
	return out, nil
}

// Producers implements storage.Backend: the partition's idempotent and
// transactional producers (DescribeProducers).
func (c *Client) Producers(ctx context.Context, topic string, index int32) ([]storage.ProducerInfo, error) {
	p, err := c.ensureProducers(ctx, topic, index)
	if err != nil {
		return nil, err
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	ps := &p.producers
	ps.txnMu.Lock()
	defer ps.txnMu.Unlock()
	var out []storage.ProducerInfo
	for pid, e := range ps.m {
		e.settle()
		info := storage.ProducerInfo{ProducerID: pid, Epoch: e.epoch, LastSequence: e.lastSeq, LastTimestamp: e.used.UnixMilli(), TxnStartOffset: -1}
		if n := len(e.batches); n > 0 {
			info.LastSequence = e.batches[n-1].lastSeq
		}
		if first, open := ps.ongoing[pid]; open {
			info.TxnStartOffset = first
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b storage.ProducerInfo) int { return int(a.ProducerID - b.ProducerID) })
	return out, nil
}

// trimAborted forgets the aborted transactions that end below the log start
// offset: no reader gets their records any more. Called with txnMu held.
func (ps *producerState) trimAborted(logStart int64) {
	// In the order they ended: by their markers' offsets.
	n := sort.Search(len(ps.aborted), func(i int) bool { return ps.aborted[i].LastOffset >= logStart })
	if n > 0 {
		ps.aborted = slices.Delete(ps.aborted, 0, n)
		ps.dirty.Store(true)
	}
}

// abortedBetween are the aborted transactions with records between from
// and to: a fetch's, not a copy of them all. Called with txnMu held.
func (ps *producerState) abortedBetween(from, to int64) []storage.AbortedTxn {
	if from > to {
		return nil
	}
	var out []storage.AbortedTxn
	for _, a := range ps.aborted[sort.Search(len(ps.aborted), func(i int) bool { return ps.aborted[i].LastOffset >= from }):] {
		if a.FirstOffset <= to {
			out = append(out, a)
		}
	}
	return out
}
