package seaweedmq

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/wal"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// partition is this gateway's state for one Kafka partition it leads: the
// next offset it gives, the batches waiting for the write-ahead log, the
// tail (logged batches not yet in a log segment), and the high watermark
// with a signal for waiting fetches. A partition nobody wrote or read for
// idleAfter, with nothing in its tail, is dropped (tail.go): memory holds
// the partitions in use, not every partition ever written.
type partition struct {
	c     *Client
	topic string
	index int32
	dir   string // in the filer; set when the partition is first opened
	// walKey names the partition in the write-ahead log: its directory
	// and its topic's creation time, so that the records of a topic
	// deleted and created again within a second (the directory is named
	// to the second) are not taken for the new one's (wal.PartKey).
	walKey string
	// replication is the copies of the topic's files, with which its
	// batches are logged.
	replication wal.Replication

	// writeMu serializes appends, so that a batch's records get
	// contiguous offsets and batches keep the order in which they were
	// appended.
	writeMu sync.Mutex
	// ready is set once the partition was recovered (recover.go) and next
	// is the end of its stored records; dropped once it left the
	// client's map (Release, idle, a deleted topic): an append that finds
	// it takes the partition afresh. Under writeMu.
	ready   bool
	dropped bool
	term    int64 // the leader's term when it was opened (Options.Term)
	// prev is the object this one took the place of, released while an
	// operation may still have held its writeMu: none of this one's runs
	// before that operation ended (withPartition), so that the two never
	// give offsets at once. Set at creation, cleared under writeMu.
	prev     *partition
	next     int64
	lastTsNs int64 // ts_ns of the last record given; see nextTs

	producers producerState // idempotent producers; under writeMu

	notifyMu sync.Mutex
	// released is set, under notifyMu, when this gateway's term over the
	// partition ended (Release): a batch the write-ahead log takes after
	// that stays out of the tail (logged). It was not acknowledged (its
	// leader had lost the partition), and the next leader, which recovered
	// from the logs before, may have given its offsets to other records:
	// written from the tail as a segment, it would take their place.
	released   bool
	releasedAt time.Time
	hw         int64         // end of the logged records, -1 if unknown
	changed    chan struct{} // closed when hw moves; nil until someone waits
	// pending are the batches given offsets and not yet in the
	// write-ahead log, in offset order; tail the logged batches not yet
	// in a segment, in offset order.
	pending   []*pendingBatch
	tail      []*tailBatch
	tailBytes int
	// flushAt is the tail size its topic's segments are written at
	// (rolling.flushBytes), as the flusher's last round saw it; 0:
	// maxTailBytes.
	flushAt  int
	flushing bool           // a flush of the tail is under way
	flushes  sync.WaitGroup // the flush under way, which drop waits for
	used     time.Time      // last append or read

	maxTs maxTimestamp // for ListOffsets MAX_TIMESTAMP
}

// flushAtLocked is the tail size at which the tail is written. Called
// with notifyMu held.
func (p *partition) flushAtLocked() int {
	if p.flushAt > 0 {
		return p.flushAt
	}
	return maxTailBytes
}

type partKey struct {
	topic string
	index int32
}

type partitions struct {
	mu sync.Mutex
	m  map[partKey]*partition
	// fenced are released partitions an operation under way may still
	// hold (their writeMu): the next object of the partition waits for
	// it (prev). Settled ones leave (settleFenced).
	fenced map[partKey]*partition
}

func (ps *partitions) init() {
	ps.m = map[partKey]*partition{}
	ps.fenced = map[partKey]*partition{}
}

func (ps *partitions) get(c *Client, topic string, index int32) *partition {
	k := partKey{topic, index}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.m[k]
	if p == nil {
		p = &partition{c: c, topic: topic, index: index, hw: -1, used: time.Now(), prev: ps.fenced[k]}
		delete(ps.fenced, k)
		ps.m[k] = p
	}
	return p
}

// peek returns the partition object of topic's partition index if there
// is one, without making one.
func (ps *partitions) peek(topic string, index int32) *partition {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.m[partKey{topic, index}]
}

