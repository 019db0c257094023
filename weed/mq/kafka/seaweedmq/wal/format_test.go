package wal

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/logentry"
)

func walTestFrame(batches ...Batch) []byte {
	frame := make([]byte, 8)
	for i := range batches {
		frame = appendBatch(frame, &batches[i])
	}
	return sealFrame(frame)
}

func walTestBatch(dir string, base int64, values ...string) Batch {
	var w logentry.Records
	for i, v := range values {
		var key []byte
		if i%2 == 0 {
			key = []byte("k-" + v)
		}
		w.Add(int64(1_000_000+i), key, []byte(v))
	}
	return Batch{Dir: dir, Base: base, N: w.N, Recs: w.Buf}
}

// TestWALFrames round-trips batches of two partitions through frames and
// reads back each record at its offset with its key, value and ts_ns.
func TestWALFrames(t *testing.T) {
	a := walTestBatch("/topics/kafka/t/v/0000-0630", 7, "a", "b", "c")
	b := walTestBatch("/topics/kafka/u/v/0630-1260", 0, "x")
	data := append(walTestFrame(a, b), walTestFrame(walTestBatch(a.Dir, 10, "d"))...)
	got, err := ParseFrames(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Dir != a.Dir || got[1].Dir != b.Dir || got[2].Base != 10 {
		t.Fatalf("batches %+v", got)
	}
	es, err := got[0].Entries(8)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Offset != 8 || string(es[0].Data) != "b" || es[0].Key != nil ||
		es[1].Offset != 9 || string(es[1].Data) != "c" || string(es[1].Key) != "k-c" || es[1].TsNs != 1_000_002 {
		t.Fatalf("entries from 8: %v", es)
	}
}

// TestWALTerms: a batch keeps the leader's term through a frame, beside
// batches without one (as earlier versions wrote them, read as term 0).
func TestWALTerms(t *testing.T) {
	a := walTestBatch("/topics/kafka/t/v/0000-0001", 3, "a", "b")
	a.Term = 1 << 40
	b := walTestBatch("/topics/kafka/t/v/0000-0001", 5, "c")
	got, err := ParseFrames(walTestFrame(a, b))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Term != a.Term || got[0].Dir != a.Dir || got[0].Base != 3 || got[0].N != 2 || got[1].Term != 0 || got[1].Base != 5 {
		t.Fatalf("batches %+v", got)
	}
	if es, err := got[0].Entries(0); err != nil || len(es) != 2 || string(es[1].Data) != "b" {
		t.Fatalf("entries %v %v", es, err)
	}
	// A zero not followed by the version, or an empty directory, is
	// corruption.
	for _, payload := range [][]byte{{0x00, 0x07, 0x01}, {0x00}, append([]byte{0x00, batchWithTerm, 0x01, 0x00}, 0x00)} {
		if _, err := parsePayload(payload); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("payload %x: %v", payload, err)
		}
	}
}

// TestWALTornFrame: a frame cut short or with a flipped byte ends the file;
// the frames before it are kept.
func TestWALTornFrame(t *testing.T) {
	first := walTestFrame(walTestBatch("/d", 0, "a", "b"))
	second := walTestFrame(walTestBatch("/d", 2, "c"))
	for name, data := range map[string][]byte{
		"cut":     append(bytes.Clone(first), second[:len(second)-3]...),
		"flipped": append(bytes.Clone(first), append(second[:len(second)-1:len(second)-1], second[len(second)-1]^1)...),
	} {
		got, err := ParseFrames(data)
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: error %v", name, err)
		}
		if len(got) != 1 || got[0].N != 2 {
			t.Fatalf("%s: kept %+v", name, got)
		}
	}
}

// FuzzWALFrames: any bytes read back as a log file decode to batches or a
// clear error, never a panic, and batches' records decode or fail cleanly.
func FuzzWALFrames(f *testing.F) {
	f.Add(walTestFrame(walTestBatch("/d", 3, "a", "b")))
	f.Add(append(walTestFrame(walTestBatch("/d", 0, "a")), 0, 0, 0, 9))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0})
	termed := walTestBatch("/d", 9, "t")
	termed.Term = 42
	f.Add(walTestFrame(termed))
	f.Add(walTestFrame(walTestBatchEntry("/d", 4, 5)))
	f.Fuzz(func(t *testing.T, data []byte) {
		batches, _ := ParseFrames(data)
		for i := range batches {
			es, err := batches[i].Entries(0)
			taken := int64(0)
			for _, e := range es {
				taken += logentry.SpanOf(e)
			}
			if err == nil && taken != int64(batches[i].N) {
				t.Fatalf("entries taking %d offsets of %d", taken, batches[i].N)
			}
		}
	})
}

