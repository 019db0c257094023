package txn

// A transaction's end, in two phases (EndTxn, or its timeout): the decision
// saved, the markers written, the offsets committed, the end saved.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// EndTxn commits or aborts the producer's transaction. A retry of an end
// that completed succeeds again.
func (c *Coordinator) EndTxn(ctx context.Context, id string, producerID int64, epoch int16, commit bool) *kerr.Error {
	t, e := c.producerTxn(ctx, id, producerID, epoch)
	if e != nil {
		return e
	}
	defer t.turn.Release(1)
	switch t.st.State {
	case Ongoing:
		next := t.next()
		next.State = decision(commit)
		if err := c.save(ctx, t, next); err != nil {
			return storageErr(id, err)
		}
		t.stopTimer()
	case PrepareCommit, PrepareAbort:
		if (t.st.State == PrepareCommit) != commit {
			return kerr.InvalidTxnState
		}
	case CompleteCommit, CompleteAbort:
		if (t.st.State == CompleteCommit) == commit {
			return nil // the producer lost our answer
		}
		return kerr.InvalidTxnState
	default:
		return kerr.InvalidTxnState
	}
	if err := c.finish(ctx, t); err != nil {
		return storageErr(id, err)
	}
	return nil
}

// decision is the state that decides a transaction's end.
func decision(commit bool) State {
	if commit {
		return PrepareCommit
	}
	return PrepareAbort
}