// settleFenced forgets the released partitions no operation holds any
// longer, marking them dropped.
func (ps *partitions) settleFenced() {
	ps.mu.Lock()
	all := make([]*partition, 0, len(ps.fenced))
	for _, p := range ps.fenced {
		all = append(all, p)
	}
	ps.mu.Unlock()
	for _, p := range all {
		ps.settle(p)
	}
}

// settle marks a released partition dropped and forgets it, unless an
// operation holds it still; the object it took the place of, if not
// settled itself, is waited for in its stead.
func (ps *partitions) settle(p *partition) {
	if !p.writeMu.TryLock() {
		return
	}
	k := partKey{p.topic, p.index}
	ps.mu.Lock()
	if ps.fenced[k] == p {
		if p.prev != nil {
			ps.fenced[k] = p.prev
		} else {
			delete(ps.fenced, k)
		}
		p.prev = nil
	}
	ps.mu.Unlock()
	p.dropped = true
	p.writeMu.Unlock()
}

// remove takes a partition out of the map if it is still the one there.
func (ps *partitions) remove(p *partition) {
	k := partKey{p.topic, p.index}
	ps.mu.Lock()
	if ps.m[k] == p {
		delete(ps.m, k)
	}
	ps.mu.Unlock()
}

// all returns the partitions held.
func (ps *partitions) all() []*partition {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make([]*partition, 0, len(ps.m))
	for _, p := range ps.m {
		out = append(out, p)
	}
	return out
}

// closeTopic forgets a topic's partitions, as when the topic is deleted or
// re-created: what their tails held is gone with the topic.
func (ps *partitions) closeTopic(topic string) {
	ps.mu.Lock()
	var victims []*partition
	for k, p := range ps.m {
		if k.topic == topic {
			victims = append(victims, p)
			delete(ps.m, k)
		}
	}
	for k := range ps.fenced {
		if k.topic == topic {
			delete(ps.fenced, k) // its directory is gone: nothing to wait for
		}
	}
	ps.mu.Unlock()
	for _, p := range victims {
		p.drop()
	}
}

// drop marks a partition no longer held, forgets its tail and wakes the
// fetches waiting on it. A flush of its tail under way ends first, so
// that nothing is written to the partition's directory after drop returns
// (its topic is being deleted).
func (p *partition) drop() {
	p.release()
	p.flushes.Wait()
	p.notifyMu.Lock()
	p.tail, p.tailBytes = nil, 0
	p.notifyMu.Unlock()
}

// release marks a partition no longer held and wakes the fetches waiting
// on it; its tail stays for the flusher.
func (p *partition) release() {
	p.markReleased()
	for q := p.fence(); q != nil; q = q.fence() {
	}
}

// fence waits for the operation holding the partition's writeMu, if any,
// and marks the partition dropped: none gives offsets from it after. It
// returns the object this one took the place of, if it had not run yet:
// that one is to be waited for too.
func (p *partition) fence() *partition {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.dropped = true
	prev := p.prev
	p.prev = nil
	return prev
}

// markReleased notes that this gateway's term over the partition ended,
// without waiting for an operation under way, and wakes the fetches
// waiting on it.
func (p *partition) markReleased() {
	p.notifyMu.Lock()
	if p.released {
		p.notifyMu.Unlock()
		return
	}
	p.released = true
	p.releasedAt = time.Now()
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
	p.notifyMu.Unlock()
}

