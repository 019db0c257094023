// Package record reads and writes Kafka record batches (magic v2) and maps
// Kafka records to and from the messages SeaweedMQ stores.
package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Layout of the fixed part of a v2 record batch, as in Kafka's
// DefaultRecordBatch: baseOffset(8) batchLength(4) partitionLeaderEpoch(4)
// magic(1) crc(4) attributes(2) lastOffsetDelta(4) firstTimestamp(8)
// maxTimestamp(8) producerId(8) producerEpoch(2) baseSequence(4) records(4).
const (
	batchLengthEnd = 12 // bytes before the batch length counts
	magicOffset    = 16
	crcOffset      = 17
	crcStart       = 21 // the CRC covers attributes to the end
	lastDeltaAt    = 23 // lastOffsetDelta, after the attributes
	maxTimestampAt = 35
	BatchHeaderLen = 61
)

// Batch attribute bits.
const (
	AttrCodecMask     = 0x07
	AttrLogAppendTime = 0x08
	AttrTransactional = 0x10
	AttrControl       = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors of a produced batch: ErrCorrupt a batch whose bytes are damaged
// (its length or CRC-32C, its compression), which Kafka answers with
// CORRUPT_MESSAGE; ErrInvalid, a kind of it, one whose bytes are whole but
// whose records are not what its header says (their count, offsets,
// encoding), which Kafka answers with INVALID_RECORD.
var (
	ErrCorrupt  = errors.New("corrupt record batch")
	ErrInvalid  = fmt.Errorf("%w: invalid records", ErrCorrupt)
	ErrBadMagic = errors.New("unsupported record batch magic")
)

// Record is one Kafka record with absolute values: nil Key or Value means
// null, and header values keep null distinct from empty too.
type Record struct {
	Key       []byte
	Value     []byte
	Headers   []kmsg.Header
	Timestamp int64 // milliseconds since the epoch
	// Producer is set on the first record of an idempotent producer's
	// batch: it is stored with it (see ProducerBatch).
	Producer *ProducerBatch
	// Txn is set on the records of a transaction and on the markers that
	// end one; it is stored with each of them.
	Txn *TxnMark
}

// TxnMark ties a stored record to a transaction: a record written in it
// (Control -1), or the marker (control record) that committed (1) or
// aborted (0) the producer's transaction in the partition.
type TxnMark struct {
	ProducerID int64
	Epoch      int16
	Control    int8
	// Bumped, on a marker being written, says its transaction's end
	// raised the producer's epoch to Epoch (storage.Marker.Bumped). Not
	// stored.
	Bumped bool
}

// Control record types, as Kafka writes them in a marker's key.
const (
	ControlAbort  = 0
	ControlCommit = 1
	NotControl    = -1
)

// Batch is a decoded record batch.
type Batch struct {
	Header  kmsg.RecordBatch // the header fields; Records is left empty
	Records []Record
	// Deltas are the records' offset deltas when they are not 0, 1, 2...
	// (a batch another cluster's log cleaner compacted: ParseStoredBatch);
	// nil when they are.
	Deltas []int32
}

// Delta is the offset delta of the batch's record i.
func (b *Batch) Delta(i int) int64 {
	if b.Deltas != nil {
		return int64(b.Deltas[i])
	}
	return int64(i)
}

// Codec is the batch's compression codec.
func (b *Batch) Codec() Codec { return Codec(b.Header.Attributes & AttrCodecMask) }

// Mark ties the batch's records to their producer as the gateway stores
// them: the first record of an idempotent producer's batch carries its
// sequence numbers (Producer), every record of a transactional batch the
// transaction (Txn).
func (b *Batch) Mark() {
	if b.Header.ProducerID < 0 || len(b.Records) == 0 {
		return
	}
	control := int8(NotControl)
	if b.Header.Attributes&AttrControl != 0 && len(b.Records[0].Key) >= 4 {
		control = int8(b.Records[0].Key[3])
	}
	pb, mark := marksOf(&b.Header, control)
	b.Records[0].Producer = pb
	if mark != nil {
		for i := range b.Records {
			b.Records[i].Txn = mark
		}
	}
}

// LastSequence is the sequence number of a batch's last record: sequence
// numbers wrap from MaxInt32 to 0.
func LastSequence(first, lastOffsetDelta int32) int32 {
	return int32((int64(first) + int64(lastOffsetDelta)) % (1 << 31))
}

// Span is the number of offsets a v2 batch takes (its last offset delta
// plus one), 0 for bytes too short to be one.
func Span(batch []byte) int64 {
	if len(batch) < BatchHeaderLen {
		return 0
	}
	return int64(int32(binary.BigEndian.Uint32(batch[lastDeltaAt:]))) + 1
}

// MaxTimestamp is a v2 batch's max timestamp field.
func MaxTimestamp(batch []byte) int64 {
	if len(batch) < BatchHeaderLen {
		return -1
	}
	return int64(binary.BigEndian.Uint64(batch[maxTimestampAt:]))
}

// BatchCodec is a v2 batch's compression codec.
func BatchCodec(batch []byte) Codec {
	if len(batch) < BatchHeaderLen {
		return CodecNone
	}
	return Codec(binary.BigEndian.Uint16(batch[crcStart:]) & AttrCodecMask)
}

// ParseBatches decodes every batch in a Produce request's records field.
// maxDecompressed bounds what its batches take together, decompressed and
// decoded: their records' bytes and the records and headers decoded from
// them (ErrTooLarge beyond it).
func ParseBatches(data []byte, maxDecompressed int) ([]Batch, error) {
	var out []Batch
	left := maxDecompressed // of decompressed bytes and decoded records
	for len(data) > 0 {
		if len(data) < batchLengthEnd {
			return nil, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(data))
		}
		n := int(int32(binary.BigEndian.Uint32(data[8:]))) + batchLengthEnd
		if n < BatchHeaderLen || n > len(data) {
			return nil, fmt.Errorf("%w: batch length %d with %d bytes left", ErrCorrupt, n, len(data))
		}
		b, inflated, err := parseBatch(data[:n], left, false)
		if err != nil {
			return nil, err
		}
		if left -= inflated; left < 0 {
			return nil, ErrTooLarge
		}
		out = append(out, b)
		data = data[n:]
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no record batch", ErrInvalid)
	}
	return out, nil
}

