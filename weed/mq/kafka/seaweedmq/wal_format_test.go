package seaweedmq

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

func walTestFrame(batches ...walBatch) []byte {
	frame := make([]byte, 8)
	for i := range batches {
		frame = appendWALBatch(frame, &batches[i])
	}
	return sealWALFrame(frame)
}

func walTestBatch(dir string, base int64, values ...string) walBatch {
	var w walRecords
	for i, v := range values {
		var key []byte
		if i%2 == 0 {
			key = []byte("k-" + v)
		}
		w.add(int64(1_000_000+i), key, []byte(v))
	}
	return walBatch{dir: dir, base: base, n: w.n, recs: w.buf}
}

// TestWALFrames round-trips batches of two partitions through frames and
// reads back each record at its offset with its key, value and ts_ns.
func TestWALFrames(t *testing.T) {
	a := walTestBatch("/topics/kafka/t/v/0000-0630", 7, "a", "b", "c")
	b := walTestBatch("/topics/kafka/u/v/0630-1260", 0, "x")
	data := append(walTestFrame(a, b), walTestFrame(walTestBatch(a.dir, 10, "d"))...)
	got, err := parseWALFrames(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].dir != a.dir || got[1].dir != b.dir || got[2].base != 10 {
		t.Fatalf("batches %+v", got)
	}
	es, err := got[0].entries(8)
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
	a.term = 1 << 40
	b := walTestBatch("/topics/kafka/t/v/0000-0001", 5, "c")
	got, err := parseWALFrames(walTestFrame(a, b))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].term != a.term || got[0].dir != a.dir || got[0].base != 3 || got[0].n != 2 || got[1].term != 0 || got[1].base != 5 {
		t.Fatalf("batches %+v", got)
	}
	if es, err := got[0].entries(0); err != nil || len(es) != 2 || string(es[1].Data) != "b" {
		t.Fatalf("entries %v %v", es, err)
	}
	// A zero not followed by the version, or an empty directory, is
	// corruption.
	for _, payload := range [][]byte{{0x00, 0x07, 0x01}, {0x00}, append([]byte{0x00, walBatchWithTerm, 0x01, 0x00}, 0x00)} {
		if _, err := parseWALPayload(payload); !errors.Is(err, errWALCorrupt) {
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
		got, err := parseWALFrames(data)
		if !errors.Is(err, errWALCorrupt) {
			t.Fatalf("%s: error %v", name, err)
		}
		if len(got) != 1 || got[0].n != 2 {
			t.Fatalf("%s: kept %+v", name, got)
		}
	}
}

// TestWithFillers: offsets the logs lack get fillers, readers skip them,
// and the result is dense from the start.
func TestWithFillers(t *testing.T) {
	logged := []*filer_pb.LogEntry{
		{Offset: 12, TsNs: 5, Data: []byte("r12")},
		{Offset: 13, TsNs: 6, Data: []byte("r13")},
		{Offset: 16, TsNs: 9, Data: []byte("r16")},
	}
	out, fillers, err := withFillers(10, logged)
	if err != nil {
		t.Fatal(err)
	}
	if fillers != 4 || len(out) != 7 {
		t.Fatalf("%d fillers, %d entries", fillers, len(out))
	}
	for i, e := range out {
		if e.Offset != int64(10+i) {
			t.Fatalf("entry %d at offset %d", i, e.Offset)
		}
		_, err := record.FromStored(e.Key, e.Data, e.TsNs/1e6)
		isFiller := errors.Is(err, record.ErrFiller)
		if want := e.Offset == 10 || e.Offset == 11 || e.Offset == 14 || e.Offset == 15; isFiller != want {
			t.Fatalf("offset %d: filler %v (%v)", e.Offset, isFiller, err)
		}
		if i > 0 && e.TsNs < out[i-1].TsNs {
			t.Fatalf("ts_ns goes back at offset %d", e.Offset)
		}
	}
	if _, _, err := withFillers(0, []*filer_pb.LogEntry{{Offset: maxRecoveredGap + 1}}); err == nil {
		t.Fatal("a huge gap was filled")
	}
}

