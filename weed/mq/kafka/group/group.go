package group

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
)

// State is a classic group's state, named as Kafka names it.
type State string

const (
	Empty               State = "Empty"
	PreparingRebalance  State = "PreparingRebalance"
	CompletingRebalance State = "CompletingRebalance"
	Stable              State = "Stable"
	Dead                State = "Dead"
)

// errGroupGone is returned to requests that reach a group after it was
// deleted or the coordinator closed.
var errGroupGone = errors.New("group is gone")

// group is one consumer group. Everything below ctl is owned by the group's
// goroutine (manage): requests and timers change it by sending a function
// to ctl.
type group struct {
	c    *Coordinator
	name string
	term int64 // of this gateway's ownership when the group was loaded
	ctl  chan func()
	quit chan struct{} // closed when the group ends (deleted, coordinator closed)

	// state is the group's state as Kafka names it, of whichever kind.
	state State
	// kind is what the group is besides its offsets: the protocol its
	// members speak and their state under it. A group without members
	// may change kind (a classic group becomes a consumer group at its
	// first ConsumerGroupHeartbeat, and back at a JoinGroup).
	kind kind

	saved   bool         // a state file exists
	used    atomic.Int64 // when a request last looked the group up (Unix ns)
	version string       // of the state file, as loaded or saved
	// Saves under way: one is written at a time, outside this goroutine;
	// the state to write next (the latest) waits with its waiters.
	saving       bool
	writingThens []func(error) // told the outcome of the write under way
	next         []byte
	nextThens    []func(error)
	// emptySince is when the group last became Empty (zero: unknown, in
	// a state saved before it was kept): its offsets expire
	// offsets.retention.minutes after it.
	emptySince time.Time
	// txnOffsets are offsets open transactions commit, by producer id:
	// committed when the transaction's coordinator sends its commit
	// marker, dropped at its abort marker.
	txnOffsets map[int64]*txnOffsets
	// txnCoordinators are, by producer id, the coordinator epoch of the
	// last transaction marker taken for the producer: a marker from an
	// earlier one (a deposed coordinator's) is refused.
	txnCoordinators map[int64]txnCoordinator

	seq uint64 // source of timer ids
}

func newGroup(c *Coordinator, name string) *group {
	g := &group{
		c:          c,
		name:       name,
		ctl:        make(chan func()),
		quit:       make(chan struct{}),
		state:      Empty,
		emptySince: time.Now(),

		txnOffsets:      map[int64]*txnOffsets{},
		txnCoordinators: map[int64]txnCoordinator{},
	}
	g.kind = newClassicGroup(g)
	return g
}

// manage runs the group's functions one at a time until the group ends.
func (g *group) manage() {
	defer g.c.wg.Done()
	for {
		select {
		case fn := <-g.ctl:
			if !g.run(fn) {
				return
			}
		case <-g.quit:
			return
		}
	}
}

// run runs fn; a panic in it unloads the group (its state may be half
// changed), so that the next request loads it afresh from the filer, and
// those waiting on it get COORDINATOR_NOT_AVAILABLE. The gateway goes on.
func (g *group) run(fn func()) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			guard.Recovered("Group", "group "+g.name, v)
			g.c.unload(g)
			ok = false
		}
	}()
	fn()
	return true
}

// send runs fn on the group's goroutine; it fails if the group is gone.
func (g *group) send(ctx context.Context, fn func()) error {
	select {
	case g.ctl <- fn:
		return nil
	case <-g.quit:
		return errGroupGone
	case <-ctx.Done():
		return ctx.Err()
	}
}

// after runs fn on the group's goroutine once d has passed.
func (g *group) after(d time.Duration, fn func()) {
	time.AfterFunc(d, func() {
		select {
		case g.ctl <- fn:
		case <-g.quit:
		}
	})
}

func (g *group) nextSeq() uint64 { g.seq++; return g.seq }

// stop ends the group's goroutine; requests waiting on it get errGroupGone.
func (g *group) stop() {
	select {
	case <-g.quit:
	default:
		close(g.quit)
	}
}

// exists reports whether Kafka would know the group: it has members, or
// state or offsets saved.
func (g *group) exists() bool {
	if g.saved || len(g.txnOffsets) > 0 {
		return true
	}
	if cl := g.classic(); cl != nil {
		// Not the member ids handed out and not yet joined with.
		return len(cl.members) > 0 || g.state != Empty
	}
	return g.kind.hasMembers()
}

