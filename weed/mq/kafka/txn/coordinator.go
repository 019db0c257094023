// Package txn is the transaction coordinator: the state of each
// transactional.id (its producer id and epoch, the partitions and groups of
// its open transaction, the offsets it commits), kept in the filer, and the
// two-phase end of a transaction: the decision is saved first, then a
// commit or abort marker is written to every partition, then the
// transaction's offsets are committed, then the end is saved. A gateway that
// stops between the two phases finishes the transaction when it starts
// again, so a transaction is never partly visible.
package txn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
)

// Dir is where the filer keeps the transactional ids' states.
const Dir = "/etc/kafka-gateway/transactions"

// MaxTimeout is the longest transaction timeout a producer may ask for
// (Kafka's transaction.max.timeout.ms).
const MaxTimeout = 15 * time.Minute

// State is a transaction's state, named as Kafka names it.
type State string

const (
	Empty          State = "Empty"
	Ongoing        State = "Ongoing"
	PrepareCommit  State = "PrepareCommit"
	PrepareAbort   State = "PrepareAbort"
	CompleteCommit State = "CompleteCommit"
	CompleteAbort  State = "CompleteAbort"
)

// Log is where markers go and producer ids come from: SeaweedMQ.
type Log interface {
	NewProducerID(ctx context.Context) (int64, error)
	WriteMarker(ctx context.Context, topic string, partition int32, producerID int64, epoch int16, commit bool) error
}

// Groups commits a transaction's offsets when it commits.
type Groups interface {
	CommitTxnOffsets(ctx context.Context, group string, offsets offset.Topics) error
}

// Options configure a Coordinator.
type Options struct {
	Files  offset.Files
	Log    Log
	Groups Groups
}

// Coordinator coordinates every transactional id.
type Coordinator struct {
	opts Options

	mu    sync.Mutex
	txns  map[string]*txn
	byPID map[int64]*txn
	ready bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// txn is one transactional id. mu is held for a whole operation, including
// the writes of its markers, so operations on one id happen one at a time.
type txn struct {
	mu    sync.Mutex
	st    saved
	timer *time.Timer
}

// saved is a transactional id's state file.
type saved struct {
	ID         string             `json:"transactionalId"`
	ProducerID int64              `json:"producerId"`
	Epoch      int16              `json:"epoch"`
	TimeoutMs  int32              `json:"timeoutMs"`
	State      State              `json:"state"`
	Partitions map[string][]int32 `json:"partitions,omitempty"`
	Groups     []string           `json:"groups,omitempty"`
	// Offsets are the transaction's offsets per group, committed with it.
	Offsets   map[string]offset.Topics `json:"offsets,omitempty"`
	StartMs   int64                    `json:"startMs"`
	UpdatedMs int64                    `json:"updatedMs"`
}

// New returns a coordinator; Start loads the saved transactions.
func New(opts Options) *Coordinator {
	return &Coordinator{opts: opts, txns: map[string]*txn{}, byPID: map[int64]*txn{}, stop: make(chan struct{})}
}

// Start loads the saved transactional ids in the background, retrying until
// the filer answers, and finishes the transactions a stopped gateway left
// between their two phases. Until then requests get
// COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) Start() {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			err := c.load()
			if err == nil {
				return
			}
			glog.Warningf("kafka transactions: %v; retrying", err)
			select {
			case <-c.stop:
				return
			case <-time.After(2 * time.Second):
			}
		}
	}()
}

func (c *Coordinator) load() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	files, err := c.opts.Files.ListFiles(ctx, Dir)
	if err != nil {
		return fmt.Errorf("listing transactions: %w", err)
	}
	var unfinished []*txn
	c.mu.Lock()
	for _, f := range files {
		if f.Dir {
			continue
		}
		t := &txn{}
		if err := json.Unmarshal(f.Data, &t.st); err != nil {
			glog.Errorf("kafka transactions: unreadable state %s, ignored: %v", f.Name, err)
			continue
		}
		c.txns[t.st.ID] = t
		c.byPID[t.st.ProducerID] = t
		switch t.st.State {
		case PrepareCommit, PrepareAbort:
			unfinished = append(unfinished, t)
		case Ongoing:
			c.armTimeout(t)
		}
	}
	c.ready = true
	c.mu.Unlock()
	glog.V(0).Infof("kafka transactions: loaded %d transactional ids, %d to finish", len(files), len(unfinished))
	for _, t := range unfinished {
		t.mu.Lock()
		if err := c.finish(ctx, t); err != nil {
			glog.Warningf("kafka transaction %s: finishing after a restart: %v (the producer's retry or the next start finishes it)", t.st.ID, err)
		}
		t.mu.Unlock()
	}
	return nil
}

