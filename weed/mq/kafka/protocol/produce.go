package protocol

// Produce, versions 0-13 advertised, 3-13 served.
//
// Versions 0-2 carry the message formats v0/v1, which Kafka 4 no longer
// accepts either; like Kafka we still advertise v0 because librdkafka's
// feature detection reads the minimum, and answer such requests with
// UNSUPPORTED_FOR_MESSAGE_FORMAT. Batches are checked (length, magic,
// CRC-32C, decompression, every record) before anything is written, and a
// partition's one batch is stored as it was sent (see appendProduced); a
// batch over the topic's max.message.bytes gets MESSAGE_TOO_LARGE, one
// with records Kafka's LogValidator refuses (a compacted topic's keyless
// record, a timestamp out of the topic's bounds) the error with each bad
// record named (invalidRecords). The
// records of one partition are written in order with contiguous offsets.
// With acks=1 the response goes out when the partition's leader has given
// them their offsets; with acks=all, when they are in its write-ahead log
// and survive a restart of SeaweedFS. acks=0 gets no response at all. v13 addresses topics by id. An idempotent producer's
// batch has its sequence numbers checked (see docs/transactions.md); a transactional
// one goes only to a partition of the producer's open transaction
// (INVALID_TXN_STATE otherwise, INVALID_PRODUCER_EPOCH from a fenced
// producer).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/semaphore"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

func init() { register(kmsg.Produce, 0, 13, (*Handler).handleProduce) }

type pendingAppend struct {
	part *kmsg.ProduceResponseTopicPartition
	app  *storage.Appended
	// appendTime is the log append time given to the records (-1: their
	// own timestamps are kept).
	appendTime int64
}