// recordSize and headerSize are what a decoded record and header take in
// memory: a batch's decoding counts them against its limit.
var (
	recordSize = int(unsafe.Sizeof(Record{}))
	headerSize = int(unsafe.Sizeof(kmsg.Header{}))
)

// minRecordBytes is the smallest record on the wire: its length, then
// attributes, timestamp delta, offset delta, key length, value length and
// header count, one byte each.
const minRecordBytes = 7

// Compressed says whether any of the record batches in data has its records
// compressed (looking only at the batches' headers, as far as they are
// whole).
func Compressed(data []byte) bool {
	for len(data) >= crcStart+2 {
		if data[crcStart+1]&AttrCodecMask != 0 {
			return true
		}
		n := int(int32(binary.BigEndian.Uint32(data[8:]))) + batchLengthEnd
		if n < BatchHeaderLen || n > len(data) {
			return false
		}
		data = data[n:]
	}
	return false
}

// ParseBatch decodes exactly one v2 record batch, checking its length, magic
// and CRC-32C, and decompressing its records; maxDecompressed bounds what
// they take decompressed and decoded, as ParseBatches'.
func ParseBatch(raw []byte, maxDecompressed int) (Batch, error) {
	b, _, err := parseBatch(raw, maxDecompressed, false)
	return b, err
}

// ParseStoredBatch is ParseBatch of a batch as a Kafka log holds it, not as
// a producer sends it: one a log cleaner compacted keeps its offsets, so
// its records' offset deltas may skip (Batch.Deltas) and it may hold no
// record at all (kept for its producer's state). A topic link stores such
// batches as its source cluster served them.
func ParseStoredBatch(raw []byte, maxDecompressed int) (Batch, error) {
	b, _, err := parseBatch(raw, maxDecompressed, true)
	return b, err
}

