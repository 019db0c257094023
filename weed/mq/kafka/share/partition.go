// Package share holds what share groups (KIP-932, "queues for Kafka") keep
// beside their members: each share-partition's records in flight (who has
// acquired which, until when, how often each was delivered), kept by the
// gateway that leads the partition and saved in the filer, and the groups'
// configs.
package share

// A share-partition, as Kafka's SharePartition keeps it: the share group's
// start offset (SPSO: every record before it is done) and the records in
// flight after it, each available, acquired by a member until its lock
// runs out, acknowledged or archived. Records are acquired by fetches,
// accepted, released or rejected by acknowledgements, released when their
// lock expires or their member's share session ends; a record delivered
// the delivery limit times is archived instead of released. The start
// offset moves past the records that are done. Every method takes the
// partition's lock; writes to the filer are made outside it, one at a time.

import (
	"context"
	"encoding/hex"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"golang.org/x/sync/semaphore"
)

// State is a record's state, numbered as Kafka numbers (and persists) it.
type State int8

const (
	Available    State = 0
	Acquired     State = 1
	Acknowledged State = 2
	Archived     State = 4
)

func (s State) done() bool { return s == Acknowledged || s == Archived }

// Acknowledgement types, as ShareFetch and ShareAcknowledge carry them.
const (
	AckGap     int8 = 0 // no record at the offset: archived
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4 // v2+: the lock starts again
)

// Ack is one acknowledgement batch: the offsets First..Last, with one type
// for all or one per offset.
type Ack struct {
	First, Last int64
	Types       []int8
}

// Range is records acquired together: offsets First..Last, each delivered
// Count times (this delivery included).
type Range struct {
	First, Last int64
	Count       int16
}

// CheckAcks checks acknowledgement batches as Kafka does before applying
// them (INVALID_REQUEST): ascending, not overlapping, with a type for the
// whole batch or one per offset, each known at version (renew only in
// renewals, v2+).
func CheckAcks(acks []Ack, version int16, renew bool) bool {
	prev := int64(-1)
	for i, a := range acks {
		if a.First > a.Last || (i > 0 && a.First < prev) || len(a.Types) == 0 ||
			(len(a.Types) > 1 && int64(len(a.Types)) != a.Last-a.First+1) {
			return false
		}
		for _, t := range a.Types {
			if t < AckGap || t > AckRenew || (t == AckRenew && (version < 2 || !renew)) {
				return false
			}
		}
		prev = a.Last
	}
	return true
}

type rec struct {
	state State
	count int16     // deliveries so far
	owner string    // the member that acquired it
	until time.Time // its lock's end, while acquired
	// pending names the write that makes an acknowledgement of it
	// durable (0: none): until then it is neither acquired nor
	// acknowledged again, and was is what it returns to if the write
	// fails.
	pending uint64
	was     rec0
}

// rec0 is a record's state to return to.
type rec0 struct {
	state State
	owner string
	until time.Time
}

// Partition is one share-partition, held by the partition's leader.
type Partition struct {
	Key
	topicID [16]byte
	store   *Store
	term    int64

	mu       sync.Mutex
	start    int64 // SPSO
	recs     []rec // the records from start on that are in flight
	epoch    int32 // the state epoch, moved by AlterShareGroupOffsets
	version  string
	dropped  bool // another gateway wrote it: this copy is stale
	changed  chan struct{}
	timer    *time.Timer
	timerAt  time.Time
	writes   uint64    // source of write ids
	settings Settings  // as last read
	readAt   time.Time // when settings were read

	// turn is held by the save going on, across its write to the filer
	// (one at a time); mu never is.
	turn  *semaphore.Weighted
	later atomic.Int32 // saves with no request waiting, not done yet
}

// Start returns the share-partition start offset.
func (p *Partition) Start() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.start
}

// Changed is closed when records may have become available (released,
// expired, the start moved): a fetch that found nothing looks again.
func (p *Partition) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

func (p *Partition) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// NextOffset is where the next acquisition starts: the first available
// record, else the first offset past those in flight; ok is false while
// the partition holds its most records in flight (all acquired or
// pending).
func (p *Partition) NextOffset() (offset int64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.recs {
		if r := &p.recs[i]; r.state == Available && r.pending == 0 {
			return p.start + int64(i), true
		}
	}
	return p.start + int64(len(p.recs)), len(p.recs) < p.settings.MaxRecordLocks
}

