package seaweedmq

// The log cleaner of compacted topics (cleanup.policy=compact): the gateway
// that leads a partition cleans its closed segments in the filer, as
// Kafka's log cleaner does its closed log segments (compact_plan.go decides
// what they keep). A segment is closed once the broker flushed a later
// one (the broker appends only to its newest); it is cleanable once it was
// written min.compaction.lag.ms ago and lies below the partition's first
// open transaction and below the offset its producer state was saved at
// (so that no idempotent batch the state does not hold is removed). A
// partition is cleaned when its dirty ratio (bytes of cleanable segments
// past the last cleaning, over bytes of all cleanable ones) reaches
// min.cleanable.dirty.ratio, or when its oldest dirty segment is older than
// max.compaction.lag.ms. The offset the last cleaning reached is kept in
// the partition's directory.
//
// A SIGKILL at any point loses nothing: a group of segments is written
// whole as its first segment's file (one conditional filer call, refused
// if the file changed since it was read), and only then are the group's
// other files removed; a cleaning cut short leaves copies of offsets that
// readers and the next cleaning skip. A record is removed only for a newer
// one of its key in the segments.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/mq"
	"github.com/seaweedfs/seaweedfs/weed/operation"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/util"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/logentry"
)

// cleanerCheckpointFile holds the offset a partition's last cleaning
// reached (8 bytes, big-endian): the segments below it are clean. Its
// suffix keeps it out of the broker's and the gateway's segment reads.
const cleanerCheckpointFile = "kafka-cleaner-checkpoint.offset"

// maxMergedSegment bounds the segments the cleaner merges: a read decodes
// a whole segment.
const maxMergedSegment = 16 << 20

// closedAfter is how long after its name's time (the broker's flush) a
// segment that is not the newest is taken as closed.
const closedAfter = 10 * time.Second

// CleanerOptions configure the log cleaner.
type CleanerOptions struct {
	// Backoff is the pause between rounds over the compacted partitions
	// (Kafka's log.cleaner.backoff.ms).
	Backoff time.Duration
	// Leads tells whether this gateway leads a partition: only its
	// leader cleans it.
	Leads func(topic string, index int32) bool
}

// StartCleaner cleans, in rounds, the partitions of compacted topics this
// gateway leads, until Close.
func (c *Client) StartCleaner(o CleanerOptions) {
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		t := time.NewTimer(o.Backoff)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
			}
			metrics.Guard("LogCleaner", func() { c.cleanRound(o) }) //nolint:errcheck // logged and counted; the next round tries again
			t.Reset(o.Backoff)
		}
	}()
}

// cleanRound cleans each compacted partition this gateway leads that needs
// it.
func (c *Client) cleanRound(o CleanerOptions) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	topics, err := c.ListTopics(ctx)
	if err != nil {
		glog.V(1).Infof("kafka log cleaner: listing topics: %v", err)
		return
	}
	for _, t := range topics {
		if !protocol.Compacted(t.Configs) {
			continue
		}
		for i := int32(0); i < t.Partitions && ctx.Err() == nil; i++ {
			if !o.Leads(t.Name, i) {
				continue
			}
			if _, err := c.CleanPartition(ctx, t, i, time.Now()); err != nil {
				glog.Warningf("kafka log cleaner: %s/%d: %v", t.Name, i, err)
			}
		}
	}
}

// cleanerSettings are a compacted topic's settings the cleaner honours.
type cleanerSettings struct {
	deleteRetention, minLag, maxLag time.Duration
	minDirtyRatio                   float64
}

