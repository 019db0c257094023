package logentry

import (
	"bytes"
	"encoding/binary"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

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
		got, err := Parse(b)
		if err != nil || got.Offset != e.Offset || got.TsNs != e.TsNs || !bytes.Equal(got.Key, e.Key) || !bytes.Equal(got.Data, e.Data) || got.Span() != 1 {
			t.Fatalf("%+v, %v; want %v", got, err, e)
		}
	}
	if _, err := Parse([]byte{0x2a, 0xff}); err == nil {
		t.Fatal("a truncated entry read")
	}
}

// FuzzRawEntry: bytes read from a segment or the log give the fields proto
// decodes, or an error, never a panic.
func FuzzRawEntry(f *testing.F) {
	b, _ := proto.Marshal(&filer_pb.LogEntry{TsNs: 1, Data: []byte("v"), Offset: 42})
	f.Add(b)
	var w Records
	var rb record.Builder
	rb.Reset(0)
	rb.Add(&record.Record{Value: []byte("v")})
	w.AddBatch(5, rb.AppendTo(nil), 9)
	f.Add(w.Buf[1:])
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Parse(data)
		var e filer_pb.LogEntry
		if err == nil && proto.Unmarshal(data, &e) == nil && (e.Offset != got.Offset || e.TsNs != got.TsNs || !bytes.Equal(e.Key, got.Key) || !bytes.Equal(e.Data, got.Data)) {
			t.Fatalf("%+v, proto says %v", got, &e)
		}
		if err == nil && got.Span() < 1 {
			t.Fatalf("span %d", got.Span())
		}
	})
}

// BenchmarkRecordsAdd is the per-record cost a produce pays to keep a
// record for the write-ahead log: one 100-byte value with a key.
func BenchmarkRecordsAdd(b *testing.B) {
	key, value := []byte("key-0001"), bytes.Repeat([]byte("v"), 100)
	var w Records
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%1000 == 0 {
			w = Records{Buf: w.Buf[:0]}
		}
		w.Add(int64(i)+1_700_000_000_000_000_000, key, value)
	}
}

// TestRecordsEncoding: a record kept for the log is byte for byte what
// proto.Marshal makes of the same LogEntry, for empty and missing fields too.
func TestRecordsEncoding(t *testing.T) {
	for _, e := range []*filer_pb.LogEntry{
		{TsNs: 1_796_000_000_000_000_000, Key: []byte("k"), Data: []byte("value")},
		{TsNs: 5, Data: bytes.Repeat([]byte("x"), 300)},
		{TsNs: 5, Key: []byte{}, Data: []byte{}},
		{Key: []byte("only a key")},
		{},
	} {
		var w Records
		w.Add(e.TsNs, e.Key, e.Data)
		want, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		n, k := binary.Uvarint(w.Buf)
		if k <= 0 || int(n) != len(want) || !bytes.Equal(w.Buf[k:], want) {
			t.Fatalf("%v: encoded %x, proto.Marshal %x", e, w.Buf, want)
		}
	}
}