// MoveStart moves the start to the log's start when records before it are
// gone (retention, DeleteRecords): they are done for the group.
func (p *Partition) MoveStart(logStart int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if logStart <= p.start {
		return
	}
	if n := logStart - p.start; n < int64(len(p.recs)) {
		p.recs = slices.Clone(p.recs[n:])
	} else {
		p.recs = nil
	}
	p.start = logStart
	p.signalLocked()
}

// Acquire acquires, for member, the records from offset from up to before
// end (offsets with no record in between are acquired too: the member
// acknowledges them as gaps), at most limit of them, and returns them in
// ranges of at most batch records (0: any) of equal delivery counts.
// Records acquired by others or done are skipped, and so are those aborted
// says were aborted (read_committed): they are archived. At the most
// records in flight, no new ones are taken.
func (p *Partition) Acquire(member string, from, end int64, limit, batch int, aborted func(int64) bool) []Range {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.store.now()
	until := now.Add(p.settings.LockDuration)
	var out []Range
	n := 0
	archived := false
	for o := max(from, p.start); o < end && n < limit; o++ {
		i := int(o - p.start)
		if i > len(p.recs) {
			break
		}
		if i == len(p.recs) {
			if len(p.recs) >= p.settings.MaxRecordLocks {
				break
			}
			p.recs = append(p.recs, rec{state: Available})
		}
		r := &p.recs[i]
		if r.state != Available || r.pending != 0 {
			continue
		}
		if aborted != nil && aborted(o) {
			r.state, archived = Archived, true
			continue
		}
		r.state, r.owner, r.until = Acquired, member, until
		r.count++
		n++
		if k := len(out) - 1; k >= 0 && out[k].Last == o-1 && out[k].Count == r.count && (batch <= 0 || out[k].Last-out[k].First+1 < int64(batch)) {
			out[k].Last = o
		} else {
			out = append(out, Range{First: o, Last: o, Count: r.count})
		}
	}
	if n > 0 {
		p.armLocked(until)
	}
	if archived {
		p.advanceLocked()
	}
	return out
}

