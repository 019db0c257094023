package seaweedmq

// Recovery: before this gateway writes to a partition (after it starts or
// takes the partition over), every record the write-ahead logs of the
// gateways hold that the log segments do not is written back at its
// offset, as a log segment of its own. Offsets the logs do not hold either
// (records of acks=0/1 batches a crash caught before their commit) get
// fillers, which readers skip, so that offsets stay dense and none is
// handed out twice. openPartition recovers, then takes the partition's
// end as its next offset.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/protobuf/proto"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/mq"
	"github.com/seaweedfs/seaweedfs/weed/mq/topic"
	"github.com/seaweedfs/seaweedfs/weed/operation"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/logentry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/wal"
)

// maxRecoveredGap bounds the fillers recovery writes for offsets no log
// holds; a larger gap is not a crash's and is left to an operator.
const maxRecoveredGap = 1_000_000

// recoverPartition makes the stored records of a partition whole before
// this gateway writes to it, and returns the partition's end: the
// segments' records, then what the logs hold past them.
func (c *Client) recoverPartition(ctx context.Context, p *partition) (int64, error) {
	// This gateway's commits under way go into the log first.
	if err := c.wal.Barrier(ctx); err != nil {
		return 0, err
	}
	st, err := c.flushed(ctx, p.dir, true)
	if err != nil {
		return 0, err
	}
	logged, err := c.walReader.Logged(ctx, p.walKey, st.end)
	if err != nil {
		return 0, err
	}
	if len(logged) == 0 {
		return st.end, nil
	}
	entries, fillers, err := withFillers(st.end, logged)
	if err != nil {
		glog.Errorf("kafka partition %s/%d: write-ahead log records from offset %d, segments end at %d: %v", p.topic, p.index, logged[0].Offset, st.end, err)
		return 0, fmt.Errorf("%w: %v", kerr.LeaderNotAvailable, err)
	}
	if err := c.writeSegment(ctx, p.dir, c.rollingOf(p.topic), entries); err != nil {
		var covered *coveredError
		if errors.As(err, &covered) {
			// Another gateway wrote past the segments' end meanwhile:
			// it leads the partition, or did.
			return 0, fmt.Errorf("%w: %v", kerr.NotLeaderForPartition, err)
		}
		return 0, err
	}
	end := entries[len(entries)-1].Offset + logentry.SpanOf(entries[len(entries)-1])
	// Batches whose produce failed may be among them (a batch is logged
	// before it is answered): the partition's idempotent producers are
	// read again, so that a retry of one is answered as a duplicate.
	p.producers.loaded = false
	metrics.WALRepublished.Add(float64(len(entries) - fillers))
	glog.V(0).Infof("kafka partition %s/%d: wrote offsets %d-%d back from the write-ahead logs (%d records, %d fillers for offsets no log held)",
		p.topic, p.index, st.end, end-1, len(entries)-fillers, fillers)
	return end, nil
}

// withFillers returns logged (ascending offsets from at least from) with
// fillers in every offset from from on that it lacks, and the fillers'
// number.
func withFillers(from int64, logged []*filer_pb.LogEntry) ([]*filer_pb.LogEntry, int, error) {
	out := make([]*filer_pb.LogEntry, 0, len(logged))
	next, fillers := from, 0
	ts := logged[0].TsNs
	for _, e := range logged {
		if gap := e.Offset - next; gap > maxRecoveredGap {
			return nil, 0, fmt.Errorf("a gap of %d offsets no log holds", gap)
		}
		for ; next < e.Offset; next++ {
			out = append(out, logentry.Filler(next, ts))
			fillers++
		}
		out = append(out, e)
		ts = e.TsNs
		next = e.Offset + logentry.SpanOf(e)
	}
	return out, fillers, nil
}

// segmentMimeType is what segments are uploaded as: binary, which the
// volume servers store as it is. (Records compressed by their producers
// stay so; gzip on every upload and read cost a third of the gateway's CPU
// under load.)
const segmentMimeType = "application/octet-stream"

