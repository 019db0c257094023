package protocol

// Fetch, versions 4-18.
//
// Batches stored as produced (AppendBatch) are returned as they are, the
// one that holds the fetch offset whole, as Kafka returns them; records
// stored one by one are returned in v2 batches built for the fetch
// (batch_cache.go).
// A fetch with too few bytes waits for new records up to its max wait: it is
// woken when a produce through this gateway moves the high watermark of a
// partition it asked for, and looks again every ExternalWriteRecheck for
// records written around the gateway. Versions 7+ keep fetch sessions
// (KIP-227, see fetch_session.go): an incremental fetch names only the
// partitions whose fetch offset changed and is answered with those that
// have news. Versions 13+ address topics by id. Transactions' records come in
// transactional batches with their producer, markers as control batches;
// read_committed gets records up to the last stable offset (before the
// earliest open transaction) and the aborted transactions among them.

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

func init() { register(kmsg.Fetch, 4, 18, (*Handler).handleFetch) }

// recordsPerBatch bounds the records of one returned batch, so that a
// client's partial-batch handling is rarely needed.
const recordsPerBatch = 1000

func (h *Handler) handleFetch(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.FetchRequest)
	fc := h.sessions.begin(req, r.Version)
	if fc.err != nil {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = fc.err.Code
		return now(resp)
	}
	return func() (kmsg.Response, error) {
		wait := time.Duration(req.MaxWaitMillis) * time.Millisecond
		if wait > MaxFetchWait {
			wait = MaxFetchWait
		}
		deadline := time.Now().Add(wait)
		from := h.fetchFrom(r, req)
		for {
			resp, answered, size, watch := h.fetchOnce(ctx, r, req, from, &fc)
			left := time.Until(deadline)
			if size >= int(req.MinBytes) || left <= 0 || len(watch) == 0 || h.draining() {
				resp.SessionID = h.sessions.finish(&fc, answered)
				return resp, nil
			}
			r.settleResponse(0) // not sent: read again after the wait
			waitStart := time.Now()
			woken := waitAny(ctx, append(watch, h.drain), min(left, ExternalWriteRecheck))
			r.waitedSince(waitStart)
			if !woken && ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
	}
}

// fetchOnce reads every partition of the fetch once. It returns the
// response, each partition's answer in it (nil for one an incremental
// fetch leaves out), the record bytes, and the channels that signal new
// data for the partitions that had none.
func (h *Handler) fetchOnce(ctx context.Context, r *Request, req *kmsg.FetchRequest, from fetchFrom, fc *fetchContext) (*kmsg.FetchResponse, []*kmsg.FetchResponseTopicPartition, int, []<-chan struct{}) {
	version := r.Version
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	budget := max(int(req.MaxBytes), 0) // 0: the first batch only (KIP-74)
	if version < 3 {
		budget = int(^uint32(0) >> 1) // no max bytes before v3
	}
	// The gateway's own cap (Kafka's broker fetch.max.bytes), whatever
	// the client asks: a response is built whole before it is sent. Its
	// bytes are held of the gateway's response budget until written.
	budget = min(budget, h.cfg.FetchMaxBytes)
	budget = r.takeResponse(budget)
	total := 0
	var watch []<-chan struct{}
	var b record.Builder
	type at struct{ topic, part int }
	where := make([]at, len(fc.parts))
	for i := 0; i < len(fc.parts); {
		first := &fc.parts[i]
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = first.topic, first.topicID
		// A consumer's fetch needs Read.
		info, e := h.lookupTopic(ctx, r, kmsg.ACLOperationRead, fc.byID, first.topic, first.topicID)
		for ; i < len(fc.parts) && fc.parts[i].topic == first.topic && fc.parts[i].topicID == first.topicID; i++ {
			rp := &fc.parts[i]
			where[i] = at{-1, -1}
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			// Empty, not null, as Kafka sends it: librdkafka takes a
			// null record set for a corrupt response.
			sp.RecordBatches = []byte{}
			switch {
			case e != nil:
				sp.ErrorCode = e.Code
			case rp.partition < 0 || rp.partition >= info.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				if c := h.fetchPartition(ctx, req, from, version, info, rp, &sp, &b, budget-total, total == 0); c != nil {
					watch = append(watch, c)
				}
				total += len(sp.RecordBatches)
				if from.replica && rp.maxBytes == 0 && replicaNews(req, rp, &sp) {
					total++ // offsets only: the follower has records to read
				}
			}
			if fc.session != nil && !rp.changed(&sp) {
				continue // an incremental answer leaves it out
			}
			where[i] = at{len(resp.Topics), len(st.Partitions)}
			st.Partitions = append(st.Partitions, sp)
		}
		if fc.session == nil || len(st.Partitions) > 0 {
			resp.Topics = append(resp.Topics, st)
		}
	}
	r.settleResponse(total) // the first batch went out past a spent budget too
	answered := make([]*kmsg.FetchResponseTopicPartition, len(fc.parts))
	for i, w := range where {
		if w.topic >= 0 {
			answered[i] = &resp.Topics[w.topic].Partitions[w.part]
		}
	}
	return resp, answered, total, watch
}