// armLocked makes the lock timer fire at until at the latest.
func (p *Partition) armLocked(until time.Time) {
	if p.timer != nil && !p.timerAt.After(until) {
		return
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	p.timerAt = until
	p.timer = time.AfterFunc(max(until.Sub(p.store.now()), 0), p.expire)
}

// releaseLocked makes an acquired record available again, or archives it
// once delivered the most times.
func (p *Partition) releaseLocked(r *rec) {
	r.owner, r.until = "", time.Time{}
	if r.count >= p.settings.DeliveryLimit {
		r.state = Archived
	} else {
		r.state = Available
	}
}

// expire releases the records whose lock ran out and saves that.
func (p *Partition) expire() {
	p.mu.Lock()
	now := p.store.now()
	p.timer = nil
	next := time.Time{}
	released := false
	for i := range p.recs {
		r := &p.recs[i]
		if r.state != Acquired || r.pending != 0 {
			continue
		}
		if !r.until.After(now) {
			p.releaseLocked(r)
			released = true
		} else if next.IsZero() || r.until.Before(next) {
			next = r.until
		}
	}
	if !next.IsZero() {
		p.armLocked(next)
	}
	if released {
		p.advanceLocked()
		p.signalLocked()
	}
	p.mu.Unlock()
	if released {
		p.store.saveLater(p)
	}
}

// ReleaseMember releases every record member holds (its share session
// ended) and saves that.
func (p *Partition) ReleaseMember(member string) {
	p.mu.Lock()
	released := false
	for i := range p.recs {
		if r := &p.recs[i]; r.state == Acquired && r.owner == member && r.pending == 0 {
			p.releaseLocked(r)
			released = true
		}
	}
	if released {
		p.advanceLocked()
		p.signalLocked()
	}
	p.mu.Unlock()
	if released {
		p.store.saveLater(p)
	}
}

// advanceLocked moves the start past the records that are done.
func (p *Partition) advanceLocked() {
	n := 0
	for n < len(p.recs) && p.recs[n].state.done() && p.recs[n].pending == 0 {
		n++
	}
	if n == 0 {
		return
	}
	p.start += int64(n)
	p.recs = p.recs[n:]
	if cap(p.recs) > 4*len(p.recs)+64 { // do not keep a large array for a few records
		p.recs = slices.Clone(p.recs)
	}
}

// Acknowledge applies member's acknowledgements (already checked by
// CheckAcks) and returns once they are saved: nil, or the Kafka error of
// the whole batch list, nothing of which is then applied
// (INVALID_RECORD_STATE for a record not acquired by member,
// INVALID_REQUEST for offsets past those in flight, NOT_LEADER_OR_FOLLOWER
// if another gateway wrote the partition since).
func (p *Partition) Acknowledge(ctx context.Context, member string, acks []Ack) *kerr.Error {
	p.mu.Lock()
	if p.dropped {
		p.mu.Unlock()
		return kerr.NotLeaderForPartition
	}
	last := p.start + int64(len(p.recs)) - 1
	type change struct {
		i int
		t int8
	}
	var changes []change
	for _, a := range acks {
		if a.Last < p.start {
			continue // done already
		}
		if a.First > last || a.Last > last {
			p.mu.Unlock()
			return kerr.InvalidRequest
		}
		for o := max(a.First, p.start); o <= a.Last; o++ {
			t := a.Types[0]
			if len(a.Types) > 1 {
				t = a.Types[o-a.First]
			}
			r := &p.recs[o-p.start]
			if r.state != Acquired || r.pending != 0 || r.owner != member {
				p.mu.Unlock()
				return kerr.InvalidRecordState
			}
			changes = append(changes, change{int(o - p.start), t})
		}
	}
	if len(changes) == 0 {
		p.mu.Unlock()
		return nil
	}
	p.writes++
	id := p.writes
	base := p.start
	now := p.store.now()
	save := false
	for _, c := range changes {
		r := &p.recs[c.i]
		if c.t == AckRenew {
			r.until = now.Add(p.settings.LockDuration)
			p.armLocked(r.until)
			continue
		}
		r.was = rec0{r.state, r.owner, r.until}
		r.pending = id
		switch c.t {
		case AckAccept:
			r.state = Acknowledged
		case AckRelease:
			p.releaseLocked(r)
		default: // gap, reject
			r.state = Archived
		}
		r.owner, r.until = "", time.Time{}
		save = true
	}
	p.mu.Unlock()
	if !save {
		return nil
	}
	err := p.store.save(ctx, p)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range changes {
		i := c.i - int(p.start-base) // the start may have moved meanwhile
		if i < 0 || i >= len(p.recs) || p.recs[i].pending != id {
			continue
		}
		r := &p.recs[i]
		r.pending = 0
		if err != nil {
			r.state, r.owner, r.until = r.was.state, r.was.owner, r.was.until
			if r.state == Acquired {
				p.armLocked(r.until)
			}
		}
	}
	p.advanceLocked()
	p.signalLocked()
	return err
}

// snapshotLocked is the share-partition as saved: acquired records as
// available (a lock does not outlive the leader), acknowledgements being
// saved as they will be.
func (p *Partition) snapshotLocked() savedState {
	// The start as it will be once this write is done.
	first := 0
	for first < len(p.recs) && p.recs[first].state.done() {
		first++
	}
	st := savedState{TopicID: hex.EncodeToString(p.topicID[:]), StateEpoch: p.epoch, StartOffset: p.start + int64(first), LeaderEpoch: p.term}
	for i := first; i < len(p.recs); {
		r := p.recs[i]
		s := r.state
		if s == Acquired {
			s = Available
		}
		j := i + 1
		for j < len(p.recs) {
			q := p.recs[j]
			qs := q.state
			if qs == Acquired {
				qs = Available
			}
			if qs != s || q.count != r.count {
				break
			}
			j++
		}
		st.Batches = append(st.Batches, savedBatch{First: p.start + int64(i), Last: p.start + int64(j) - 1, State: s, Count: r.count})
		if s.done() {
			st.DeliveryComplete += int64(j - i)
		}
		i = j
	}
	return st
}

// restore sets the share-partition from its saved state.
func (p *Partition) restore(st savedState) {
	p.start, p.epoch, p.recs = st.StartOffset, st.StateEpoch, nil
	for _, b := range st.Batches {
		if b.Last < p.start || b.First > b.Last {
			continue
		}
		first := max(b.First, p.start)
		for o := p.start + int64(len(p.recs)); o < first; o++ {
			p.recs = append(p.recs, rec{state: Available}) // not known: delivered afresh
		}
		for o := first; o <= b.Last; o++ {
			s := b.State
			if s == Acquired {
				s = Available
			}
			p.recs = append(p.recs, rec{state: s, count: b.Count})
		}
	}
	p.advanceLocked()
}
