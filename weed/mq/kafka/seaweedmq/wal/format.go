package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"strings"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/logentry"
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

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// maxFrame bounds one frame; a larger length is corruption.
const maxFrame = 256 << 20

var ErrCorrupt = errors.New("write-ahead log frame corrupt")

// Batch is one logged batch.
type Batch struct {
	Dir  string
	Term int64
	Base int64
	N    int
	Recs []byte // n records, each uvarint length and LogEntry
	// Replication is how many copies of the chunk that holds the batch
	// SeaweedFS keeps: those of its topic (the chunk's are the widest
	// of its batches'). It is not written into the log.
	Replication Replication
}

// Replication is a topic's copies: Want, SeaweedFS's replication of its
// files ("": the cluster's default), and Min, the fewest copies a chunk
// may be written with while the cluster cannot place Want's
// (min.insync.replicas).
type Replication struct {
	Want string
	Min  int
}

// appendBatch appends a batch to a frame's payload.
func appendBatch(dst []byte, b *Batch) []byte {
	if b.Term > 0 {
		dst = append(dst, 0x00, batchWithTerm)
		dst = binary.AppendUvarint(dst, uint64(b.Term))
	}
	dst = binary.AppendUvarint(dst, uint64(len(b.Dir)))
	dst = append(dst, b.Dir...)
	dst = binary.AppendVarint(dst, b.Base)
	dst = binary.AppendUvarint(dst, uint64(b.N))
	return append(dst, b.Recs...)
}

// sealFrame turns a payload built after 8 reserved bytes into a frame.
func sealFrame(frame []byte) []byte {
	payload := frame[8:]
	binary.BigEndian.PutUint32(frame[0:], uint32(len(payload)))
	binary.BigEndian.PutUint32(frame[4:], crc32.Checksum(payload, crcTable))
	return frame
}

// ParseFrames decodes the frames of a log file. A torn or corrupt frame
// ends it: what came before is returned with errWALCorrupt.
func ParseFrames(data []byte) ([]Batch, error) {
	var out []Batch
	for len(data) > 0 {
		if len(data) < 8 {
			return out, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(data))
		}
		size := binary.BigEndian.Uint32(data)
		sum := binary.BigEndian.Uint32(data[4:])
		if size > maxFrame || int(size) > len(data)-8 {
			return out, fmt.Errorf("%w: frame of %d bytes with %d left", ErrCorrupt, size, len(data)-8)
		}
		payload := data[8 : 8+size]
		if crc32.Checksum(payload, crcTable) != sum {
			return out, fmt.Errorf("%w: checksum", ErrCorrupt)
		}
		batches, err := parsePayload(payload)
		if err != nil {
			return out, err
		}
		out = append(out, batches...)
		data = data[8+size:]
	}
	return out, nil
}

// batchWithTerm follows the zero that begins a batch with a term (a
// partition's directory is never empty).
const batchWithTerm = 0x02

func parsePayload(p []byte) ([]Batch, error) {
	var out []Batch
	for len(p) > 0 {
		var b Batch
		if p[0] == 0x00 {
			if len(p) < 2 || p[1] != batchWithTerm {
				return nil, fmt.Errorf("%w: batch version", ErrCorrupt)
			}
			term, k := binary.Uvarint(p[2:])
			if k <= 0 || term > math.MaxInt64 {
				return nil, fmt.Errorf("%w: term", ErrCorrupt)
			}
			b.Term = int64(term)
			p = p[2+k:]
		}
		dirLen, k := binary.Uvarint(p)
		if k <= 0 || dirLen == 0 || dirLen > uint64(len(p)-k) {
			return nil, fmt.Errorf("%w: partition name", ErrCorrupt)
		}
		p = p[k:]
		b.Dir, p = string(p[:dirLen]), p[dirLen:]
		base, k := binary.Varint(p)
		if k <= 0 || base < 0 {
			return nil, fmt.Errorf("%w: base offset", ErrCorrupt)
		}
		p = p[k:]
		b.Base = base
		n, k := binary.Uvarint(p)
		if k <= 0 || n == 0 || n > uint64(len(p)) {
			return nil, fmt.Errorf("%w: record count", ErrCorrupt)
		}
		p = p[k:]
		b.N = int(n)
		start := p
		for taken := int64(0); taken < int64(b.N); {
			size, k := binary.Uvarint(p)
			if k <= 0 || size > uint64(len(p)-k) {
				return nil, fmt.Errorf("%w: record at offset %d of %d", ErrCorrupt, taken, b.N)
			}
			e, err := logentry.Parse(p[k : k+int(size)])
			if err != nil {
				return nil, fmt.Errorf("%w: record at offset %d: %v", ErrCorrupt, taken, err)
			}
			taken += e.Span()
			if taken > int64(b.N) {
				return nil, fmt.Errorf("%w: records take more than %d offsets", ErrCorrupt, b.N)
			}
			p = p[k+int(size):]
		}
		b.Recs = start[:len(start)-len(p)]
		out = append(out, b)
	}
	return out, nil
}

// Entries decodes a batch's records with their offsets, from offset from
// on (a batch entry that holds it included).
func (b *Batch) Entries(from int64) ([]*filer_pb.LogEntry, error) {
	var out []*filer_pb.LogEntry
	err := b.Each(from, func(e logentry.Raw) error {
		out = append(out, &filer_pb.LogEntry{TsNs: e.TsNs, Key: bytes.Clone(e.Key), Data: bytes.Clone(e.Data), Offset: e.Offset})
		return nil
	})
	return out, err
}

// Each calls fn with each entry of the batch that holds offsets from from
// on, in order; the entries' slices alias the batch's.
func (b *Batch) Each(from int64, fn func(logentry.Raw) error) error {
	p := b.Recs
	off := b.Base
	for off < b.Base+int64(b.N) {
		size, k := binary.Uvarint(p)
		if k <= 0 || size > uint64(len(p)-k) {
			return fmt.Errorf("%w: record at offset %d", ErrCorrupt, off)
		}
		e, err := logentry.Parse(p[k : k+int(size)])
		if err != nil {
			return fmt.Errorf("%w: record at offset %d: %v", ErrCorrupt, off, err)
		}
		p = p[k+int(size):]
		e.Offset = off
		off += e.Span()
		if off > from {
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// partitionsAttr is the extended attribute of a log file's filer entry
// that names the partitions in it with the end of what it holds of each, so
// that recovery reads only the files that hold its partition.
const partitionsAttr = "kafka.wal.partitions"

func encodeEnds(ends map[string]int64) []byte {
	var b []byte
	for dir, end := range ends {
		b = append(b, dir...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, end, 10)
		b = append(b, '\n')
	}
	return b
}

// decodeEnds reads walPartitionsAttr; ok is false if it is missing or
// unreadable (the file must then be read to know).
func decodeEnds(b []byte) (map[string]int64, bool) {
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

// PartKey is a partition's name in the write-ahead log: its directory
// and, after '@', its topic's creation time in nanoseconds.
func PartKey(dir string, created int64) string {
	return dir + "@" + strconv.FormatInt(created, 10)
}

// SplitPartKey undoes PartKey; gen is -1 for a bare directory (the
// logs of earlier versions).
func SplitPartKey(part string) (dir string, gen int64) {
	dir, g, ok := strings.Cut(part, "@")
	if !ok {
		return part, -1
	}
	n, err := strconv.ParseInt(g, 10, 64)
	if err != nil {
		return part, -1
	}
	return dir, n
}