// Release implements cluster.Releaser: the partition is forgotten at once,
// to be read afresh if this gateway leads it again, and what the log takes
// for it from now on is not shown (see released). In the background
// (tail.go), its tail goes to a segment all the same, after
// releasedTailWait, unless the next leader's recovery wrote those offsets
// first (it recovers the same records from the write-ahead log): a
// partition nobody uses again would otherwise keep this gateway's log
// files from being trimmed. Its producers' state is not saved (see
// saveProducers). Fetches waiting on it wake up. It neither does I/O nor
// waits for an operation on the partition (a recovery stalled by the
// filer holds it for as long as the filer is out of reach): the
// partitions a gateway loses at once (cut off from the filer, it loses
// all) are all released within moments. The partition's next object here
// waits for that operation before it runs (prev).
func (c *Client) Release(topic string, index int32) {
	k := partKey{topic, index}
	c.parts.mu.Lock()
	p := c.parts.m[k]
	if p != nil {
		delete(c.parts.m, k)
		c.parts.fenced[k] = p
	}
	c.parts.mu.Unlock()
	if p == nil {
		return
	}
	p.markReleased()
	c.flusher.adopt(p)
	c.parts.settle(p)
}

// saveAll saves the producers' states of every partition, closeParallel at
// a time, for at most timeout.
func (ps *partitions) saveAll(timeout time.Duration) {
	all := ps.all()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		sem := make(chan struct{}, closeParallel)
		for _, p := range all {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				p.c.saveProducers(p, true)
			}()
		}
		wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(timeout):
	}
}

// closeParallel is how many partitions' producer states are saved at once
// when the client closes.
const closeParallel = 32

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// advance records that the high watermark is at least hw and wakes waiters.
func (p *partition) advance(hw int64) {
	p.notifyMu.Lock()
	defer p.notifyMu.Unlock()
	p.advanceLocked(hw)
}

func (p *partition) advanceLocked(hw int64) {
	if hw <= p.hw {
		return
	}
	p.hw = hw
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// leads reports whether this gateway leads the partition in the term it
// opened it in (always, without terms, or if it opened it with none).
func (p *partition) leads() bool {
	if p.c == nil || p.c.opts.Term == nil {
		return true
	}
	p.writeMu.Lock()
	term := p.term
	p.writeMu.Unlock()
	p.notifyMu.Lock()
	released := p.released
	p.notifyMu.Unlock()
	return !released && (term == 0 || p.c.opts.Term(p.topic, p.index) == term)
}

// isReleased reports whether this gateway's term over the partition
// ended (Release).
func (p *partition) isReleased() bool {
	p.notifyMu.Lock()
	defer p.notifyMu.Unlock()
	return p.released
}

// knownHW is the highest high watermark seen, or -1.
func (p *partition) knownHW() int64 {
	p.notifyMu.Lock()
	defer p.notifyMu.Unlock()
	return p.hw
}

// touch notes a use of the partition.
func (p *partition) touch() {
	p.notifyMu.Lock()
	p.used = time.Now()
	p.notifyMu.Unlock()
}

// waitPast returns a channel closed once the high watermark passes hw.
func (p *partition) waitPast(hw int64) <-chan struct{} {
	p.notifyMu.Lock()
	defer p.notifyMu.Unlock()
	if p.hw > hw {
		return closedChan
	}
	p.used = time.Now()
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	return p.changed
}

// Changed implements storage.Backend.
func (c *Client) Changed(topic string, index int32, hw int64) <-chan struct{} {
	return c.parts.get(c, topic, index).waitPast(hw)
}

// assignment returns a partition's SeaweedMQ partition.
func (c *Client) assignment(ctx context.Context, topic string, index int32) (*mq_pb.BrokerPartitionAssignment, error) {
	e, err := c.topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	if index < 0 || int(index) >= len(e.parts) {
		return nil, kerr.UnknownTopicOrPartition
	}
	return e.parts[index], nil
}

// pendingBatch is a batch given offsets and waiting for the write-ahead log.
type pendingBatch struct {
	term    int64 // the partition's when it was given its offsets
	base    int64
	n       int
	recs    []byte // the records in log form (wal_format.go)
	lastTs  int64  // ts_ns of its last record
	durable bool   // answered once logged; otherwise at once
	app     *storage.Appended
	done    bool
	err     error
}

// tailBatch is a logged batch not yet in a log segment.
type tailBatch struct {
	base   int64
	n      int
	recs   []byte
	lastTs int64
	logged time.Time
}
