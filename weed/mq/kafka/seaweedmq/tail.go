package seaweedmq

// A partition's tail: the batches in the write-ahead log that no log
// segment holds yet. The flusher writes a partition's tail as log
// segments, in the broker's format, once it is tailFlushAge old or
// maxTailBytes large, or sooner as the topic's segment.ms and
// segment.bytes say (roll.go), and at Close; the write-ahead log's files are then
// trimmed (package wal). It also drops the partitions nobody used for
// idleAfter whose tail is empty, so that a partition costs memory only
// while it is written or read.

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/logentry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/wal"
)

const (
	// tailFlushAge is how long a logged batch waits for its segment (the
	// broker's -logFlushInterval did the same): segments of seconds of
	// records, not one per request.
	tailFlushAge = 5 * time.Second
	// maxTailBytes flushes a partition's tail early.
	maxTailBytes = 8 << 20
	// tailCap bounds a partition's tail: past it, while its segments are
	// not being written (a volume server hung or full), produce to it is
	// refused with a retriable error rather than held in memory.
	tailCap = 8 * maxTailBytes
	// idleAfter is how long a partition with an empty tail stays in
	// memory unused.
	idleAfter = time.Minute
	// flushParallel bounds the segments written at once.
	flushParallel = 8
	// flushCheckEvery is how often the flusher looks at the partitions.
	flushCheckEvery = 500 * time.Millisecond
	// releasedTailWait is how long the tail of a partition this gateway
	// no longer leads waits before it is written: the next leader
	// recovers the same records from the write-ahead logs, usually within
	// moments, and the tail is then left out (coveredError). Only the
	// tail of a partition nobody took over is written, so that this
	// gateway's log files can be trimmed.
	releasedTailWait = 30 * time.Second
)

// flusher writes tails into segments in the background.
type flusher struct {
	c     *Client
	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	sem   chan struct{}
	group sync.WaitGroup

	mu      sync.Mutex
	orphans []*partition // released with a tail: written, then forgotten
}

// adopt takes a partition this gateway no longer holds: a round writes its
// tail (its producers' state is not saved: see saveProducers).
func (f *flusher) adopt(p *partition) {
	f.mu.Lock()
	f.orphans = append(f.orphans, p)
	f.mu.Unlock()
	f.wake()
}

// requeue keeps a released partition for the next round if its tail still
// holds batches (a write that failed is tried again a round later).
func (f *flusher) requeue(p *partition) bool {
	p.notifyMu.Lock()
	has := len(p.tail) > 0
	p.notifyMu.Unlock()
	if !has {
		return false
	}
	f.mu.Lock()
	f.orphans = append(f.orphans, p)
	f.mu.Unlock()
	return true
}

func newFlusher(c *Client) *flusher {
	return &flusher{c: c, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), sem: make(chan struct{}, flushParallel)}
}

// wake has the flusher look now.
func (f *flusher) wake() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

func (f *flusher) loop() {
	defer close(f.done)
	t := time.NewTicker(flushCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			f.group.Wait()
			return
		case <-t.C:
		case <-f.kick:
		}
		guard.Run("TailFlush", func() { f.round(time.Now(), false) }) //nolint:errcheck // logged and counted; the next round tries again
	}
}

