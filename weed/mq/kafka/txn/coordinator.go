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
	"io/fs"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
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

// Groups end a transaction's offsets in the groups it added: the groups'
// coordinators hold the offsets (TxnOffsetCommit) and commit or drop them
// at the transaction's end.
type Groups interface {
	EndTxnOffsets(ctx context.Context, group string, producerID int64, epoch int16, commit bool) error
}

// Options configure a Coordinator.
type Options struct {
	Files  filerfs.VersionedFiles
	Log    Log
	Groups Groups
	// IDExpiration is transactional.id.expiration.ms: an id with no
	// transaction going on whose state has not changed for this long is
	// removed (its producer starts afresh with InitProducerID). Zero:
	// DefaultIDExpiration; negative: never.
	IDExpiration time.Duration
	// ExpiryCheck is how often that is looked at
	// (transaction.remove.expired.transaction.cleanup.interval.ms); zero:
	// DefaultExpiryCheck.
	ExpiryCheck time.Duration
	// Owner reports whether this gateway coordinates a transactional id,
	// and since which term (state loaded in an earlier term is stale);
	// nil: every id, always.
	Owner func(id string) (term int64, ok bool)
	// ViewEpoch is the cluster view's epoch, which changes when gateways
	// come and go: the saved ids are listed again (to take over those
	// that came here) for a while after it changes, not all the time.
	// Nil: only now and then.
	ViewEpoch func() int64
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
	term    int64  // of this gateway's ownership when loaded
	version string // of its state file, as loaded or saved
	mu      sync.Mutex
	st      saved
	timer   *time.Timer
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
	StartMs    int64              `json:"startMs"`
	UpdatedMs  int64              `json:"updatedMs"`
}

// Kafka's transactional.id.expiration.ms (7 days) and
// transaction.remove.expired.transaction.cleanup.interval.ms (1 hour).
const (
	DefaultIDExpiration = 7 * 24 * time.Hour
	DefaultExpiryCheck  = time.Hour
)

// New returns a coordinator; Start loads the saved transactions.
func New(opts Options) *Coordinator {
	if opts.IDExpiration == 0 {
		opts.IDExpiration = DefaultIDExpiration
	}
	if opts.ExpiryCheck <= 0 {
		opts.ExpiryCheck = DefaultExpiryCheck
	}
	return &Coordinator{opts: opts, txns: map[string]*txn{}, byPID: map[int64]*txn{}, stop: make(chan struct{})}
}

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
		for {
			err := metrics.Try("TxnLoad", c.load)
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
		sweep := time.NewTicker(sweepEvery)
		defer sweep.Stop()
		var epoch int64
		if c.opts.ViewEpoch != nil {
			epoch = c.opts.ViewEpoch()
		}
		viewChanged, listed := time.Time{}, time.Now()
		expire := time.NewTicker(c.opts.ExpiryCheck)
		defer expire.Stop()
		for n := 1; ; n++ {
			select {
			case <-c.stop:
				return
			case <-expire.C:
				metrics.Guard("TxnExpiry", func() { c.ExpireIDs(time.Now()) }) //nolint:errcheck // logged and counted; the next round tries again
				continue
			case <-sweep.C:
			}
			if c.opts.Owner == nil {
				continue // one gateway: nothing moves
			}
			metrics.Guard("TxnSweep", func() { //nolint:errcheck // logged and counted; the next round tries again
				c.sweep()
				if n%reloadEvery != 0 {
					return
				}
				if c.opts.ViewEpoch != nil {
					if e := c.opts.ViewEpoch(); e != epoch {
						epoch, viewChanged = e, time.Now()
					}
				}
				// Ids taken over are served once the new view has
				// settled: they are listed until a while after.
				if time.Since(viewChanged) < relistAfterViewChange || time.Since(listed) > relistEvery {
					if err := c.load(); err != nil {
						glog.Warningf("kafka transactions: %v", err)
					}
					listed = time.Now()
				}
				c.retryUnfinished()
			})
		}
	}()
}

// sweepEvery is how often ids whose ownership ended are dropped; a
// variable for tests.
var sweepEvery = 500 * time.Millisecond

// reloadEvery is how many sweeps pass between looks at the view (and the
// retries of unfinished transactions).
const reloadEvery = 6

