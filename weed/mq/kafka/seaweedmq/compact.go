package seaweedmq

// The log cleaner's rounds over the compacted partitions this gateway
// leads, and a partition's segments as package compaction reads and
// rewrites them: a cleaned group of segments is written as its first
// segment's file with one conditional filer call.

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

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/mq"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/compaction"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/logentry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// cleanerCheckpointFile holds the offset a partition's last cleaning
// reached (8 bytes, big-endian): the segments below it are clean. Its
// suffix keeps it out of the broker's and the gateway's segment reads.
const cleanerCheckpointFile = "kafka-cleaner-checkpoint.offset"

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
// gateway leads, until Close: a round each Backoff, and one soon after a
// compacted partition's records reach a segment (wakeCleaner), at most
// one each fifth of Backoff. Kafka's cleaner finds a log to clean as soon
// as its segment rolls; here records reach segments up to a flush
// interval later, and a round a whole Backoff after that would leave a
// compacted topic uncleaned for twice as long.
func (c *Client) StartCleaner(o CleanerOptions) {
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		c.cleanLoop(o.Backoff, func() {
			guard.Run("LogCleaner", func() { c.cleanRound(o) }) //nolint:errcheck // logged and counted; the next round tries again
		})
	}()
}

// cleanLoop runs round as StartCleaner says, until Close.
func (c *Client) cleanLoop(backoff time.Duration, round func()) {
	t := time.NewTimer(backoff)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		case <-c.cleanerWake:
			if wait := time.Until(last.Add(backoff / 5)); wait > 0 {
				select {
				case <-c.stop:
					return
				case <-time.After(wait):
				}
			}
		}
		last = time.Now()
		round()
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(backoff)
	}
}

// wakeCleaner asks the log cleaner for a round soon: a compacted
// partition's records reached a segment.
func (c *Client) wakeCleaner() {
	select {
	case c.cleanerWake <- struct{}{}:
	default:
	}
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
		if !storage.Compacted(t.Configs) {
			continue
		}
		for i := int32(0); i < t.Partitions && ctx.Err() == nil; i++ {
			if !o.Leads(t.Name, i) {
				continue
			}
			if _, err := c.CleanPartition(ctx, t, i, clock.Now()); err != nil {
				glog.Warningf("kafka log cleaner: %s/%d: %v", t.Name, i, err)
			}
		}
	}
}

// CleanResult is what one cleaning of a partition did.
type CleanResult = compaction.Result

// CleanPartition cleans a compacted topic's partition if it needs it.
func (c *Client) CleanPartition(ctx context.Context, info storage.TopicInfo, index int32, now time.Time) (CleanResult, error) {
	a, err := c.assignment(ctx, info.Name, index)
	if err != nil {
		return CleanResult{}, err
	}
	txns, err := c.Transactions(ctx, info.Name, index, 0, math.MaxInt64)
	if err != nil {
		return CleanResult{}, err
	}
	bound, err := c.producersSavedAt(ctx, info.Name, index)
	if err != nil {
		return CleanResult{}, err
	}
	if txns.FirstUnstable >= 0 {
		bound = min(bound, txns.FirstUnstable)
	}
	aborted := make([]compaction.Aborted, len(txns.Aborted))
	for i, t := range txns.Aborted {
		aborted[i] = compaction.Aborted(t)
	}
	dir := c.partitionDir(info.Name, a)
	res, err := compaction.Clean(ctx, compaction.Partition{
		Name: fmt.Sprintf("%s/%d", info.Name, index), Log: &cleanedLog{c: c, dir: dir},
		Configs: info.Configs, Aborted: aborted, Bound: bound,
	}, now)
	if res.Segments > 0 {
		c.segs.drop(dir) // the segments changed: every read lists them again
	}
	topic := metrics.Topic(info.Name)
	metrics.CompactionDirtyRatio.WithLabelValues(topic, strconv.Itoa(int(index))).Set(res.DirtyRatio)
	if err == nil && res.Cleaned {
		metrics.CompactionRuns.WithLabelValues(topic).Inc()
		metrics.CompactionRecords.WithLabelValues(topic).Add(float64(res.RemovedRecords))
		metrics.CompactionBytes.WithLabelValues(topic).Add(float64(res.RemovedBytes))
	}
	return res, err
}

// cleanedLog is a partition's segments as compaction.Log.
type cleanedLog struct {
	c   *Client
	dir string
}

func (l *cleanedLog) Segments(ctx context.Context) ([]compaction.Segment, error) {
	segs, err := l.c.listSegments(ctx, l.dir, "")
	if err != nil {
		return nil, err
	}
	out := make([]compaction.Segment, len(segs))
	for i, s := range segs {
		out[i] = compaction.Segment{Entry: s.entry, MaxOffset: s.maxOffset, Sealed: s.entry.Extended[gatewaySegmentAttr] != nil}
	}
	return out, nil
}

