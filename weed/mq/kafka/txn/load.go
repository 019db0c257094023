package txn

// Loading: which transactional ids this gateway coordinates, reading their
// saved states, finishing the transactions a stopped gateway left half
// ended, dropping ids that moved away, and expiring idle ids.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
)

// With several gateways, the decided transactions whose markers could not
// all be written are tried again every retryEvery, and the saved ids are
// listed at least every relistEvery besides at each change of what this
// gateway serves (a listing reads every id's state).
const (
	retryEvery  = 3 * time.Second
	relistEvery = time.Minute
)

// Start loads the saved transactional ids this gateway coordinates in the
// background, retrying until the filer answers, and finishes the
// transactions a stopped gateway left between their two phases. Until then
// requests get COORDINATOR_LOAD_IN_PROGRESS. With several gateways it goes
// on dropping the ids that moved away and loading those that came, so that
// their open transactions time out and decided ones finish.
func (c *Coordinator) Start() {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		changed := c.changed() // before the first listing: no change goes unseen
		for {
			err := guard.Try("TxnLoad", c.load)
			if err == nil {
				break
			}
			glog.Warningf("kafka transactions: %v; retrying", err)
			select {
			case <-c.stop:
				return
			case <-time.After(2 * time.Second):
			}
		}
		expire := time.NewTicker(c.opts.ExpiryCheck)
		defer expire.Stop()
		if c.opts.Serving == nil {
			for { // one gateway: nothing moves
				select {
				case <-c.stop:
					return
				case <-expire.C:
					guard.Run("TxnExpiry", func() { c.ExpireIDs(clock.Now()) }) //nolint:errcheck // logged and counted; the next round tries again
				}
			}
		}
		retry := time.NewTicker(retryEvery)
		defer retry.Stop()
		relist := time.NewTicker(relistEvery)
		defer relist.Stop()
		failed := false // the last listing: tried again at the next retry
		for {
			list := false
			select {
			case <-c.stop:
				return
			case <-expire.C:
				guard.Run("TxnExpiry", func() { c.ExpireIDs(clock.Now()) }) //nolint:errcheck // logged and counted; the next round tries again
			case <-changed:
				changed = c.changed()          // before looking: no change goes unseen
				guard.Run("TxnSweep", c.sweep) //nolint:errcheck // logged and counted; the next change tries again
				list = true
			case <-relist.C:
				list = true
			case <-retry.C:
				guard.Run("TxnRetry", c.retryUnfinished) //nolint:errcheck // logged and counted; the next round tries again
				list = failed
			}
			if list {
				err := guard.Try("TxnLoad", c.load)
				if failed = err != nil; failed {
					glog.Warningf("kafka transactions: %v (listed again in %v)", err, retryEvery)
				}
			}
		}
	}()
}

// ExpireIDs removes the transactional ids this gateway coordinates that
// have no transaction going on (Empty, CompleteCommit, CompleteAbort) and
// whose state has not changed for IDExpiration by now, from memory and from
// the filer, as Kafka expires them. Their producers' next InitProducerID
// starts them afresh; an old producer's other requests are refused as from
// an unknown producer.
func (c *Coordinator) ExpireIDs(now time.Time) {
	if c.opts.IDExpiration < 0 {
		return
	}
	c.mu.Lock()
	all := make([]*txn, 0, len(c.txns))
	for _, t := range c.txns {
		all = append(all, t)
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
	defer cancel()
	removed := 0
	for _, t := range all {
		if !t.turn.TryAcquire(1) {
			continue // busy: not idle anyway
		}
		st := t.st.State
		idle := st == Empty || st == CompleteCommit || st == CompleteAbort
		if idle && time.UnixMilli(t.st.UpdatedMs).Add(c.opts.IDExpiration).Before(now) {
			if term, ok := c.serving(t.st.ID); ok && term == t.term {
				// Removed only as this gateway last read or wrote it: a
				// removal landing late, once another gateway took the id
				// over and wrote it, leaves what that one wrote.
				err := c.opts.Files.RemoveIf(ctx, Dir, filerfs.Escape(t.st.ID), t.version)
				if errors.Is(err, filerfs.ErrChanged) {
					glog.V(0).Infof("kafka transaction %s: not removed as expired: written by another gateway since", t.st.ID)
					c.mu.Lock()
					c.unloadLocked(t) // read again when next asked
					c.mu.Unlock()
				} else if err != nil {
					glog.Warningf("kafka transaction %s: removing the expired id: %v", t.st.ID, err)
				} else {
					c.mu.Lock()
					c.unloadLocked(t)
					c.mu.Unlock()
					removed++
				}
			}
		}
		t.turn.Release(1)
	}
	if removed > 0 {
		glog.V(0).Infof("kafka transactions: removed %d transactional ids unused for %v (transactional.id.expiration.ms)", removed, c.opts.IDExpiration)
	}
}

// serving returns the term of this gateway's ownership of the id, if it
// serves it.
func (c *Coordinator) serving(id string) (int64, bool) {
	if c.opts.Serving == nil {
		return 0, true
	}
	return c.opts.Serving(id)
}

// changed is the channel closed at the next change of what is served here
// (nil, never closed, if nothing changes).
func (c *Coordinator) changed() <-chan struct{} {
	if c.opts.Changed == nil {
		return nil
	}
	return c.opts.Changed()
}

// sweep drops the ids whose ownership ended or broke since they were
// loaded.
func (c *Coordinator) sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, t := range c.txns {
		if term, ok := c.serving(id); !ok || term != t.term {
			c.unloadLocked(t)
		}
	}
}