// fetchPartition reads one partition into sp, at most limit bytes (the
// first partition with records gets its first record whatever its size,
// KIP-74). It returns the channel that signals new records when there
// were none. A consumer of another rack is sent to a gateway of its own
// (redirect), and a consumer of this gateway's rack is served partitions
// other gateways lead (fetchFollower; fetch_replica.go).
func (h *Handler) fetchPartition(ctx context.Context, req *kmsg.FetchRequest, from fetchFrom, version int16, info storage.TopicInfo, rp *fetchPart, sp *kmsg.FetchResponseTopicPartition, b *record.Builder, left int, first bool) <-chan struct{} {
	topic := info.Name
	if from.replica && rp.maxBytes == 0 {
		return h.replicaBounds(ctx, req, topic, rp, sp)
	}
	if !from.replica && h.redirect(ctx, req, topic, rp, sp, from) {
		return nil
	}
	limit := min(int(rp.maxBytes), left)
	if first && limit <= 0 {
		limit = 1
	}
	var res storage.ReadResult
	var err error
	if limit > 0 {
		res, err = h.backend.ReadBatches(ctx, topic, rp.partition, rp.offset, limit)
	} else {
		res.Offsets, err = h.backend.Offsets(ctx, topic, rp.partition)
	}
	if errors.Is(err, kerr.NotLeaderForPartition) && !from.replica && h.cfg.Replicas != nil && from.rack != "" && from.rack == h.rack() {
		return h.fetchFollower(ctx, req, version, info, rp, sp, b, limit, first)
	}
	if err != nil {
		sp.ErrorCode = kafkaErr(err, kerr.KafkaStorageError).Code
		return nil
	}
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, res.HighWatermark, res.LogStart
	if rp.offset < res.LogStart || rp.offset > res.HighWatermark {
		sp.ErrorCode = kerr.OffsetOutOfRange.Code
		return nil
	}
	if req.IsolationLevel == 1 {
		if err := h.readCommitted(ctx, topic, sp, &res); err != nil {
			sp.ErrorCode = kafkaErr(err, kerr.KafkaStorageError).Code
			return nil
		}
	}
	if len(res.Records) == 0 && len(res.Raw) == 0 {
		return h.backend.Changed(topic, rp.partition, res.HighWatermark)
	}
	count := h.fillPartition(b, sp, version, info, rp, &res, limit, first)
	if from.replica {
		metrics.ReplicaBytesOut.Add(float64(len(sp.RecordBatches)))
		return nil
	}
	countFetched(topic, count, len(sp.RecordBatches))
	return nil
}

// countFetched counts a partition's answer to a consumer.
func countFetched(topic string, records, bytes int) {
	topicLabel := metrics.Topic(topic)
	metrics.MessagesOut.WithLabelValues(topicLabel).Add(float64(records))
	metrics.BytesOut.WithLabelValues(topicLabel).Add(float64(bytes))
	metrics.FetchRecords.Observe(float64(records))
}