// parseBatch is ParseBatch (ParseStoredBatch if stored), saying also how
// many bytes decompressing and decoding took.
func parseBatch(raw []byte, maxDecompressed int, stored bool) (b Batch, inflated int, err error) {
	var body []byte
	if b.Header, body, inflated, err = openBatch(raw, maxDecompressed, stored, nil); err != nil {
		return b, 0, err
	}
	// What the records take decoded counts against the limit as the
	// decompressed bytes do: empty records take seven bytes on the wire
	// and fourteen times that decoded.
	if inflated += int(b.Header.NumRecords) * recordSize; inflated > maxDecompressed {
		return b, 0, ErrTooLarge
	}
	b.Records = make([]Record, 0, b.Header.NumRecords) // bounded by the body (openBatch)
	var kr kmsg.Record
	for i := int32(0); i < b.Header.NumRecords; i++ {
		end, err := readRecord(body, i, &kr, false)
		if err != nil {
			return b, 0, err
		}
		switch {
		case kr.OffsetDelta == i && b.Deltas == nil:
		case !stored || kr.OffsetDelta < i || kr.OffsetDelta > b.Header.LastOffsetDelta || i > 0 && kr.OffsetDelta <= int32(b.Delta(int(i)-1)):
			return b, 0, fmt.Errorf("%w: record %d has offset delta %d", ErrInvalid, i, kr.OffsetDelta)
		default:
			if b.Deltas == nil {
				b.Deltas = make([]int32, i, b.Header.NumRecords)
				for j := range b.Deltas {
					b.Deltas[j] = int32(j)
				}
			}
		}
		if b.Deltas != nil {
			b.Deltas = append(b.Deltas, kr.OffsetDelta)
		}
		if len(kr.Headers) > 0 {
			if inflated += len(kr.Headers) * headerSize; inflated > maxDecompressed {
				return b, 0, ErrTooLarge
			}
		}
		b.Records = append(b.Records, Record{
			Key:       kr.Key,
			Value:     kr.Value,
			Headers:   kr.Headers,
			Timestamp: timestampOf(&b.Header, &kr),
		})
		kr.Headers = nil // kept by the record
		body = body[end:]
	}
	if err := checkEnd(&b.Header, body, len(b.Records), stored); err != nil {
		return b, 0, err
	}
	return b, inflated, nil
}

// WalkBatch checks one v2 batch as a producer sends it, as ParseBatch
// does, and calls fn with each of its records in turn without keeping
// any: a record, its fields included, is valid only during its call.
// Compressed records are decompressed into *buf, which grows as needed
// and which the caller may use again; at most maxDecompressed bytes. It
// returns the batch's header (Records left empty). A batch of empty
// records takes fourteen times its records' bytes decoded (ParseBatch):
// walked, it takes none.
func WalkBatch(raw []byte, maxDecompressed int, buf *[]byte, fn func(i int, r *Record)) (kmsg.RecordBatch, error) {
	h, body, _, err := openBatch(raw, maxDecompressed, false, (*buf)[:0])
	if err != nil {
		return h, err
	}
	if h.Attributes&AttrCodecMask != 0 && cap(body) > cap(*buf) {
		*buf = body[:0]
	}
	var (
		kr kmsg.Record
		r  Record
	)
	for i := int32(0); i < h.NumRecords; i++ {
		end, err := readRecord(body, i, &kr, true)
		if err != nil {
			return h, err
		}
		if kr.OffsetDelta != i {
			return h, fmt.Errorf("%w: record %d has offset delta %d", ErrInvalid, i, kr.OffsetDelta)
		}
		r = Record{Key: kr.Key, Value: kr.Value, Headers: kr.Headers, Timestamp: timestampOf(&h, &kr)}
		fn(int(i), &r)
		body = body[end:]
	}
	return h, checkEnd(&h, body, int(h.NumRecords), false)
}