// round flushes the tails that are due (all with force) and drops idle
// partitions.
func (f *flusher) round(now time.Time, force bool) {
	f.mu.Lock()
	orphans := f.orphans
	f.orphans = nil
	f.mu.Unlock()
	for _, p := range orphans {
		p.notifyMu.Lock()
		busy := p.flushing
		if !busy {
			p.flushing = true
			p.flushes.Add(1)
		}
		write := force || now.Sub(p.releasedAt) >= releasedTailWait
		p.notifyMu.Unlock()
		if busy {
			f.requeue(p) // next round
			continue
		}
		f.sem <- struct{}{}
		f.group.Add(1)
		go func() {
			defer func() { <-f.sem; f.group.Done() }()
			if write {
				guard.Run("TailFlush", func() { f.c.flushTail(p) }) //nolint:errcheck // logged and counted
			} else {
				p.notifyMu.Lock()
				p.flushing = false
				p.notifyMu.Unlock()
				p.flushes.Done()
			}
			f.requeue(p) // what is left, if the write failed or waits
		}()
	}
	f.c.parts.settleFenced()
	for _, p := range f.c.parts.all() {
		r := f.c.rollingOf(p.topic)
		p.notifyMu.Lock()
		p.flushAt = r.flushBytes() // for logged, which wakes the flusher at it
		due := len(p.tail) > 0 && !p.flushing &&
			(force || p.tailBytes >= p.flushAt || now.Sub(p.tail[0].logged) >= r.flushAge(p.dir, p.tail[0].base))
		idle := len(p.tail) == 0 && len(p.pending) == 0 && now.Sub(p.used) >= idleAfter
		if due {
			p.flushing = true
			p.flushes.Add(1)
		}
		p.notifyMu.Unlock()
		switch {
		case due:
			f.sem <- struct{}{}
			f.group.Add(1)
			go func() {
				defer func() { <-f.sem; f.group.Done() }()
				guard.Run("TailFlush", func() { f.c.flushTail(p) }) //nolint:errcheck // logged and counted
			}()
		case idle:
			f.c.dropIdle(p, now)
		}
	}
	if force {
		f.group.Wait()
	}
}

// close stops the loop and flushes every tail, for at most timeout: what a
// tail holds is in the write-ahead log in any case.
func (f *flusher) close(timeout time.Duration) {
	f.once.Do(func() { close(f.stop) })
	<-f.done
	f.flushAll(timeout)
}

// flushAll flushes every tail, for at most timeout.
func (f *flusher) flushAll(timeout time.Duration) {
	finished := make(chan struct{})
	go func() {
		f.round(time.Now(), true)
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(timeout):
		glog.Warningf("kafka gateway: partition tails not all written to segments in %v; the write-ahead log holds them", timeout)
	}
}

// FlushTails writes every partition's tail to a segment, for at most
// timeout, so that the next gateway to lead them has nothing to recover:
// for a gateway about to stop, once it takes no more requests.
func (c *Client) FlushTails(timeout time.Duration) { c.flusher.flushAll(timeout) }

// SaveProducers saves the producer state of every partition this gateway
// leads, for at most timeout, so that the next gateway to lead them reads
// few records to rebuild it: for a gateway about to stop, while it still
// leads them (saves stop with the leadership, see saveProducers).
func (c *Client) SaveProducers(timeout time.Duration) { c.parts.saveAll(timeout) }

// flushTail writes the partition's tail, as it is now, as log segments
// (one per segment.bytes of it) and takes what was written out of the
// tail.
func (c *Client) flushTail(p *partition) {
	p.notifyMu.Lock()
	batches := append([]*tailBatch(nil), p.tail...)
	p.notifyMu.Unlock()
	defer func() {
		p.notifyMu.Lock()
		p.flushing = false
		p.notifyMu.Unlock()
		p.flushes.Done()
	}()
	if len(batches) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if p.isDropped() {
		there, err := c.stillThere(ctx, p)
		if err != nil {
			return // tried again
		}
		if !there {
			// Released, and its topic deleted (or created anew)
			// since: the tail goes with it.
			p.notifyMu.Lock()
			p.tail, p.tailBytes = nil, 0
			p.notifyMu.Unlock()
			return
		}
	}
	r := c.rollingOf(p.topic)
	for _, seg := range splitTail(batches, r.bytes) {
		size := 0
		for _, b := range seg {
			size += tailEntryBytes(b)
		}
		if !c.flushSegment(ctx, p, r, seg, size) {
			return
		}
	}
}

// tailEntryBytes bounds the bytes a tail batch takes in a segment.
func tailEntryBytes(b *tailBatch) int {
	return len(b.recs) + b.n*(4+1+binary.MaxVarintLen64)
}

// splitTail cuts a tail into the segments it is written as: each within
// segBytes (segment.bytes), and at least one batch.
func splitTail(batches []*tailBatch, segBytes int64) [][]*tailBatch {
	var segs [][]*tailBatch
	for len(batches) > 0 {
		n, size := 0, int64(0)
		for n < len(batches) {
			bs := int64(tailEntryBytes(batches[n]))
			if n > 0 && size+bs > segBytes {
				break
			}
			size += bs
			n++
		}
		segs = append(segs, batches[:n])
		batches = batches[n:]
	}
	return segs
}

