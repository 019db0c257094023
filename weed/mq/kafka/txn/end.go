package txn

// A transaction's end, in two phases (EndTxn, or its timeout): the decision
// saved, the markers written, the offsets committed, the end saved.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/glog"
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
	if err := c.save(ctx, t); err != nil {
		return err
	}
	glog.V(1).Infof("kafka transaction %s: %s (producer %d epoch %d, %d topics)", t.st.ID, t.st.State, t.st.ProducerID, t.st.Epoch, topics)
	return nil
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
	d := time.Until(time.UnixMilli(start).Add(time.Duration(t.st.TimeoutMs) * time.Millisecond))
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
		t.st.Epoch++
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