// openBatch checks a v2 batch's length, magic, CRC-32C and record count,
// and decompresses its records, appended to dst, at most maxDecompressed
// bytes. It returns the header (Records left empty), the records' bytes
// and how many bytes decompressing them took.
func openBatch(raw []byte, maxDecompressed int, stored bool, dst []byte) (h kmsg.RecordBatch, body []byte, inflated int, err error) {
	if len(raw) < BatchHeaderLen {
		return h, nil, 0, fmt.Errorf("%w: %d bytes is shorter than a batch header", ErrCorrupt, len(raw))
	}
	if raw[magicOffset] != 2 {
		return h, nil, 0, fmt.Errorf("%w %d", ErrBadMagic, raw[magicOffset])
	}
	if err := h.ReadFrom(raw); err != nil {
		return h, nil, 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if int(h.Length)+batchLengthEnd != len(raw) {
		return h, nil, 0, fmt.Errorf("%w: batch length %d, have %d bytes", ErrCorrupt, h.Length, len(raw)-batchLengthEnd)
	}
	if crc32.Checksum(raw[crcStart:], castagnoli) != uint32(h.CRC) {
		return h, nil, 0, fmt.Errorf("%w: CRC mismatch", ErrCorrupt)
	}
	// A compressed batch may hold more records than it has bytes (Kafka
	// takes it): the count is checked against the records' bytes below.
	if h.NumRecords < 0 || h.NumRecords == 0 && !stored {
		return h, nil, 0, fmt.Errorf("%w: %d records claimed", ErrInvalid, h.NumRecords)
	}
	// A producer's batch spans as many offsets as it has records (its
	// records' offset deltas are checked one by one below): its span
	// (Span) is what walking it costs, and a claim of more records than
	// offsets is refused before any is read.
	if !stored && int64(h.LastOffsetDelta) != int64(h.NumRecords)-1 {
		return h, nil, 0, fmt.Errorf("%w: last offset delta %d for %d records", ErrInvalid, h.LastOffsetDelta, h.NumRecords)
	}
	body = h.Records
	h.Records = nil
	if c := Codec(h.Attributes & AttrCodecMask); c != CodecNone {
		if body, err = Decompress(c, dst, body, maxDecompressed); err != nil {
			if errors.Is(err, ErrTooLarge) {
				return h, nil, 0, err
			}
			return h, nil, 0, fmt.Errorf("%w: %s: %v", ErrCorrupt, c, err)
		}
		inflated = len(body)
	}
	// A record takes at least minRecordBytes: a count the body cannot
	// hold is refused before anything is allocated for it.
	if int(h.NumRecords) > len(body)/minRecordBytes {
		return h, nil, 0, fmt.Errorf("%w: %d records claimed in %d bytes", ErrInvalid, h.NumRecords, len(body))
	}
	return h, body, inflated, nil
}

// readRecord reads record i, the first of body, into kr (its header keys
// pointing into body if unsafe), and returns the bytes it takes.
func readRecord(body []byte, i int32, kr *kmsg.Record, unsafe bool) (int, error) {
	l, n := binary.Varint(body)
	if n <= 0 || l < 0 || l > int64(len(body)-n) {
		return 0, fmt.Errorf("%w: record %d length", ErrInvalid, i)
	}
	end := n + int(l)
	read := kr.ReadFrom
	if unsafe {
		read = kr.UnsafeReadFrom
	}
	if err := read(body[:end]); err != nil {
		return 0, fmt.Errorf("%w: record %d: %v", ErrInvalid, i, err)
	}
	return end, nil
}

// timestampOf is a record's timestamp: its batch's first timestamp plus
// its delta, or the batch's max timestamp in a batch of LogAppendTime (as
// Kafka reads such a batch's records).
func timestampOf(h *kmsg.RecordBatch, kr *kmsg.Record) int64 {
	if h.Attributes&AttrLogAppendTime != 0 {
		return h.MaxTimestamp
	}
	return h.FirstTimestamp + kr.TimestampDelta64
}

// checkEnd checks that n records read took all of a batch's records'
// bytes (rest is what is left) and that its last offset delta is theirs.
func checkEnd(h *kmsg.RecordBatch, rest []byte, n int, stored bool) error {
	if len(rest) != 0 {
		return fmt.Errorf("%w: %d bytes after the last record", ErrInvalid, len(rest))
	}
	if !stored && int(h.LastOffsetDelta) != n-1 || h.LastOffsetDelta < 0 {
		return fmt.Errorf("%w: last offset delta %d for %d records", ErrInvalid, h.LastOffsetDelta, n)
	}
	return nil
}

// Head is what the log keeps of a produced batch besides its bytes: an
// otherwise empty record with the marks Batch.Mark gives the batch's first
// record (its producer's sequence numbers, its transaction), and the
// number of records it holds. It checks the batch's header (ReadHeader);
// a control batch is not a produced one.
func Head(batch []byte) (head Record, n int, err error) {
	h, err := ReadHeader(batch)
	if err != nil {
		return head, 0, err
	}
	return HeadOf(&h)
}

// HeadOf is Head of a batch whose header was read and checked already
// (WalkBatch, ReadHeader).
func HeadOf(h *kmsg.RecordBatch) (head Record, n int, err error) {
	switch {
	case h.Attributes&AttrControl != 0:
		return head, 0, fmt.Errorf("%w: a control batch", ErrInvalid)
	case int(h.NumRecords) != int(h.LastOffsetDelta)+1:
		return head, 0, fmt.Errorf("%w: %d records with last offset delta %d", ErrInvalid, h.NumRecords, h.LastOffsetDelta)
	}
	head.Producer, head.Txn = marksOf(h, NotControl)
	return head, int(h.NumRecords), nil
}

// marksOf is what Batch.Mark ties a batch's records to: the sequence
// numbers of its first record if its producer is idempotent, its
// transaction (control: the marker's type, or NotControl) if it is
// transactional.
func marksOf(h *kmsg.RecordBatch, control int8) (*ProducerBatch, *TxnMark) {
	if h.ProducerID < 0 {
		return nil, nil
	}
	pb := &ProducerBatch{
		ID: h.ProducerID, Epoch: h.ProducerEpoch,
		FirstSeq: h.FirstSequence, LastSeq: LastSequence(h.FirstSequence, h.LastOffsetDelta),
	}
	if h.Attributes&AttrTransactional == 0 {
		return pb, nil
	}
	return pb, &TxnMark{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, Control: control}
}

// SetLogAppendTime makes a v2 batch's timestamps the log's: its timestamp
// type LogAppendTime and its max timestamp ts, which its records'
// timestamps read as, with its CRC computed again (Kafka's LogValidator
// does so on topics of message.timestamp.type LogAppendTime).
func SetLogAppendTime(batch []byte, ts int64) {
	if len(batch) < BatchHeaderLen {
		return
	}
	attrs := binary.BigEndian.Uint16(batch[crcStart:])
	binary.BigEndian.PutUint16(batch[crcStart:], attrs|AttrLogAppendTime)
	binary.BigEndian.PutUint64(batch[maxTimestampAt:], uint64(ts))
	binary.BigEndian.PutUint32(batch[crcOffset:], crc32.Checksum(batch[crcStart:], castagnoli))
}

// Builder appends uncompressed v2 record batches; its buffers are reused
// from batch to batch.
type Builder struct {
	// LogAppendTime builds batches of timestamp type LogAppendTime (their
	// records' timestamps are the append time).
	LogAppendTime bool

	records []byte
	scratch []byte
	kr      kmsg.Record
	first   int64
	firstTs int64
	maxTs   int64
	n       int32
	txn     *TxnMark

	compressed []byte
}

// Reset starts a new batch whose first record has baseOffset.
func (w *Builder) Reset(baseOffset int64) { w.ResetTxn(baseOffset, nil) }

// ResetTxn starts a new batch of a transaction's records, or of one marker
// (a control batch), as txn says; nil is an ordinary batch.
func (w *Builder) ResetTxn(baseOffset int64, txn *TxnMark) {
	w.records = w.records[:0]
	w.first = baseOffset
	w.n = 0
	w.txn = txn
}

// ControlKey and ControlValue are a marker's key and value as Kafka writes
// them: version 0 and the control type; version 0 and the coordinator
// epoch.
func ControlKey(control int8) []byte { return []byte{0, 0, 0, byte(control)} }

// ControlValue is a marker's value (see ControlKey): the epoch of the
// transaction coordinator that wrote it.
func ControlValue(coordinatorEpoch int32) []byte {
	return binary.BigEndian.AppendUint32([]byte{0, 0}, uint32(coordinatorEpoch))
}

// ControlCoordinatorEpoch is the coordinator epoch of a marker's value; 0
// for a value too short to hold one.
func ControlCoordinatorEpoch(value []byte) int32 {
	if len(value) < 6 {
		return 0
	}
	return int32(binary.BigEndian.Uint32(value[2:6]))
}

// Len is the number of records added since Reset.
func (w *Builder) Len() int { return int(w.n) }

// Size is roughly the encoded size of the batch so far.
func (w *Builder) Size() int { return BatchHeaderLen + len(w.records) }

// Add appends a record; records must come with consecutive offsets.
func (w *Builder) Add(r *Record) {
	if w.n == 0 {
		w.firstTs, w.maxTs = r.Timestamp, r.Timestamp
	}
	if r.Timestamp > w.maxTs {
		w.maxTs = r.Timestamp
	}
	w.kr = kmsg.Record{
		TimestampDelta64: r.Timestamp - w.firstTs,
		OffsetDelta:      w.n,
		Key:              r.Key,
		Value:            r.Value,
		Headers:          r.Headers,
	}
	// Length is a varint that counts what follows it; encode with a
	// one-byte zero length, then write the real one.
	w.scratch = w.kr.AppendTo(w.scratch[:0])
	body := w.scratch[1:]
	w.records = binary.AppendVarint(w.records, int64(len(body)))
	w.records = append(w.records, body...)
	w.n++
}

// AppendTo appends the finished batch to dst with its CRC set.
func (w *Builder) AppendTo(dst []byte) []byte {
	dst, _ = w.AppendCompressedTo(dst, CodecNone)
	return dst
}

// AppendCompressedTo appends the finished batch to dst with its records
// compressed with codec, as a producer would have sent them.
func (w *Builder) AppendCompressedTo(dst []byte, codec Codec) ([]byte, error) {
	records := w.records
	if codec != CodecNone {
		var err error
		if w.compressed, err = Compress(codec, w.compressed[:0], w.records); err != nil {
			return dst, err
		}
		records = w.compressed
	}
	start := len(dst)
	hdr := kmsg.RecordBatch{
		FirstOffset:          w.first,
		Length:               int32(BatchHeaderLen - batchLengthEnd + len(records)),
		PartitionLeaderEpoch: 0,
		Magic:                2,
		LastOffsetDelta:      w.n - 1,
		FirstTimestamp:       w.firstTs,
		MaxTimestamp:         w.maxTs,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           w.n,
		Records:              records,
		Attributes:           int16(codec),
	}
	if w.LogAppendTime {
		hdr.Attributes |= AttrLogAppendTime
	}
	if t := w.txn; t != nil {
		hdr.ProducerID, hdr.ProducerEpoch = t.ProducerID, t.Epoch
		hdr.Attributes |= AttrTransactional
		if t.Control != NotControl {
			hdr.Attributes |= AttrControl
		}
	}
	dst = hdr.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start+crcOffset:], crc32.Checksum(dst[start+crcStart:], castagnoli))
	return dst, nil
}