// Close stops the timers.
func (c *Coordinator) Close() {
	c.mu.Lock()
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	for _, t := range c.txns {
		if t.timer != nil {
			t.timer.Stop()
		}
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// get returns the transactional id's state (nil if unknown), or the error
// for a request that comes before the states are loaded.
func (c *Coordinator) get(id string) (*txn, *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		return nil, kerr.CoordinatorLoadInProgress
	}
	return c.txns[id], nil
}

func (c *Coordinator) save(ctx context.Context, t *txn) error {
	t.st.UpdatedMs = time.Now().UnixMilli()
	data, err := json.Marshal(&t.st)
	if err != nil {
		return err
	}
	if err := c.opts.Files.WriteFile(ctx, Dir, offset.Escape(t.st.ID), data); err != nil {
		return fmt.Errorf("saving transaction %s: %w", t.st.ID, err)
	}
	return nil
}

// check validates a producer's id and epoch against the transactional id's.
func (t *txn) check(producerID int64, epoch int16) *kerr.Error {
	switch {
	case producerID != t.st.ProducerID:
		return kerr.InvalidProducerIDMapping
	case epoch < t.st.Epoch:
		return kerr.ProducerFenced
	case epoch > t.st.Epoch:
		return kerr.InvalidProducerEpoch
	}
	return nil
}

// producerTxn returns the transactional id's state, locked, once the
// producer's id and epoch are checked against it; the caller unlocks.
func (c *Coordinator) producerTxn(id string, producerID int64, epoch int16) (*txn, *kerr.Error) {
	t, kerrr := c.get(id)
	if kerrr != nil {
		return nil, kerrr
	}
	if t == nil {
		return nil, kerr.InvalidProducerIDMapping
	}
	t.mu.Lock()
	if e := t.check(producerID, epoch); e != nil {
		t.mu.Unlock()
		return nil, e
	}
	return t, nil
}

// storageErr is the Kafka error for a failure to save or write: retriable.
func storageErr(id string, err error) *kerr.Error {
	glog.Warningf("kafka transaction %s: %v", id, err)
	return kerr.CoordinatorNotAvailable
}

// InitProducerID gives a transactional id its producer id and a new epoch,
// fencing the producers of older epochs; an open transaction of the id is
// aborted first.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeout time.Duration, producerID int64, epoch int16) (int64, int16, *kerr.Error) {
	if timeout <= 0 || timeout > MaxTimeout {
		return -1, -1, kerr.InvalidTransactionTimeout
	}
	t, kerrr := c.get(id)
	if kerrr != nil {
		return -1, -1, kerrr
	}
	if t == nil {
		pid, err := c.opts.Log.NewProducerID(ctx)
		if err != nil {
			return -1, -1, storageErr(id, err)
		}
		c.mu.Lock()
		if t = c.txns[id]; t == nil {
			t = &txn{st: saved{ID: id, ProducerID: pid, Epoch: -1, State: Empty}}
			c.txns[id] = t
			c.byPID[pid] = t
		}
		c.mu.Unlock()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if producerID >= 0 && (producerID != t.st.ProducerID || epoch != t.st.Epoch) {
		// KIP-360: a producer re-initializing names its id and epoch;
		// another one has taken its place.
		return -1, -1, kerr.ProducerFenced
	}
	switch t.st.State {
	case Ongoing:
		// Fence the producer of the open transaction, then abort it.
		t.st.Epoch++
		t.st.State = PrepareAbort
		if err := c.save(ctx, t); err != nil {
			return -1, -1, storageErr(id, err)
		}
		fallthrough
	case PrepareCommit, PrepareAbort:
		if err := c.finish(ctx, t); err != nil {
			return -1, -1, storageErr(id, err)
		}
	}
	if t.st.Epoch >= math.MaxInt16-1 {
		pid, err := c.opts.Log.NewProducerID(ctx)
		if err != nil {
			return -1, -1, storageErr(id, err)
		}
		c.mu.Lock()
		delete(c.byPID, t.st.ProducerID)
		c.byPID[pid] = t
		c.mu.Unlock()
		t.st.ProducerID, t.st.Epoch = pid, 0
	} else {
		t.st.Epoch++
	}
	t.st.TimeoutMs = int32(timeout.Milliseconds())
	t.st.State = Empty
	t.st.Partitions, t.st.Groups, t.st.Offsets = nil, nil, nil
	if err := c.save(ctx, t); err != nil {
		return -1, -1, storageErr(id, err)
	}
	glog.V(1).Infof("kafka transaction %s: producer %d epoch %d", id, t.st.ProducerID, t.st.Epoch)
	return t.st.ProducerID, t.st.Epoch, nil
}

// begin makes the transaction Ongoing if it is not.
func (c *Coordinator) begin(t *txn) *kerr.Error {
	switch t.st.State {
	case PrepareCommit, PrepareAbort:
		return kerr.ConcurrentTransactions
	case Ongoing:
		return nil
	}
	t.st.State = Ongoing
	t.st.StartMs = time.Now().UnixMilli()
	t.st.Partitions, t.st.Groups, t.st.Offsets = nil, nil, nil
	return nil
}

// AddPartitions adds partitions to the producer's transaction.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, producerID int64, epoch int16, partitions map[string][]int32) *kerr.Error {
	t, kerrr := c.producerTxn(id, producerID, epoch)
	if kerrr != nil {
		return kerrr
	}
	defer t.mu.Unlock()
	wasOngoing := t.st.State == Ongoing
	if e := c.begin(t); e != nil {
		return e
	}
	changed := !wasOngoing
	if t.st.Partitions == nil {
		t.st.Partitions = map[string][]int32{}
	}
	for topic, parts := range partitions {
		for _, p := range parts {
			if !contains(t.st.Partitions[topic], p) {
				t.st.Partitions[topic] = append(t.st.Partitions[topic], p)
				changed = true
			}
		}
	}
	if changed {
		if err := c.save(ctx, t); err != nil {
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
	t, kerrr := c.producerTxn(id, producerID, epoch)
	if kerrr != nil {
		return kerrr
	}
	defer t.mu.Unlock()
	wasOngoing := t.st.State == Ongoing
	if e := c.begin(t); e != nil {
		return e
	}
	for _, g := range t.st.Groups {
		if g == group && wasOngoing {
			return nil
		}
	}
	t.st.Groups = append(t.st.Groups, group)
	if err := c.save(ctx, t); err != nil {
		return storageErr(id, err)
	}
	if !wasOngoing {
		c.armTimeout(t)
	}
	return nil
}

// CommitOffsets records offsets the transaction commits for a group it
// added; they are committed when the transaction commits.
func (c *Coordinator) CommitOffsets(ctx context.Context, id string, producerID int64, epoch int16, group string, offsets offset.Topics) *kerr.Error {
	t, kerrr := c.producerTxn(id, producerID, epoch)
	if kerrr != nil {
		return kerrr
	}
	defer t.mu.Unlock()
	added := false
	for _, g := range t.st.Groups {
		added = added || g == group
	}
	if t.st.State != Ongoing || !added {
		return kerr.InvalidTxnState
	}
	if t.st.Offsets == nil {
		t.st.Offsets = map[string]offset.Topics{}
	}
	if t.st.Offsets[group] == nil {
		t.st.Offsets[group] = offset.Topics{}
	}
	now := time.Now().UnixMilli()
	for topic, parts := range offsets {
		if t.st.Offsets[group][topic] == nil {
			t.st.Offsets[group][topic] = map[int32]offset.Committed{}
		}
		for p, o := range parts {
			o.CommitTime = now
			t.st.Offsets[group][topic][p] = o
		}
	}
	if err := c.save(ctx, t); err != nil {
		return storageErr(id, err)
	}
	return nil
}

// PendingOffsets reports whether an open transaction will commit an offset
// of the group's partition (OffsetFetch with require_stable).
func (c *Coordinator) PendingOffsets(group, topic string, partition int32) bool {
	c.mu.Lock()
	all := make([]*txn, 0, len(c.txns))
	for _, t := range c.txns {
		all = append(all, t)
	}
	c.mu.Unlock()
	for _, t := range all {
		if !t.mu.TryLock() {
			return true // busy, perhaps ending: the reader asks again
		}
		_, pending := t.st.Offsets[group][topic][partition]
		open := t.st.State == Ongoing || t.st.State == PrepareCommit
		t.mu.Unlock()
		if pending && open {
			return true
		}
	}
	return false
}

// EndTxn commits or aborts the producer's transaction. A retry of an end
// that completed succeeds again.
func (c *Coordinator) EndTxn(ctx context.Context, id string, producerID int64, epoch int16, commit bool) *kerr.Error {
	t, kerrr := c.producerTxn(id, producerID, epoch)
	if kerrr != nil {
		return kerrr
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
	if commit {
		groups := make([]string, 0, len(t.st.Offsets))
		for g := range t.st.Offsets {
			groups = append(groups, g)
		}
		sort.Strings(groups)
		for _, g := range groups {
			if err := c.opts.Groups.CommitTxnOffsets(ctx, g, t.st.Offsets[g]); err != nil {
				return fmt.Errorf("committing the offsets of group %s: %w", g, err)
			}
		}
	}
	topics := len(t.st.Partitions)
	t.st.State = CompleteAbort
	if commit {
		t.st.State = CompleteCommit
	}
	t.st.Partitions, t.st.Groups, t.st.Offsets = nil, nil, nil
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

// Verify checks that a transactional batch of producerID may go to the
// partition: its transaction is open and has the partition. fn (the write)
// runs while the transaction cannot end.
func (c *Coordinator) Verify(producerID int64, epoch int16, topic string, partition int32, fn func()) *kerr.Error {
	c.mu.Lock()
	t := c.byPID[producerID]
	ready := c.ready
	c.mu.Unlock()
	if !ready {
		return kerr.NotLeaderForPartition // retriable; states still loading
	}
	if t == nil {
		return kerr.InvalidTxnState
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case epoch < t.st.Epoch:
		return kerr.InvalidProducerEpoch
	case t.st.State != Ongoing || !contains(t.st.Partitions[topic], partition):
		return kerr.InvalidTxnState
	}
	fn()
	return nil
}

// Described is a transaction as DescribeTransactions and ListTransactions
// show it.
type Described struct {
	ID         string
	State      State
	ProducerID int64
	Epoch      int16
	TimeoutMs  int32
	StartMs    int64 // -1 unless open
	Partitions map[string][]int32
}

// Describe returns the transactional id's state, or false if unknown.
func (c *Coordinator) Describe(id string) (Described, bool, *kerr.Error) {
	t, kerrr := c.get(id)
	if kerrr != nil || t == nil {
		return Described{}, false, kerrr
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.describe(), true, nil
}

func (t *txn) describe() Described {
	d := Described{ID: t.st.ID, State: t.st.State, ProducerID: t.st.ProducerID, Epoch: t.st.Epoch, TimeoutMs: t.st.TimeoutMs, StartMs: -1, Partitions: t.st.Partitions}
	if t.st.State == Ongoing || t.st.State == PrepareCommit || t.st.State == PrepareAbort {
		d.StartMs = t.st.StartMs
	}
	return d
}

// List returns every transactional id's state.
func (c *Coordinator) List() ([]Described, *kerr.Error) {
	c.mu.Lock()
	if !c.ready {
		c.mu.Unlock()
		return nil, kerr.CoordinatorLoadInProgress
	}
	all := make([]*txn, 0, len(c.txns))
	for _, t := range c.txns {
		all = append(all, t)
	}
	c.mu.Unlock()
	out := make([]Described, 0, len(all))
	for _, t := range all {
		t.mu.Lock()
		out = append(out, t.describe())
		t.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