// savedState is a group's state file: what is needed to carry on after a
// restart without a rebalance (generation, protocol, members and their
// assignments, static members).
type savedState struct {
	Group        string        `json:"group"`
	ProtocolType string        `json:"protocolType"`
	Protocol     string        `json:"protocol"`
	Generation   int32         `json:"generation"`
	Leader       string        `json:"leader"`
	Stable       bool          `json:"stable"` // every member has its assignment
	Members      []savedMember `json:"members"`
	// EmptySince is when the group last became Empty, Unix milliseconds.
	EmptySince int64 `json:"emptySince,omitempty"`
	// TxnOffsets are the pending offsets of open transactions.
	TxnOffsets []*txnOffsets `json:"txnOffsets,omitempty"`
	// TxnCoordinators: producer id -> its last marker's coordinator epoch.
	TxnCoordinators map[string]txnCoordinator `json:"txnCoordinators,omitempty"`
	// Type is "consumer" for a consumer group (KIP-848), "share" for a
	// share group (KIP-932), whose state is Consumer; empty for a classic
	// group.
	Type     string         `json:"type,omitempty"`
	Consumer *savedConsumer `json:"consumer,omitempty"`
}

// txnCoordinator is the coordinator epoch of a producer's last marker for
// the group, and when it came.
type txnCoordinator struct {
	Epoch int32 `json:"epoch"`
	At    int64 `json:"at"` // unix ms
}

// txnCoordinatorKept is how long a producer's last coordinator epoch is
// kept once nothing of it is pending (Kafka's
// transactional.id.expiration.ms).
const txnCoordinatorKept = 7 * 24 * time.Hour

// txnOffsets are the offsets a producer's open transaction commits for the
// group.
type txnOffsets struct {
	ProducerID int64         `json:"producerId"`
	Epoch      int16         `json:"epoch"`
	Offsets    offset.Topics `json:"offsets"`
}

type savedMember struct {
	ID              string          `json:"id"`
	InstanceID      *string         `json:"instanceId,omitempty"`
	ClientID        string          `json:"clientId"`
	ClientHost      string          `json:"clientHost"`
	SessionMillis   int64           `json:"sessionMs"`
	RebalanceMillis int64           `json:"rebalanceMs"`
	Protocols       []savedProtocol `json:"protocols"`
	Assignment      []byte          `json:"assignment,omitempty"`
}

type savedProtocol struct {
	Name     string `json:"name"`
	Metadata []byte `json:"metadata"`
}

// saveTimeout bounds writing a group's state.
const saveTimeout = 10 * time.Second

// MaxStateBytes bounds a group's state file: a state that would be larger
// is not saved, and what asked for it fails as Kafka fails a group record
// too large for its log (UNKNOWN_SERVER_ERROR). Kafka's bound is the
// offsets topic's max.message.bytes, 1 MiB of its binary records; the
// state here is JSON, with every member's metadata and assignment.
const MaxStateBytes = 8 << 20

// errStateTooLarge is a state over MaxStateBytes.
var errStateTooLarge = fmt.Errorf("%w: the group's state is larger than %d bytes", kerr.UnknownServerError, MaxStateBytes)

// saveThen saves the group's state as it is now and runs then (if not nil)
// on the group's goroutine with the outcome: nil once the state is in the
// filer, NOT_COORDINATOR if another gateway coordinates the group now or
// saved it since it was loaded here (this copy is then dropped), the
// filer's error otherwise. The filer is written outside the group's
// goroutine, which goes on answering meanwhile: one write at a time, in
// order; states that pile up behind a write are written once, the latest
// (each is the whole state). then never runs before saveThen returns, nor
// at all if the group ends first (its waiters watch quit).
func (g *group) saveThen(then func(error)) {
	data, err := g.snapshot()
	if err != nil {
		if then != nil { // later, as after a write: never within the caller
			g.c.wg.Add(1)
			go func() {
				defer g.c.wg.Done()
				g.deliver(func() { then(err) })
			}()
		}
		return
	}
	g.next = data
	if then != nil {
		g.nextThens = append(g.nextThens, then)
	}
	if !g.saving {
		g.writeNext()
	}
}

