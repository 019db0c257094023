package seaweedmq

// Stored entries. A partition's log (segments, tail, write-ahead log) is a
// run of filer_pb.LogEntry messages, each at an offset, of two kinds:
//
//   - a batch entry holds one Kafka record batch as its producer sent it
//     (compressed as sent, CRC kept; its base offset set to the entry's):
//     key batchEntryKey, the batch as data; it takes as many offsets as
//     the batch (its last offset delta plus one). Produced batches are
//     stored so, and fetched as they are, no record decoded or rebuilt.
//   - a record entry holds one record (plain, or in the gateway's envelope,
//     see package record): written by earlier versions, SeaweedMQ's own
//     publishers, fillers, markers, the log cleaner; one offset.

import (
	"bytes"
	"encoding/binary"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// batchEntryKey is the key of a batch entry (its last byte the entry's
// version). A record entry whose key is these bytes is told apart by its
// data, which is not a whole v2 batch.
var batchEntryKey = []byte{0x00, 'K', 'G', 'B', 1}

// isBatch reports whether an entry is a batch entry: the key, and data
// that is one whole v2 batch by its magic and length.
func isBatch(key, data []byte) bool {
	return bytes.Equal(key, batchEntryKey) && len(data) >= record.BatchHeaderLen && data[16] == 2 &&
		int(binary.BigEndian.Uint32(data[8:12]))+12 == len(data) && record.Span(data) > 0
}

// entrySpan is how many offsets an entry takes.
func entrySpan(key, data []byte) int64 {
	if isBatch(key, data) {
		return record.Span(data)
	}
	return 1
}

// rawEntry is a LogEntry's fields as encoded, read without copying.
type rawEntry struct {
	offset int64
	tsNs   int64
	key    []byte
	data   []byte
}

// span is how many offsets the entry takes.
func (e *rawEntry) span() int64 { return entrySpan(e.key, e.data) }

// end is one past the entry's last offset.
func (e *rawEntry) end() int64 { return e.offset + e.span() }

// parseRawEntry reads an encoded filer_pb.LogEntry; its slices alias b.
func parseRawEntry(b []byte) (rawEntry, error) {
	var e rawEntry
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
			e.tsNs, b = int64(v), b[n:]
		case num == logEntryOffsetField && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return e, protowire.ParseError(n)
			}
			e.offset, b = int64(v), b[n:]
		case num == logEntryKeyField && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return e, protowire.ParseError(n)
			}
			e.key, b = v, b[n:]
		case num == logEntryDataField && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return e, protowire.ParseError(n)
			}
			e.data, b = v, b[n:]
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

// fromLogEntry is a decoded entry as a rawEntry.
func fromLogEntry(e *filer_pb.LogEntry) rawEntry {
	return rawEntry{offset: e.Offset, tsNs: e.TsNs, key: e.Key, data: e.Data}
}

// logEntrySpan is how many offsets a decoded entry takes.
func logEntrySpan(e *filer_pb.LogEntry) int64 { return entrySpan(e.Key, e.Data) }

// records appends an entry's Kafka records from offset from on to out:
// a batch entry's records decoded, a record entry's one record (none for a
// filler). bad is set for an entry no Kafka client could read.
func (e *rawEntry) records(out []protocol.StoredRecord, from int64) (_ []protocol.StoredRecord, bad error) {
	if isBatch(e.key, e.data) {
		b, err := record.ParseBatch(e.data, protocol.MaxDecompressedBatch)
		if err != nil {
			return out, err
		}
		b.Mark()
		for i := range b.Records {
			if off := e.offset + int64(i); off >= from {
				out = append(out, protocol.StoredRecord{Offset: off, Record: b.Records[i]})
			}
		}
		return out, nil
	}
	if e.offset < from {
		return out, nil
	}
	r, err := record.FromStored(e.key, e.data, e.tsNs/int64(time.Millisecond))
	if err == record.ErrFiller {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	return append(out, protocol.StoredRecord{Offset: e.offset, Record: r}), nil
}

// addBatch appends a batch entry in log form (see walRecords.add); its
// copy of the batch gets base as its base offset.
func (w *walRecords) addBatch(tsNs int64, batch []byte, base int64) {
	w.add(tsNs, batchEntryKey, batch)
	// add writes the data, then the key.
	keyField := 1 + protowire.SizeBytes(len(batchEntryKey))
	record.SetBaseOffset(w.buf[len(w.buf)-keyField-len(batch):], base)
}

// segmentEntryEnd reads one past the last offset of an encoded segment
// entry (a LogEntry with its offset).
func segmentEntryEnd(b []byte) (int64, error) {
	e, err := parseRawEntry(b)
	if err != nil {
		return 0, err
	}
	return e.end(), nil
}