// writeSegment writes entries (ascending, dense offsets) to a partition as
// a log segment in the broker's format.
func (c *Client) writeSegment(ctx context.Context, dir string, r rolling, entries []*filer_pb.LogEntry) error {
	var buf []byte
	for _, e := range entries {
		buf = binary.BigEndian.AppendUint32(buf, uint32(proto.Size(e)))
		var err error
		if buf, err = (proto.MarshalOptions{}).MarshalAppend(buf, e); err != nil {
			return err
		}
	}
	last := entries[len(entries)-1]
	return c.writeSegmentBytes(ctx, dir, r, buf, entries[0].Offset, last.Offset+logentry.SpanOf(last)-1, last.TsNs)
}

// coveredError refuses a segment whose offsets the partition's segments
// hold already, from end on: another gateway wrote them (the next leader,
// recovering from the write-ahead logs), and a second copy, perhaps of
// other records, would be read in their place.
type coveredError struct{ end int64 }

func (e *coveredError) Error() string {
	return fmt.Sprintf("the segments hold offsets up to %d already", e.end-1)
}

// writeSegmentBytes writes a segment's bytes (offsets first to last) to a
// partition, unless its segments reach first already (coveredError). The
// segment is named for the time of its last record (lastTs), as the broker
// names its flushes, but never before the newest segment: readers take
// name order for offset order and list only from the newest segment on,
// and records written back from the write-ahead logs, or stamped by
// another gateway's clock, may be older than the segment before them. If a
// segment of that name exists it is appended to, as the broker does, or
// the segment rolls to a name after it, as the topic's r says (roll.go). The
// partition's listing is read again before it returns, so that reads find
// the records there.
//
// The upload can take long (the filer retries the assignment of a volume
// while none answers), and another write may land meanwhile (the next
// leader's recovery, while a released tail waited): whether the segments
// hold the offsets is checked again once the bytes are uploaded, under
// this gateway's lock of the directory, and the entry's update holds only
// if no other gateway wrote the file since that check (saveSegment).
func (c *Client) writeSegmentBytes(ctx context.Context, dir string, r rolling, buf []byte, first, last, lastTs int64) error {
	// The name the upload's volume is assigned for, and a first look
	// whether the segments hold the offsets already, from the listing
	// as this gateway last read it: both are decided again once uploaded.
	planned, err := c.segmentName(ctx, dir, r, len(buf), first, lastTs, false)
	if err != nil {
		return err
	}
	replication, err := c.dirReplication(ctx, dir)
	if err != nil {
		return err
	}
	fid, res, err := c.uploadSegment(ctx, dir+"/"+planned, replication, buf)
	if err != nil {
		return fmt.Errorf("%w: upload a segment: %v", ErrUnavailable, err)
	}
	return c.saveSegment(ctx, dir, r, first, last, lastTs, fid, res)
}

// saveSegment puts the uploaded chunk fid of a segment's bytes (offsets
// first to last) in the partition's listing: the segment's own file, or
// appended to the file of its name (writeSegmentBytes). Another gateway's
// write to the file between its lookup and its update is met by looking
// it up again, a few times.
func (c *Client) saveSegment(ctx context.Context, dir string, r rolling, first, last, lastTs int64, fid string, res *operation.UploadResult) error {
	t := &c.segWrites[fnv32(dir)%uint32(len(c.segWrites))]
	if err := t.take(ctx); err != nil {
		return err
	}
	defer t.give()
	var err error
	for attempt := 1; ; attempt++ {
		err = c.saveSegmentOnce(ctx, dir, r, first, last, lastTs, fid, res)
		if !errors.Is(err, errSegmentChanged) {
			break
		}
		if attempt == 5 {
			return fmt.Errorf("%w: save a segment: %v", ErrUnavailable, err)
		}
	}
	var covered *coveredError
	if errors.As(err, &covered) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%w: save a segment: %v", ErrUnavailable, err)
	}
	if _, err := c.flushed(ctx, dir, true); err != nil {
		return err
	}
	return nil
}