// TestWALEnds: a log file's entry names its partitions with their ends;
// a missing or damaged attribute means the file must be read.
func TestWALEnds(t *testing.T) {
	ends := map[string]int64{"/topics/kafka/a b/v/0000-1260": 12, "/topics/kafka/c/v/1260-2520": 0}
	got, ok := decodeEnds(encodeEnds(ends))
	if !ok || len(got) != 2 || got["/topics/kafka/a b/v/0000-1260"] != 12 || got["/topics/kafka/c/v/1260-2520"] != 0 {
		t.Fatalf("round trip: %v %v", got, ok)
	}
	for _, bad := range []string{"", "nospace\n", "/d x\n"} {
		if _, ok := decodeEnds([]byte(bad)); ok {
			t.Fatalf("%q decoded", bad)
		}
	}
}

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
func walTestBatchEntry(dir string, base int64, n int) Batch {
	var w logentry.Records
	w.AddBatch(2000, testBatch(n), base)
	return Batch{Dir: dir, Base: base, N: n, Recs: w.Buf}
}

// TestBatchEntries: a batch entry takes its batch's offsets through the
// log, the tail and a segment; record entries one each; reads from inside
// a batch get the batch and its records from there on.
func TestBatchEntries(t *testing.T) {
	mixed := walTestBatch("/d", 0, "a", "b")
	entry := walTestBatchEntry("/d", 2, 5)
	after := walTestBatch("/d", 7, "c")
	got, err := ParseFrames(walTestFrame(mixed, entry, after))
	if err != nil || len(got) != 3 || got[1].N != 5 {
		t.Fatalf("frames: %+v %v", got, err)
	}
	es, err := got[1].Entries(4)
	if err != nil || len(es) != 1 || es[0].Offset != 2 || logentry.SpanOf(es[0]) != 5 {
		t.Fatalf("entries from 4: %v %v", es, err)
	}
	// The stored copy carries the base offset, the rest as produced.
	want := testBatch(5)
	record.SetBaseOffset(want, 2)
	if !bytes.Equal(es[0].Data, want) || !bytes.Equal(es[0].Key, logentry.BatchKey) {
		t.Fatalf("stored batch %x, want %x", es[0].Data, want)
	}
	if es, _ := got[1].Entries(7); len(es) != 0 {
		t.Fatalf("entries from past the batch: %v", es)
	}
	// As a segment holds them: offsets 0, 1, 2 (five), 7.
	var seg []byte
	for _, b := range got {
		seg = logentry.AppendSegment(seg, b.Base, b.Recs)
	}
	var ends []int64
	for pos := 0; pos < len(seg); {
		size := int(uint32(seg[pos])<<24 | uint32(seg[pos+1])<<16 | uint32(seg[pos+2])<<8 | uint32(seg[pos+3]))
		end, err := logentry.EntryEnd(seg[pos+4 : pos+4+size])
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
	if logentry.Span(logentry.BatchKey, []byte("not a batch")) != 1 {
		t.Fatal("a record with the batch key taken for a batch")
	}
}

// TestWALPartKey: a partition's log key carries its topic's creation time;
// a bare directory (earlier versions) has none.
func TestWALPartKey(t *testing.T) {
	k := PartKey("/topics/kafka/t/v2026-12-04-19-20-00/0000-0001", 1796412000123456789)
	if dir, gen := SplitPartKey(k); dir != "/topics/kafka/t/v2026-12-04-19-20-00/0000-0001" || gen != 1796412000123456789 {
		t.Fatalf("%q: %q %d", k, dir, gen)
	}
	if dir, gen := SplitPartKey("/topics/kafka/t/v/0000-0630"); dir != "/topics/kafka/t/v/0000-0630" || gen != -1 {
		t.Fatalf("bare: %q %d", dir, gen)
	}
}
