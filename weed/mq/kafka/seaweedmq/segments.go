package seaweedmq

import (
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/mq"
	"github.com/seaweedfs/seaweedfs/weed/mq/topic"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/logentry"
)

// A partition's flushed records live in log segments in the filer, one file
// per flush time, each a run of 4-byte big-endian sizes and filer_pb.LogEntry
// messages that carry their offsets. The gateway reads them itself: it is
// much faster than asking the broker for old data, and it does not depend on
// what the broker remembers after a restart (a reloaded partition's first
// segment has no offset attributes, and the broker then reports a high
// watermark of 0).

// segmentListTTL bounds how stale a partition's segment listing may be
// before a read looks again.
const segmentListTTL = time.Second

// segmentRelistEvery is how often a partition's whole directory is listed
// again; in between only segments from the newest one on are listed, since
// older ones change only when retention removes them.
const segmentRelistEvery = time.Minute

// maxDecodedSegmentBytes bounds the decoded segments kept in memory,
// counted as twice their stored size (decoded entries carry their own
// slices and structs).
const maxDecodedSegmentBytes = 96 << 20

// checkpointFile is where the broker keeps a partition's last assigned
// offset, and from which it recovers its counter after a restart.
const checkpointFile = "checkpoint.offset"

// segment is one log file of a partition.
type segment struct {
	entry *filer_pb.Entry
	// maxOffset is the offset_max attribute, -1 when absent (the broker
	// leaves it off the first segment of a partition).
	maxOffset int64
}

// key names a segment's content: a segment the broker appended to has
// grown, one the log cleaner rewrote has new chunks.
func (s segment) key(dir string) string {
	return fmt.Sprintf("%s/%s@%d/%s", dir, s.entry.Name, filer.FileSize(s.entry), s.entry.Chunks[0].GetFileIdString())
}

// gatewaySegmentAttr marks the segments a gateway wrote, whose offset_min
// attribute is exact.
const gatewaySegmentAttr = "kafka-gateway-segment"

// cleanedBaseAttr holds the first offset of a segment the log cleaner
// rewrote, as it was before (8 bytes, big-endian): its first records may
// be gone, its offsets are not.
const cleanedBaseAttr = "kafka-cleaned-base"

// cleanedBase is a cleaned segment's first offset, -1 for another segment.
func cleanedBase(e *filer_pb.Entry) int64 {
	if v := e.Extended[cleanedBaseAttr]; len(v) == 8 {
		return int64(binary.BigEndian.Uint64(v))
	}
	return -1
}

// segmentListing is a partition's segments as last listed.
type segmentListing struct {
	dir  string
	segs []segment
	// reach[i] is the highest offset_max of segs[:i+1], MaxInt64 once one
	// of them has none: a read from an offset above reach[i] needs none of
	// those segments, so it finds where to start by binary search.
	reach      []int64
	listed     time.Time
	fullListed time.Time
}

// index fills reach.
func (l *segmentListing) index() {
	l.reach = make([]int64, len(l.segs))
	r := int64(-1)
	for i, s := range l.segs {
		if s.maxOffset < 0 {
			r = math.MaxInt64
		}
		r = max(r, s.maxOffset)
		l.reach[i] = r
	}
}

// from is the first segment a read from offset needs.
func (l *segmentListing) from(offset int64) int {
	return sort.Search(len(l.reach), func(i int) bool { return l.reach[i] >= offset })
}

// flushedState is what the filer holds for a partition.
type flushedState struct {
	listing *segmentListing
	// used is when a read last asked for it (Unix nanoseconds): listings
	// no read asked for in listingIdle are dropped.
	used atomic.Int64
	// end is one past the highest offset in the segments (0 if none).
	end int64
	// start is the lowest offset in the segments (end if none).
	start int64
}

type segmentStore struct {
	mu       sync.Mutex
	listings map[string]*flushedState // by partition dir
	swept    time.Time                // when idle listings were last dropped

	cacheMu sync.Mutex
	lru     *list.List               // of *decodedSegment, most recent first
	byKey   map[string]*list.Element // decoded segments by segment key
	bytes   int
	ends    map[string]int64 // segment ends read without decoding, by segment key
}

// maxSegmentEnds bounds the segment ends remembered; past it they are
// forgotten and read again when asked for.
const maxSegmentEnds = 4096

// listingIdle is how long a partition's segment listing is kept with no
// read asking for it: memory holds the listings of the partitions read,
// not of every partition ever read.
const listingIdle = 10 * time.Minute

