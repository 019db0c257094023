// Package compaction is the log cleaner of compacted topics
// (cleanup.policy=compact): it cleans a partition's closed segments as
// Kafka's log cleaner does its closed log segments (plan.go decides what
// they keep). A segment is closed once a later one was written (only the
// newest is appended to); it is cleanable once it was written
// min.compaction.lag.ms ago and lies below the partition's bound (its first
// open transaction, and the offset its producer state was saved at, so that
// no idempotent batch the state does not hold is removed). A partition is
// cleaned when its dirty ratio (bytes of cleanable segments past the last
// cleaning, over bytes of all cleanable ones) reaches
// min.cleanable.dirty.ratio, or when its oldest dirty segment is older than
// max.compaction.lag.ms. The offset the last cleaning reached is its
// checkpoint.
//
// A cleaning cut short at any point loses nothing: a group of segments is
// written whole as its first segment's file (refused if the file changed
// since it was read), and only then are the group's other files removed; a
// cleaning cut short leaves copies of offsets that readers and the next
// cleaning skip. A record is removed only for a newer one of its key in
// the segments.
package compaction

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
)

// Segment is one of a partition's segment files.
type Segment struct {
	Entry *filer_pb.Entry
	// MaxOffset is the segment's last offset as its file's attributes
	// tell it; -1 if they do not.
	MaxOffset int64
	// Sealed: the writer never appends to it once a newer segment
	// exists (a gateway's segment). Other segments (an MQ broker's
	// flushes) count as closed only closedAfter past their name's time.
	Sealed bool
}

// Log is a partition's stored log as the cleaner reads and rewrites it.
type Log interface {
	// Segments lists the partition's segments, ascending; the last is
	// the one being written.
	Segments(ctx context.Context) ([]Segment, error)
	// End returns one past a segment's last offset, read from it.
	End(ctx context.Context, s Segment) (int64, error)
	// Read returns a segment's entries, ascending, a batch entry as its
	// records (each a record entry).
	Read(ctx context.Context, s Segment) ([]*filer_pb.LogEntry, error)
	// Replace writes kept as the file of group's first segment, if that
	// file did not change since it was listed; the file still spans
	// every offset the group spanned (first and last are the group's
	// first and last entries before the cleaning).
	Replace(ctx context.Context, group []Segment, kept []*filer_pb.LogEntry, first, last *filer_pb.LogEntry) error
	// Remove deletes a segment's file.
	Remove(ctx context.Context, s Segment) error
	// Checkpoint is the offset the last cleaning reached (0 if none);
	// SetCheckpoint records a cleaning's.
	Checkpoint(ctx context.Context) (int64, error)
	SetCheckpoint(ctx context.Context, offset int64) error
}

// Aborted is an aborted transaction of a producer: its records at offsets
// First to Last are dropped.
type Aborted struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// Partition is what a cleaning of one partition works from.
type Partition struct {
	// Name names the partition in log lines.
	Name string
	Log  Log
	// Configs are the topic's settings; those of the cleaner are honoured
	// (delete.retention.ms, min.compaction.lag.ms, max.compaction.lag.ms,
	// min.cleanable.dirty.ratio).
	Configs map[string]string
	// Aborted are the partition's aborted transactions, in the order
	// they ended.
	Aborted []Aborted
	// Bound is the offset from which nothing is cleaned.
	Bound int64
}

// Result is what one cleaning of a partition did.
type Result struct {
	DirtyRatio     float64
	Cleaned        bool
	RemovedRecords int
	RemovedBytes   int64
	// Segments is how many segment files the cleaned range had before,
	// and Kept after.
	Segments, Kept int
}

// MaxMergedSegment bounds the segments the cleaner merges: a read decodes
// a whole segment.
const MaxMergedSegment = 16 << 20

// closedAfter is how long after its name's time (the writer's flush) a
// segment that is not the newest and not Sealed is taken as closed: an MQ
// broker may still append to the file of the second it flushes in.
const closedAfter = 10 * time.Second

// settings are a compacted topic's settings the cleaner honours.
type settings struct {
	deleteRetention, minLag, maxLag time.Duration
	minDirtyRatio                   float64
}

func settingsOf(configs map[string]string) settings {
	ms := func(name string, def int64) time.Duration {
		v, err := strconv.ParseInt(configs[name], 10, 64)
		if err != nil || v < 0 {
			v = def
		}
		if v > int64(math.MaxInt64/time.Millisecond) {
			return math.MaxInt64
		}
		return time.Duration(v) * time.Millisecond
	}
	s := settings{
		deleteRetention: ms("delete.retention.ms", 86_400_000),
		minLag:          ms("min.compaction.lag.ms", 0),
		maxLag:          ms("max.compaction.lag.ms", math.MaxInt64),
		minDirtyRatio:   0.5,
	}
	if f, err := strconv.ParseFloat(configs["min.cleanable.dirty.ratio"], 64); err == nil {
		s.minDirtyRatio = f
	}
	return s
}