func (h *Handler) handleProduce(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	var pending []pendingAppend
	if req.Acks != 0 && req.Acks != 1 && req.Acks != -1 {
		// As Kafka: every partition gets INVALID_REQUIRED_ACKS, and
		// nothing is written.
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = rp.Partition, -1, -1, -1
				sp.ErrorCode = kerr.InvalidRequiredAcks.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return now(resp)
	}
	// Waiting for room to decompress ends with the request's timeout.
	deadline := time.Now().Add(time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond)
	// A transactional producer needs Write on its transactional id.
	txnDenied := req.TransactionID != nil && !h.allowedTxn(r, kmsg.ACLOperationWrite, *req.TransactionID)

	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		// Sized up front: pending keeps pointers into it.
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, 0, len(rt.Partitions))
		var info storage.TopicInfo
		var topicErr *kerr.Error
		if txnDenied {
			topicErr = kerr.TransactionalIDAuthorizationFailed
		} else {
			info, topicErr = h.lookupTopic(ctx, r, kmsg.ACLOperationWrite, r.Version >= 13, rt.Topic, rt.TopicID)
		}
		maxBytes := topicMaxMessageBytes(info, h.cfg.MaxMessageBytes)
		schemas := h.schemaCheck(info)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			sp.LogAppendTime = -1
			sp.LogStartOffset = -1
			st.Partitions = append(st.Partitions, sp)
			p := &st.Partitions[len(st.Partitions)-1]
			switch {
			case topicErr != nil:
				p.ErrorCode = topicErr.Code
				continue
			case rp.Partition < 0 || rp.Partition >= info.Partitions:
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
				continue
			case internalTopic(info.Name): // as Kafka: no client appends to an internal topic
				p.ErrorCode = kerr.InvalidTopicException.Code
				continue
			case r.Version < 3:
				p.ErrorCode = kerr.UnsupportedForMessageFormat.Code
				continue
			case h.mirrored(info.Name, p):
				continue
			case len(rp.Records) > maxBytes:
				p.ErrorCode = kerr.MessageTooLarge.Code
				continue
			}
			if r.Version < 7 && hasZstd(rp.Records) {
				p.ErrorCode = kerr.UnsupportedCompressionType.Code // zstd needs Produce v7 (KIP-110)
				continue
			}
			appendTime := int64(-1)
			if LogAppendTime(info.Configs) {
				appendTime = clock.Now().UnixMilli()
			}
			check := newRecordCheck(info, rp.Partition, clock.Now(), schemas, appendTime >= 0)
			topicMost := topicLong(info, "max.decompressed.message.bytes", math.MaxInt32)
			asIs := storedAsIs(info, rp.Records)
			var (
				records   []record.Record // decoded unless asIs
				head      record.Record   // the first record, or its marks
				n         int
				release   = func() {}
				decodeErr *kerr.Error
			)
			if asIs {
				head, n, decodeErr = h.walkProduced(ctx, rp.Records, deadline, topicMost, check.record)
			} else if records, release, decodeErr = h.decodeProduced(ctx, rp.Records, deadline, topicMost); decodeErr == nil {
				for i := range records {
					check.record(i, &records[i])
				}
				head, n = records[0], len(records)
			}
			if decodeErr != nil {
				p.ErrorCode = decodeErr.Code
				if decodeErr == kerr.CorruptMessage {
					msg := "record batch failed validation"
					p.ErrorMessage = &msg
				}
				continue
			}
			if code, errs, msg := check.result(); code != nil {
				// As Kafka's LogValidator: the batch is refused, each
				// bad record named (KIP-467); librdkafka fails those and
				// retries the others.
				release()
				p.ErrorCode, p.ErrorMessage, p.ErrorRecords = code.Code, &msg, errs
				continue
			}
			if appendTime >= 0 {
				// As Kafka's LogValidator: the batch's timestamps are
				// the log's, and its records' read as its max.
				record.Batches(rp.Records, func(batch []byte, _ int32, _ record.Codec) { record.SetLogAppendTime(batch, appendTime) })
				for i := range records {
					records[i].Timestamp = appendTime
				}
			}
			topicLabel := metrics.Topic(info.Name)
			metrics.MessagesIn.WithLabelValues(topicLabel).Add(float64(n))
			metrics.BytesIn.WithLabelValues(topicLabel).Add(float64(len(rp.Records)))
			metrics.ProduceBatchRecords.Observe(float64(n))
			write := func() *storage.Appended {
				if asIs {
					h.batches.learn(info, rp.Records)
					return h.backend.AppendBatch(ctx, info.Name, rp.Partition, rp.Records, req.Acks == -1)
				}
				app := h.backend.Append(ctx, info.Name, rp.Partition, records, req.Acks == -1)
				h.cacheProduced(info, rp.Partition, rp.Records, app)
				return app
			}
			if mark := head.Txn; mark != nil {
				// A transaction's records: its partition must be in
				// the producer's open transaction, which cannot end
				// while they are handed to the log.
				var app *storage.Appended
				// v12+ (transaction.version 2) adds the partition to
				// the transaction itself (KIP-890).
				e := h.verifyTxn(ctx, req.TransactionID, mark, info.Name, rp.Partition, r.Version >= 12, func() { app = write() })
				release()
				if e != nil {
					p.ErrorCode = e.Code
					continue
				}
				pending = append(pending, pendingAppend{p, app, appendTime})
				continue
			}
			// The log holds its own copy once Append returns.
			app := write()
			release()
			pending = append(pending, pendingAppend{p, app, appendTime})
		}
		resp.Topics = append(resp.Topics, st)
	}

	if req.Acks == 0 {
		// No answer; but a partition refused closes the connection, as
		// Kafka does, so that the client learns of it and refreshes its
		// metadata (one producing to a gateway that does not lead the
		// partition would otherwise lose everything it sends, unseen).
		for _, st := range resp.Topics {
			for _, p := range st.Partitions {
				if p.ErrorCode != 0 {
					err := fmt.Errorf("acks=0 produce to %s/%d refused: %v", st.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
					return func() (kmsg.Response, error) { return nil, err }
				}
			}
		}
		return now(nil)
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	return func() (kmsg.Response, error) {
		var timer <-chan time.Time
		if timeout > 0 {
			t := time.NewTimer(timeout)
			defer t.Stop()
			timer = t.C
		}
		// The timeout is the request's, across all its partitions: once
		// it passes, a partition not done yet times out at once.
		expired := false
		for _, pa := range pending {
			if !expired {
				waitStart := time.Now()
				select {
				case <-pa.app.Done:
				case <-timer:
					expired = true
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				r.waitedSince(waitStart)
			}
			if expired {
				select {
				case <-pa.app.Done:
				default:
					pa.part.ErrorCode = kerr.RequestTimedOut.Code
					continue
				}
			}
			if pa.app.Err != nil {
				pa.part.ErrorCode = kafkaErr(pa.app.Err, kerr.KafkaStorageError).Code
				continue
			}
			pa.part.BaseOffset, pa.part.LogAppendTime = pa.app.Base, pa.appendTime
		}
		return resp, nil
	}
}

// storedAsIs says whether a partition's produced record set is stored as
// it is (Backend.AppendBatch), compressed as the producer sent it, and
// fetched so, as Kafka stores a batch: one batch, unless the topic is
// compacted (the log cleaner keeps records one by one) or its
// compression.type names another codec than the batch's (Kafka
// compresses such records again; so does a fetch of them here). Anything
// else is decoded and stored record by record (Backend.Append), its
// batches cached for fetches.
func storedAsIs(info storage.TopicInfo, raw []byte) bool {
	if batches, codec := record.Count(raw); batches == 1 && !storage.Compacted(info.Configs) {
		topicCodec, keeps := compressionOf(info)
		return keeps || codec == topicCodec
	}
	return false
}

// cacheProduced keeps the batches for fetches once they are stored (see
// batch_cache.go), from a copy: the request's bytes are not kept.
func (h *Handler) cacheProduced(info storage.TopicInfo, partition int32, raw []byte, app *storage.Appended) {
	h.batches.learn(info, raw)
	if !h.batches.keeps(len(raw)) {
		return
	}
	raw = bytes.Clone(raw)
	app.Then(func(app *storage.Appended) {
		if app.Err == nil {
			h.batches.produced(info, partition, app.Base, raw)
		}
	})
}

// decodeProduced decodes a partition's record batches into records, or
// returns the Kafka error the producer gets. They are decompressed and
// decoded in room taken from the gateway's decompression budget, which
// release gives back (once the records are handed to the log): what
// decoded records take counts as decompressed bytes do, since a batch of
// empty records takes fourteen times its size decoded. The room needed is
// not known before, so a first guess grows: the batches are decoded again
// in a larger room, taken while holding none, so that two partitions
// never wait for each other's room.
func (h *Handler) decodeProduced(ctx context.Context, raw []byte, deadline time.Time, topicMost int64) (records []record.Record, release func(), _ *kerr.Error) {
	release = func() {}
	room, most := h.roomFor(raw, topicMost)
	done, e := h.bulkWork(ctx, raw, room, deadline)
	if e != nil {
		return nil, release, e
	}
	defer done()
	for {
		if e := h.takeRoom(ctx, room, deadline); e != nil {
			return nil, release, e
		}
		records, e := decodeBatches(raw, int(room))
		if e == kerr.MessageTooLarge && room < most {
			h.inflate.Release(room)
			room = min(4*room, most)
			continue
		}
		if e != nil {
			h.inflate.Release(room)
			return nil, release, e
		}
		taken := room
		return records, func() { h.inflate.Release(taken) }, nil
	}
}

// walkProduced checks a partition's produced batch, which is stored as it
// is (storedAsIs), as Kafka's LogValidator does: in one pass over its
// records, each given to check and none kept. Only its records' bytes
// decompressed take room from the decompression budget (decodeProduced's
// guess growing as there), and only while they are walked, in a buffer
// used again. It returns what the log keeps of the batch besides its
// bytes (record.Head), or the Kafka error the producer gets.
func (h *Handler) walkProduced(ctx context.Context, raw []byte, deadline time.Time, topicMost int64, check func(int, *record.Record)) (head record.Record, n int, _ *kerr.Error) {
	room, most := h.roomFor(raw, topicMost)
	buf := new([]byte)
	if record.Compressed(raw) {
		buf = walkBuffers.Get().(*[]byte)
		defer func() {
			if cap(*buf) <= maxPooledWalkBuffer {
				walkBuffers.Put(buf)
			}
		}()
	} else {
		room = 0 // the records are read where they are
	}
	done, e := h.bulkWork(ctx, raw, room, deadline)
	if e != nil {
		return head, 0, e
	}
	defer done()
	for {
		if e := h.takeRoom(ctx, room, deadline); e != nil {
			return head, 0, e
		}
		hdr, err := record.WalkBatch(raw, int(room), buf, check)
		h.inflate.Release(room)
		if errors.Is(err, record.ErrTooLarge) && room < most {
			room = min(4*room, most)
			continue
		}
		if e := producedErr(err); e != nil {
			return head, 0, e
		}
		if e := producedHeaderErr(&hdr); e != nil {
			return head, 0, e
		}
		head, n, err = record.HeadOf(&hdr)
		return head, n, producedErr(err)
	}
}

// roomFor is the first guess of the room a partition's produced record
// set takes decompressed, and the most it may take.
func (h *Handler) roomFor(raw []byte, topicMost int64) (room, most int64) {
	most = min(storage.MaxDecompressedBatch, h.cfg.DecompressionMaxBytes, topicMost)
	return min(max(int64(4*len(raw)), 64<<10), most), most
}

// takeRoom takes room from the decompression budget, waiting for it (and
// counting the wait) up to deadline: REQUEST_TIMED_OUT past it.
func (h *Handler) takeRoom(ctx context.Context, room int64, deadline time.Time) *kerr.Error {
	if room == 0 || h.inflate.TryAcquire(room) {
		return nil
	}
	metrics.DecompressionWaits.Inc()
	return acquireBy(ctx, h.inflate, room, deadline)
}

// acquireBy waits for n of sem up to deadline: REQUEST_TIMED_OUT past it.
func acquireBy(ctx context.Context, sem *semaphore.Weighted, n int64, deadline time.Time) *kerr.Error {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if sem.Acquire(wctx, n) != nil {
		return kerr.RequestTimedOut
	}
	return nil
}

// bulkWork waits, up to deadline, for one of the bulkSlots if checking a
// produced record set is long work: more than bulkRecords records in its
// first batch (its span, which package record holds its record count to
// before reading any), or more than bulkBytes on the wire
// or (room, as guessed) decompressed. It returns what ends the work, or
// REQUEST_TIMED_OUT. Such work runs on at most half the cores: a flood of
// batches of many small records (valid, and taken as Kafka takes them)
// otherwise keeps every core busy for as long as it lasts, and each other
// client's request waits behind it for its turn on one.
func (h *Handler) bulkWork(ctx context.Context, raw []byte, room int64, deadline time.Time) (func(), *kerr.Error) {
	if record.Span(raw) <= bulkRecords && len(raw) <= bulkBytes && room <= bulkBytes {
		return func() {}, nil
	}
	if !h.bulk.TryAcquire(1) {
		if e := acquireBy(ctx, h.bulk, 1, deadline); e != nil {
			return nil, e
		}
	}
	return func() { h.bulk.Release(1) }, nil
}

// What makes checking a produced record set long work (bulkWork): about
// a tenth of a millisecond of a core.
const (
	bulkRecords = 4096
	bulkBytes   = 4 << 20
)

// bulkSlots is how many produced record sets are checked at once when
// each is long work: half the cores the Go runtime uses, at least one.
func bulkSlots() int64 { return int64(max(1, runtime.GOMAXPROCS(0)/2)) }

// walkBuffers hold records decompressed while walkProduced checks them;
// one grown past maxPooledWalkBuffer is not kept.
var walkBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledWalkBuffer = 8 << 20

// producedErr is the Kafka error a producer gets for a batch that failed
// its checks in package record, nil for nil.
func producedErr(err error) *kerr.Error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, record.ErrBadMagic):
		return kerr.InvalidRecord // as Kafka 4: Produce v3+ carries magic 2 only
	case errors.Is(err, record.ErrTooLarge):
		return kerr.MessageTooLarge
	case errors.Is(err, record.ErrInvalid):
		return kerr.InvalidRecord // whole bytes, records not as the header says
	default:
		return kerr.CorruptMessage
	}
}

