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
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"golang.org/x/sync/semaphore"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
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
	WriteMarker(ctx context.Context, topic string, partition int32, m storage.Marker) error
}

// Groups end a transaction's offsets in the groups it added: the groups'
// coordinators hold the offsets (TxnOffsetCommit) and commit or drop them
// at the transaction's end.
type Groups interface {
	EndTxnOffsets(ctx context.Context, group string, producerID int64, epoch int16, coordinatorEpoch int32, commit bool) *kerr.Error
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
	// Serving reports whether this gateway serves a transactional id
	// now, as its coordinator, and in which term (state loaded in an
	// earlier term is stale): membership.Serving. Nil: every id, always.
	Serving func(id string) (term int64, ok bool)
	// Changed is closed when what Serving answers may have changed
	// (membership.Changed): the ids that moved away are dropped then, and
	// the saved ids listed to take over those that came. Nil: it never
	// changes.
	Changed func() <-chan struct{}
}

// Coordinator coordinates every transactional id.
//
// Ownership: an operation on a transactional id (InitProducerID, an add,
// an end, its timeout, the finish of a loaded or failed end) takes the
// id's turn and holds it to its end, I/O included, so that operations on
// one id happen one at a time; waiting for the turn ends with the
// request's context. The mutexes (the coordinator's, each id's) guard
// fields for a moment and are never held across I/O: a describe, a list,
// a transactional produce's check and the other ids never wait for the
// filer or a marker. Lock order: Coordinator.mu before txn.mu.
type Coordinator struct {
	opts Options

	mu    sync.Mutex
	txns  map[string]*txn
	byPID map[int64]*txn
	ready bool

	stop chan struct{}
	// ctx ends at Close: the background work's requests (timeouts,
	// retries, loads) end with it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// txn is one transactional id.
type txn struct {
	id   string              // the transactional id
	pids []int64             // its keys in Coordinator.byPID; under Coordinator.mu
	term int64               // of this gateway's ownership when loaded
	turn *semaphore.Weighted // held by the operation on the id going on

	// st and version (of its state file, as loaded or saved) are written
	// by the holder of the turn under mu, and read under mu or by the
	// holder of the turn.
	mu      sync.Mutex
	st      saved
	version string
	timer   *time.Timer // under mu
	// writes counts the transactional writes going on (Verify); a
	// transaction's markers wait for them. drained, when made, is closed
	// when they are done.
	writes  int
	drained chan struct{}
}

func newTxn(term int64, st saved, version string) *txn {
	return &txn{id: st.ID, pids: []int64{st.ProducerID}, term: term, turn: semaphore.NewWeighted(1), st: st, version: version}
}

// take waits for the id's turn, as long as ctx lets it; the caller
// releases it (t.turn.Release(1)).
func (t *txn) take(ctx context.Context) *kerr.Error {
	if err := t.turn.Acquire(ctx, 1); err != nil {
		glog.V(1).Infof("kafka transaction %s: waiting for the operation going on: %v", t.id, err)
		return kerr.ConcurrentTransactions
	}
	return nil
}

// state is the id's state as saved last.
func (t *txn) state() saved {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.st
}

// wrote ends a transactional write Verify admitted: the transaction's
// markers wait for its writes.
func (t *txn) wrote() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.writes--
	if t.writes == 0 && t.drained != nil {
		close(t.drained)
		t.drained = nil
	}
}

// waitWrites waits until no write of the transaction is going on.
func (t *txn) waitWrites(ctx context.Context) error {
	t.mu.Lock()
	if t.writes == 0 {
		t.mu.Unlock()
		return nil
	}
	if t.drained == nil {
		t.drained = make(chan struct{})
	}
	drained := t.drained
	t.mu.Unlock()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("transaction %s: waiting for its writes: %w", t.id, ctx.Err())
	}
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
	// NextProducerID is the producer id the transaction's end switches
	// to, its epochs used up (epoch 0 then); PrevProducerID the one it
	// switched from, so that a retried end is known (KIP-890).
	NextProducerID int64 `json:"nextProducerId,omitempty"`
	PrevProducerID int64 `json:"prevProducerId,omitempty"`
	// Bumped says the state's change raised the epoch (bumpEpoch): a
	// decided end's markers carry an epoch above its batches.
	Bumped bool `json:"bumped,omitempty"`
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
	ctx, cancel := context.WithCancel(context.Background())
	return &Coordinator{opts: opts, txns: map[string]*txn{}, byPID: map[int64]*txn{}, stop: make(chan struct{}), ctx: ctx, cancel: cancel}
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
		t.stopTimer()
	}
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// get returns the transactional id's state (nil if unknown) and the term
// of this gateway's ownership, or the error for a request that comes before
// the states are loaded or to a gateway that does not coordinate the id.
func (c *Coordinator) get(ctx context.Context, id string) (*txn, int64, *kerr.Error) {
	term, owned := c.serving(id)
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
	if t != nil {
		c.finishLoaded(ctx, t) // if it was decided before: on its turn
	}
	return t, term, nil
}