func (c *Coordinator) unloadLocked(t *txn) {
	if c.txns[t.id] == t {
		delete(c.txns, t.id)
	}
	for _, pid := range t.pids {
		if c.byPID[pid] == t {
			delete(c.byPID, pid)
		}
	}
	t.stopTimer()
}

func (c *Coordinator) load() error {
	ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
	defer cancel()
	files, err := c.opts.Files.ListFiles(ctx, Dir)
	if err != nil {
		return fmt.Errorf("listing transactions: %w", err)
	}
	var unfinished []*txn
	loaded := 0
	c.mu.Lock()
	for _, f := range files {
		if f.Dir {
			continue
		}
		if t := c.adoptLocked(f.Name, f.Data, f.Version); t != nil {
			loaded++
			if t.st.State == PrepareCommit || t.st.State == PrepareAbort {
				unfinished = append(unfinished, t)
			}
		}
	}
	first := !c.ready
	c.ready = true
	c.mu.Unlock()
	if first || loaded > 0 {
		glog.V(0).Infof("kafka transactions: loaded %d transactional ids, %d to finish", loaded, len(unfinished))
	}
	for _, t := range unfinished {
		c.finishLoaded(ctx, t)
	}
	return nil
}

// adoptLocked takes a saved state in if this gateway coordinates its id and
// does not hold it already; it returns the new state, or nil.
func (c *Coordinator) adoptLocked(file string, data []byte, version string) *txn {
	var st saved
	if err := json.Unmarshal(data, &st); err != nil {
		glog.Errorf("kafka transactions: unreadable state %s, ignored: %v", file, err)
		return nil
	}
	term, ok := c.serving(st.ID)
	if !ok {
		return nil
	}
	if old := c.txns[st.ID]; old != nil {
		if old.term == term {
			return nil
		}
		c.unloadLocked(old)
	}
	t := newTxn(term, st, version)
	c.txns[t.id] = t
	c.byPID[t.st.ProducerID] = t
	if t.st.State == Ongoing {
		c.armTimeout(t)
	}
	return t
}

// retryUnfinished finishes again the decided transactions whose markers
// could not all be written (a partition's or group's gateway was moving),
// those no request is busy with.
func (c *Coordinator) retryUnfinished() {
	c.mu.Lock()
	var todo []*txn
	for _, t := range c.txns {
		todo = append(todo, t)
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
	defer cancel()
	for _, t := range todo {
		if !t.turn.TryAcquire(1) {
			continue
		}
		if t.st.State == PrepareCommit || t.st.State == PrepareAbort {
			if err := c.finish(ctx, t); err != nil {
				glog.V(1).Infof("kafka transaction %s: finishing: %v (tried again later)", t.st.ID, err)
			}
		}
		t.turn.Release(1)
	}
}

// finishLoaded carries out a transaction that was decided before it was
// loaded.
func (c *Coordinator) finishLoaded(ctx context.Context, t *txn) {
	if t.take(ctx) != nil {
		return // the operation going on, or the next, finishes it
	}
	defer t.turn.Release(1)
	if t.st.State != PrepareCommit && t.st.State != PrepareAbort {
		return
	}
	if err := c.finish(ctx, t); err != nil {
		glog.Warningf("kafka transaction %s: finishing a transaction decided before: %v (the producer's retry or the next load finishes it)", t.st.ID, err)
	}
}
