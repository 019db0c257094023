package seaweedmq

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
)

// The write-ahead log's bytes. A log file is a run of frames, one per group
// commit (one chunk on the volume servers each):
//
//	frame   = length uint32 | crc32c(payload) uint32 | payload
//	payload = batch...
//	batch   = [0x00 0x02 uvarint term] uvarint len(dir) | dir | varint base | uvarint n | record × n
//	record  = uvarint len | filer_pb.LogEntry (ts_ns, key, data; no offset)
//
// dir is the partition's directory in the filer (it names the topic and the
// partition's range), base the offset the leader gave the batch's first
// record; record i is at base+i. A record is stored as a log segment stores
// it (without its offset), so recovery writes it back unchanged. term is
// the leader's term (the view epoch at which it began to lead the
// partition): where two logs hold an offset, recovery takes the record of
// the later term, so that a late write of a deposed leader never replaces
// its successor's. A batch without term (logs of earlier versions, written
// when the MQ broker gave the offsets) is of term 0.

var walCRC = crc32.MakeTable(crc32.Castagnoli)

// maxWALFrame bounds one frame; a larger length is corruption.
const maxWALFrame = 256 << 20

var errWALCorrupt = errors.New("write-ahead log frame corrupt")

// walRecords collects a batch's records in log form while it is sent.
type walRecords struct {
	n   int
	buf []byte
}

// add appends one record as the broker stores it: a filer_pb.LogEntry with
// its ts_ns, data and key, encoded here in field order and without the
// fields proto3 leaves out (zero, empty) exactly as proto.Marshal would,
// since this runs for every record produced.
func (w *walRecords) add(tsNs int64, key, value []byte) {
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
	b := binary.AppendUvarint(w.buf, uint64(size))
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
	w.buf = b
	w.n++
}

// filer_pb.LogEntry's field numbers (one tag byte each).
var (
	logEntryFields      = (&filer_pb.LogEntry{}).ProtoReflect().Descriptor().Fields()
	logEntryTsField     = logEntryFields.ByName("ts_ns").Number()
	logEntryDataField   = logEntryFields.ByName("data").Number()
	logEntryKeyField    = logEntryFields.ByName("key").Number()
	logEntryOffsetField = logEntryFields.ByName("offset").Number()
)

// walBatch is one logged batch.
type walBatch struct {
	dir  string
	term int64
	base int64
	n    int
	recs []byte // n records, each uvarint length and LogEntry
}

// appendWALBatch appends a batch to a frame's payload.
func appendWALBatch(dst []byte, b *walBatch) []byte {
	if b.term > 0 {
		dst = append(dst, 0x00, walBatchWithTerm)
		dst = binary.AppendUvarint(dst, uint64(b.term))
	}
	dst = binary.AppendUvarint(dst, uint64(len(b.dir)))
	dst = append(dst, b.dir...)
	dst = binary.AppendVarint(dst, b.base)
	dst = binary.AppendUvarint(dst, uint64(b.n))
	return append(dst, b.recs...)
}

// sealWALFrame turns a payload built after 8 reserved bytes into a frame.
func sealWALFrame(frame []byte) []byte {
	payload := frame[8:]
	binary.BigEndian.PutUint32(frame[0:], uint32(len(payload)))
	binary.BigEndian.PutUint32(frame[4:], crc32.Checksum(payload, walCRC))
	return frame
}

// parseWALFrames decodes the frames of a log file. A torn or corrupt frame
// ends it: what came before is returned with errWALCorrupt.
func parseWALFrames(data []byte) ([]walBatch, error) {
	var out []walBatch
	for len(data) > 0 {
		if len(data) < 8 {
			return out, fmt.Errorf("%w: %d trailing bytes", errWALCorrupt, len(data))
		}
		size := binary.BigEndian.Uint32(data)
		sum := binary.BigEndian.Uint32(data[4:])
		if size > maxWALFrame || int(size) > len(data)-8 {
			return out, fmt.Errorf("%w: frame of %d bytes with %d left", errWALCorrupt, size, len(data)-8)
		}
		payload := data[8 : 8+size]
		if crc32.Checksum(payload, walCRC) != sum {
			return out, fmt.Errorf("%w: checksum", errWALCorrupt)
		}
		batches, err := parseWALPayload(payload)
		if err != nil {
			return out, err
		}
		out = append(out, batches...)
		data = data[8+size:]
	}
	return out, nil
}