// save writes next as the id's state and, once it is written, makes it the
// state: what an operation decides is the state only when the filer holds
// it. A failed save leaves the state as it was, so that nothing is done on
// a decision not saved (a marker written for an abort the filer never
// took, while another gateway commits what the filer holds). Called on
// the id's turn.
func (c *Coordinator) save(ctx context.Context, t *txn, next saved) error {
	if term, ok := c.serving(t.st.ID); !ok || term != t.term {
		// Another gateway coordinates the id now: this copy is stale.
		return fmt.Errorf("transaction %s: %w", t.st.ID, kerr.NotCoordinator)
	}
	next.UpdatedMs = clock.Now().UnixMilli()
	data, err := json.Marshal(&next)
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
	if next.ProducerID != t.st.ProducerID {
		c.mu.Lock()
		if c.txns[t.id] == t {
			c.byPID[next.ProducerID] = t
			t.pids = append(t.pids, next.ProducerID)
		}
		c.mu.Unlock()
	}
	t.mu.Lock()
	t.st, t.version = next, version
	t.mu.Unlock()
	return nil
}

// next is a copy of the id's state for an operation to change and save
// (on the id's turn). Bumped is the change's own: none yet.
func (t *txn) next() saved {
	st := t.st
	st.Bumped = false
	st.Groups = slices.Clone(st.Groups)
	if st.Partitions != nil {
		st.Partitions = make(map[string][]int32, len(t.st.Partitions))
		for topic, parts := range t.st.Partitions {
			st.Partitions[topic] = slices.Clone(parts)
		}
	}
	return st
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

// producerTxn returns the transactional id's state, on its turn, once the
// producer's id and epoch are checked against it; the caller releases the
// turn.
func (c *Coordinator) producerTxn(ctx context.Context, id string, producerID int64, epoch int16) (*txn, *kerr.Error) {
	t, _, e := c.get(ctx, id)
	if e != nil {
		return nil, e
	}
	if t == nil {
		return nil, kerr.InvalidProducerIDMapping
	}
	if e := t.take(ctx); e != nil {
		return nil, e
	}
	if e := t.check(producerID, epoch); e != nil {
		t.turn.Release(1)
		return nil, e
	}
	return t, nil
}

// storageErr is the Kafka error for a failure to save or write: retriable.
func storageErr(id string, err error) *kerr.Error {
	glog.Warningf("kafka transaction %s: %v", id, err)
	return kerr.CoordinatorNotAvailable
}

// Seed writes a transactional id's state as another cluster had it (a
// topic link's source, at its promotion), if this cluster holds none: its
// producer id and epoch, so that the producer's next InitProducerId here
// raises the same producer's epoch; an ongoing transaction with its
// partitions, which this cluster's coordinator then ends (a producer that
// initializes aborts it, as does its timeout). It reports whether it
// wrote; an id with a state here is left as it is.
func Seed(ctx context.Context, files filerfs.VersionedFiles, id string, producerID int64, epoch int16, timeoutMs int32, ongoing map[string][]int32, startMs int64) (bool, error) {
	st := saved{ID: id, ProducerID: producerID, Epoch: epoch, TimeoutMs: timeoutMs, State: CompleteCommit, UpdatedMs: clock.Now().UnixMilli()}
	if len(ongoing) > 0 {
		st.State, st.Partitions, st.StartMs = Ongoing, ongoing, startMs
	}
	data, err := json.Marshal(&st)
	if err != nil {
		return false, err
	}
	_, err = files.WriteFileIf(ctx, Dir, filerfs.Escape(id), data, "")
	if errors.Is(err, filerfs.ErrChanged) {
		return false, nil
	}
	return err == nil, err
}
