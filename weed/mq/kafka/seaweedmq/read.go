package seaweedmq

import (
	"bytes"
	"context"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/logentry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/wal"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// readRaw returns stored messages from offset on, up to about maxBytes,
// with the partition's offsets: what the log segments hold, then the
// partition's tail in memory.
func (c *Client) readRaw(ctx context.Context, p *partition, offset int64, maxBytes int) ([]logentry.Raw, storage.Offsets, error) {
	// The tail first: a flush takes batches out of it only once the
	// segments listed afterwards hold them.
	tail, hw := p.tailFrom(offset)
	st, err := c.flushed(ctx, p.dir, false)
	if err != nil {
		return nil, storage.Offsets{}, err
	}
	offs := storage.Offsets{LogStart: st.start, HighWatermark: max(st.end, hw)}
	if len(st.listing.segs) == 0 {
		offs.LogStart = p.tailStart()
	}
	if offset < st.start {
		return nil, offs, kerr.OffsetOutOfRange
	}
	if offset < st.end && (len(tail) == 0 || offset < tail[0].base) {
		entries, err := c.readFlushed(ctx, st, offset, maxBytes)
		if err != nil && ctx.Err() == nil {
			// The log cleaner may have rewritten or removed a
			// segment since it was listed: list them all again.
			c.segs.drop(st.listing.dir)
			if st, err = c.flushed(ctx, st.listing.dir, true); err == nil {
				entries, err = c.readFlushed(ctx, st, offset, maxBytes)
			}
		}
		if err != nil {
			return nil, storage.Offsets{}, err
		}
		if len(entries) > 0 {
			// From the offset on, or past a hole in the segments (no
			// record holds the offset; Kafka's readers skip such gaps).
			out := make([]logentry.Raw, len(entries))
			for i, e := range entries {
				out[i] = logentry.FromLogEntry(e)
			}
			return out, offs, nil
		}
	}
	if len(tail) > 0 && tail[0].base > offset {
		// Between the segments as listed and the tail: a segment
		// written since the listing (a recovery, a released tail). The
		// segments are listed again; records past the offset asked for
		// are never served in its place (a reader would skip those
		// between), nothing is until it is found.
		c.segs.drop(p.dir)
		if st, err = c.flushed(ctx, p.dir, true); err != nil {
			return nil, storage.Offsets{}, err
		}
		offs.HighWatermark = max(st.end, hw)
		if offset < st.end {
			entries, err := c.readFlushed(ctx, st, offset, maxBytes)
			if err != nil {
				return nil, storage.Offsets{}, err
			}
			out := make([]logentry.Raw, len(entries))
			for i, e := range entries {
				out[i] = logentry.FromLogEntry(e)
			}
			return out, offs, nil
		}
		glog.V(1).Infof("kafka partition %s/%d: offset %d is in no segment, and the tail begins at %d", p.topic, p.index, offset, tail[0].base)
		return nil, offs, nil
	}
	var out []logentry.Raw
	size := 0
	for _, b := range tail {
		wb := wal.Batch{Base: b.base, N: b.n, Recs: b.recs}
		// The tail's bytes are never changed once logged: entries
		// alias them.
		err := wb.Each(offset, func(e logentry.Raw) error {
			out = append(out, e)
			size += len(e.Key) + len(e.Data) + 16
			return nil
		})
		if err != nil {
			return nil, offs, err
		}
		if size >= maxBytes {
			break
		}
	}
	return out, offs, nil
}

// tailFrom returns the tail's batches that hold offsets from offset on,
// and the high watermark.
func (p *partition) tailFrom(offset int64) ([]*tailBatch, int64) {
	p.notifyMu.Lock()
	defer p.notifyMu.Unlock()
	i := sort.Search(len(p.tail), func(i int) bool { return p.tail[i].base+int64(p.tail[i].n) > offset })
	return p.tail[i:len(p.tail):len(p.tail)], p.hw
}

// tailStart is where the tail begins (the high watermark if it holds
// nothing, 0 if that is not known): the log start of a partition no
// segment holds records of yet.
func (p *partition) tailStart() int64 {
	p.notifyMu.Lock()
	defer p.notifyMu.Unlock()
	if len(p.tail) > 0 {
		return p.tail[0].base
	}
	return max(p.hw, 0)
}

// Read implements storage.Backend. The partition is recovered first if
// this gateway has not yet (recover.go).
func (c *Client) Read(ctx context.Context, topic string, index int32, offset int64, maxBytes int) (storage.ReadResult, error) {
	p, err := c.ensureOpen(ctx, topic, index)
	if err != nil {
		return storage.ReadResult{}, err
	}
	return c.read(ctx, p, offset, maxBytes)
}

// ReadBatches implements storage.Backend: as Read, with the batches
// stored as produced returned whole, not decoded (ReadResult.Raw).
func (c *Client) ReadBatches(ctx context.Context, topic string, index int32, offset int64, maxBytes int) (storage.ReadResult, error) {
	p, err := c.ensureOpen(ctx, topic, index)
	if err != nil {
		return storage.ReadResult{}, err
	}
	return c.readEntries(ctx, p, offset, maxBytes, true)
}

// read is Read without the recovery.
func (c *Client) read(ctx context.Context, p *partition, offset int64, maxBytes int) (storage.ReadResult, error) {
	return c.readEntries(ctx, p, offset, maxBytes, false)
}

// readEntries reads a partition's entries from offset on, up to about
// maxBytes: their records, or with raw the batch entries' batches as they
// are.
func (c *Client) readEntries(ctx context.Context, p *partition, offset int64, maxBytes int, raw bool) (storage.ReadResult, error) {
	var res storage.ReadResult
	if start := c.logStartOf(ctx, p.topic, p.index); offset < start {
		offs, err := c.offsets(ctx, p)
		res.Offsets = offs
		if err != nil {
			return res, err
		}
		return res, kerr.OffsetOutOfRange
	}
	size, first := 0, true
	for {
		entries, offs, err := c.readRaw(ctx, p, offset, maxBytes-size)
		if err != nil {
			if !first {
				break // return what was read; the next fetch sees the error
			}
			res.Offsets = offs
			return res, err
		}
		if first {
			res.Offsets = offs
			res.LogStart = max(res.LogStart, c.logStartOf(ctx, p.topic, p.index))
		}
		res.HighWatermark = max(res.HighWatermark, offs.HighWatermark)
		if len(entries) == 0 && first && offset > res.HighWatermark {
			return res, kerr.OffsetOutOfRange
		}
		first = false
		size += collect(&res, p.topic, p.index, entries, offset, raw)
		if len(entries) == 0 {
			break
		}
		offset = entries[len(entries)-1].End()
		if size >= maxBytes || offset >= res.HighWatermark {
			break
		}
	}
	return res, nil
}

// collect adds stored entries read from offset on to res: with raw, the
// batch entries' batches as they are; the records of the others. It
// returns about the bytes they take.
func collect(res *storage.ReadResult, topic string, index int32, entries []logentry.Raw, offset int64, raw bool) int {
	size := 0
	for i := range entries {
		e := &entries[i]
		switch {
		case logentry.IsBatch(e.Key, e.Data) && record.IsGap(e.Data):
			// Offsets a topic link's source held no batch in:
			// nothing to read, as in a compacted log.
		case raw && logentry.IsBatch(e.Key, e.Data):
			res.Raw = append(res.Raw, storage.RawBatch{Base: e.Offset, Count: int32(e.Span()), Codec: record.BatchCodec(e.Data), Data: e.Data})
		default:
			var bad error
			if res.Records, bad = storedRecords(e, res.Records, offset); bad != nil {
				// A stored record no Kafka client could read (a
				// SeaweedMQ client's value that looks like the
				// gateway's envelope): it is left out, as a
				// compacted offset is, rather than block the
				// partition.
				metrics.RecordsSkipped.WithLabelValues(metrics.Topic(topic)).Inc()
				glog.Warningf("kafka partition %s/%d: offset %d cannot be read as a Kafka record, left out: %v", topic, index, e.Offset, bad)
			}
		}
		size += len(e.Key) + len(e.Data) + 16
	}
	return size
}

// ReadStored implements storage.Stored: what the partition's segments
// hold from offset on, read by a gateway that need not lead it. Nothing
// is recovered or opened: the listing and the decoded segments are those
// every read shares.
func (c *Client) ReadStored(ctx context.Context, topic string, index int32, offset int64, maxBytes int) (storage.ReadResult, error) {
	var res storage.ReadResult
	a, err := c.assignment(ctx, topic, index)
	if err != nil {
		return res, err
	}
	dir := c.partitionDir(topic, a)
	st, err := c.flushed(ctx, dir, false)
	if err != nil {
		return res, err
	}
	res.LogStart, res.HighWatermark = st.start, st.end
	if offset < st.start || offset >= st.end {
		return res, nil
	}
	entries, err := c.readFlushed(ctx, st, offset, maxBytes)
	if err != nil && ctx.Err() == nil {
		// Rewritten or removed by the log cleaner since it was listed.
		c.segs.drop(dir)
		if st, err = c.flushed(ctx, dir, true); err == nil {
			res.LogStart, res.HighWatermark = st.start, st.end
			entries, err = c.readFlushed(ctx, st, offset, maxBytes)
		}
	}
	if err != nil {
		return storage.ReadResult{}, err
	}
	raw := make([]logentry.Raw, len(entries))
	for i, e := range entries {
		raw[i] = logentry.FromLogEntry(e)
	}
	collect(&res, topic, index, raw, offset, true)
	return res, nil
}

var _ storage.Stored = (*Client)(nil)

// Offsets implements storage.Backend, after recovery as Read.
func (c *Client) Offsets(ctx context.Context, topic string, index int32) (storage.Offsets, error) {
	p, err := c.ensureOpen(ctx, topic, index)
	if err != nil {
		return storage.Offsets{}, err
	}
	return c.offsets(ctx, p)
}

// KnownOffsets returns a partition's log start and high watermark without
// recovering the partition, which only the gateway leading it may do: for
// observers, such as the lag metrics of a group's coordinator, of
// partitions another gateway may lead. A partition open here answers its
// high watermark from memory; any other from its segments, which lag its
// leader's tail by at most the flush interval.
func (c *Client) KnownOffsets(ctx context.Context, topic string, index int32) (storage.Offsets, error) {
	a, err := c.assignment(ctx, topic, index)
	if err != nil {
		return storage.Offsets{}, err
	}
	c.parts.mu.Lock()
	p := c.parts.m[partKey{topic, index}]
	c.parts.mu.Unlock()
	st, err := c.flushed(ctx, c.partitionDir(topic, a), false)
	if err != nil {
		return storage.Offsets{}, err
	}
	offs := storage.Offsets{LogStart: st.start, HighWatermark: st.end}
	if p != nil {
		offs.HighWatermark = max(offs.HighWatermark, p.knownHW())
		if len(st.listing.segs) == 0 {
			offs.LogStart = p.tailStart()
		}
	}
	offs.LogStart = min(max(offs.LogStart, c.logStartOf(ctx, topic, index)), offs.HighWatermark)
	return offs, nil
}

// offsets is Offsets without the recovery.
func (c *Client) offsets(ctx context.Context, p *partition) (storage.Offsets, error) {
	st, err := c.flushed(ctx, p.dir, false)
	if err != nil {
		return storage.Offsets{}, err
	}
	offs := storage.Offsets{LogStart: st.start, HighWatermark: max(st.end, p.knownHW())}
	if len(st.listing.segs) == 0 {
		offs.LogStart = p.tailStart()
	}
	offs.LogStart = min(max(offs.LogStart, c.logStartOf(ctx, p.topic, p.index)), offs.HighWatermark)
	return offs, nil
}

// rawAt returns the stored entry that holds offset, or nil past the end.
func (c *Client) rawAt(ctx context.Context, p *partition, offset int64) (*logentry.Raw, error) {
	entries, _, err := c.readRaw(ctx, p, offset, 1)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 || entries[0].Offset > offset || entries[0].End() <= offset {
		return nil, nil
	}
	return &entries[0], nil
}

// OffsetForTime implements storage.Backend. Stored ts_ns increase with the
// offset, so the first record at or after ts is found by binary search.
func (c *Client) OffsetForTime(ctx context.Context, topic string, index int32, ts int64) (int64, int64, error) {
	p, err := c.ensureOpen(ctx, topic, index)
	if err != nil {
		return -1, -1, err
	}
	offs, err := c.offsets(ctx, p)
	if err != nil {
		return -1, -1, err
	}
	lo, hi := offs.LogStart, offs.HighWatermark // answer in [lo, hi]
	want := ts * int64(time.Millisecond)
	for lo < hi {
		mid := lo + (hi-lo)/2
		m, err := c.rawAt(ctx, p, mid)
		if err != nil {
			return -1, -1, err
		}
		if m == nil || m.TsNs >= want {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo >= offs.HighWatermark {
		return -1, -1, nil
	}
	// The first record at or after ts from there: a batch entry's records
	// share its ts_ns, so the one found may begin before it.
	for lo < offs.HighWatermark {
		res, err := c.read(ctx, p, lo, 1)
		if err != nil {
			return -1, -1, err
		}
		if len(res.Records) == 0 {
			break
		}
		for _, r := range res.Records {
			if r.Timestamp >= ts {
				return r.Offset, r.Timestamp, nil
			}
		}
		lo = res.Records[len(res.Records)-1].Offset + 1
	}
	return -1, -1, nil
}

// MaxTimestamp implements storage.Backend: the first offset that holds
// the largest record timestamp, as Kafka answers ListOffsets
// MAX_TIMESTAMP (KIP-734); producers choose timestamps, so it need not be
// the last record's. The partition's records are read once (a batch entry
// by its header's max timestamp, decoded only if it holds the largest);
// later asks read only what was appended since.
func (c *Client) MaxTimestamp(ctx context.Context, topic string, index int32) (int64, int64, error) {
	p, err := c.ensureOpen(ctx, topic, index)
	if err != nil {
		return -1, -1, err
	}
	offs, err := c.offsets(ctx, p)
	if err != nil || offs.HighWatermark == offs.LogStart {
		return -1, -1, err
	}
	m := &p.maxTs
	if err := m.turn.take(ctx); err != nil {
		return -1, -1, err
	}
	defer m.turn.give()
	if !m.valid || m.offset < offs.LogStart || m.upTo > offs.HighWatermark {
		m.ts, m.offset, m.upTo, m.valid = -1, -1, offs.LogStart, true
	}
	var batch []byte // the batch entry that holds the largest, if one does
	batchAt := int64(-1)
	for m.upTo < offs.HighWatermark {
		entries, _, err := c.readRaw(ctx, p, m.upTo, 4<<20)
		if err != nil {
			m.valid = false
			return -1, -1, err
		}
		from := m.upTo
		for i := range entries {
			e := &entries[i]
			if e.End() <= m.upTo {
				continue
			}
			if logentry.IsBatch(e.Key, e.Data) {
				if ts := record.MaxTimestamp(e.Data); ts > m.ts {
					m.ts, m.offset = ts, e.Offset
					batch, batchAt = bytes.Clone(e.Data), e.Offset
				}
			} else if r, err := record.FromStored(e.Key, e.Data, e.TsNs/int64(time.Millisecond)); err == nil && r.Timestamp > m.ts {
				m.ts, m.offset = r.Timestamp, e.Offset
			}
			m.upTo = e.End()
		}
		if m.upTo == from {
			break // nothing more to read
		}
	}
	if batch != nil && m.offset == batchAt {
		// Its first record of that timestamp.
		if b, err := record.ParseStoredBatch(batch, storage.MaxDecompressedBatch); err == nil {
			for i := range b.Records {
				if b.Records[i].Timestamp == m.ts {
					m.offset = batchAt + b.Delta(i)
					break
				}
			}
		}
	}
	if m.offset < 0 {
		return -1, -1, nil
	}
	return m.offset, m.ts, nil
}

// maxTimestamp is what the reads for a partition's largest timestamp
// found: ts first at offset, among the offsets below upTo.
type maxTimestamp struct {
	turn             turn // one read at a time
	ts, offset, upTo int64
	valid            bool
}

// storedRecords appends an entry's Kafka records from offset from on to out:
// a batch entry's records decoded, a record entry's one record (none for a
// filler). bad is set for an entry no Kafka client could read.
func storedRecords(e *logentry.Raw, out []storage.StoredRecord, from int64) (_ []storage.StoredRecord, bad error) {
	if logentry.IsBatch(e.Key, e.Data) {
		b, err := record.ParseStoredBatch(e.Data, storage.MaxDecompressedBatch)
		if err != nil {
			return out, err
		}
		b.Mark()
		for i := range b.Records {
			if off := e.Offset + b.Delta(i); off >= from {
				out = append(out, storage.StoredRecord{Offset: off, Record: b.Records[i]})
			}
		}
		return out, nil
	}
	if e.Offset < from {
		return out, nil
	}
	r, err := record.FromStored(e.Key, e.Data, e.TsNs/int64(time.Millisecond))
	if err == record.ErrFiller {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	return append(out, storage.StoredRecord{Offset: e.Offset, Record: r}), nil
}