// Batches walks the v2 batches of a produced record set (validated
// before): fn gets each batch's bytes, its record count (last offset delta
// plus one) and its codec.
func Batches(data []byte, fn func(batch []byte, count int32, codec Codec)) {
	for len(data) >= BatchHeaderLen {
		n := batchLengthEnd + int(binary.BigEndian.Uint32(data[8:batchLengthEnd]))
		if n < BatchHeaderLen || n > len(data) {
			return
		}
		b := data[:n]
		fn(b, int32(binary.BigEndian.Uint32(b[lastDeltaAt:]))+1, Codec(binary.BigEndian.Uint16(b[crcStart:])&AttrCodecMask))
		data = data[n:]
	}
}

// Count is the number of v2 batches of a produced record set (validated
// before) and the codec of its first; a set with bytes after its last
// whole batch counts -1.
func Count(data []byte) (int, Codec) {
	n, codec := 0, CodecNone
	for len(data) >= BatchHeaderLen {
		size := batchLengthEnd + int(binary.BigEndian.Uint32(data[8:batchLengthEnd]))
		if size < BatchHeaderLen || size > len(data) {
			return -1, codec
		}
		if n == 0 {
			codec = BatchCodec(data[:size])
		}
		n++
		data = data[size:]
	}
	if len(data) > 0 {
		return -1, codec
	}
	return n, codec
}