// producedHeaderErr checks what a produced batch's header says of its
// producer, as Kafka does.
func producedHeaderErr(h *kmsg.RecordBatch) *kerr.Error {
	switch {
	case h.Attributes&record.AttrControl != 0:
		return kerr.InvalidRecord // control records are the coordinator's
	case h.Attributes&record.AttrTransactional != 0 && h.ProducerID < 0:
		return kerr.InvalidRecord
	case h.ProducerID >= 0 && h.FirstSequence < 0:
		return kerr.InvalidRecord // an idempotent batch without a sequence
	}
	return nil
}

// decodeBatches is decodeProduced within limit decompressed bytes.
func decodeBatches(raw []byte, limit int) ([]record.Record, *kerr.Error) {
	batches, err := record.ParseBatches(raw, limit)
	if e := producedErr(err); e != nil {
		return nil, e
	}
	if len(batches) > 1 {
		// As Kafka: Produce v3+ carries exactly one batch per partition.
		return nil, kerr.InvalidRecord
	}
	b := &batches[0]
	if e := producedHeaderErr(&b.Header); e != nil {
		return nil, e
	}
	b.Mark()
	return b.Records, nil
}

// hasZstd reports whether any batch of a produced record set is zstd.
func hasZstd(raw []byte) bool {
	zstd := false
	record.Batches(raw, func(_ []byte, _ int32, c record.Codec) { zstd = zstd || c == record.CodecZstd })
	return zstd
}