// Clean cleans a partition if it needs it, as of now.
func Clean(ctx context.Context, p Partition, now time.Time) (Result, error) {
	var res Result
	set := settingsOf(p.Configs)
	segs, err := p.Log.Segments(ctx)
	if err != nil {
		return res, err
	}
	checkpoint, err := p.Log.Checkpoint(ctx)
	if err != nil {
		return res, err
	}

	// The cleanable segments: closed, old enough, below the bound.
	var cands []cleanSeg
	var clean, dirty int64
	firstDirty := time.Time{}
	for i := 0; i+1 < len(segs); i++ {
		s := segs[i]
		mtime := time.Unix(s.Entry.Attributes.GetMtime(), 0)
		if named, err := time.Parse("2006-01-02-15-04-05", s.Entry.Name); !s.Sealed && err == nil && now.Sub(named) < closedAfter {
			break
		}
		if now.Sub(mtime) < set.minLag {
			break
		}
		maxOffset := s.MaxOffset
		if maxOffset < 0 {
			end, err := p.Log.End(ctx, s)
			if err != nil {
				return res, err
			}
			maxOffset = end - 1
		}
		if maxOffset >= p.Bound {
			break
		}
		size := int64(filer.FileSize(s.Entry))
		if maxOffset < checkpoint {
			clean += size
		} else {
			dirty += size
			if firstDirty.IsZero() {
				firstDirty = mtime
			}
		}
		cands = append(cands, cleanSeg{seg: s, mtime: mtime, maxOffset: maxOffset})
	}
	if clean+dirty > 0 {
		res.DirtyRatio = float64(dirty) / float64(clean+dirty)
	}
	if dirty == 0 || (res.DirtyRatio < set.minDirtyRatio && now.Sub(firstDirty) < set.maxLag) {
		return res, nil
	}

	began := time.Now()
	glog.V(1).Infof("kafka log cleaner: %s: cleaning %d segments (dirty ratio %.2f)", p.Name, len(cands), res.DirtyRatio)
	// Two passes over the segments, one at a time: the newest offset of
	// each key, then what each keeps, written a group at a time.
	cl := newCleaner(p.Aborted, now.Add(-set.deleteRetention), MaxMergedSegment, true)
	end := checkpoint
	for _, s := range cands {
		entries, err := p.Log.Read(ctx, s.seg)
		if err != nil {
			return res, err
		}
		cl.learn(entries)
		if n := len(entries); n > 0 {
			end = max(end, entries[n-1].Offset+1)
		}
		// MaxOffset may name one offset past the segment's entries (a
		// writer's hint): the segment is clean below the checkpoint only
		// if it reaches past that too.
		if s.seg.MaxOffset >= 0 {
			end = max(end, s.seg.MaxOffset+1)
		}
	}
	res.Segments = len(cands)
	apply := func(g *cleanGroup) error {
		if !g.changes() {
			res.Kept++
			return nil
		}
		if len(g.kept) > 0 {
			group := make([]Segment, 0, g.hi-g.lo+1)
			for _, s := range cands[g.lo : g.hi+1] {
				group = append(group, s.seg)
			}
			if err := p.Log.Replace(ctx, group, g.kept, g.first, g.last); err != nil {
				return err
			}
			res.Kept++
		} else if err := p.Log.Remove(ctx, cands[g.lo].seg); err != nil {
			return err
		}
		for _, s := range cands[g.lo+1 : g.hi+1] {
			if err := p.Log.Remove(ctx, s.seg); err != nil {
				return err
			}
		}
		res.RemovedRecords += g.removed
		res.RemovedBytes += g.removedBytes
		return nil
	}
	for i, s := range cands {
		entries, err := p.Log.Read(ctx, s.seg)
		if err != nil {
			return res, err
		}
		if g := cl.clean(i, entries); g != nil {
			if err := apply(g); err != nil {
				return res, err
			}
		}
	}
	if g := cl.end(); g != nil {
		if err := apply(g); err != nil {
			return res, err
		}
	}
	if err := p.Log.SetCheckpoint(ctx, end); err != nil {
		return res, err
	}
	res.Cleaned = true
	glog.V(1).Infof("kafka log cleaner: %s: cleaned %d segments below offset %d into %d in %v, %d records (%d bytes) removed",
		p.Name, res.Segments, end, res.Kept, time.Since(began).Round(time.Millisecond), res.RemovedRecords, res.RemovedBytes)
	return res, nil
}
