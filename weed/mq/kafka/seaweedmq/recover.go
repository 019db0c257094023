package seaweedmq

// Recovery: before a partition's new publish stream takes writes (after
// this gateway starts, takes the partition over, or sees the stream break
// or the broker restart), every record the write-ahead logs hold that
// neither the log segments nor the broker's memory do is written back at
// its offset, as a log segment of its own. Offsets the logs do not hold
// either (records of acks=0/1 batches a crash caught before their commit)
// get fillers, which readers skip, so that offsets stay dense and none is
// handed out twice. openPublisher recovers, then opens the stream.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/protobuf/proto"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/mq"
	"github.com/seaweedfs/seaweedfs/weed/mq/topic"
	"github.com/seaweedfs/seaweedfs/weed/operation"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"
	"github.com/seaweedfs/seaweedfs/weed/util"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// maxRecoveredGap bounds the fillers recovery writes for offsets no log
// holds; a larger gap is not a crash's and is left to an operator.
const maxRecoveredGap = 1_000_000

// recoverPartition makes the stored records of a partition whole before a
// stream writes to it, and returns the partition's end: the segments'
// records, then what the broker holds, then what was recovered.
func (c *Client) recoverPartition(ctx context.Context, p *partition, a *mq_pb.BrokerPartitionAssignment) (int64, error) {
	// This gateway's commits under way go into the log first.
	if err := c.wal.barrier(ctx); err != nil {
		return 0, err
	}
	dir := partitionDir(p.topic, a)
	if _, err := c.flushed(ctx, dir, true); err != nil {
		return 0, err
	}
	// What the broker holds past the segments.
	offs, err := c.offsetsOf(ctx, p.topic, a, -1)
	if err != nil {
		return 0, err
	}
	// The broker may have flushed meanwhile.
	st, err := c.flushed(ctx, dir, true)
	if err != nil {
		return 0, err
	}
	held := max(offs.HighWatermark, st.end)
	logged, err := c.loggedRecords(ctx, dir, st.end)
	if err != nil {
		return 0, err
	}
	if err := c.logHeld(ctx, p, a, st, held, logged); err != nil {
		return 0, err
	}
	p.notifyMu.Lock()
	unseen := held > p.loggedEnd
	p.notifyMu.Unlock()
	if unseen {
		// The broker holds batches this gateway did not see through
		// (a stream broke under them): a producer's retry of one must be
		// answered as a duplicate.
		p.producers.loaded = false
	}
	for len(logged) > 0 && logged[0].Offset < held {
		logged = logged[1:]
	}
	if len(logged) == 0 {
		return held, nil
	}
	if held > st.end {
		// A broker that holds records of the partition did not lose any
		// it acknowledged; records logged past them mean the broker and
		// the log disagree.
		glog.Errorf("kafka partition %s/%d: broker %s holds offsets %d-%d, the write-ahead log has offsets up to %d beyond them; refusing writes so that no offset is handed out twice",
			p.topic, p.index, a.LeaderBroker, st.end, held-1, logged[len(logged)-1].Offset)
		return 0, fmt.Errorf("%w: broker and write-ahead log disagree", kerr.LeaderNotAvailable)
	}
	entries, fillers, err := withFillers(held, logged)
	if err != nil {
		glog.Errorf("kafka partition %s/%d: write-ahead log records from offset %d, segments end at %d: %v", p.topic, p.index, logged[0].Offset, held, err)
		return 0, fmt.Errorf("%w: %v", kerr.LeaderNotAvailable, err)
	}
	if err := c.writeSegment(ctx, dir, entries); err != nil {
		return 0, err
	}
	end := entries[len(entries)-1].Offset + 1
	// Batches whose produce failed may be among them (a batch is logged as
	// it is sent): the partition's idempotent producers are read again, so
	// that a retry of one is answered as a duplicate.
	p.producers.loaded = false
	metrics.WALRepublished.Add(float64(len(entries) - fillers))
	glog.V(0).Infof("kafka partition %s/%d: broker %s had lost offsets %d-%d; wrote %d acknowledged records back from the write-ahead log (%d fillers for offsets no log held)",
		p.topic, p.index, a.LeaderBroker, held, end-1, len(entries)-fillers, fillers)
	return end, nil
}