// The saved ids are listed again, with several gateways, for
// relistAfterViewChange after the view changes (past its settle time), and
// at least every relistEvery: a listing reads every id's state.
const (
	relistAfterViewChange = 10 * time.Second
	relistEvery           = time.Minute
)

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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	removed := 0
	for _, t := range all {
		if !t.mu.TryLock() {
			continue // busy: not idle anyway
		}
		st := t.st.State
		idle := st == Empty || st == CompleteCommit || st == CompleteAbort
		if idle && time.UnixMilli(t.st.UpdatedMs).Add(c.opts.IDExpiration).Before(now) {
			if term, ok := c.owner(t.st.ID); ok && term == t.term {
				if err := c.opts.Files.Remove(ctx, Dir, filerfs.Escape(t.st.ID)); err != nil {
					glog.Warningf("kafka transaction %s: removing the expired id: %v", t.st.ID, err)
				} else {
					c.mu.Lock()
					c.unloadLocked(t)
					c.mu.Unlock()
					removed++
				}
			}
		}
		t.mu.Unlock()
	}
	if removed > 0 {
		glog.V(0).Infof("kafka transactions: removed %d transactional ids unused for %v (transactional.id.expiration.ms)", removed, c.opts.IDExpiration)
	}
}

// owner returns the term of this gateway's ownership of the id.
func (c *Coordinator) owner(id string) (int64, bool) {
	if c.opts.Owner == nil {
		return 0, true
	}
	return c.opts.Owner(id)
}

// sweep drops the ids whose ownership ended or broke since they were
// loaded.
func (c *Coordinator) sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, t := range c.txns {
		if term, ok := c.owner(id); !ok || term != t.term {
			c.unloadLocked(t)
		}
	}
}

func (c *Coordinator) unloadLocked(t *txn) {
	if c.txns[t.st.ID] == t {
		delete(c.txns, t.st.ID)
	}
	if c.byPID[t.st.ProducerID] == t {
		delete(c.byPID, t.st.ProducerID)
	}
	if t.timer != nil {
		t.timer.Stop()
	}
}

func (c *Coordinator) load() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
	t := &txn{version: version}
	if err := json.Unmarshal(data, &t.st); err != nil {
		glog.Errorf("kafka transactions: unreadable state %s, ignored: %v", file, err)
		return nil
	}
	term, ok := c.owner(t.st.ID)
	if !ok {
		return nil
	}
	if old := c.txns[t.st.ID]; old != nil {
		if old.term == term {
			return nil
		}
		c.unloadLocked(old)
	}
	t.term = term
	c.txns[t.st.ID] = t
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, t := range todo {
		if !t.mu.TryLock() {
			continue
		}
		if t.st.State == PrepareCommit || t.st.State == PrepareAbort {
			if err := c.finish(ctx, t); err != nil {
				glog.V(1).Infof("kafka transaction %s: finishing: %v (tried again later)", t.st.ID, err)
			}
		}
		t.mu.Unlock()
	}
}