// fillPartition puts what was read of a partition into sp, up to limit
// bytes, and returns the records it holds. Records that begin a batch
// cached as produced go out as that batch, as it is; the others are built
// into batches compressed with the topic's codec (see batch_cache.go).
func (h *Handler) fillPartition(b *record.Builder, sp *kmsg.FetchResponseTopicPartition, version int16, info storage.TopicInfo, rp *fetchPart, res *storage.ReadResult, limit int, first bool) int {
	// Clients older than Fetch v10 cannot read zstd (KIP-110).
	usable := func(c record.Codec) bool { return c != record.CodecZstd || version >= 10 }
	codec := h.batches.codecFor(info)
	if !usable(codec) {
		codec = record.CodecNone
	}
	upper := sp.LastStableOffset // the high watermark, or read_committed's last stable offset
	compacted := storage.Compacted(info.Configs)
	b.LogAppendTime = LogAppendTime(info.Configs)
	recs, raw := res.Records, res.Raw
	count := len(recs) // of records and batch entries' records
	// The batches stored as produced that fit go out as they are, copied
	// once into room taken once: a fetch of 55 MiB of them, grown by
	// doubling, copied them twice over and left as much garbage.
	size := rawBytes(raw, upper, limit, first)
	if size > bulkBytes {
		// Long work: on at most half the cores, with the produced
		// batches checked so (bulkWork). It only copies: the wait for
		// a slot is bounded by others' copying.
		h.bulk.Acquire(context.Background(), 1) //nolint:errcheck // cannot fail without a deadline
		defer h.bulk.Release(1)
	}
	sp.RecordBatches = slices.Grow(sp.RecordBatches, size)
	for len(recs) > 0 || len(raw) > 0 {
		if len(raw) > 0 && (len(recs) == 0 || raw[0].Base < recs[0].Offset) {
			// A batch stored as produced goes out as it is.
			rb := raw[0]
			raw = raw[1:]
			if rb.Base >= upper {
				break
			}
			if len(sp.RecordBatches)+len(rb.Data) > limit && (len(sp.RecordBatches) > 0 || !first) {
				break // past the limit (wholeBatches)
			}
			count += int(rb.Count)
			if usable(rb.Codec) {
				sp.RecordBatches = append(sp.RecordBatches, rb.Data...)
				continue
			}
			decoded, err := record.ParseStoredBatch(rb.Data, storage.MaxDecompressedBatch)
			if err != nil {
				continue // stored whole and checked: not reached
			}
			decoded.Mark()
			stored := make([]storage.StoredRecord, len(decoded.Records))
			for i := range decoded.Records {
				stored[i] = storage.StoredRecord{Offset: rb.Base + decoded.Delta(i), Record: decoded.Records[i]}
			}
			sp.RecordBatches = h.appendBatches(b, sp.RecordBatches, info.ID, rp.partition, stored, codec)
			continue
		}
		n := len(recs)
		if len(raw) > 0 {
			n = sort.Search(len(recs), func(i int) bool { return recs[i].Offset >= raw[0].Base })
		}
		h.appendRecords(b, sp, info, rp.partition, recs[:n], upper, compacted, codec, usable)
		recs = recs[n:]
	}
	if len(sp.RecordBatches) > limit {
		sp.RecordBatches, count = wholeBatches(sp.RecordBatches, limit, first)
	}
	return count
}

// rawBytes is what the batches stored as produced that a fetch's partition
// serves take, those below upper that fit in limit (the first whole if
// minOne, as wholeBatches).
func rawBytes(raw []storage.RawBatch, upper int64, limit int, minOne bool) int {
	n := 0
	for _, rb := range raw {
		if rb.Base >= upper || n+len(rb.Data) > limit && !(minOne && n == 0) {
			break
		}
		n += len(rb.Data)
	}
	return n
}

// wholeBatches returns the batches of data that fit in limit bytes, and
// their records' count, as Kafka's reads do: whole batches only, none that
// would go past the limit, except that the first batch of a fetch's first
// partition with records goes whole however large (minOne; KIP-74), so
// that a consumer is never stuck behind a batch larger than its limits.
// librdkafka closes the connection on a response larger than it asked for.
func wholeBatches(data []byte, limit int, minOne bool) ([]byte, int) {
	keep, count, full := 0, 0, false
	record.Batches(data, func(batch []byte, n int32, _ record.Codec) {
		if full || keep+len(batch) > limit && !(minOne && keep == 0) {
			full = true
			return
		}
		keep += len(batch)
		count += int(n)
	})
	return data[:keep], count
}

// appendRecords encodes records stored one by one into sp's batches: those
// that begin a batch cached as produced go out as that batch, the others
// are built into batches compressed with codec (see batch_cache.go).
func (h *Handler) appendRecords(b *record.Builder, sp *kmsg.FetchResponseTopicPartition, info storage.TopicInfo, partition int32, recs []storage.StoredRecord, upper int64, compacted bool, codec record.Codec, usable func(record.Codec) bool) {
	for len(recs) > 0 {
		at := recs[0].Offset
		// A cached batch of a compacted topic is served only while the
		// log still holds each of its records: the log cleaner may have
		// removed some since.
		if cb := h.batches.get(batchKey{info.ID, partition, at}); cb != nil && usable(cb.codec) && at+int64(cb.count) <= upper &&
			(!compacted || (len(recs) >= int(cb.count) && recs[cb.count-1].Offset == at+int64(cb.count)-1)) {
			sp.RecordBatches = append(sp.RecordBatches, cb.data...)
			for len(recs) > 0 && recs[0].Offset < at+int64(cb.count) {
				recs = recs[1:]
			}
			continue
		}
		n := h.batches.nextCached(info.ID, partition, recs) // up to the next cached batch
		sp.RecordBatches = h.appendBatches(b, sp.RecordBatches, info.ID, partition, recs[:n], codec)
		recs = recs[n:]
	}
}