// flushSegment writes batches of the partition's tail (about size bytes)
// as one log segment and takes them out of the tail; false if they were
// not all written (tried again by a later round).
func (c *Client) flushSegment(ctx context.Context, p *partition, r rolling, batches []*tailBatch, size int) bool {
	buf := make([]byte, 0, size)
	for _, b := range batches {
		buf = logentry.AppendSegment(buf, b.base, b.recs)
	}
	first, last := batches[0].base, batches[len(batches)-1].base+int64(batches[len(batches)-1].n)-1
	err := c.writeSegmentBytes(ctx, p.dir, r, buf, first, last, batches[len(batches)-1].lastTs)
	var covered *coveredError
	switch {
	case errors.As(err, &covered):
		// Written by another gateway: the next leader, which recovered
		// them from the write-ahead logs (this gateway's among them).
		// What the segments hold is the partition; the rest of the tail
		// is written by the next round.
		if p.isDropped() {
			glog.V(0).Infof("kafka partition %s/%d: offsets %d-%d are in segments already, written by the partition's next leader; left out of this tail", p.topic, p.index, first, covered.end-1)
		} else {
			glog.Errorf("kafka partition %s/%d: offsets %d-%d are in segments already, though this gateway leads the partition; left out of its tail", p.topic, p.index, first, covered.end-1)
		}
		p.trimTail(covered.end - 1)
		return false
	case err != nil:
		glog.Warningf("kafka partition %s/%d: writing offsets %d-%d to a segment: %v (tried again)", p.topic, p.index, first, last, err)
		return false
	}
	metrics.SegmentsWritten.Inc()
	p.trimTail(last)
	if r.compacted {
		c.wakeCleaner()
	}
	return true
}

// trimTail takes the batches that begin at or before offset out of the
// tail.
func (p *partition) trimTail(offset int64) {
	p.notifyMu.Lock()
	defer p.notifyMu.Unlock()
	n := 0
	for n < len(p.tail) && p.tail[n].base <= offset {
		p.tailBytes -= len(p.tail[n].recs)
		n++
	}
	p.tail = append(p.tail[:0:0], p.tail[n:]...)
}

// isDropped reports whether the partition left the client's map (a
// released one at once, even while an operation holds it).
func (p *partition) isDropped() bool {
	if p.isReleased() {
		return true
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	return p.dropped
}

// stillThere reports whether a partition's directory is still the one of
// its topic's partition, read from the filer. The cached topic is
// forgotten only if it is gone or changed: a flush that failed because the
// filer is out of reach must not leave the gateway without its topics.
func (c *Client) stillThere(ctx context.Context, p *partition) (bool, error) {
	e, err := c.readTopic(ctx, p.topic)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		c.topics.forget(p.topic)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if int(p.index) >= len(e.parts) {
		c.topics.forget(p.topic)
		return false, nil
	}
	a := e.parts[p.index]
	there := wal.PartKey(c.partitionDir(p.topic, a), a.Partition.UnixTimeNs) == p.walKey
	if !there {
		c.topics.forget(p.topic)
	}
	return there, nil
}

// dropIdle forgets a partition nobody used for idleAfter, its producers'
// state saved first; the next use reads it afresh.
func (c *Client) dropIdle(p *partition, now time.Time) {
	p.writeMu.Lock()
	p.notifyMu.Lock()
	// A fetch waiting on it uses it (waitPast): one that waited and gave
	// up long ago leaves a channel nobody reads, closed now.
	idle := len(p.tail) == 0 && len(p.pending) == 0 && now.Sub(p.used) >= idleAfter && !p.flushing
	if idle && p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
	p.notifyMu.Unlock()
	if !idle {
		p.writeMu.Unlock()
		return
	}
	p.dropped = true
	p.writeMu.Unlock()
	c.parts.remove(p)
	c.saveProducers(p, true)
	metrics.PartitionsDropped.Inc()
}