// recordCheck checks a partition's produced records one by one, as
// Kafka's LogValidator does, as of now: a compacted topic's records need
// a key, a record's value and key their schema ids where the topic asks
// for them, and a record's timestamp must lie within
// message.timestamp.before.max.ms before and message.timestamp.after.max.ms
// after now (unless the log stamps them: LogAppendTime).
type recordCheck struct {
	info          storage.TopicInfo
	partition     int32
	compacted     bool
	before, after int64
	nowMs         int64
	checkTime     bool
	schemas       func(*record.Record) string
	code          *kerr.Error // nil while all passed
	errs          []kmsg.ProduceResponseTopicPartitionErrorRecord
}

func newRecordCheck(info storage.TopicInfo, partition int32, now time.Time, schemas func(*record.Record) string, logAppendTime bool) *recordCheck {
	return &recordCheck{
		info: info, partition: partition, compacted: storage.Compacted(info.Configs),
		before:    topicLong(info, "message.timestamp.before.max.ms", math.MaxInt64),
		after:     topicLong(info, "message.timestamp.after.max.ms", 3_600_000),
		nowMs:     now.UnixMilli(),
		checkTime: !logAppendTime,
		schemas:   schemas,
	}
}

// record checks the batch's record i, noting why it failed if it did.
// A record that passes costs no allocation.
func (c *recordCheck) record(i int, r *record.Record) {
	code, why := c.why(i, r)
	if code == nil {
		return
	}
	if code == kerr.InvalidTimestamp || c.code == nil {
		c.code = code
	}
	msg := why // on the heap only here
	e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
	e.RelativeOffset, e.ErrorMessage = int32(i), &msg
	c.errs = append(c.errs, e)
}

