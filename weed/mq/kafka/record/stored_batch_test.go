package record

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestStoredBatchOfACompactedLog(t *testing.T) {
	// Records at offset deltas 0, 2 and 5 of a batch that took 7 offsets,
	// as a Kafka log cleaner leaves one.
	var body []byte
	for _, d := range []int32{0, 2, 5} {
		body = append(body, encodeRecord(kmsg.Record{OffsetDelta: d, Key: []byte{byte('a' + d)}, Value: []byte("v")})...)
	}
	hdr := kmsg.RecordBatch{FirstOffset: 100, Magic: 2, LastOffsetDelta: 6, NumRecords: 3, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, Records: body}
	hdr.Length = int32(BatchHeaderLen - batchLengthEnd + len(body))
	raw := hdr.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[crcOffset:], crc32.Checksum(raw[crcStart:], castagnoli))
	if _, err := ParseBatch(raw, 1<<20); err == nil {
		t.Fatal("a produced batch with skipped offset deltas was taken")
	}
	b, err := ParseStoredBatch(raw, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Records) != 3 || b.Delta(0) != 0 || b.Delta(1) != 2 || b.Delta(2) != 5 || string(b.Records[2].Key) != "f" {
		t.Fatalf("records %d, deltas %v", len(b.Records), b.Deltas)
	}
	if Span(raw) != 7 {
		t.Fatalf("span %d, want 7", Span(raw))
	}
	// Deltas that go back are refused.
	var back []byte
	for _, d := range []int32{0, 3, 2} {
		back = append(back, encodeRecord(kmsg.Record{OffsetDelta: d})...)
	}
	hdr.Records, hdr.Length = back, int32(BatchHeaderLen-batchLengthEnd+len(back))
	raw = hdr.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[crcOffset:], crc32.Checksum(raw[crcStart:], castagnoli))
	if _, err := ParseStoredBatch(raw, 1<<20); err == nil {
		t.Fatal("offset deltas going back were taken")
	}
}

func TestGapBatch(t *testing.T) {
	g := Gap(40, 9, 1234)
	if !IsGap(g) || Span(g) != 9 {
		t.Fatalf("gap: IsGap %v, span %d", IsGap(g), Span(g))
	}
	b, err := ParseStoredBatch(g, 1<<20)
	if err != nil || len(b.Records) != 0 || b.Header.FirstOffset != 40 {
		t.Fatalf("parsed %+v, %v", b.Header, err)
	}
	if _, err := ParseBatch(g, 1<<20); err == nil {
		t.Fatal("a produced batch of no record was taken")
	}
	var w Builder
	w.Reset(0)
	w.Add(&Record{Value: []byte("x")})
	if IsGap(w.AppendTo(nil)) {
		t.Fatal("a batch of one record taken for a gap")
	}
}

// encodeRecord is a record as a batch holds it, its length first.
func encodeRecord(r kmsg.Record) []byte {
	r.Length = int32(len(r.AppendTo(nil)) - 1) // the length 0 took one byte
	return r.AppendTo(nil)
}
