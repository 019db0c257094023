// Package logentry is the form of the records SeaweedMQ stores: a
// partition's log (segments, tail, write-ahead log) is a run of
// filer_pb.LogEntry messages, each at an offset, of two kinds:
//
//   - a batch entry holds one Kafka record batch as its producer sent it
//     (compressed as sent, CRC kept; its base offset set to the entry's):
//     key BatchKey, the batch as data; it takes as many offsets as the
//     batch (its last offset delta plus one). Produced batches are stored
//     so, and fetched as they are, no record decoded or rebuilt.
//   - a record entry holds one record (plain, or in the gateway's envelope,
//     see package record): written by earlier versions, SeaweedMQ's own
//     publishers, fillers, markers, the log cleaner; one offset.
//
// Records in log form, as the write-ahead log and a partition's tail hold
// them, are each a uvarint length and the LogEntry without its offset (the
// offset follows from the batch's base); a segment holds each as a 4-byte
// big-endian size and the LogEntry with its offset.
package logentry

import (
	"bytes"
	"encoding/binary"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// Records collects a batch's records in log form while it is sent.
type Records struct {
	N   int
	Buf []byte
}

// Add appends one record as the broker stores it: a filer_pb.LogEntry with
// its ts_ns, data and key, encoded here in field order and without the
// fields proto3 leaves out (zero, empty) exactly as proto.Marshal would,
// since this runs for every record produced.
func (w *Records) Add(tsNs int64, key, value []byte) {
	size := 0
	if tsNs != 0 {
		size += 1 + protowire.SizeVarint(uint64(tsNs))
	}
	if len(value) > 0 {
		size += 1 + protowire.SizeBytes(len(value))
	}
	if len(key) > 0 {
		size += 1 + protowire.SizeBytes(len(key))
	}
	b := binary.AppendUvarint(w.Buf, uint64(size))
	if tsNs != 0 {
		b = protowire.AppendTag(b, logEntryTsField, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(tsNs))
	}
	if len(value) > 0 {
		b = protowire.AppendTag(b, logEntryDataField, protowire.BytesType)
		b = protowire.AppendBytes(b, value)
	}
	if len(key) > 0 {
		b = protowire.AppendTag(b, logEntryKeyField, protowire.BytesType)
		b = protowire.AppendBytes(b, key)
	}
	w.Buf = b
	w.N++
}

// filer_pb.LogEntry's field numbers (one tag byte each).
var (
	logEntryFields      = (&filer_pb.LogEntry{}).ProtoReflect().Descriptor().Fields()
	logEntryTsField     = logEntryFields.ByName("ts_ns").Number()
	logEntryDataField   = logEntryFields.ByName("data").Number()
	logEntryKeyField    = logEntryFields.ByName("key").Number()
	logEntryOffsetField = logEntryFields.ByName("offset").Number()
)

// BatchKey is the key of a batch entry (its last byte the entry's
// version). A record entry whose key is these bytes is told apart by its
// data, which is not a whole v2 batch.
var BatchKey = []byte{0x00, 'K', 'G', 'B', 1}

// IsBatch reports whether an entry is a batch entry: the key, and data
// that is one whole v2 batch by its magic and length.
func IsBatch(key, data []byte) bool {
	return bytes.Equal(key, BatchKey) && len(data) >= record.BatchHeaderLen && data[16] == 2 &&
		int(binary.BigEndian.Uint32(data[8:12]))+12 == len(data) && record.Span(data) > 0
}

// Span is how many offsets an entry takes.
func Span(key, data []byte) int64 {
	if IsBatch(key, data) {
		return record.Span(data)
	}
	return 1
}

// Raw is a LogEntry's fields as encoded, read without copying.
type Raw struct {
	Offset int64
	TsNs   int64
	Key    []byte
	Data   []byte
}

// Span is how many offsets the entry takes.
func (e *Raw) Span() int64 { return Span(e.Key, e.Data) }

// End is one past the entry's last offset.
func (e *Raw) End() int64 { return e.Offset + e.Span() }

// Parse reads an encoded filer_pb.LogEntry; its slices alias b.
func Parse(b []byte) (Raw, error) {
	var e Raw
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return e, protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case num == logEntryTsField && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return e, protowire.ParseError(n)
			}
			e.TsNs, b = int64(v), b[n:]
		case num == logEntryOffsetField && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return e, protowire.ParseError(n)
			}
			e.Offset, b = int64(v), b[n:]
		case num == logEntryKeyField && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return e, protowire.ParseError(n)
			}
			e.Key, b = v, b[n:]
		case num == logEntryDataField && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return e, protowire.ParseError(n)
			}
			e.Data, b = v, b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return e, protowire.ParseError(n)
			}
			b = b[n:]
		}
	}
	return e, nil
}

// FromLogEntry is a decoded entry as a Raw.
func FromLogEntry(e *filer_pb.LogEntry) Raw {
	return Raw{Offset: e.Offset, TsNs: e.TsNs, Key: e.Key, Data: e.Data}
}

// SpanOf is how many offsets a decoded entry takes.
func SpanOf(e *filer_pb.LogEntry) int64 { return Span(e.Key, e.Data) }

// AddBatch appends a batch entry in log form (see Records.Add); its
// copy of the batch gets base as its base offset.
func (w *Records) AddBatch(tsNs int64, batch []byte, base int64) {
	w.Add(tsNs, BatchKey, batch)
	// add writes the data, then the key.
	keyField := 1 + protowire.SizeBytes(len(BatchKey))
	record.SetBaseOffset(w.Buf[len(w.Buf)-keyField-len(batch):], base)
}

// EntryEnd reads one past the last offset of an encoded segment
// entry (a LogEntry with its offset).
func EntryEnd(b []byte) (int64, error) {
	e, err := Parse(b)
	if err != nil {
		return 0, err
	}
	return e.End(), nil
}

// AppendSegment appends records in log form (uvarint length, then a
// LogEntry without offset) as a segment holds them: a 4-byte big-endian
// size and the LogEntry with its offset field added, base for the first.
func AppendSegment(dst []byte, base int64, recs []byte) []byte {
	off := base
	for len(recs) > 0 {
		size, k := binary.Uvarint(recs)
		raw := recs[k : k+int(size)]
		recs = recs[k+int(size):]
		extra := 1 + protowire.SizeVarint(uint64(off))
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(raw)+extra))
		dst = append(dst, raw...)
		dst = protowire.AppendTag(dst, logEntryOffsetField, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(off))
		e, err := Parse(raw)
		if err != nil {
			off++ // checked when logged; not reached
			continue
		}
		off += e.Span()
	}
	return dst
}

// fillerValue is what a filler holds; readers skip it (record.ErrFiller).
var fillerValue = record.AppendFiller(nil)

// Filler is a filler entry at offset, stored with ts_ns tsNs: it holds an
// offset no record holds, and readers skip it.
func Filler(offset, tsNs int64) *filer_pb.LogEntry {
	return &filer_pb.LogEntry{TsNs: tsNs, Data: fillerValue, Offset: offset}
}