// finishLoaded carries out a transaction that was decided before it was
// loaded.
func (c *Coordinator) finishLoaded(ctx context.Context, t *txn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.st.State != PrepareCommit && t.st.State != PrepareAbort {
		return
	}
	if err := c.finish(ctx, t); err != nil {
		glog.Warningf("kafka transaction %s: finishing a transaction decided before: %v (the producer's retry or the next load finishes it)", t.st.ID, err)
	}
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

// get returns the transactional id's state (nil if unknown) and the term
// of this gateway's ownership, or the error for a request that comes before
// the states are loaded or to a gateway that does not coordinate the id.
func (c *Coordinator) get(ctx context.Context, id string) (*txn, int64, *kerr.Error) {
	term, owned := c.owner(id)
	if !owned {
		return nil, 0, kerr.NotCoordinator
	}
	c.mu.Lock()
	if !c.ready {
		c.mu.Unlock()
		return nil, 0, kerr.CoordinatorLoadInProgress
	}
	t := c.txns[id]
	if t != nil && t.term != term {
		c.unloadLocked(t)
		t = nil
	}
	c.mu.Unlock()
	if t != nil {
		return t, term, nil
	}
	// Perhaps just taken over from another gateway, or a stale copy was
	// dropped: the filer has it.
	data, version, err := c.opts.Files.ReadFileVersion(ctx, Dir, filerfs.Escape(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, term, nil
	}
	if err != nil {
		glog.Warningf("kafka transaction %s: %v", id, err)
		return nil, 0, kerr.CoordinatorLoadInProgress
	}
	c.mu.Lock()
	t = c.adoptLocked(filerfs.Escape(id), data, version)
	if t == nil {
		t = c.txns[id]
	}
	c.mu.Unlock()
	if t != nil && (t.st.State == PrepareCommit || t.st.State == PrepareAbort) {
		c.finishLoaded(ctx, t)
	}
	return t, term, nil
}

func (c *Coordinator) save(ctx context.Context, t *txn) error {
	if term, ok := c.owner(t.st.ID); !ok || term != t.term {
		// Another gateway coordinates the id now: this copy is stale.
		return fmt.Errorf("transaction %s: %w", t.st.ID, kerr.NotCoordinator)
	}
	t.st.UpdatedMs = time.Now().UnixMilli()
	data, err := json.Marshal(&t.st)
	if err != nil {
		return err
	}
	version, err := c.opts.Files.WriteFileIf(ctx, Dir, filerfs.Escape(t.st.ID), data, t.version)
	if errors.Is(err, filerfs.ErrChanged) {
		// Another gateway saved the id since this one loaded it: this
		// copy is stale (the id moved while this gateway was paused or
		// slow). It is dropped, and read afresh if it comes back.
		glog.Warningf("kafka transaction %s: saved by another gateway since loaded here; dropping this copy", t.st.ID)
		c.mu.Lock()
		c.unloadLocked(t)
		c.mu.Unlock()
		return fmt.Errorf("transaction %s: %w", t.st.ID, kerr.NotCoordinator)
	}
	if err != nil {
		return fmt.Errorf("saving transaction %s: %w", t.st.ID, err)
	}
	t.version = version
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
func (c *Coordinator) producerTxn(ctx context.Context, id string, producerID int64, epoch int16) (*txn, *kerr.Error) {
	t, _, kerrr := c.get(ctx, id)
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
	t, term, kerrr := c.get(ctx, id)
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
			t = &txn{term: term, st: saved{ID: id, ProducerID: pid, Epoch: -1, State: Empty}}
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
	t.st.Partitions, t.st.Groups = nil, nil
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
	t.st.Partitions, t.st.Groups = nil, nil
	return nil
}

// AddPartitions adds partitions to the producer's transaction.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, producerID int64, epoch int16, partitions map[string][]int32) *kerr.Error {
	t, kerrr := c.producerTxn(ctx, id, producerID, epoch)
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
	t, kerrr := c.producerTxn(ctx, id, producerID, epoch)
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

// EndTxn commits or aborts the producer's transaction. A retry of an end
// that completed succeeds again.
func (c *Coordinator) EndTxn(ctx context.Context, id string, producerID int64, epoch int16, commit bool) *kerr.Error {
	t, kerrr := c.producerTxn(ctx, id, producerID, epoch)
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
	for _, g := range t.st.Groups {
		if err := c.opts.Groups.EndTxnOffsets(ctx, g, t.st.ProducerID, t.st.Epoch, commit); err != nil {
			return fmt.Errorf("ending the offsets of group %s: %w", g, err)
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

// Verify checks that a transactional batch of producerID may go to the
// partition: its transaction is open and has the partition. fn (the write)
// runs while the transaction cannot end. id is the transactional id when
// the request names it (Produce v3+): its state is loaded if this gateway
// has just taken it over.
func (c *Coordinator) Verify(ctx context.Context, id *string, producerID int64, epoch int16, topic string, partition int32, fn func()) *kerr.Error {
	var t *txn
	if id != nil {
		var kerrr *kerr.Error
		if t, _, kerrr = c.get(ctx, *id); kerrr != nil {
			return kerr.NotEnoughReplicas // retriable for a producer: the coordinator is loading or moving
		}
		if t != nil && t.st.ProducerID != producerID {
			t = nil
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
	t, _, kerrr := c.get(context.Background(), id)
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