// sweepIdleLocked drops the listings no read asked for in listingIdle, at
// most once a minute. ss.mu is held.
func (ss *segmentStore) sweepIdleLocked(now time.Time) {
	if now.Sub(ss.swept) < time.Minute {
		return
	}
	ss.swept = now
	for dir, st := range ss.listings {
		if now.Sub(time.Unix(0, st.used.Load())) > listingIdle {
			delete(ss.listings, dir)
		}
	}
}

type decodedSegment struct {
	key     string
	entries []*filer_pb.LogEntry // ascending offsets, duplicates dropped
	bytes   int
}

func (ss *segmentStore) init() {
	ss.listings = map[string]*flushedState{}
	ss.lru = list.New()
	ss.byKey = map[string]*list.Element{}
	ss.ends = map[string]int64{}
}

// forget drops the listings and decoded segments of the partitions under
// prefix (a deleted topic's directory).
func (ss *segmentStore) forget(prefix string) {
	ss.mu.Lock()
	for dir := range ss.listings {
		if strings.HasPrefix(dir, prefix) {
			delete(ss.listings, dir)
		}
	}
	ss.mu.Unlock()
	ss.cacheMu.Lock()
	defer ss.cacheMu.Unlock()
	for key, el := range ss.byKey {
		if strings.HasPrefix(key, prefix) {
			ss.bytes -= ss.lru.Remove(el).(*decodedSegment).bytes
			delete(ss.byKey, key)
		}
	}
	for key := range ss.ends {
		if strings.HasPrefix(key, prefix) {
			delete(ss.ends, key)
		}
	}
}

// drop forgets a partition's listing: the next read lists all its
// segments again.
func (ss *segmentStore) drop(dir string) {
	ss.mu.Lock()
	delete(ss.listings, dir)
	ss.mu.Unlock()
}

// partitionDir is where a partition's data lives in the filer.
func (c *Client) partitionDir(topicName string, a *mq_pb.BrokerPartitionAssignment) string {
	return topic.PartitionDir(topic.Topic{Namespace: c.l.ns, Name: topicName}, topic.FromPbPartition(a.Partition))
}

// flushed returns what the filer holds for a partition, listing the
// partition again if the last listing is older than segmentListTTL or
// force is set.
func (c *Client) flushed(ctx context.Context, dir string, force bool) (*flushedState, error) {
	now := time.Now()
	c.segs.mu.Lock()
	st := c.segs.listings[dir]
	c.segs.sweepIdleLocked(now)
	c.segs.mu.Unlock()
	if st != nil {
		st.used.Store(now.UnixNano())
	}
	if st != nil && !force && time.Since(st.listing.listed) < segmentListTTL {
		return st, nil
	}
	listing := &segmentListing{dir: dir, listed: time.Now(), fullListed: time.Now()}
	startFrom := ""
	if st != nil && len(st.listing.segs) > 0 && time.Since(st.listing.fullListed) < segmentRelistEvery {
		// List from the newest known segment on (it may have grown).
		old := st.listing.segs
		listing.segs = append(make([]segment, 0, len(old)+4), old[:len(old)-1]...)
		listing.fullListed = st.listing.fullListed
		startFrom = old[len(old)-1].entry.Name
	}
	segs, err := c.listSegments(ctx, dir, startFrom)
	if err != nil {
		return nil, err
	}
	listing.segs = append(listing.segs, segs...)
	st = &flushedState{listing: listing}
	st.used.Store(now.UnixNano())
	if n := len(listing.segs); n > 0 {
		// A segment ends at its last entry. Its offset_max attribute is
		// only a hint: the broker can count in it the first record of
		// the next flush (the record whose arrival made it flush), so a
		// segment may claim one offset more than it holds.
		end, err := c.segmentEnd(ctx, dir, listing.segs[n-1])
		if err != nil {
			return nil, err
		}
		if listing.segs[n-1].maxOffset < 0 {
			listing.segs[n-1].maxOffset = end - 1 // read now: known
		}
		// An earlier segment may end higher if a later flush wrote a
		// stale range; never report less than any segment holds.
		for i, s := range listing.segs[:n-1] {
			if s.maxOffset+1 <= end && s.maxOffset >= 0 {
				continue
			}
			e, err := c.segmentEnd(ctx, dir, s)
			if err != nil {
				return nil, err
			}
			if s.maxOffset < 0 {
				// Read now (the first segment has no offset_max):
				// known, so reads past it skip it.
				listing.segs[i].maxOffset = e - 1
			}
			end = max(end, e)
		}
		st.end, st.start = end, end
		if v := listing.segs[0].entry.Extended[mq.ExtendedAttrOffsetMin]; len(v) == 8 && listing.segs[0].entry.Extended[gatewaySegmentAttr] != nil {
			// Written by a gateway, with its first offset: it need not
			// be read.
			st.start = min(end, int64(binary.BigEndian.Uint64(v)))
		} else {
			first, err := c.decodeSegment(ctx, dir, listing.segs[0])
			if err != nil {
				return nil, err
			}
			if len(first.entries) > 0 {
				st.start = first.entries[0].Offset
			}
		}
		if b := cleanedBase(listing.segs[0].entry); b >= 0 {
			// A cleaned segment begins where it began before.
			st.start = min(st.start, b)
		}
	}
	listing.index()
	c.segs.mu.Lock()
	c.segs.listings[dir] = st
	c.segs.mu.Unlock()
	return st, nil
}