// SetBaseOffset sets a batch's base offset and zeroes its partition leader
// epoch, as fetched batches carry them; neither is under the CRC.
func SetBaseOffset(batch []byte, base int64) {
	binary.BigEndian.PutUint64(batch[0:8], uint64(base))
	binary.BigEndian.PutUint32(batch[12:16], 0)
}

// Gap returns a v2 batch of no record that takes the n offsets from base,
// with timestamp ts: a topic link stores one where its source's log holds
// no batch (its log cleaner removed them), so that a partition's entries
// stay dense. Readers skip it (IsGap): no Kafka log holds an empty batch
// of no producer (a cleaner keeps an empty batch only for its producer's
// state).
func Gap(base int64, n int32, ts int64) []byte {
	hdr := kmsg.RecordBatch{
		FirstOffset:     base,
		Length:          int32(BatchHeaderLen - batchLengthEnd),
		Magic:           2,
		LastOffsetDelta: n - 1,
		FirstTimestamp:  ts,
		MaxTimestamp:    ts,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
	}
	out := hdr.AppendTo(make([]byte, 0, BatchHeaderLen))
	binary.BigEndian.PutUint32(out[crcOffset:], crc32.Checksum(out[crcStart:], castagnoli))
	return out
}

// IsGap reports whether a stored batch is one Gap made.
func IsGap(batch []byte) bool {
	return len(batch) == BatchHeaderLen && binary.BigEndian.Uint32(batch[57:61]) == 0 &&
		int64(binary.BigEndian.Uint64(batch[43:51])) == -1 && binary.BigEndian.Uint16(batch[crcStart:])&AttrControl == 0
}