// finish carries out a decided transaction: markers to every partition,
// the offsets to their groups if it commits, then the end is saved. Called
// on the id's turn; it can be called again after a failure. The markers go
// once the transaction's writes going on are done. The markers
// carry the term of this gateway's ownership of the id (Kafka's
// coordinator epoch): a partition that took a marker from a later term
// refuses this one (a gateway that was deposed while it wrote them).
func (c *Coordinator) finish(ctx context.Context, t *txn) error {
	if term, ok := c.serving(t.st.ID); !ok || term != t.term {
		return fmt.Errorf("transaction %s: %w", t.st.ID, kerr.NotCoordinator)
	}
	if err := t.waitWrites(ctx); err != nil {
		return err
	}
	commit := t.st.State == PrepareCommit
	coordinatorEpoch := CoordinatorEpoch(t.term)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for topic, parts := range t.st.Partitions {
		for _, p := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := c.opts.Log.WriteMarker(ctx, topic, p, storage.Marker{ProducerID: t.st.ProducerID, Epoch: t.st.Epoch, CoordinatorEpoch: coordinatorEpoch, Commit: commit, Bumped: t.st.Bumped})
				if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	for _, g := range t.st.Groups {
		if e := c.opts.Groups.EndTxnOffsets(ctx, g, t.st.ProducerID, t.st.Epoch, coordinatorEpoch, commit); e != nil {
			return fmt.Errorf("ending the offsets of group %s: %w", g, e)
		}
	}
	topics := len(t.st.Partitions)
	next := t.next()
	next.State = CompleteAbort
	if commit {
		next.State = CompleteCommit
	}
	next.Partitions, next.Groups = nil, nil
	switchProducerID(&next)
	if err := c.save(ctx, t, next); err != nil {
		return err
	}
	glog.V(1).Infof("kafka transaction %s: %s (producer %d epoch %d, %d topics)", t.st.ID, t.st.State, t.st.ProducerID, t.st.Epoch, topics)
	return nil
}

// CoordinatorEpoch is the coordinator epoch markers carry for a term of a
// gateway's ownership of a transactional id (a view's epoch).
func CoordinatorEpoch(term int64) int32 {
	return int32(min(max(term, 0), math.MaxInt32))
}

// bumpEpoch raises the producer's epoch in st, fencing the producer of the
// one before: at a transaction's end (KIP-890), its timeout, or a new
// producer's InitProducerID. Once the epochs are used up (32766), the
// epoch becomes the last one, for the markers, and a new producer id is
// taken, which the end switches to (switchProducerID).
func (c *Coordinator) bumpEpoch(ctx context.Context, st *saved) error {
	st.Bumped = true
	if st.Epoch < math.MaxInt16-1 {
		st.Epoch++
		return nil
	}
	if st.NextProducerID == 0 {
		pid, err := c.opts.Log.NewProducerID(ctx)
		if err != nil {
			return err
		}
		st.NextProducerID = pid
	}
	st.Epoch = math.MaxInt16
	return nil
}

// switchProducerID moves an ended transaction to the producer id its end
// took, if any.
func switchProducerID(st *saved) {
	if st.NextProducerID != 0 {
		st.PrevProducerID, st.ProducerID, st.Epoch, st.NextProducerID = st.ProducerID, st.NextProducerID, 0, 0
	}
}

// EndTxnV2 is EndTxn v5+ (transaction.version 2, KIP-890): the epoch is
// bumped at every end (the markers carry the new one) and the producer
// goes on with the returned id and epoch. A retry of an end, with the
// epoch before, gets the same answer; an abort of no transaction bumps the
// epoch too. Any other epoch is PRODUCER_FENCED.
func (c *Coordinator) EndTxnV2(ctx context.Context, id string, producerID int64, epoch int16, commit bool) (int64, int16, *kerr.Error) {
	t, _, e := c.get(ctx, id)
	if e != nil {
		return -1, -1, e
	}
	if t == nil {
		return -1, -1, kerr.InvalidProducerIDMapping
	}
	if e := t.take(ctx); e != nil {
		return -1, -1, e
	}
	defer t.turn.Release(1)
	cur := t.st.Epoch
	retry := (producerID == t.st.ProducerID && epoch == cur-1) ||
		// the retry of an end that took a new producer id
		(producerID == t.st.PrevProducerID && cur == 0 && epoch >= math.MaxInt16-1)
	if producerID != t.st.ProducerID && !retry {
		return -1, -1, kerr.InvalidProducerIDMapping
	}
	decided := func(st State) bool { return (st == PrepareCommit || st == CompleteCommit) == commit }
	switch t.st.State {
	case Ongoing:
		if epoch != cur {
			return -1, -1, kerr.ProducerFenced
		}
		next := t.next()
		if err := c.bumpEpoch(ctx, &next); err != nil {
			return -1, -1, storageErr(id, err)
		}
		next.State = decision(commit)
		if err := c.save(ctx, t, next); err != nil {
			return -1, -1, storageErr(id, err)
		}
		t.stopTimer()
	case PrepareCommit, PrepareAbort:
		// An end whose markers failed: its retry carries it out.
		if !retry {
			return -1, -1, kerr.ProducerFenced
		}
		if !decided(t.st.State) {
			return -1, -1, kerr.InvalidTxnState
		}
	case CompleteCommit, CompleteAbort, Empty:
		switch {
		case retry && t.st.State != Empty:
			if !decided(t.st.State) {
				return -1, -1, kerr.InvalidTxnState
			}
			return t.st.ProducerID, t.st.Epoch, nil // the producer lost our answer
		case epoch != cur:
			return -1, -1, kerr.ProducerFenced
		case commit:
			return -1, -1, kerr.InvalidTxnState
		}
		// An abort with nothing open: the epoch is bumped all the same.
		next := t.next()
		if err := c.bumpEpoch(ctx, &next); err != nil {
			return -1, -1, storageErr(id, err)
		}
		next.State = CompleteAbort
		switchProducerID(&next)
		if err := c.save(ctx, t, next); err != nil {
			return -1, -1, storageErr(id, err)
		}
		return t.st.ProducerID, t.st.Epoch, nil
	default:
		return -1, -1, kerr.InvalidTxnState
	}
	if err := c.finish(ctx, t); err != nil {
		return -1, -1, storageErr(id, err)
	}
	return t.st.ProducerID, t.st.Epoch, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// armTimeout aborts the transaction if it is still open when its timeout
// has passed since it began, fencing its producer (a new epoch).
func (c *Coordinator) armTimeout(t *txn) {
	st := t.state()
	d := time.UnixMilli(st.StartMs).Add(time.Duration(st.TimeoutMs) * time.Millisecond).Sub(clock.Now())
	c.abortAfter(t, st.StartMs, max(d, 0))
}

// abortAfter aborts the transaction that began at start after d, if it is
// still open then and this gateway still coordinates it; an abort that
// cannot be saved is tried again (the transaction stays open until then,
// in memory as in the filer).
func (c *Coordinator) abortAfter(t *txn, start int64, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil {
		t.timer.Stop()
	}
	t.timer = time.AfterFunc(d, func() {
		select {
		case <-c.stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
		defer cancel()
		if t.take(ctx) != nil {
			c.abortAfter(t, start, retryEvery) // still busy: looked at again
			return
		}
		defer t.turn.Release(1)
		if t.st.State != Ongoing || t.st.StartMs != start {
			return
		}
		if !c.holds(t) {
			return // its coordinator now times it out
		}
		glog.V(0).Infof("kafka transaction %s: aborted: open longer than its timeout of %d ms", t.st.ID, t.st.TimeoutMs)
		next := t.next()
		err := c.bumpEpoch(ctx, &next)
		if err == nil {
			next.State = PrepareAbort
			err = c.save(ctx, t, next)
		}
		if err != nil {
			glog.Warningf("kafka transaction %s: aborting after its timeout: %v (tried again in %v)", t.st.ID, err, retryEvery)
			c.abortAfter(t, start, retryEvery)
			return
		}
		if err := c.finish(ctx, t); err != nil {
			glog.Warningf("kafka transaction %s: aborting after its timeout: %v (finished later)", t.st.ID, err)
		}
	})
}

// holds reports whether t is the id's state this gateway holds, in its
// current term of the id.
func (c *Coordinator) holds(t *txn) bool {
	if term, ok := c.serving(t.id); !ok || term != t.term {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.txns[t.id] == t
}

// stopTimer stops the transaction's timeout, if one is armed.
func (t *txn) stopTimer() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil {
		t.timer.Stop()
	}
}
