package compaction

// What the log cleaner keeps of a compacted partition's cleanable segments,
// as Kafka's log cleaner decides it: the newest record of each key, every
// transaction marker, tombstones (null values) until delete.retention.ms
// past their timestamp; not superseded records, aborted
// transactions' records, records without a key or fillers. Offsets never
// change: a cleaned segment holds the records it kept at their offsets, and
// readers skip the gaps. Consecutive segments are merged into one while
// what they keep fits mergeBytes, so that a partition's segment count stays
// bounded as the broker flushes new ones.

import (
	"crypto/md5"
	"errors"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/logentry"
)

// cleanSeg is a cleanable segment and its entries (ascending offsets).
type cleanSeg struct {
	seg       Segment
	mtime     time.Time
	maxOffset int64 // its offset_max, or its last entry's offset
	entries   []*filer_pb.LogEntry
}

// cleaner decides what a cleaning keeps: it learns the newest offset of
// each key from every cleanable segment in turn (its map holds a hash and
// an offset per key, not the records), then takes the segments again in
// turn and groups what they keep. It holds at most a group's records.
type cleaner struct {
	aborted []Aborted // the partition's aborted transactions, in the order they ended
	// horizon: a tombstone whose timestamp is older is removed
	// (delete.retention.ms before now; a segment's time would not do:
	// merged, it takes its newest segment's).
	horizon    time.Time
	mergeBytes int64

	latest map[keyHash]int64
	next   int64 // past the offsets seen, in the pass under way

	open bool       // a group is under way
	g    cleanGroup // the group under way
	// first: the next group to end holds the partition's first segment,
	// whose file stays (it keeps the partition's start).
	first bool
}

func newCleaner(aborted []Aborted, horizon time.Time, mergeBytes int64, first bool) *cleaner {
	return &cleaner{aborted: aborted, horizon: horizon, mergeBytes: mergeBytes, latest: map[keyHash]int64{}, next: -1, first: first}
}

// learn reads a segment's keys, segments in offset order.
func (c *cleaner) learn(entries []*filer_pb.LogEntry) {
	for _, e := range entries {
		if e.Offset < c.next {
			continue // a duplicate: an interrupted cleaning's leftover
		}
		c.next = e.Offset + 1
		if kind, key := classify(e, c.aborted); kind == kindRecord || kind == kindTombstone {
			c.latest[md5.Sum(key)] = e.Offset
		}
	}
}

// clean decides what segment i keeps, once every segment was learnt, the
// segments in offset order again from 0; it returns the group that
// segment i's began ended, if any.
func (c *cleaner) clean(i int, entries []*filer_pb.LogEntry) *cleanGroup {
	if i == 0 {
		c.next = -1
	}
	var kept []*filer_pb.LogEntry
	var keptBytes, removedBytes int64
	removed := 0
	for _, e := range entries {
		size := storedSize(e)
		if e.Offset < c.next {
			removedBytes += size // the copy is dropped, not the record
			continue
		}
		c.next = e.Offset + 1
		keep := true
		switch kind, key := classify(e, c.aborted); kind {
		case kindDrop:
			keep = false
		case kindRecord:
			keep = c.latest[md5.Sum(key)] == e.Offset
		case kindTombstone:
			keep = c.latest[md5.Sum(key)] == e.Offset && !time.Unix(0, e.TsNs).Before(c.horizon)
		}
		if keep {
			kept = append(kept, e)
			keptBytes += size
		} else {
			removed++
			removedBytes += size
		}
	}
	var done *cleanGroup
	if !c.open || c.g.keptBytes+keptBytes > c.mergeBytes {
		done = c.end()
		c.g, c.open = cleanGroup{lo: i}, true
	}
	c.g.hi = i
	c.g.kept = append(c.g.kept, kept...)
	c.g.keptBytes += keptBytes
	c.g.removed += removed
	c.g.removedBytes += removedBytes
	if len(entries) > 0 {
		if c.g.first == nil {
			c.g.first = entries[0]
		}
		c.g.last = entries[len(entries)-1]
	}
	return done
}

// end ends the group under way and returns it (nil if none).
func (c *cleaner) end() *cleanGroup {
	if !c.open {
		return nil
	}
	g := c.g
	if c.first && len(g.kept) == 0 && g.last != nil {
		// The partition's first segment stays, holding where the
		// partition starts: with a filler at its last offset, which
		// readers skip (a record kept instead could be a deleted key's).
		f := logentry.Filler(g.last.Offset, g.last.TsNs)
		g.kept, g.keptBytes = []*filer_pb.LogEntry{f}, storedSize(f)
	}
	c.first, c.open, c.g = false, false, cleanGroup{}
	return &g
}

// cleanGroup is a run of segments [lo, hi] that becomes one: the first's
// file with kept, the others removed.
type cleanGroup struct {
	lo, hi       int
	kept         []*filer_pb.LogEntry
	keptBytes    int64
	removed      int // records
	removedBytes int64
	first, last  *filer_pb.LogEntry // the first and last entries the group had
}

// changes tells whether the group's files are to be written.
func (g *cleanGroup) changes() bool { return g.removed > 0 || g.hi > g.lo }

// storedSize is an entry's size in a segment.
func storedSize(e *filer_pb.LogEntry) int64 { return int64(4 + proto.Size(e)) }

// keyHash names a key in the cleaner's map, as Kafka's (MD5 of the key).
type keyHash [md5.Size]byte

// entryKind is what the cleaner sees in a stored entry.
type entryKind int

const (
	kindRecord    entryKind = iota // a keyed record with a value
	kindTombstone                  // a keyed record with a null value
	kindMarker                     // a transaction marker
	kindDrop                       // a filler, a keyless record, an aborted transaction's record
	kindForeign                    // not a Kafka record (a SeaweedMQ client's): kept as it is
)

// classify reads an entry as the cleaner sees it.
func classify(e *filer_pb.LogEntry, aborted []Aborted) (entryKind, []byte) {
	r, err := record.FromStored(e.Key, e.Data, e.TsNs/int64(time.Millisecond))
	switch {
	case errors.Is(err, record.ErrFiller):
		return kindDrop, nil
	case err != nil:
		return kindForeign, nil
	case r.Txn != nil && r.Txn.Control != record.NotControl:
		return kindMarker, nil
	case r.Txn != nil && inAborted(aborted, r.Txn.ProducerID, e.Offset):
		return kindDrop, nil
	case r.Key == nil:
		return kindDrop, nil
	case r.Value == nil:
		return kindTombstone, r.Key
	}
	return kindRecord, r.Key
}

// inAborted tells whether the producer's record at offset is in one of its
// aborted transactions.
func inAborted(aborted []Aborted, pid, offset int64) bool {
	// Ordered by their markers' offsets: only those ending at or past
	// offset can hold it.
	for _, a := range aborted[sort.Search(len(aborted), func(i int) bool { return aborted[i].LastOffset >= offset }):] {
		if a.ProducerID == pid && a.FirstOffset <= offset {
			return true
		}
	}
	return false
}