// FuzzWALFrames: any bytes read back as a log file decode to batches or a
// clear error, never a panic, and batches' records decode or fail cleanly.
func FuzzWALFrames(f *testing.F) {
	f.Add(walTestFrame(walTestBatch("/d", 3, "a", "b")))
	f.Add(append(walTestFrame(walTestBatch("/d", 0, "a")), 0, 0, 0, 9))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0})
	termed := walTestBatch("/d", 9, "t")
	termed.term = 42
	f.Add(walTestFrame(termed))
	f.Add(walTestFrame(walTestBatchEntry("/d", 4, 5)))
	f.Fuzz(func(t *testing.T, data []byte) {
		batches, _ := parseWALFrames(data)
		for i := range batches {
			es, err := batches[i].entries(0)
			taken := int64(0)
			for _, e := range es {
				taken += logEntrySpan(e)
			}
			if err == nil && taken != int64(batches[i].n) {
				t.Fatalf("entries taking %d offsets of %d", taken, batches[i].n)
			}
		}
	})
}

// TestWALEnds: a log file's entry names its partitions with their ends;
// a missing or damaged attribute means the file must be read.
func TestWALEnds(t *testing.T) {
	ends := map[string]int64{"/topics/kafka/a b/v/0000-1260": 12, "/topics/kafka/c/v/1260-2520": 0}
	got, ok := decodeWALEnds(encodeWALEnds(ends))
	if !ok || len(got) != 2 || got["/topics/kafka/a b/v/0000-1260"] != 12 || got["/topics/kafka/c/v/1260-2520"] != 0 {
		t.Fatalf("round trip: %v %v", got, ok)
	}
	for _, bad := range []string{"", "nospace\n", "/d x\n"} {
		if _, ok := decodeWALEnds([]byte(bad)); ok {
			t.Fatalf("%q decoded", bad)
		}
	}
}

// TestRawEntry reads an encoded LogEntry's fields as proto does, without
// copying them.
func TestRawEntry(t *testing.T) {
	for _, e := range []*filer_pb.LogEntry{
		{TsNs: 17, Key: []byte("k"), Data: []byte("some value"), Offset: 123456789, PartitionKeyHash: -3},
		{Data: []byte("x")},
		{Offset: 1},
	} {
		b, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseRawEntry(b)
		if err != nil || got.offset != e.Offset || got.tsNs != e.TsNs || !bytes.Equal(got.key, e.Key) || !bytes.Equal(got.data, e.Data) || got.span() != 1 {
			t.Fatalf("%+v, %v; want %v", got, err, e)
		}
	}
	if _, err := parseRawEntry([]byte{0x2a, 0xff}); err == nil {
		t.Fatal("a truncated entry read")
	}
}

// FuzzRawEntry: bytes read from a segment or the log give the fields proto
// decodes, or an error, never a panic.
func FuzzRawEntry(f *testing.F) {
	b, _ := proto.Marshal(&filer_pb.LogEntry{TsNs: 1, Data: []byte("v"), Offset: 42})
	f.Add(b)
	var w walRecords
	w.addBatch(5, testBatch(3), 9)
	f.Add(w.buf[1:])
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseRawEntry(data)
		var e filer_pb.LogEntry
		if err == nil && proto.Unmarshal(data, &e) == nil && (e.Offset != got.offset || e.TsNs != got.tsNs || !bytes.Equal(e.Key, got.key) || !bytes.Equal(e.Data, got.data)) {
			t.Fatalf("%+v, proto says %v", got, &e)
		}
		if err == nil && got.span() < 1 {
			t.Fatalf("span %d", got.span())
		}
	})
}

// BenchmarkWALRecordsAdd is the per-record cost a produce pays to keep a
// record for the write-ahead log: one 100-byte value with a key.
func BenchmarkWALRecordsAdd(b *testing.B) {
	key, value := []byte("key-0001"), bytes.Repeat([]byte("v"), 100)
	var w walRecords
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%1000 == 0 {
			w = walRecords{buf: w.buf[:0]}
		}
		w.add(int64(i)+1_700_000_000_000_000_000, key, value)
	}
}

// TestWALRecordEncoding: a record kept for the log is byte for byte what
// proto.Marshal makes of the same LogEntry, for empty and missing fields too.
func TestWALRecordEncoding(t *testing.T) {
	for _, e := range []*filer_pb.LogEntry{
		{TsNs: 1_796_000_000_000_000_000, Key: []byte("k"), Data: []byte("value")},
		{TsNs: 5, Data: bytes.Repeat([]byte("x"), 300)},
		{TsNs: 5, Key: []byte{}, Data: []byte{}},
		{Key: []byte("only a key")},
		{},
	} {
		var w walRecords
		w.add(e.TsNs, e.Key, e.Data)
		want, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		n, k := binary.Uvarint(w.buf)
		if k <= 0 || int(n) != len(want) || !bytes.Equal(w.buf[k:], want) {
			t.Fatalf("%v: encoded %x, proto.Marshal %x", e, w.buf, want)
		}
	}
}