// writeNext starts writing the waiting state.
func (g *group) writeNext() {
	data, version := g.next, g.version
	g.writingThens, g.saving = g.nextThens, true
	g.next, g.nextThens = nil, nil
	g.c.wg.Add(1)
	go func() {
		defer g.c.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
		version, err := g.c.opts.Store.SaveState(ctx, g.name, data, version)
		cancel()
		g.deliver(func() {
			thens := g.writingThens
			g.saving, g.writingThens = false, nil
			stale := errors.Is(err, filerfs.ErrChanged)
			switch {
			case stale:
				// Another gateway saved the group since this one
				// loaded it: this copy is stale (the group moved
				// while this gateway was paused or slow). It is
				// dropped, and read afresh if it comes back.
				glog.Warningf("kafka group %s: saved by another gateway since loaded here; dropping this copy", g.name)
				err = kerr.NotCoordinator
			case err != nil:
				glog.Warningf("kafka group %s: %v", g.name, err)
			default:
				g.saved, g.version = true, version
			}
			for _, then := range thens {
				then(err)
			}
			if stale {
				g.c.unload(g)
				return
			}
			if g.next != nil {
				g.writeNext()
			}
		})
	}()
}

// afterSaves runs fn on the group's goroutine once the saves asked for so
// far are done, with the outcome of the last one; at once, with nil, if no
// save is under way. What must follow the group's saves in order (a commit
// behind the save of a group's first state) waits with it.
func (g *group) afterSaves(fn func(error)) {
	switch {
	case g.next != nil:
		g.nextThens = append(g.nextThens, fn)
	case g.saving:
		g.writingThens = append(g.writingThens, fn)
	default:
		fn(nil)
	}
}

// deliver runs fn on the group's goroutine, unless the group ends first.
func (g *group) deliver(fn func()) {
	select {
	case g.ctl <- fn:
	case <-g.quit:
	}
}

// snapshot encodes the group's state file, if this gateway still
// coordinates the group in the term it was loaded in.
func (g *group) snapshot() ([]byte, error) {
	if term, ok := g.c.serving(g.name); !ok || term != g.term {
		// Another gateway coordinates the group now; this copy is
		// about to be dropped and must not overwrite its state.
		return nil, kerr.NotCoordinator
	}
	st := savedState{Group: g.name}
	if g.state == Empty && !g.emptySince.IsZero() {
		st.EmptySince = g.emptySince.UnixMilli()
	}
	for _, pid := range slices.Sorted(maps.Keys(g.txnOffsets)) {
		st.TxnOffsets = append(st.TxnOffsets, g.txnOffsets[pid])
	}
	for pid, tc := range g.txnCoordinators {
		if g.txnOffsets[pid] == nil && time.Since(time.UnixMilli(tc.At)) > txnCoordinatorKept {
			delete(g.txnCoordinators, pid)
			continue
		}
		if st.TxnCoordinators == nil {
			st.TxnCoordinators = map[string]txnCoordinator{}
		}
		st.TxnCoordinators[strconv.FormatInt(pid, 10)] = tc
	}
	g.kind.save(&st)
	data, err := json.Marshal(st)
	if err == nil && len(data) > MaxStateBytes {
		metrics.GroupStateTooLarge.Inc()
		glog.Warningf("kafka group %s: not saved: its state is %d bytes, more than %d (members' metadata and assignments)", g.name, len(data), MaxStateBytes)
		return nil, errStateTooLarge
	}
	return data, err
}

// restore sets the group from its state file.
func (g *group) restore(data []byte) error {
	var st savedState
	if err := json.Unmarshal(data, &st); err != nil {
		return err
	}
	g.saved = true
	g.emptySince = time.Time{}
	if st.EmptySince > 0 {
		g.emptySince = time.UnixMilli(st.EmptySince)
	}
	for _, t := range st.TxnOffsets {
		g.txnOffsets[t.ProducerID] = t
	}
	for id, tc := range st.TxnCoordinators {
		if pid, err := strconv.ParseInt(id, 10, 64); err == nil {
			g.txnCoordinators[pid] = tc
		}
	}
	if st.Type == TypeConsumer || st.Type == TypeShare || st.Type == TypeStreams {
		if st.Consumer == nil {
			st.Consumer = &savedConsumer{}
		}
		g.restoreConsumer(st.Type, st.Consumer)
		return nil
	}
	cl := newClassicGroup(g)
	g.kind = cl
	cl.restore(&st)
	return nil
}