// errSegmentChanged: another gateway wrote the segment file between its
// lookup and this write.
var errSegmentChanged = errors.New("the segment file changed while it was appended to")

// saveSegmentOnce names the segment of uploaded chunk fid and creates its
// file, or adds the chunk to the file of that name. The update holds only
// if the file is as it was looked up (absent, or with the same chunks):
// the filer's create replaces the whole entry and deletes the chunks it no
// longer holds, so of two gateways appending to one file at once the
// second would drop the first's chunk, records its readers were given.
// errSegmentChanged when the file changed meanwhile.
func (c *Client) saveSegmentOnce(ctx context.Context, dir string, r rolling, first, last, lastTs int64, fid string, res *operation.UploadResult) error {
	name, err := c.segmentName(ctx, dir, r, int(res.Size), first, lastTs, true)
	if err != nil {
		return err
	}
	return c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		resp, err := filer_pb.LookupEntry(ctx, fc, &filer_pb.LookupDirectoryEntryRequest{Directory: dir, Name: name})
		var entry *filer_pb.Entry
		cond := &filer_pb.WriteCondition_Clause{Kind: filer_pb.WriteCondition_IF_NOT_EXISTS}
		switch {
		case errors.Is(err, filer_pb.ErrNotFound):
			now := clock.Now().Unix()
			entry = &filer_pb.Entry{Name: name, Attributes: &filer_pb.FuseAttributes{
				Crtime: now, Mtime: now, FileMode: uint32(os.FileMode(0o644)),
			}, Extended: map[string][]byte{}}
		case err != nil:
			return err
		default:
			entry = resp.Entry
			cond = &filer_pb.WriteCondition_Clause{Kind: filer_pb.WriteCondition_IF_CHUNKS_EQUAL}
			for _, ch := range entry.Chunks {
				cond.Fids = append(cond.Fids, ch.GetFileIdString())
			}
			if entry.Extended == nil {
				entry.Extended = map[string][]byte{}
			}
			if v := entry.Extended[mq.ExtendedAttrOffsetMax]; len(v) == 8 && int64(binary.BigEndian.Uint64(v)) >= first {
				return &coveredError{end: int64(binary.BigEndian.Uint64(v)) + 1}
			}
		}
		size := int64(filer.TotalSize(entry.Chunks))
		entry.Chunks = append(entry.Chunks, res.ToPbFileChunk(fid, size, clock.Now().UnixNano()))
		entry.Attributes.FileSize = uint64(size) + uint64(res.Size)
		if v := entry.Extended[mq.ExtendedAttrOffsetMin]; len(v) != 8 || int64(binary.BigEndian.Uint64(v)) > first {
			entry.Extended[mq.ExtendedAttrOffsetMin] = binary.BigEndian.AppendUint64(nil, uint64(first))
		}
		if len(entry.Chunks) == 1 {
			entry.Extended[gatewaySegmentAttr] = []byte{1}
		}
		if v := entry.Extended[mq.ExtendedAttrOffsetMax]; len(v) != 8 || int64(binary.BigEndian.Uint64(v)) < last {
			entry.Extended[mq.ExtendedAttrOffsetMax] = binary.BigEndian.AppendUint64(nil, uint64(last))
		}
		if c.beforeSegmentSave != nil {
			c.beforeSegmentSave()
		}
		err = createIf(ctx, fc, dir, entry, cond)
		if errors.Is(err, errPrecondition) {
			return errSegmentChanged
		}
		if err != nil {
			return err
		}
		// Its end is known (its offset_max, this segment's last offset
		// or, appended to, the file's before): the listing that follows
		// need not read it.
		c.segs.knowEnd(segment{entry: entry}.key(dir), int64(binary.BigEndian.Uint64(entry.Extended[mq.ExtendedAttrOffsetMax]))+1)
		return nil
	})
}

