package seaweedmq

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// testBatch is a v2 batch of n records (values v0, v1, ...), base offset 0.
func testBatch(n int) []byte {
	var b record.Builder
	b.Reset(0)
	for i := 0; i < n; i++ {
		b.Add(&record.Record{Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i)), Timestamp: 1000 + int64(i)})
	}
	return b.AppendTo(nil)
}

// walTestBatchEntry is a logged batch holding one batch entry of n records
// at base.
func walTestBatchEntry(dir string, base int64, n int) walBatch {
	var w walRecords
	w.addBatch(2000, testBatch(n), base)
	return walBatch{dir: dir, base: base, n: n, recs: w.buf}
}

// TestBatchEntries: a batch entry takes its batch's offsets through the
// log, the tail and a segment; record entries one each; reads from inside
// a batch get the batch and its records from there on.
func TestBatchEntries(t *testing.T) {
	mixed := walTestBatch("/d", 0, "a", "b")
	entry := walTestBatchEntry("/d", 2, 5)
	after := walTestBatch("/d", 7, "c")
	got, err := parseWALFrames(walTestFrame(mixed, entry, after))
	if err != nil || len(got) != 3 || got[1].n != 5 {
		t.Fatalf("frames: %+v %v", got, err)
	}
	es, err := got[1].entries(4)
	if err != nil || len(es) != 1 || es[0].Offset != 2 || logEntrySpan(es[0]) != 5 {
		t.Fatalf("entries from 4: %v %v", es, err)
	}
	// The stored copy carries the base offset, the rest as produced.
	want := testBatch(5)
	record.SetBaseOffset(want, 2)
	if !bytes.Equal(es[0].Data, want) || !bytes.Equal(es[0].Key, batchEntryKey) {
		t.Fatalf("stored batch %x, want %x", es[0].Data, want)
	}
	re := fromLogEntry(es[0])
	recs, err := re.records(nil, 4)
	if err != nil || len(recs) != 3 || recs[0].Offset != 4 || string(recs[0].Value) != "v2" || recs[2].Offset != 6 || recs[2].Timestamp != 1004 {
		t.Fatalf("records from 4: %+v %v", recs, err)
	}
	if es, _ := got[1].entries(7); len(es) != 0 {
		t.Fatalf("entries from past the batch: %v", es)
	}
	// As a segment holds them: offsets 0, 1, 2 (five), 7.
	var seg []byte
	for _, b := range got {
		seg = appendSegmentRecords(seg, b.base, b.recs)
	}
	var ends []int64
	for pos := 0; pos < len(seg); {
		size := int(uint32(seg[pos])<<24 | uint32(seg[pos+1])<<16 | uint32(seg[pos+2])<<8 | uint32(seg[pos+3]))
		end, err := segmentEntryEnd(seg[pos+4 : pos+4+size])
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, end)
		pos += 4 + size
	}
	if fmt.Sprint(ends) != "[1 2 7 8]" {
		t.Fatalf("segment entry ends %v", ends)
	}
	// A record entry whose key looks like a batch entry's is a record.
	if entrySpan(batchEntryKey, []byte("not a batch")) != 1 {
		t.Fatal("a record with the batch key taken for a batch")
	}
}

// TestExpandEntries: the cleaner sees a batch entry as its records, each
// with its key and timestamp, at their offsets.
func TestExpandEntries(t *testing.T) {
	wb := walTestBatchEntry("/d", 10, 3)
	es, err := wb.entries(0)
	if err != nil {
		t.Fatal(err)
	}
	out := expandEntries(es)
	if len(out) != 3 {
		t.Fatalf("%d entries", len(out))
	}
	for i, e := range out {
		r, err := record.FromStored(e.Key, e.Data, e.TsNs/1e6)
		if err != nil || e.Offset != int64(10+i) || string(r.Key) != fmt.Sprint("k", i) || string(r.Value) != fmt.Sprint("v", i) || r.Timestamp != 1000+int64(i) {
			t.Fatalf("entry %d: %v %+v %v", i, e, r, err)
		}
	}
}