// listSegments lists a partition's log segments from the one named
// startFrom on ("": all), in offset order.
func (c *Client) listSegments(ctx context.Context, dir, startFrom string) ([]segment, error) {
	var segs []segment
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		return filer_pb.SeaweedList(ctx, fc, dir, "", func(e *filer_pb.Entry, _ bool) error {
			if e.IsDirectory || len(e.Chunks) == 0 || strings.HasSuffix(e.Name, ".offset") || strings.HasSuffix(e.Name, ".parquet") {
				return nil
			}
			s := segment{entry: e, maxOffset: -1}
			if v := e.Extended[mq.ExtendedAttrOffsetMax]; len(v) == 8 {
				s.maxOffset = int64(binary.BigEndian.Uint64(v))
			}
			segs = append(segs, s)
			return nil
		}, startFrom, true, math.MaxInt32)
	})
	if err != nil && !errors.Is(err, filer_pb.ErrNotFound) {
		return nil, err
	}
	// Segment names are their flush times, so name order is offset order.
	sort.Slice(segs, func(i, j int) bool { return segs[i].entry.Name < segs[j].entry.Name })
	return segs, nil
}

// segmentEnd returns one past the highest offset in a segment (0 if it has
// none). Unless the segment is decoded already, only its entries' offsets
// are read, once per segment size: a listing that finds a new segment costs
// no decoding of it (a reader at the tail reads the broker's memory, not
// the segment), and the listings after it nothing.
func (c *Client) segmentEnd(ctx context.Context, dir string, s segment) (int64, error) {
	key := s.key(dir)
	c.segs.cacheMu.Lock()
	if el, ok := c.segs.byKey[key]; ok {
		d := el.Value.(*decodedSegment)
		c.segs.cacheMu.Unlock()
		if len(d.entries) == 0 {
			return 0, nil
		}
		return d.entries[len(d.entries)-1].Offset + logentry.SpanOf(d.entries[len(d.entries)-1]), nil
	}
	if end, ok := c.segs.ends[key]; ok {
		c.segs.cacheMu.Unlock()
		return end, nil
	}
	c.segs.cacheMu.Unlock()
	data, err := c.readFile(ctx, s.entry)
	if err != nil {
		return 0, fmt.Errorf("%w: read segment %s/%s: %v", ErrUnavailable, dir, s.entry.Name, err)
	}
	end := int64(0)
	for pos := 0; pos+4 <= len(data); {
		size := int(binary.BigEndian.Uint32(data[pos:]))
		if pos+4+size > len(data) {
			return 0, fmt.Errorf("segment %s/%s: entry at %d runs past the end", dir, s.entry.Name, pos)
		}
		e, err := logentry.EntryEnd(data[pos+4 : pos+4+size])
		if err != nil {
			return 0, fmt.Errorf("segment %s/%s: entry at %d: %v", dir, s.entry.Name, pos, err)
		}
		end = max(end, e)
		pos += 4 + size
	}
	c.segs.cacheMu.Lock()
	if len(c.segs.ends) >= maxSegmentEnds {
		clear(c.segs.ends)
	}
	c.segs.ends[key] = end
	c.segs.cacheMu.Unlock()
	return end, nil
}