// segmentName is the name of a segment of size bytes, offsets from first
// on, whose last record has time lastTs: its time's; or, if the newest
// segment's sorts at or after that, the newest segment's when the segment
// joins it, else the name that rolls after it (roll.go). A coveredError
// if the segments hold first already. fresh lists the partition's
// segments again; otherwise a listing of the last few seconds will do.
func (c *Client) segmentName(ctx context.Context, dir string, r rolling, size int, first, lastTs int64, fresh bool) (string, error) {
	st, err := c.flushed(ctx, dir, fresh)
	if err != nil {
		return "", err
	}
	if st.end > first {
		return "", &coveredError{end: st.end}
	}
	name := time.Unix(0, lastTs).UTC().Format(topic.TIME_FORMAT)
	if n := len(st.listing.segs); n > 0 && st.listing.segs[n-1].entry.Name >= name {
		newest := st.listing.segs[n-1].entry
		if r.joins(newest, size) {
			return newest.Name, nil
		}
		return rollName(newest.Name), nil
	}
	return name, nil
}

// fnv32 is the FNV-1a hash of s.
func fnv32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s)) //nolint:errcheck // never fails
	return h.Sum32()
}

// openPartition recovers the partition from the write-ahead logs and
// takes its end as the next offset to give. Called with writeMu held.
//
// It also learns the ts_ns of the partition's last record, so that the
// ts_ns it gives stay increasing, as SeaweedMQ keeps them.
func (c *Client) openPartition(ctx context.Context, p *partition) error {
	e, err := c.topic(ctx, p.topic)
	if err != nil {
		return err
	}
	if p.index < 0 || int(p.index) >= len(e.parts) {
		return kerr.UnknownTopicOrPartition
	}
	a := e.parts[p.index]
	p.replication = c.replicationOfTopic(e)
	p.dir = c.partitionDir(p.topic, a)
	p.walKey = wal.PartKey(p.dir, a.Partition.UnixTimeNs)
	if c.opts.Term != nil {
		p.term = c.opts.Term(p.topic, p.index)
		if p.term == 0 {
			// Only the leader recovers: an operation admitted while
			// this gateway led the partition, that waited (SeaweedFS
			// out of reach) until it no longer did, would write
			// segments of the partition beside its leader.
			return fmt.Errorf("%w: not led here", kerr.NotLeaderForPartition)
		}
	}
	end, err := c.recoverPartition(ctx, p)
	if err != nil {
		return err
	}
	if c.opts.Term != nil && p.term != 0 && c.opts.Term(p.topic, p.index) != p.term {
		// The leadership ended (or began anew) while the logs were read,
		// which can take long when SeaweedFS is slow: what was recovered
		// may miss what the next leader wrote since. Offsets are given
		// only by a run opened within one term.
		return fmt.Errorf("%w: its leadership changed while it was recovered", kerr.NotLeaderForPartition)
	}
	if end > 0 {
		tail, err := c.rawAt(ctx, p, end-1)
		if err != nil {
			return err
		}
		if tail != nil {
			p.lastTsNs = max(p.lastTsNs, tail.TsNs)
		}
	}
	p.notifyMu.Lock()
	// The barrier above saw every batch sent before it answered; one
	// still pending would have been sent by a run of this partition
	// that is gone: it fails, to be sent again.
	left := p.pending
	p.pending, p.tail, p.tailBytes = nil, nil, 0
	p.hw = -1 // what readers see is read afresh from the segments
	p.advanceLocked(end)
	p.notifyMu.Unlock()
	for _, b := range left {
		if b.durable {
			b.app.Finish(-1, fmt.Errorf("%w: the partition was recovered", kerr.NotLeaderForPartition))
		}
	}
	p.next = end
	p.ready = true
	// The idempotent producers are read again for each run: what an
	// earlier run of this gateway knew misses what another writer stored
	// since (a fault run had a partition reopened in a new term take
	// producers' retries as new batches, its state loaded in the old one).
	p.producers.loaded = false
	return nil
}