// ReadHeader reads a v2 batch's header fields (Records left empty),
// checking its length, magic and CRC-32C but not its records.
func ReadHeader(raw []byte) (kmsg.RecordBatch, error) {
	var h kmsg.RecordBatch
	if len(raw) < BatchHeaderLen {
		return h, fmt.Errorf("%w: %d bytes is shorter than a batch header", ErrCorrupt, len(raw))
	}
	if raw[magicOffset] != 2 {
		return h, fmt.Errorf("%w %d", ErrBadMagic, raw[magicOffset])
	}
	if err := h.ReadFrom(raw); err != nil {
		return h, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if int(h.Length)+batchLengthEnd != len(raw) {
		return h, fmt.Errorf("%w: batch length %d, have %d bytes", ErrCorrupt, h.Length, len(raw)-batchLengthEnd)
	}
	if crc32.Checksum(raw[crcStart:], castagnoli) != uint32(h.CRC) {
		return h, fmt.Errorf("%w: CRC mismatch", ErrCorrupt)
	}
	if h.LastOffsetDelta < 0 || h.NumRecords < 0 {
		return h, fmt.Errorf("%w: last offset delta %d, %d records", ErrInvalid, h.LastOffsetDelta, h.NumRecords)
	}
	h.Records = nil
	return h, nil
}

// ControlOf reads a control batch's marker: its control type (ControlAbort,
// ControlCommit) and coordinator epoch; ok is false for a batch that is
// not a whole control batch.
func ControlOf(batch []byte) (control int8, coordinatorEpoch int32, ok bool) {
	b, err := ParseStoredBatch(batch, 1<<20)
	if err != nil || b.Header.Attributes&AttrControl == 0 || len(b.Records) == 0 || len(b.Records[0].Key) < 4 {
		return 0, 0, false
	}
	return int8(b.Records[0].Key[3]), ControlCoordinatorEpoch(b.Records[0].Value), true
}