// why is the error of the batch's record i and why, or nil.
func (c *recordCheck) why(i int, r *record.Record) (*kerr.Error, string) {
	if c.compacted && r.Key == nil {
		return kerr.InvalidRecord, fmt.Sprintf("storage.Compacted topic cannot accept message without key in topic partition %s-%d.", c.info.Name, c.partition)
	}
	if c.schemas != nil {
		if why := c.schemas(r); why != "" {
			return kerr.InvalidRecord, fmt.Sprintf("Record at batch index %d in topic partition %s-%d: %s.", i, c.info.Name, c.partition, why)
		}
	}
	if c.checkTime && r.Timestamp >= 0 && (c.nowMs-r.Timestamp > c.before || r.Timestamp-c.nowMs > c.after) {
		return kerr.InvalidTimestamp, fmt.Sprintf("Timestamp %d of the record at batch index %d is out of range: it must be from %d to %d.",
			r.Timestamp, i, satSub(c.nowMs, c.before), satAdd(c.nowMs, c.after))
	}
	return nil, ""
}

// result is nil if every record passed, else the partition's error
// (INVALID_TIMESTAMP if a timestamp failed, INVALID_RECORD otherwise),
// every bad record by its index in the batch with why, and the
// partition's message.
func (c *recordCheck) result() (*kerr.Error, []kmsg.ProduceResponseTopicPartitionErrorRecord, string) {
	if c.code == nil {
		return nil, nil, ""
	}
	var first []string
	for _, e := range c.errs[:min(len(c.errs), 3)] {
		first = append(first, fmt.Sprintf("%d: %s", e.RelativeOffset, *e.ErrorMessage))
	}
	return c.code, c.errs, fmt.Sprintf("%d of the batch's records rejected; the first: %s", len(c.errs), strings.Join(first, "; "))
}