func cleanerSettingsOf(configs map[string]string) cleanerSettings {
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
	s := cleanerSettings{
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

// CleanResult is what one cleaning of a partition did.
type CleanResult struct {
	DirtyRatio     float64
	Cleaned        bool
	RemovedRecords int
	RemovedBytes   int64
	// Segments is how many segment files the cleaned range had before,
	// and Kept after.
	Segments, Kept int
}

// CleanPartition cleans a compacted topic's partition if it needs it.
func (c *Client) CleanPartition(ctx context.Context, info protocol.TopicInfo, index int32, now time.Time) (CleanResult, error) {
	var res CleanResult
	set := cleanerSettingsOf(info.Configs)
	a, err := c.assignment(ctx, info.Name, index)
	if err != nil {
		return res, err
	}
	dir := partitionDir(info.Name, a)
	txns, err := c.Transactions(ctx, info.Name, index, 0, math.MaxInt64)
	if err != nil {
		return res, err
	}
	bound, err := c.producersSavedAt(ctx, info.Name, index)
	if err != nil {
		return res, err
	}
	if txns.FirstUnstable >= 0 {
		bound = min(bound, txns.FirstUnstable)
	}
	segs, err := c.listSegments(ctx, dir, "")
	if err != nil {
		return res, err
	}
	checkpoint, err := c.readCleanerCheckpoint(ctx, dir)
	if err != nil {
		return res, err
	}

	// The cleanable segments: closed, old enough, below the bound.
	var cands []cleanSeg
	var clean, dirty int64
	firstDirty := time.Time{}
	for i := 0; i+1 < len(segs); i++ {
		s := segs[i]
		mtime := time.Unix(s.entry.Attributes.GetMtime(), 0)
		if named, err := time.Parse("2006-01-02-15-04-05", s.entry.Name); err == nil && now.Sub(named) < closedAfter {
			break
		}
		if now.Sub(mtime) < set.minLag {
			break
		}
		maxOffset := s.maxOffset
		if maxOffset < 0 {
			end, err := c.segmentEnd(ctx, dir, s)
			if err != nil {
				return res, err
			}
			maxOffset = end - 1
		}
		if maxOffset >= bound {
			break
		}
		size := int64(filer.FileSize(s.entry))
		if maxOffset < checkpoint {
			clean += size
		} else {
			dirty += size
			if firstDirty.IsZero() {
				firstDirty = mtime
			}
		}
		cands = append(cands, cleanSeg{entry: s.entry, mtime: mtime, maxOffset: maxOffset})
	}
	if clean+dirty > 0 {
		res.DirtyRatio = float64(dirty) / float64(clean+dirty)
	}
	metrics.CompactionDirtyRatio.WithLabelValues(metrics.Topic(info.Name), strconv.Itoa(int(index))).Set(res.DirtyRatio)
	if dirty == 0 || (res.DirtyRatio < set.minDirtyRatio && now.Sub(firstDirty) < set.maxLag) {
		return res, nil
	}

	began := time.Now()
	glog.V(1).Infof("kafka log cleaner: %s/%d: cleaning %d segments (dirty ratio %.2f)", info.Name, index, len(cands), res.DirtyRatio)
	// Two passes over the segments, one at a time: the newest offset of
	// each key, then what each keeps, written a group at a time.
	cl := newCleaner(txns.Aborted, now.Add(-set.deleteRetention), maxMergedSegment, true)
	end := checkpoint
	for _, s := range cands {
		d, err := c.decodeSegment(ctx, dir, segment{entry: s.entry})
		if err != nil {
			return res, err
		}
		entries := expandEntries(d.entries)
		cl.learn(entries)
		if n := len(entries); n > 0 {
			end = max(end, entries[n-1].Offset+1)
		}
		// offset_max may name one offset past the segment's entries (the
		// broker's hint): the segment is clean below the checkpoint only
		// if it reaches past that too.
		if s.maxOffset >= 0 {
			end = max(end, s.maxOffset+1)
		}
	}
	res.Segments = len(cands)
	defer c.segs.drop(dir) // the segments changed: every read lists them again
	apply := func(g *cleanGroup) error {
		if !g.changes() {
			res.Kept++
			return nil
		}
		if len(g.kept) > 0 {
			if err := c.writeCleaned(ctx, dir, cands[g.lo:g.hi+1], g); err != nil {
				return err
			}
			res.Kept++
		} else if err := c.Remove(ctx, dir, cands[g.lo].entry.Name); err != nil {
			return err
		}
		for _, s := range cands[g.lo+1 : g.hi+1] {
			if err := c.Remove(ctx, dir, s.entry.Name); err != nil {
				return err
			}
		}
		res.RemovedRecords += g.removed
		res.RemovedBytes += g.removedBytes
		return nil
	}
	for i, s := range cands {
		d, err := c.decodeSegment(ctx, dir, segment{entry: s.entry})
		if err != nil {
			return res, err
		}
		if g := cl.clean(i, expandEntries(d.entries)); g != nil {
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
	if err := c.writeCleanerCheckpoint(ctx, dir, end); err != nil {
		return res, err
	}
	res.Cleaned = true
	topic := metrics.Topic(info.Name)
	metrics.CompactionRuns.WithLabelValues(topic).Inc()
	metrics.CompactionRecords.WithLabelValues(topic).Add(float64(res.RemovedRecords))
	metrics.CompactionBytes.WithLabelValues(topic).Add(float64(res.RemovedBytes))
	glog.V(1).Infof("kafka log cleaner: %s/%d: cleaned %d segments below offset %d into %d in %v, %d records (%d bytes) removed",
		info.Name, index, res.Segments, end, res.Kept, time.Since(began).Round(time.Millisecond), res.RemovedRecords, res.RemovedBytes)
	return res, nil
}

// producersSavedAt is the offset below which the partition's saved
// producer state holds every idempotent batch (MaxInt64 if no state was
// saved: no idempotent producer wrote).
func (c *Client) producersSavedAt(ctx context.Context, topic string, index int32) (int64, error) {
	dir, name := (&partition{topic: topic, index: index}).producersFile()
	data, err := c.ReadFile(ctx, dir, name)
	if errors.Is(err, fs.ErrNotExist) {
		return math.MaxInt64, nil
	}
	if err != nil {
		return 0, err
	}
	var saved savedProducers
	if err := json.Unmarshal(data, &saved); err != nil {
		return 0, fmt.Errorf("producer state of %s/%d: %w", topic, index, err)
	}
	return saved.Offset, nil
}

func (c *Client) readCleanerCheckpoint(ctx context.Context, dir string) (int64, error) {
	data, err := c.ReadFile(ctx, dir, cleanerCheckpointFile)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(data) != 8) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(data)), nil
}

func (c *Client) writeCleanerCheckpoint(ctx context.Context, dir string, offset int64) error {
	return c.WriteFile(ctx, dir, cleanerCheckpointFile, binary.BigEndian.AppendUint64(nil, uint64(offset)))
}

// writeCleaned replaces the first file of a group of segments with the
// entries the group keeps, if that file did not change since it was
// listed. The offsets it spans stay as they were.
func (c *Client) writeCleaned(ctx context.Context, dir string, group []cleanSeg, g *cleanGroup) error {
	var buf []byte
	for _, e := range g.kept {
		buf = binary.BigEndian.AppendUint32(buf, uint32(proto.Size(e)))
		var err error
		if buf, err = (proto.MarshalOptions{}).MarshalAppend(buf, e); err != nil {
			return err
		}
	}
	first := group[0].entry
	lo, hi := g.first.Offset, g.last.Offset
	mtime := group[0].mtime
	for _, s := range group {
		if v := s.entry.Extended[mq.ExtendedAttrOffsetMax]; len(v) == 8 {
			hi = max(hi, int64(binary.BigEndian.Uint64(v)))
		}
		if b := cleanedBase(s.entry); b >= 0 {
			lo = min(lo, b)
		}
		mtime = maxTime(mtime, s.mtime)
	}
	uploader, err := operation.NewUploader()
	if err != nil {
		return err
	}
	fid, up, err, _ := uploader.UploadWithRetry(filerClient{c}, &filer_pb.AssignVolumeRequest{
		Count: 1, Collection: "topics", Path: dir + "/" + first.Name,
	}, &operation.UploadOption{MimeType: segmentMimeType}, util.NewBytesReader(buf))
	if err != nil {
		return fmt.Errorf("%w: upload cleaned segment: %v", ErrUnavailable, err)
	}
	entry := proto.Clone(first).(*filer_pb.Entry)
	entry.Chunks = []*filer_pb.FileChunk{up.ToPbFileChunk(fid, 0, time.Now().UnixNano())}
	entry.Attributes.FileSize = uint64(up.Size)
	entry.Attributes.Mtime = mtime.Unix() // tombstones age from when they were written
	entry.Attributes.Md5 = nil
	if entry.Extended == nil {
		entry.Extended = map[string][]byte{}
	}
	entry.Extended[mq.ExtendedAttrOffsetMin] = binary.BigEndian.AppendUint64(nil, uint64(lo))
	entry.Extended[mq.ExtendedAttrOffsetMax] = binary.BigEndian.AppendUint64(nil, uint64(hi))
	entry.Extended[cleanedBaseAttr] = binary.BigEndian.AppendUint64(nil, uint64(lo))
	was := strings.TrimPrefix(fileVersion(first), "v:")
	return c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		resp, err := fc.CreateEntry(ctx, &filer_pb.CreateEntryRequest{
			Directory: dir, Entry: entry,
			Condition: &filer_pb.WriteCondition{Clauses: []*filer_pb.WriteCondition_Clause{
				{Kind: filer_pb.WriteCondition_IF_ETAG_MATCH, Etags: []string{was}},
			}},
		})
		switch {
		case err != nil:
			return fmt.Errorf("%w: save cleaned segment %s/%s: %v", ErrUnavailable, dir, first.Name, err)
		case resp.ErrorCode == filer_pb.FilerError_PRECONDITION_FAILED:
			return fmt.Errorf("segment %s/%s changed while it was cleaned; left as it is", dir, first.Name)
		case resp.Error != "":
			return fmt.Errorf("save cleaned segment %s/%s: %s", dir, first.Name, resp.Error)
		}
		return nil
	})
}

// expandEntries returns entries with each batch entry replaced by record
// entries of its records (in the envelope, which keeps each record's
// timestamp; ts_ns the batch entry's), so that the cleaner keeps or drops
// records one by one and writes what it keeps as record entries. A batch
// that cannot be decoded stays as it is (the cleaner keeps what it cannot
// read).
func expandEntries(entries []*filer_pb.LogEntry) []*filer_pb.LogEntry {
	batches := false
	for _, e := range entries {
		if logentry.IsBatch(e.Key, e.Data) {
			batches = true
			break
		}
	}
	if !batches {
		return entries
	}
	out := make([]*filer_pb.LogEntry, 0, len(entries))
	for _, e := range entries {
		if !logentry.IsBatch(e.Key, e.Data) {
			out = append(out, e)
			continue
		}
		re := logentry.FromLogEntry(e)
		recs, err := storedRecords(&re, nil, e.Offset)
		if err != nil {
			out = append(out, e)
			continue
		}
		for i := range recs {
			r := &recs[i]
			out = append(out, &filer_pb.LogEntry{TsNs: e.TsNs, Key: r.Key, Data: record.AppendEnvelope(nil, &r.Record, true), Offset: r.Offset})
		}
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