// walBatchWithTerm follows the zero that begins a batch with a term (a
// partition's directory is never empty).
const walBatchWithTerm = 0x02

func parseWALPayload(p []byte) ([]walBatch, error) {
	var out []walBatch
	for len(p) > 0 {
		var b walBatch
		if p[0] == 0x00 {
			if len(p) < 2 || p[1] != walBatchWithTerm {
				return nil, fmt.Errorf("%w: batch version", errWALCorrupt)
			}
			term, k := binary.Uvarint(p[2:])
			if k <= 0 || term > math.MaxInt64 {
				return nil, fmt.Errorf("%w: term", errWALCorrupt)
			}
			b.term = int64(term)
			p = p[2+k:]
		}
		dirLen, k := binary.Uvarint(p)
		if k <= 0 || dirLen == 0 || dirLen > uint64(len(p)-k) {
			return nil, fmt.Errorf("%w: partition name", errWALCorrupt)
		}
		p = p[k:]
		b.dir, p = string(p[:dirLen]), p[dirLen:]
		base, k := binary.Varint(p)
		if k <= 0 || base < 0 {
			return nil, fmt.Errorf("%w: base offset", errWALCorrupt)
		}
		p = p[k:]
		b.base = base
		n, k := binary.Uvarint(p)
		if k <= 0 || n == 0 || n > uint64(len(p)) {
			return nil, fmt.Errorf("%w: record count", errWALCorrupt)
		}
		p = p[k:]
		b.n = int(n)
		start := p
		for taken := int64(0); taken < int64(b.n); {
			size, k := binary.Uvarint(p)
			if k <= 0 || size > uint64(len(p)-k) {
				return nil, fmt.Errorf("%w: record at offset %d of %d", errWALCorrupt, taken, b.n)
			}
			e, err := parseRawEntry(p[k : k+int(size)])
			if err != nil {
				return nil, fmt.Errorf("%w: record at offset %d: %v", errWALCorrupt, taken, err)
			}
			taken += e.span()
			if taken > int64(b.n) {
				return nil, fmt.Errorf("%w: records take more than %d offsets", errWALCorrupt, b.n)
			}
			p = p[k+int(size):]
		}
		b.recs = start[:len(start)-len(p)]
		out = append(out, b)
	}
	return out, nil
}

// entries decodes a batch's records with their offsets, from offset from
// on (a batch entry that holds it included).
func (b *walBatch) entries(from int64) ([]*filer_pb.LogEntry, error) {
	var out []*filer_pb.LogEntry
	err := b.each(from, func(e rawEntry) error {
		out = append(out, &filer_pb.LogEntry{TsNs: e.tsNs, Key: bytes.Clone(e.key), Data: bytes.Clone(e.data), Offset: e.offset})
		return nil
	})
	return out, err
}

// each calls fn with each entry of the batch that holds offsets from from
// on, in order; the entries' slices alias the batch's.
func (b *walBatch) each(from int64, fn func(rawEntry) error) error {
	p := b.recs
	off := b.base
	for off < b.base+int64(b.n) {
		size, k := binary.Uvarint(p)
		if k <= 0 || size > uint64(len(p)-k) {
			return fmt.Errorf("%w: record at offset %d", errWALCorrupt, off)
		}
		e, err := parseRawEntry(p[k : k+int(size)])
		if err != nil {
			return fmt.Errorf("%w: record at offset %d: %v", errWALCorrupt, off, err)
		}
		p = p[k+int(size):]
		e.offset = off
		off += e.span()
		if off > from {
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// walPartitionsAttr is the extended attribute of a log file's filer entry
// that names the partitions in it with the end of what it holds of each, so
// that recovery reads only the files that hold its partition.
const walPartitionsAttr = "kafka.wal.partitions"

func encodeWALEnds(ends map[string]int64) []byte {
	var b []byte
	for dir, end := range ends {
		b = append(b, dir...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, end, 10)
		b = append(b, '\n')
	}
	return b
}

// decodeWALEnds reads walPartitionsAttr; ok is false if it is missing or
// unreadable (the file must then be read to know).
func decodeWALEnds(b []byte) (map[string]int64, bool) {
	if len(b) == 0 {
		return nil, false
	}
	ends := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if i <= 0 {
			return nil, false
		}
		end, err := strconv.ParseInt(line[i+1:], 10, 64)
		if err != nil {
			return nil, false
		}
		ends[line[:i]] = end
	}
	return ends, true
}
