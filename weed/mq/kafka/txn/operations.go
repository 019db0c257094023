package txn

// The operations of a transaction's life before its end: InitProducerID,
// AddPartitionsToTxn, AddOffsetsToTxn, and the check of each transactional
// produce.

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
)

// InitProducerID gives a transactional id its producer id and a new epoch,
// fencing the producers of older epochs; an open transaction of the id is
// aborted first.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeout time.Duration, producerID int64, epoch int16) (int64, int16, *kerr.Error) {
	if timeout <= 0 || timeout > MaxTimeout {
		return -1, -1, kerr.InvalidTransactionTimeout
	}
	t, term, e := c.get(ctx, id)
	if e != nil {
		return -1, -1, e
	}
	if t == nil {
		pid, err := c.opts.Log.NewProducerID(ctx)
		if err != nil {
			return -1, -1, storageErr(id, err)
		}
		c.mu.Lock()
		if t = c.txns[id]; t == nil {
			t = newTxn(term, saved{ID: id, ProducerID: pid, Epoch: -1, State: Empty}, "")
			c.txns[id] = t
			c.byPID[pid] = t
		}
		c.mu.Unlock()
	}
	if e := t.take(ctx); e != nil {
		return -1, -1, e
	}
	defer t.turn.Release(1)
	if producerID >= 0 && (producerID != t.st.ProducerID || epoch != t.st.Epoch) {
		// KIP-360: a producer re-initializing names its id and epoch;
		// another one has taken its place.
		return -1, -1, kerr.ProducerFenced
	}
	switch t.st.State {
	case Ongoing:
		// Fence the producer of the open transaction, then abort it.
		next := t.next()
		if err := c.bumpEpoch(ctx, &next); err != nil {
			return -1, -1, storageErr(id, err)
		}
		next.State = PrepareAbort
		if err := c.save(ctx, t, next); err != nil {
			return -1, -1, storageErr(id, err)
		}
		fallthrough
	case PrepareCommit, PrepareAbort:
		if err := c.finish(ctx, t); err != nil {
			return -1, -1, storageErr(id, err)
		}
	}
	next := t.next()
	if next.Epoch >= math.MaxInt16-1 {
		pid, err := c.opts.Log.NewProducerID(ctx)
		if err != nil {
			return -1, -1, storageErr(id, err)
		}
		next.ProducerID, next.Epoch = pid, 0
	} else {
		next.Epoch++
	}
	next.TimeoutMs = int32(timeout.Milliseconds())
	next.State = Empty
	next.Partitions, next.Groups = nil, nil
	old := t.st.ProducerID
	if err := c.save(ctx, t, next); err != nil {
		return -1, -1, storageErr(id, err)
	}
	if t.st.ProducerID != old {
		c.mu.Lock()
		if c.byPID[old] == t {
			delete(c.byPID, old)
		}
		t.pids = slices.DeleteFunc(t.pids, func(pid int64) bool { return pid == old })
		c.mu.Unlock()
	}
	glog.V(1).Infof("kafka transaction %s: producer %d epoch %d", id, t.st.ProducerID, t.st.Epoch)
	return t.st.ProducerID, t.st.Epoch, nil
}

// begin returns the state to save with the transaction Ongoing, begun now
// if it was not.
func (c *Coordinator) begin(t *txn) (saved, *kerr.Error) {
	next := t.next()
	switch next.State {
	case PrepareCommit, PrepareAbort:
		return next, kerr.ConcurrentTransactions
	case Ongoing:
		return next, nil
	}
	next.State = Ongoing
	next.StartMs = clock.Now().UnixMilli()
	next.Partitions, next.Groups = nil, nil
	return next, nil
}