// logHeld puts into the write-ahead log the records the broker holds past
// the segments (offsets from st.end to held) that no log holds: records a
// stream sent before it broke, or that a crashed gateway never logged. They
// were not acknowledged, but an idempotent producer's retry of them will be
// answered as a duplicate, so they must be as durable as the rest; the
// partition's producers are read again to know them.
func (c *Client) logHeld(ctx context.Context, p *partition, a *mq_pb.BrokerPartitionAssignment, st *flushedState, held int64, logged []*filer_pb.LogEntry) error {
	have := make(map[int64]bool, len(logged))
	p.notifyMu.Lock()
	mislogged := p.mislogged
	p.notifyMu.Unlock()
	if !mislogged {
		for _, e := range logged {
			have[e.Offset] = true
		}
	}
	// With mislogged, a batch went into the log at offsets the broker did
	// not give it: everything the broker holds is logged again, and the
	// later copies win.
	added := 0
	for off := st.end; off < held; {
		if have[off] {
			off++
			continue
		}
		msgs, _, err := c.fetchFromBroker(ctx, p.topic, a, st, off, 4<<20)
		if err != nil {
			return err
		}
		if len(msgs) == 0 {
			return fmt.Errorf("%w: broker %s holds offset %d no more", ErrUnavailable, a.LeaderBroker, off)
		}
		var b walBatch
		b.dir, b.base = partitionDir(p.topic, a), off
		var w walRecords
		for _, m := range msgs {
			if have[m.offset] || m.offset >= held {
				break
			}
			w.add(m.tsNs, m.key, m.value)
			off = m.offset + 1
		}
		b.n, b.recs = w.n, w.buf
		if b.n == 0 {
			off++
			continue
		}
		c.wal.add(b, func(error) {})
		added += b.n
	}
	if added == 0 {
		return nil
	}
	if err := c.wal.barrier(ctx); err != nil {
		return err
	}
	p.notifyMu.Lock()
	p.mislogged = false
	p.notifyMu.Unlock()
	p.producers.loaded = false // read again, with the records just logged
	glog.V(0).Infof("kafka partition %s/%d: broker %s holds %d records past the segments that no write-ahead log had; logged them",
		p.topic, p.index, a.LeaderBroker, added)
	return nil
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
			out = append(out, fillerEntry(next, ts))
			fillers++
		}
		out = append(out, e)
		ts = e.TsNs
		next = e.Offset + 1
	}
	return out, fillers, nil
}

// loggedRecords returns what the write-ahead logs of every gateway hold of
// a partition from offset from on, one record per offset, ascending.
func (c *Client) loggedRecords(ctx context.Context, dir string, from int64) ([]*filer_pb.LogEntry, error) {
	var gateways []string
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		gateways = gateways[:0]
		return filer_pb.SeaweedList(ctx, fc, WALDir, "", func(e *filer_pb.Entry, _ bool) error {
			if e.IsDirectory {
				gateways = append(gateways, e.Name)
			}
			return nil
		}, "", false, 1<<31-1)
	})
	if err != nil && !errors.Is(err, filer_pb.ErrNotFound) {
		return nil, err
	}
	// Files by name are oldest first; a later write of an offset (a
	// later gateway's, after the first was recovered) wins.
	byOffset := map[int64]*filer_pb.LogEntry{}
	var fileTimes = map[int64]string{}
	for _, g := range gateways {
		files, err := c.readWALDirFor(ctx, WALDir+"/"+g, dir, from)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			for i := range f.batches {
				b := &f.batches[i]
				if b.dir != dir || b.base+int64(b.n) <= from {
					continue
				}
				es, err := b.entries(from)
				if err != nil {
					return nil, err
				}
				for _, e := range es {
					if t, ok := fileTimes[e.Offset]; !ok || f.name >= t {
						byOffset[e.Offset], fileTimes[e.Offset] = e, f.name
					}
				}
			}
		}
	}
	out := make([]*filer_pb.LogEntry, 0, len(byOffset))
	for _, e := range byOffset {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Offset < out[j].Offset })
	return out, nil
}

