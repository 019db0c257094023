package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A Kafka record is stored as one SeaweedMQ message (key, value, ts_ns).
//
// Plain records are stored as they are, so SeaweedMQ's own subscribers read
// them unchanged: a record is plain when it has no headers, a non-null value
// that does not begin with the envelope magic, a key that is null or not
// empty (SeaweedMQ has no null key: an empty stored key reads back as null),
// and a timestamp that ts_ns carries exactly (see the writer).
//
// Every other record keeps its key in the message key and wraps its value
// in an envelope:
//
//	magic    4 bytes  0x00 'K' 'G' 'W'
//	version  1 byte   1
//	flags    1 byte   bit 0: key is null, bit 1: value is null,
//	                  bit 2: a timestamp follows, bit 3: a filler, not a
//	                  record (see AppendFiller), bit 4: the first record
//	                  of an idempotent producer's batch, bit 5: a record
//	                  of a transaction or a transaction marker
//	[timestamp]       zig-zag varint, milliseconds (only with bit 2)
//	[producer]        zig-zag varints: producer id, epoch, first and last
//	                  sequence number of the batch (only with bit 4)
//	[transaction]     zig-zag varints: producer id, epoch, control type
//	                  (-1: a record, 0: abort marker, 1: commit marker)
//	                  (only with bit 5)
//	headers           uvarint count, then per header: uvarint key length,
//	                  key, zig-zag varint value length (-1 for null), value
//	value             the remaining bytes
var envelopeMagic = []byte{0x00, 'K', 'G', 'W'}

const (
	envelopeVersion = 1

	flagNullKey   = 1 << 0
	flagNullValue = 1 << 1
	flagTimestamp = 1 << 2
	flagFiller    = 1 << 3
	flagProducer  = 1 << 4
	flagTxn       = 1 << 5
)

// ProducerBatch names an idempotent producer's batch. It is stored with the
// batch's first record, so that the sequence numbers already written can be
// read back after a restart.
type ProducerBatch struct {
	ID       int64
	Epoch    int16
	FirstSeq int32
	LastSeq  int32
}

// ErrFiller is returned by FromStored for a filler message: an offset the
// gateway had to use up, which holds no record and which readers skip.
var ErrFiller = errors.New("filler, not a record")

// AppendFiller appends the stored value of a filler message. After a broker
// crash its offset counter can restart behind records already stored; the
// gateway then publishes fillers to move it past them, and since readers
// keep the first message stored at an offset, the fillers are never read.
func AppendFiller(dst []byte) []byte {
	dst = append(dst, envelopeMagic...)
	return append(dst, envelopeVersion, flagFiller|flagNullKey|flagNullValue, 0)
}

// Plain reports whether r can be stored without an envelope, given whether
// its timestamp can be carried by ts_ns alone.
func Plain(r *Record, exactTime bool) bool {
	return exactTime && r.Producer == nil && r.Txn == nil && len(r.Headers) == 0 && r.Value != nil &&
		(r.Key == nil || len(r.Key) > 0) && !bytes.HasPrefix(r.Value, envelopeMagic)
}

// AppendEnvelope appends r's stored value to dst; explicitTime says whether
// the timestamp must be written into the envelope.
func AppendEnvelope(dst []byte, r *Record, explicitTime bool) []byte {
	dst = append(dst, envelopeMagic...)
	dst = append(dst, envelopeVersion)
	var flags byte
	if r.Key == nil {
		flags |= flagNullKey
	}
	if r.Value == nil {
		flags |= flagNullValue
	}
	if explicitTime {
		flags |= flagTimestamp
	}
	if r.Producer != nil {
		flags |= flagProducer
	}
	if r.Txn != nil {
		flags |= flagTxn
	}
	dst = append(dst, flags)
	if explicitTime {
		dst = binary.AppendVarint(dst, r.Timestamp)
	}
	if pb := r.Producer; pb != nil {
		dst = binary.AppendVarint(dst, pb.ID)
		dst = binary.AppendVarint(dst, int64(pb.Epoch))
		dst = binary.AppendVarint(dst, int64(pb.FirstSeq))
		dst = binary.AppendVarint(dst, int64(pb.LastSeq))
	}
	if t := r.Txn; t != nil {
		dst = binary.AppendVarint(dst, t.ProducerID)
		dst = binary.AppendVarint(dst, int64(t.Epoch))
		dst = binary.AppendVarint(dst, int64(t.Control))
	}
	dst = binary.AppendUvarint(dst, uint64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		dst = binary.AppendUvarint(dst, uint64(len(h.Key)))
		dst = append(dst, h.Key...)
		if h.Value == nil {
			dst = binary.AppendVarint(dst, -1)
		} else {
			dst = binary.AppendVarint(dst, int64(len(h.Value)))
			dst = append(dst, h.Value...)
		}
	}
	return append(dst, r.Value...)
}