// AddPartitions adds partitions to the producer's transaction.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, producerID int64, epoch int16, partitions map[string][]int32) *kerr.Error {
	t, e := c.producerTxn(ctx, id, producerID, epoch)
	if e != nil {
		return e
	}
	defer t.turn.Release(1)
	wasOngoing := t.st.State == Ongoing
	next, e := c.begin(t)
	if e != nil {
		return e
	}
	changed := !wasOngoing
	if next.Partitions == nil {
		next.Partitions = map[string][]int32{}
	}
	for topic, parts := range partitions {
		for _, p := range parts {
			if !contains(next.Partitions[topic], p) {
				next.Partitions[topic] = append(next.Partitions[topic], p)
				changed = true
			}
		}
	}
	if changed {
		if err := c.save(ctx, t, next); err != nil {
			return storageErr(id, err)
		}
	}
	if !wasOngoing {
		c.armTimeout(t)
	}
	return nil
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// AddGroup adds a group's offsets to the producer's transaction.
func (c *Coordinator) AddGroup(ctx context.Context, id string, producerID int64, epoch int16, group string) *kerr.Error {
	t, e := c.producerTxn(ctx, id, producerID, epoch)
	if e != nil {
		return e
	}
	defer t.turn.Release(1)
	wasOngoing := t.st.State == Ongoing
	next, e := c.begin(t)
	if e != nil {
		return e
	}
	for _, g := range next.Groups {
		if g == group && wasOngoing {
			return nil
		}
	}
	next.Groups = append(next.Groups, group)
	if err := c.save(ctx, t, next); err != nil {
		return storageErr(id, err)
	}
	if !wasOngoing {
		c.armTimeout(t)
	}
	return nil
}

// Verify checks that a transactional batch of producerID may go to the
// partition: its transaction is open and has the partition. fn (the write)
// runs before the transaction's markers: its end waits for it (not on the
// id's turn: the writes of one transaction to its partitions go on side by
// side). id is the transactional id when
// the request names it (Produce v3+): its state is loaded if this gateway
// has just taken it over. With add (Produce v12+, transaction.version 2)
// the partition is added to the transaction first, which it begins if
// none is open (KIP-890), with the errors a partition's leader gives the
// producer.
func (c *Coordinator) Verify(ctx context.Context, id *string, producerID int64, epoch int16, topic string, partition int32, add bool, fn func()) *kerr.Error {
	if add && id != nil {
		if e := ImplicitAddErr(c.AddPartitions(ctx, *id, producerID, epoch, map[string][]int32{topic: {partition}})); e != nil {
			return e
		}
	}
	var t *txn
	if id != nil {
		var e *kerr.Error
		if t, _, e = c.get(ctx, *id); e != nil {
			return kerr.NotEnoughReplicas // retriable for a producer: the coordinator is loading or moving
		}

	} else {
		c.mu.Lock()
		t = c.byPID[producerID]
		ready := c.ready
		c.mu.Unlock()
		if !ready {
			return kerr.NotLeaderForPartition // retriable; states still loading
		}
	}
	if t == nil {
		return kerr.InvalidTxnState
	}
	t.mu.Lock()
	switch {
	case t.st.ProducerID != producerID:
		t.mu.Unlock()
		return kerr.InvalidTxnState
	case epoch < t.st.Epoch:
		t.mu.Unlock()
		return kerr.InvalidProducerEpoch
	case t.st.State != Ongoing || !contains(t.st.Partitions[topic], partition):
		t.mu.Unlock()
		return kerr.InvalidTxnState
	}
	t.writes++
	t.mu.Unlock()
	defer t.wrote()
	fn()
	return nil
}

// ImplicitAddErr is the error a producer gets for a partition its
// transaction could not be given implicitly (KIP-890), from the
// coordinator's: a fenced epoch is INVALID_PRODUCER_EPOCH (abortable), an
// unknown producer INVALID_TXN_STATE, a coordinator moving or loading
// NOT_ENOUGH_REPLICAS (retriable); CONCURRENT_TRANSACTIONS (the last
// transaction still ending) and the others stay.
func ImplicitAddErr(e *kerr.Error) *kerr.Error {
	switch e {
	case nil:
		return nil
	case kerr.ProducerFenced:
		return kerr.InvalidProducerEpoch
	case kerr.InvalidProducerIDMapping:
		return kerr.InvalidTxnState
	case kerr.NotCoordinator, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable:
		return kerr.NotEnoughReplicas
	}
	return e
}