// writeSegment writes entries (ascending, dense offsets) to a partition as
// a log segment in the broker's format. It is named for the time of its
// last record, so that it sorts after every segment before it and no later
// than the broker's next flush; if a segment of that name exists it is
// appended to, as the broker does.
func (c *Client) writeSegment(ctx context.Context, dir string, entries []*filer_pb.LogEntry) error {
	var buf []byte
	for _, e := range entries {
		buf = binary.BigEndian.AppendUint32(buf, uint32(proto.Size(e)))
		var err error
		if buf, err = (proto.MarshalOptions{}).MarshalAppend(buf, e); err != nil {
			return err
		}
	}
	first, last := entries[0].Offset, entries[len(entries)-1].Offset
	name := time.Unix(0, entries[len(entries)-1].TsNs).UTC().Format(topic.TIME_FORMAT)
	uploader, err := operation.NewUploader()
	if err != nil {
		return err
	}
	fid, res, err, _ := uploader.UploadWithRetry(filerClient{c}, &filer_pb.AssignVolumeRequest{
		Count:      1,
		Collection: "topics",
		Path:       dir + "/" + name,
	}, &operation.UploadOption{}, util.NewBytesReader(buf))
	if err != nil {
		return fmt.Errorf("%w: upload recovered records: %v", ErrUnavailable, err)
	}
	err = c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		resp, err := filer_pb.LookupEntry(ctx, fc, &filer_pb.LookupDirectoryEntryRequest{Directory: dir, Name: name})
		var entry *filer_pb.Entry
		switch {
		case errors.Is(err, filer_pb.ErrNotFound):
			now := time.Now().Unix()
			entry = &filer_pb.Entry{Name: name, Attributes: &filer_pb.FuseAttributes{
				Crtime: now, Mtime: now, FileMode: uint32(os.FileMode(0o644)),
			}, Extended: map[string][]byte{}}
		case err != nil:
			return err
		default:
			entry = resp.Entry
			if entry.Extended == nil {
				entry.Extended = map[string][]byte{}
			}
		}
		size := int64(filer.TotalSize(entry.Chunks))
		entry.Chunks = append(entry.Chunks, res.ToPbFileChunk(fid, size, time.Now().UnixNano()))
		entry.Attributes.FileSize = uint64(size) + uint64(res.Size)
		if v := entry.Extended[mq.ExtendedAttrOffsetMin]; len(v) != 8 || int64(binary.BigEndian.Uint64(v)) > first {
			entry.Extended[mq.ExtendedAttrOffsetMin] = binary.BigEndian.AppendUint64(nil, uint64(first))
		}
		if v := entry.Extended[mq.ExtendedAttrOffsetMax]; len(v) != 8 || int64(binary.BigEndian.Uint64(v)) < last {
			entry.Extended[mq.ExtendedAttrOffsetMax] = binary.BigEndian.AppendUint64(nil, uint64(last))
		}
		return filer_pb.CreateEntry(ctx, fc, &filer_pb.CreateEntryRequest{Directory: dir, Entry: entry})
	})
	if err != nil {
		return fmt.Errorf("%w: save recovered records: %v", ErrUnavailable, err)
	}
	if _, err := c.flushed(ctx, dir, true); err != nil {
		return err
	}
	return nil
}

// fillOffsets writes fillers for offsets from..to-1 of a partition as a
// segment: a broker whose counter restarted past the stored records would
// otherwise leave them empty, and readers stop at a hole.
func (c *Client) fillOffsets(ctx context.Context, dir string, from, to, tsNs int64) error {
	if to-from > maxRecoveredGap {
		return fmt.Errorf("a gap of %d offsets", to-from)
	}
	entries := make([]*filer_pb.LogEntry, 0, to-from)
	for o := from; o < to; o++ {
		entries = append(entries, fillerEntry(o, tsNs))
	}
	return c.writeSegment(ctx, dir, entries)
}

// fillerValue is what a filler holds; readers skip it (record.ErrFiller).
var fillerValue = record.AppendFiller(nil)

// fillerEntry is a filler at offset, stored with ts_ns tsNs.
func fillerEntry(offset, tsNs int64) *filer_pb.LogEntry {
	return &filer_pb.LogEntry{TsNs: tsNs, Data: fillerValue, Offset: offset}
}

// openPublisher recovers the partition from the write-ahead logs
// (recover.go), opens its publish stream and notes where the stored records
// end, which appendVerifying checks the broker against.
//
// The broker recovers its offset counter after a restart from a checkpoint
// it writes every two seconds, which can lag what it flushed; the gateway
// moves the checkpoint up to the flushed data first, so that a broker that
// loads the counter afterwards starts at the right place.
//
// It also learns the ts_ns of the partition's last record, so that the
// ts_ns it sends stay increasing and SeaweedMQ keeps them as they are.
func (c *Client) openPublisher(ctx context.Context, p *partition, a *mq_pb.BrokerPartitionAssignment) (*publisher, error) {
	dir := partitionDir(p.topic, a)
	p.dir = dir
	end, err := c.recoverPartition(ctx, p, a)
	if err != nil {
		return nil, err
	}
	st, err := c.flushed(ctx, dir, false)
	if err != nil {
		return nil, err
	}
	if st.end > 0 {
		cp, err := c.readCheckpoint(ctx, dir)
		if err != nil {
			return nil, err
		}
		if cp < st.end-1 {
			glog.V(1).Infof("kafka partition %s/%d: broker checkpoint at offset %d lags the stored records (up to %d); moving it up", p.topic, p.index, cp, st.end-1)
			if err := c.writeCheckpoint(ctx, dir, st.end-1); err != nil {
				return nil, err
			}
		}
	}
	if p.lastTsNs == 0 {
		offs, err := c.offsetsOf(ctx, p.topic, a, p.knownHW())
		if err != nil {
			return nil, err
		}
		if hw := offs.HighWatermark; hw > 0 {
			tail, err := c.rawAt(ctx, p.topic, a, hw-1)
			if err != nil {
				return nil, err
			}
			if tail != nil {
				p.lastTsNs = tail.tsNs
			}
		}
	}
	p.storedEnd = max(end, st.end)
	pub, err := c.openStream(ctx, p, a)
	if err == nil {
		p.streamOpened(p.storedEnd)
	}
	return pub, err
}