// readCommitted keeps the records below the partition's last stable offset
// (the first of the earliest open transaction) and names the aborted
// transactions among them.
func (h *Handler) readCommitted(ctx context.Context, topic string, sp *kmsg.FetchResponseTopicPartition, res *storage.ReadResult) error {
	from, to := readSpan(res)
	txns, err := h.backend.Transactions(ctx, topic, sp.Partition, from, to)
	if err != nil {
		return err
	}
	keepCommitted(sp, res, txns)
	return nil
}

// readSpan is the first and last offset a read holds (1, 0 when none).
func readSpan(res *storage.ReadResult) (from, to int64) {
	from, to = int64(1), int64(0)
	if len(res.Records) > 0 {
		from, to = res.Records[0].Offset, res.Records[len(res.Records)-1].Offset
	}
	if n := len(res.Raw); n > 0 {
		last := res.Raw[n-1].Base + int64(res.Raw[n-1].Count) - 1
		if from > to {
			from, to = res.Raw[0].Base, last
		} else {
			from, to = min(from, res.Raw[0].Base), max(to, last)
		}
	}
	return from, to
}

// keepCommitted keeps a read's records below the last stable offset that
// txns gives (the read's high watermark when no transaction is open), and
// names in sp the aborted transactions of txns among them.
func keepCommitted(sp *kmsg.FetchResponseTopicPartition, res *storage.ReadResult, txns storage.PartitionTxns) {
	lso := res.HighWatermark
	if txns.FirstUnstable >= 0 && txns.FirstUnstable < lso {
		lso = txns.FirstUnstable
	}
	sp.LastStableOffset = lso
	keepBelow(res, lso)
	sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	if len(res.Records) == 0 && len(res.Raw) == 0 {
		return
	}
	from, to := readSpan(res)
	for _, a := range txns.Aborted {
		if a.LastOffset >= from && a.FirstOffset <= to {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
			sp.AbortedTransactions = append(sp.AbortedTransactions, at)
		}
	}
}

// keepBelow keeps a read's records and batches that begin below bound.
func keepBelow(res *storage.ReadResult, bound int64) {
	n := 0
	for n < len(res.Records) && res.Records[n].Offset < bound {
		n++
	}
	res.Records = res.Records[:n]
	m := 0
	for m < len(res.Raw) && res.Raw[m].Base < bound {
		m++
	}
	res.Raw = res.Raw[:m]
}

// sameBatch reports whether two records may share a batch: both ordinary,
// or both records of the same producer's transaction; a marker is a batch
// of its own.
func sameBatch(a, b *record.TxnMark) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Control == record.NotControl && b.Control == record.NotControl && a.ProducerID == b.ProducerID && a.Epoch == b.Epoch
}

// appendBatches encodes records as batches compressed with codec, and
// caches them; a batch ends at a gap in the offsets, since its records'
// offsets are relative to its first, and where transactions begin or end.
func (h *Handler) appendBatches(b *record.Builder, dst []byte, topicID [16]byte, partition int32, records []storage.StoredRecord, codec record.Codec) []byte {
	for len(records) > 0 {
		n := 1
		for n < len(records) && n < recordsPerBatch && records[n].Offset == records[0].Offset+int64(n) &&
			sameBatch(records[0].Record.Txn, records[n].Record.Txn) {
			n++
		}
		b.ResetTxn(records[0].Offset, records[0].Record.Txn)
		for i := range records[:n] {
			b.Add(&records[i].Record)
		}
		start := len(dst)
		var err error
		if dst, err = b.AppendCompressedTo(dst, codec); err != nil {
			dst = b.AppendTo(dst[:start]) // not compressed, then
		}
		if h.batches.keeps(len(dst) - start) {
			h.batches.put(batchKey{topicID, partition, records[0].Offset}, int32(n), codec, bytes.Clone(dst[start:]))
		}
		records = records[n:]
	}
	return dst
}

// waitAny waits until one of chans is closed, d passes or ctx ends; it
// reports whether a channel was closed.
func waitAny(ctx context.Context, chans []<-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	switch len(chans) { // one partition and the drain: no reflection
	case 1:
		select {
		case <-chans[0]:
			return true
		case <-t.C:
		case <-ctx.Done():
		}
		return false
	case 2:
		select {
		case <-chans[0]:
			return true
		case <-chans[1]:
			return true
		case <-t.C:
		case <-ctx.Done():
		}
		return false
	}
	cases := make([]reflect.SelectCase, 0, len(chans)+2)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(t.C)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	for _, c := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
	}
	i, _, _ := reflect.Select(cases)
	return i >= 2
}