// FromStored rebuilds the Kafka record from a stored message. tsMillis is
// the timestamp ts_ns carries; an envelope's own timestamp wins over it.
// The record's slices alias key and value.
func FromStored(key, value []byte, tsMillis int64) (Record, error) {
	r := Record{Key: key, Value: value, Timestamp: tsMillis}
	if len(key) == 0 {
		r.Key = nil
	}
	if !bytes.HasPrefix(value, envelopeMagic) {
		if r.Value == nil {
			r.Value = []byte{}
		}
		return r, nil
	}
	b := value[len(envelopeMagic):]
	if len(b) < 2 || b[0] != envelopeVersion {
		return r, fmt.Errorf("record envelope: unknown version")
	}
	flags := b[1]
	b = b[2:]
	if flags&flagFiller != 0 {
		return r, ErrFiller
	}
	if flags&flagNullKey == 0 && r.Key == nil {
		r.Key = []byte{}
	}
	if flags&flagTimestamp != 0 {
		ts, n := binary.Varint(b)
		if n <= 0 {
			return r, fmt.Errorf("record envelope: bad timestamp")
		}
		r.Timestamp = ts
		b = b[n:]
	}
	if flags&flagProducer != 0 {
		var v [4]int64
		for i := range v {
			x, n := binary.Varint(b)
			if n <= 0 {
				return r, fmt.Errorf("record envelope: bad producer batch")
			}
			v[i] = x
			b = b[n:]
		}
		if v[1] < math.MinInt16 || v[1] > math.MaxInt16 || v[2] < math.MinInt32 || v[2] > math.MaxInt32 || v[3] < math.MinInt32 || v[3] > math.MaxInt32 {
			return r, fmt.Errorf("record envelope: bad producer batch")
		}
		r.Producer = &ProducerBatch{ID: v[0], Epoch: int16(v[1]), FirstSeq: int32(v[2]), LastSeq: int32(v[3])}
	}
	if flags&flagTxn != 0 {
		var v [3]int64
		for i := range v {
			x, n := binary.Varint(b)
			if n <= 0 {
				return r, fmt.Errorf("record envelope: bad transaction mark")
			}
			v[i] = x
			b = b[n:]
		}
		if v[1] < math.MinInt16 || v[1] > math.MaxInt16 || v[2] < NotControl || v[2] > ControlCommit {
			return r, fmt.Errorf("record envelope: bad transaction mark")
		}
		r.Txn = &TxnMark{ProducerID: v[0], Epoch: int16(v[1]), Control: int8(v[2])}
	}
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) {
		return r, fmt.Errorf("record envelope: bad header count")
	}
	b = b[n:]
	if count > 0 {
		r.Headers = make([]kmsg.Header, count)
	}
	for i := range r.Headers {
		kl, n := binary.Uvarint(b)
		if n <= 0 || kl > uint64(len(b)-n) {
			return r, fmt.Errorf("record envelope: bad header key")
		}
		r.Headers[i].Key = string(b[n : n+int(kl)])
		b = b[n+int(kl):]
		vl, n := binary.Varint(b)
		if n <= 0 || vl < -1 || vl > int64(len(b)-n) {
			return r, fmt.Errorf("record envelope: bad header value")
		}
		b = b[n:]
		if vl >= 0 {
			r.Headers[i].Value = b[:vl:vl]
			b = b[vl:]
		}
	}
	r.Value = b
	if flags&flagNullValue != 0 {
		r.Value = nil
	}
	return r, nil
}