// LogAppendTime says whether a topic's records are stamped with the time
// the log appends them (message.timestamp.type LogAppendTime), not their
// producers'.
func LogAppendTime(configs map[string]string) bool {
	return configs["message.timestamp.type"] == "LogAppendTime"
}

// topicLong is a topic's setting as a number, or def.
func topicLong(t storage.TopicInfo, name string, def int64) int64 {
	if v, ok := t.Configs[name]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return def
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satSub(a, b int64) int64 {
	if b > 0 && a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

// topicMaxMessageBytes is the topic's max.message.bytes, or def.
func topicMaxMessageBytes(t storage.TopicInfo, def int32) int {
	if v, ok := t.Configs["max.message.bytes"]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
	}
	return int(def)
}

// verifyTxn checks that the transaction of a transactional batch is open
// and has the partition, then runs write: with the transactional id's
// coordinator, here or on another gateway (Config.Txns).
func (h *Handler) verifyTxn(ctx context.Context, id *string, mark *record.TxnMark, topic string, partition int32, add bool, write func()) *kerr.Error {
	if id == nil || h.cfg.Txns == nil {
		return h.txns.Verify(ctx, id, mark.ProducerID, mark.Epoch, topic, partition, add, write)
	}
	return h.cfg.Txns.Verify(ctx, id, mark.ProducerID, mark.Epoch, topic, partition, add, write)
}

// addTxnGroup adds a group's offsets to a transaction, with its
// coordinator here or on another gateway (Config.Txns).
func (h *Handler) addTxnGroup(ctx context.Context, id string, producerID int64, epoch int16, group string) *kerr.Error {
	if h.cfg.Txns == nil {
		return h.txns.AddGroup(ctx, id, producerID, epoch, group)
	}
	return h.cfg.Txns.AddGroup(ctx, id, producerID, epoch, group)
}

// mirrored refuses produce to a mirror topic of a topic link, not yet
// promoted: its records come from the link's source, at the offsets they
// have there.
func (h *Handler) mirrored(topic string, p *kmsg.ProduceResponseTopicPartition) bool {
	if h.cfg.ReadOnly == nil {
		return false
	}
	link, ok := h.cfg.ReadOnly(topic)
	if !ok {
		return false
	}
	msg := fmt.Sprintf("topic %s is a mirror of topic link %s's source, read-only until the link promotes it", topic, link)
	p.ErrorCode, p.ErrorMessage = kerr.InvalidRequest.Code, &msg
	return true
}