// knowEnd remembers the end of a segment just written, by its key.
func (ss *segmentStore) knowEnd(key string, end int64) {
	ss.cacheMu.Lock()
	defer ss.cacheMu.Unlock()
	if len(ss.ends) >= maxSegmentEnds {
		clear(ss.ends)
	}
	ss.ends[key] = end
}

// decodeSegment returns a segment's log entries, from the cache when the
// segment has not grown since it was decoded.
func (c *Client) decodeSegment(ctx context.Context, dir string, s segment) (*decodedSegment, error) {
	key := s.key(dir)
	ss := &c.segs
	ss.cacheMu.Lock()
	if el, ok := ss.byKey[key]; ok {
		ss.lru.MoveToFront(el)
		d := el.Value.(*decodedSegment)
		ss.cacheMu.Unlock()
		return d, nil
	}
	ss.cacheMu.Unlock()

	data, err := c.readFile(ctx, s.entry)
	if err != nil {
		return nil, fmt.Errorf("%w: read segment %s/%s: %v", ErrUnavailable, dir, s.entry.Name, err)
	}
	d := &decodedSegment{key: key, bytes: len(data) + 64*(len(data)/256+1)}
	next := int64(-1)
	for pos := 0; pos+4 <= len(data); {
		size := int(binary.BigEndian.Uint32(data[pos:]))
		if pos+4+size > len(data) {
			return nil, fmt.Errorf("segment %s/%s: entry at %d runs past the end", dir, s.entry.Name, pos)
		}
		re, err := logentry.Parse(data[pos+4 : pos+4+size])
		if err != nil {
			return nil, fmt.Errorf("segment %s/%s: entry at %d: %v", dir, s.entry.Name, pos, err)
		}
		pos += 4 + size
		if re.Offset < next {
			continue // a duplicate of an offset already seen
		}
		next = re.End()
		// The entry's slices alias the segment's bytes, read once.
		d.entries = append(d.entries, &filer_pb.LogEntry{TsNs: re.TsNs, Key: re.Key, Data: re.Data, Offset: re.Offset})
	}

	ss.cacheMu.Lock()
	defer ss.cacheMu.Unlock()
	if el, ok := ss.byKey[key]; ok {
		return el.Value.(*decodedSegment), nil
	}
	ss.byKey[key] = ss.lru.PushFront(d)
	ss.bytes += d.bytes
	for ss.bytes > maxDecodedSegmentBytes && ss.lru.Len() > 1 {
		old := ss.lru.Remove(ss.lru.Back()).(*decodedSegment)
		delete(ss.byKey, old.key)
		ss.bytes -= old.bytes
	}
	return d, nil
}

// readFlushed returns flushed log entries from offset on, up to about
// maxBytes, in offset order.
func (c *Client) readFlushed(ctx context.Context, st *flushedState, offset int64, maxBytes int) ([]*filer_pb.LogEntry, error) {
	var out []*filer_pb.LogEntry
	size := 0
	next := offset
	for _, s := range st.listing.segs[st.listing.from(offset):] {
		if s.maxOffset >= 0 && s.maxOffset < next {
			continue
		}
		d, err := c.decodeSegment(ctx, st.listing.dir, s)
		if err != nil {
			return nil, err
		}
		// The first entry that ends past next (a batch entry may
		// begin before it).
		i := sort.Search(len(d.entries), func(i int) bool { return d.entries[i].Offset+logentry.SpanOf(d.entries[i]) > next })
		for ; i < len(d.entries); i++ {
			e := d.entries[i]
			if e.Offset != next && len(out) > 0 {
				return out, nil // a gap: stop at the last dense offset
			}
			out = append(out, e)
			next = e.Offset + logentry.SpanOf(e)
			size += len(e.Key) + len(e.Data) + 16
			if size >= maxBytes {
				return out, nil
			}
		}
	}
	return out, nil
}

// filerClient adapts the Client to filer_pb.FilerClient for reading and
// uploading chunks. Once ctx is done its calls fail at once: SeaweedFS's
// upload retries the volume's assignment on its own, for seconds, with no
// context of the caller's.
type filerClient struct {
	c   *Client
	ctx context.Context
}

func (f filerClient) WithFilerClient(_ bool, fn func(filer_pb.SeaweedFilerClient) error) error {
	if err := f.ctx.Err(); err != nil {
		return err
	}
	return f.c.withFiler(f.ctx, fn)
}
func (f filerClient) AdjustedUrl(l *filer_pb.Location) string { return f.c.volumeHost(l) }
func (f filerClient) GetDataCenter() string                   { return "" }