func (l *cleanedLog) End(ctx context.Context, s compaction.Segment) (int64, error) {
	return l.c.segmentEnd(ctx, l.dir, segment{entry: s.Entry, maxOffset: s.MaxOffset})
}

func (l *cleanedLog) Read(ctx context.Context, s compaction.Segment) ([]*filer_pb.LogEntry, error) {
	d, err := l.c.decodeSegment(ctx, l.dir, segment{entry: s.Entry, maxOffset: s.MaxOffset})
	if err != nil {
		return nil, err
	}
	return expandEntries(d.entries), nil
}

// Remove removes a segment the cleaner merged into another, or emptied,
// only if it is as listed (its offset_max and cleaned base the same): a
// cleaner deposed while it cleaned must not remove a segment the
// partition's next cleaner rewrote meanwhile with records it kept, nor one
// the leader appended to.
func (l *cleanedLog) Remove(ctx context.Context, s compaction.Segment) error {
	expect := map[string][]byte{
		mq.ExtendedAttrOffsetMax: s.Entry.Extended[mq.ExtendedAttrOffsetMax],
		cleanedBaseAttr:          s.Entry.Extended[cleanedBaseAttr],
	}
	err := l.c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		resp, err := fc.DeleteEntry(ctx, &filer_pb.DeleteEntryRequest{
			Directory: l.dir, Name: s.Entry.Name, IsDeleteData: true, ExpectedExtended: expect,
		})
		if err != nil {
			return err
		}
		if resp.Error != "" {
			return errors.New(resp.Error)
		}
		return nil
	})
	if status.Code(err) == codes.FailedPrecondition {
		return fmt.Errorf("segment %s/%s changed while it was cleaned; left as it is", l.dir, s.Entry.Name)
	}
	if err != nil {
		return fmt.Errorf("%w: remove cleaned segment %s/%s: %v", ErrUnavailable, l.dir, s.Entry.Name, err)
	}
	return nil
}

func (l *cleanedLog) Checkpoint(ctx context.Context) (int64, error) {
	return l.c.readCleanerCheckpoint(ctx, l.dir)
}

func (l *cleanedLog) SetCheckpoint(ctx context.Context, offset int64) error {
	return l.c.writeCleanerCheckpoint(ctx, l.dir, offset)
}

func (l *cleanedLog) Replace(ctx context.Context, group []compaction.Segment, kept []*filer_pb.LogEntry, first, last *filer_pb.LogEntry) error {
	return l.c.writeCleaned(ctx, l.dir, group, kept, first.Offset, last.Offset)
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
// listed. The offsets it spans (from lo to hi at least) stay as they were.
func (c *Client) writeCleaned(ctx context.Context, dir string, group []compaction.Segment, kept []*filer_pb.LogEntry, lo, hi int64) error {
	var buf []byte
	for _, e := range kept {
		buf = binary.BigEndian.AppendUint32(buf, uint32(proto.Size(e)))
		var err error
		if buf, err = (proto.MarshalOptions{}).MarshalAppend(buf, e); err != nil {
			return err
		}
	}
	first := group[0].Entry
	mtime := time.Unix(first.Attributes.GetMtime(), 0)
	for _, s := range group {
		if v := s.Entry.Extended[mq.ExtendedAttrOffsetMax]; len(v) == 8 {
			hi = max(hi, int64(binary.BigEndian.Uint64(v)))
		}
		if b := cleanedBase(s.Entry); b >= 0 {
			lo = min(lo, b)
		}
		mtime = maxTime(mtime, time.Unix(s.Entry.Attributes.GetMtime(), 0))
	}
	replication, err := c.dirReplication(ctx, dir)
	if err != nil {
		return err
	}
	fid, up, err := c.uploadSegment(ctx, dir+"/"+first.Name, replication, buf)
	if err != nil {
		return fmt.Errorf("%w: upload cleaned segment: %v", ErrUnavailable, err)
	}
	entry := proto.Clone(first).(*filer_pb.Entry)
	entry.Chunks = []*filer_pb.FileChunk{up.ToPbFileChunk(fid, 0, clock.Now().UnixNano())}
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
		err := createIf(ctx, fc, dir, entry, &filer_pb.WriteCondition_Clause{Kind: filer_pb.WriteCondition_IF_ETAG_MATCH, Etags: []string{was}})
		switch {
		case errors.Is(err, errPrecondition):
			return fmt.Errorf("segment %s/%s changed while it was cleaned; left as it is", dir, first.Name)
		case err != nil:
			return fmt.Errorf("%w: save cleaned segment %s/%s: %v", ErrUnavailable, dir, first.Name, err)
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
