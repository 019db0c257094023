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
)

// EndTxn commits or aborts the producer's transaction. A retry of an end
// that completed succeeds again.
func (c *Coordinator) EndTxn(ctx context.Context, id string, producerID int64, epoch int16, commit bool) *kerr.Error {
	t, e := c.producerTxn(ctx, id, producerID, epoch)
	if e != nil {
		return e
	}
	defer t.mu.Unlock()
	switch t.st.State {
	case Ongoing:
		if t.timer != nil {
			t.timer.Stop()
		}
		t.st.State = PrepareAbort
		if commit {
			t.st.State = PrepareCommit
		}
		if err := c.save(ctx, t); err != nil {
			t.st.State = Ongoing
			return storageErr(id, err)
		}
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

// finish carries out a decided transaction: markers to every partition,
// the offsets to their groups if it commits, then the end is saved. Called
// with t.mu held; it can be called again after a failure.
func (c *Coordinator) finish(ctx context.Context, t *txn) error {
	commit := t.st.State == PrepareCommit
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for topic, parts := range t.st.Partitions {
		for _, p := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := c.opts.Log.WriteMarker(ctx, topic, p, t.st.ProducerID, t.st.Epoch, commit)
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
		if e := c.opts.Groups.EndTxnOffsets(ctx, g, t.st.ProducerID, t.st.Epoch, commit); e != nil {
			return fmt.Errorf("ending the offsets of group %s: %w", g, e)
		}
	}
	topics := len(t.st.Partitions)
	t.st.State = CompleteAbort
	if commit {
		t.st.State = CompleteCommit
	}
	t.st.Partitions, t.st.Groups = nil, nil
	switched := c.switchProducerID(t)
	if err := c.save(ctx, t); err != nil {
		switched()
		return err
	}
	glog.V(1).Infof("kafka transaction %s: %s (producer %d epoch %d, %d topics)", t.st.ID, t.st.State, t.st.ProducerID, t.st.Epoch, topics)
	return nil
}

// bumpEpoch raises the producer's epoch, fencing the producer of the one
// before: at a transaction's end (KIP-890), its timeout, or a new
// producer's InitProducerID. Once the epochs are used up (32766), the
// epoch becomes the last one, for the markers, and a new producer id is
// taken, which the end switches to (switchProducerID).
func (c *Coordinator) bumpEpoch(ctx context.Context, t *txn) error {
	if t.st.Epoch < math.MaxInt16-1 {
		t.st.Epoch++
		return nil
	}
	if t.st.NextProducerID == 0 {
		pid, err := c.opts.Log.NewProducerID(ctx)
		if err != nil {
			return err
		}
		t.st.NextProducerID = pid
	}
	t.st.Epoch = math.MaxInt16
	return nil
}

// switchProducerID moves an ended transaction to the producer id its end
// took, if any, and returns what undoes it (for a failed save).
func (c *Coordinator) switchProducerID(t *txn) (undo func()) {
	next := t.st.NextProducerID
	if next == 0 {
		return func() {}
	}
	prev, prevEpoch, before := t.st.ProducerID, t.st.Epoch, t.st.PrevProducerID
	t.st.PrevProducerID, t.st.ProducerID, t.st.Epoch, t.st.NextProducerID = prev, next, 0, 0
	c.mu.Lock()
	c.byPID[next] = t
	c.mu.Unlock()
	return func() {
		t.st.PrevProducerID, t.st.ProducerID, t.st.Epoch, t.st.NextProducerID = before, prev, prevEpoch, next
		c.mu.Lock()
		delete(c.byPID, next)
		c.mu.Unlock()
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
	t.mu.Lock()
	defer t.mu.Unlock()
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
		if t.timer != nil {
			t.timer.Stop()
		}
		was := t.st
		if err := c.bumpEpoch(ctx, t); err != nil {
			return -1, -1, storageErr(id, err)
		}
		t.st.State = PrepareAbort
		if commit {
			t.st.State = PrepareCommit
		}
		if err := c.save(ctx, t); err != nil {
			t.st = was
			return -1, -1, storageErr(id, err)
		}
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
		was := t.st
		if err := c.bumpEpoch(ctx, t); err != nil {
			return -1, -1, storageErr(id, err)
		}
		t.st.State = CompleteAbort
		switched := c.switchProducerID(t)
		if err := c.save(ctx, t); err != nil {
			switched()
			t.st = was
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
	if t.timer != nil {
		t.timer.Stop()
	}
	start := t.st.StartMs
	d := time.UnixMilli(start).Add(time.Duration(t.st.TimeoutMs) * time.Millisecond).Sub(clock.Now())
	t.timer = time.AfterFunc(max(d, 0), func() {
		select {
		case <-c.stop:
			return
		default:
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.st.State != Ongoing || t.st.StartMs != start {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		glog.V(0).Infof("kafka transaction %s: aborted: open longer than its timeout of %d ms", t.st.ID, t.st.TimeoutMs)
		if err := c.bumpEpoch(ctx, t); err != nil {
			glog.Warningf("kafka transaction %s: %v", t.st.ID, err)
			return
		}
		t.st.State = PrepareAbort
		if err := c.save(ctx, t); err != nil {
			glog.Warningf("kafka transaction %s: %v", t.st.ID, err)
			return
		}
		if err := c.finish(ctx, t); err != nil {
			glog.Warningf("kafka transaction %s: aborting after its timeout: %v (the next start finishes it)", t.st.ID, err)
		}
	})
}
