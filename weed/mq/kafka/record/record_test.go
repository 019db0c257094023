package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func sampleRecords() []Record {
	return []Record{
		{Key: []byte("k"), Value: []byte("v"), Timestamp: 1700000000000},
		{Key: nil, Value: []byte("null key"), Timestamp: 1700000000001},
		{Key: []byte{}, Value: []byte{}, Timestamp: 1700000000001},
		{Key: []byte("null value"), Value: nil, Timestamp: 1699999999000},
		{Key: []byte("h"), Value: []byte("x"), Timestamp: 1700000000002, Headers: []kmsg.Header{
			{Key: "a", Value: []byte("1")}, {Key: "a", Value: nil}, {Key: "", Value: []byte{}}}},
	}
}

func sameRecords(t *testing.T, want, got []Record) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	eq := func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
	for i := range want {
		w, g := want[i], got[i]
		if !eq(w.Key, g.Key) || !eq(w.Value, g.Value) || w.Timestamp != g.Timestamp || len(w.Headers) != len(g.Headers) {
			t.Fatalf("record %d: got %+v, want %+v", i, g, w)
		}
		for j := range w.Headers {
			if w.Headers[j].Key != g.Headers[j].Key || !eq(w.Headers[j].Value, g.Headers[j].Value) {
				t.Fatalf("record %d header %d: got %+v, want %+v", i, j, g.Headers[j], w.Headers[j])
			}
		}
	}
}

func TestBuilderParseRoundTrip(t *testing.T) {
	var b Builder
	b.Reset(42)
	recs := sampleRecords()
	for i := range recs {
		b.Add(&recs[i])
	}
	raw := b.AppendTo(nil)
	batch, err := ParseBatch(raw, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if batch.Header.FirstOffset != 42 || batch.Header.NumRecords != int32(len(recs)) || batch.Header.MaxTimestamp != 1700000000002 {
		t.Fatalf("header %+v", batch.Header)
	}
	sameRecords(t, recs, batch.Records)
}

// compressedBatch builds a batch whose records are compressed with codec.
func compressedBatch(t *testing.T, codec Codec, recs []Record) []byte {
	t.Helper()
	var b Builder
	b.Reset(0)
	for i := range recs {
		b.Add(&recs[i])
	}
	plain := b.AppendTo(nil)
	var hdr kmsg.RecordBatch
	if err := hdr.ReadFrom(plain); err != nil {
		t.Fatal(err)
	}
	comp, err := Compress(codec, nil, hdr.Records)
	if err != nil {
		t.Fatal(err)
	}
	hdr.Records = comp
	hdr.Attributes = int16(codec)
	hdr.Length = int32(BatchHeaderLen - batchLengthEnd + len(comp))
	out := hdr.AppendTo(nil)
	binary.BigEndian.PutUint32(out[crcOffset:], crc32.Checksum(out[crcStart:], castagnoli))
	return out
}

func TestCodecs(t *testing.T) {
	recs := sampleRecords()
	for _, c := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		t.Run(c.String(), func(t *testing.T) {
			batch, err := ParseBatch(compressedBatch(t, c, recs), 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if batch.Codec() != c {
				t.Fatalf("codec %v", batch.Codec())
			}
			sameRecords(t, recs, batch.Records)
		})
	}
}

// TestXerialSnappy decodes snappy framed the way Java clients frame it:
// a 16-byte header, then chunks of a big-endian length and a raw block.
func TestXerialSnappy(t *testing.T) {
	data := bytes.Repeat([]byte("xerial framing "), 1000)
	framed := append([]byte{}, xerialHeader...)
	framed = append(framed, 0, 0, 0, 1, 0, 0, 0, 1) // version, compatible version
	for _, part := range [][]byte{data[:7000], data[7000:]} {
		block := snappy.Encode(nil, part)
		framed = binary.BigEndian.AppendUint32(framed, uint32(len(block)))
		framed = append(framed, block...)
	}
	out, err := Decompress(CodecSnappy, nil, framed, 1<<20)
	if err != nil || !bytes.Equal(out, data) {
		t.Fatalf("xerial: %v, %d bytes", err, len(out))
	}
	if _, err := Decompress(CodecSnappy, nil, framed[:len(framed)-3], 1<<20); err == nil {
		t.Fatal("truncated xerial frame decoded")
	}
}

// TestDecompressionBomb: a small input that expands past the limit fails
// instead of exhausting memory.
func TestDecompressionBomb(t *testing.T) {
	zeros := make([]byte, 8<<20)
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		comp, err := Compress(c, nil, zeros)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decompress(c, nil, comp, 1<<20); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%v: %d bytes to 8 MiB with a 1 MiB limit: %v, want ErrTooLarge", c, len(comp), err)
		}
	}
}

func TestParseBatchRejects(t *testing.T) {
	var b Builder
	b.Reset(0)
	b.Add(&Record{Value: []byte("v")})
	good := b.AppendTo(nil)
	cases := map[string]func([]byte) []byte{
		"bad crc":      func(r []byte) []byte { r[len(r)-1] ^= 1; return r },
		"magic 1":      func(r []byte) []byte { r[magicOffset] = 1; return r },
		"truncated":    func(r []byte) []byte { return r[:len(r)-2] },
		"long length":  func(r []byte) []byte { binary.BigEndian.PutUint32(r[8:], uint32(len(r))); return r },
		"header only":  func(r []byte) []byte { return r[:BatchHeaderLen-1] },
		"zero records": func(r []byte) []byte { binary.BigEndian.PutUint32(r[57:], 0); return fixCRC(r) },
		"many records": func(r []byte) []byte { binary.BigEndian.PutUint32(r[57:], 5); return fixCRC(r) },
	}
	for name, mangle := range cases {
		if _, err := ParseBatch(mangle(bytes.Clone(good)), 1<<20); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	if _, err := ParseBatches(append(bytes.Clone(good), 1, 2, 3), 1<<20); err == nil {
		t.Error("trailing bytes parsed")
	}
	batches, err := ParseBatches(append(bytes.Clone(good), good...), 1<<20)
	if err != nil || len(batches) != 2 {
		t.Errorf("two batches: %d, %v", len(batches), err)
	}
}

func fixCRC(r []byte) []byte {
	binary.BigEndian.PutUint32(r[crcOffset:], crc32.Checksum(r[crcStart:], castagnoli))
	return r
}

func TestEnvelopeRoundTrip(t *testing.T) {
	recs := append(sampleRecords(),
		Record{Key: []byte("magic"), Value: append(bytes.Clone(envelopeMagic), 9, 9), Timestamp: 5},
		Record{Key: nil, Value: nil, Timestamp: -1},
	)
	for i := range recs {
		r := &recs[i]
		for _, exact := range []bool{true, false} {
			key, value := r.Key, r.Value
			plain := Plain(r, exact)
			if !plain {
				value = AppendEnvelope(nil, r, !exact)
			}
			storedTs := r.Timestamp
			if !exact {
				storedTs = 123 // ts_ns carried something else
			}
			got, err := FromStored(key, value, storedTs)
			if err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			sameRecords(t, []Record{*r}, []Record{got})
		}
	}
	if !Plain(&Record{Key: []byte("k"), Value: []byte("v")}, true) || !Plain(&Record{Value: []byte("v")}, true) {
		t.Error("plain records are enveloped")
	}

	// The first record of an idempotent batch carries the batch's producer.
	pb := &ProducerBatch{ID: 1 << 40, Epoch: 3, FirstSeq: 2147483600, LastSeq: 10}
	r := Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 9, Producer: pb}
	if Plain(&r, true) {
		t.Fatal("a record with a producer batch is plain")
	}
	got, err := FromStored(r.Key, AppendEnvelope(nil, &r, false), 9)
	if err != nil || got.Producer == nil || *got.Producer != *pb || string(got.Value) != "v" || got.Timestamp != 9 {
		t.Fatalf("producer batch read back as %+v, %v", got.Producer, err)
	}

	// Records of a transaction and its markers carry their mark.
	for _, mark := range []TxnMark{{ProducerID: 5, Epoch: 2, Control: NotControl}, {ProducerID: 5, Epoch: 2, Control: ControlAbort}, {ProducerID: 1 << 50, Control: ControlCommit}} {
		r := Record{Value: []byte("x"), Timestamp: 1, Txn: &mark}
		got, err := FromStored(nil, AppendEnvelope(nil, &r, false), 1)
		if err != nil || got.Txn == nil || *got.Txn != mark {
			t.Fatalf("transaction mark %+v read back as %+v, %v", mark, got.Txn, err)
		}
	}
}

// addSampleBatches seeds a fuzz target with the sample records' batch,
// plain and in every codec.
func addSampleBatches(f *testing.F) {
	var b Builder
	b.Reset(0)
	recs := sampleRecords()
	for i := range recs {
		b.Add(&recs[i])
	}
	f.Add(b.AppendTo(nil))
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		f.Add(compressedBatch(&testing.T{}, c, recs))
	}
}

func FuzzParseBatch(f *testing.F) {
	addSampleBatches(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		batches, err := ParseBatches(data, 1<<20)
		if err != nil {
			return
		}
		for _, batch := range batches {
			if len(batch.Records) != int(batch.Header.NumRecords) {
				t.Fatalf("%d records for %d", len(batch.Records), batch.Header.NumRecords)
			}
		}
	})
}

func FuzzDecompress(f *testing.F) {
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		comp, _ := Compress(c, nil, []byte("some records to compress, some records"))
		f.Add(int8(c), comp)
	}
	f.Fuzz(func(t *testing.T, codec int8, data []byte) {
		out, err := Decompress(Codec(codec&7), nil, data, 1<<16)
		if err == nil && len(out) > 1<<16 {
			t.Fatalf("%d bytes past the limit", len(out))
		}
	})
}

func FuzzFromStored(f *testing.F) {
	r := sampleRecords()[4]
	f.Add([]byte("k"), AppendEnvelope(nil, &r, true), int64(7))
	f.Add([]byte(nil), []byte("plain"), int64(7))
	r.Producer = &ProducerBatch{ID: 7, Epoch: 1, FirstSeq: 0, LastSeq: 4}
	r.Txn = &TxnMark{ProducerID: 7, Epoch: 1, Control: NotControl}
	f.Add([]byte("k"), AppendEnvelope(nil, &r, false), int64(7))
	f.Fuzz(func(t *testing.T, key, value []byte, ts int64) {
		FromStored(key, value, ts) //nolint:errcheck // must not panic
	})
}

// A batch's record count is checked against its bytes before anything is
// allocated for it: a 1 MiB batch claiming a million records once made the
// gateway allocate ~100 MiB for their slice.
func TestRecordCountBoundsAllocation(t *testing.T) {
	var b Builder
	b.Reset(0)
	b.Add(&Record{Value: make([]byte, 1<<20), Timestamp: 1})
	var hdr kmsg.RecordBatch
	if err := hdr.ReadFrom(b.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	hdr.NumRecords = 1_000_000
	raw := hdr.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[crcOffset:], crc32.Checksum(raw[crcStart:], castagnoli))

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ParseBatch(raw, 1<<20)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a million records claimed in 1 MiB: %v, want corrupt", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Fatalf("parsing it allocated %d MiB", grew>>20)
	}
}

// ParseBatches bounds its batches' decompressed bytes together, and
// Compressed tells from the headers whether any batch needs decompressing.
func TestParseBatchesBoundsTheirSum(t *testing.T) {
	big := []Record{{Value: bytes.Repeat([]byte("a"), 600<<10), Timestamp: 1}}
	one := compressedBatch(t, CodecGzip, big)
	two := append(append([]byte(nil), one...), one...)
	if _, err := ParseBatches(one, 1<<20); err != nil {
		t.Fatalf("one batch within the limit: %v", err)
	}
	if _, err := ParseBatches(two, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("two batches over the limit together: %v, want ErrTooLarge", err)
	}
	var plain Builder
	plain.Reset(0)
	plain.Add(&big[0])
	raw := plain.AppendTo(nil)
	if Compressed(raw) || !Compressed(append(raw, one...)) || !Compressed(one) || Compressed(nil) || Compressed(raw[:30]) {
		t.Fatal("Compressed misreads the batch headers")
	}
}

// A marker's value is Kafka's: version 0 and the coordinator epoch.
func TestControlValue(t *testing.T) {
	v := ControlValue(70000)
	if !bytes.Equal(v, []byte{0, 0, 0, 1, 0x11, 0x70}) || ControlCoordinatorEpoch(v) != 70000 {
		t.Fatalf("% x", v)
	}
	if ControlCoordinatorEpoch([]byte{0, 0}) != 0 {
		t.Fatal("a short value")
	}
}

// What decoded records and headers take counts against the limit as
// decompressed bytes do: a batch of empty records takes about fourteen
// times its size decoded. A compressed batch may hold more records than
// it has bytes, as Kafka takes it.
func TestParseBatchesCountsDecodedRecords(t *testing.T) {
	recs := make([]Record, 10_000)
	var b Builder
	b.Reset(0)
	for i := range recs {
		b.Add(&recs[i])
	}
	raw := b.AppendTo(nil)
	need := len(recs) * recordSize
	if need < 10*len(raw) {
		t.Fatalf("%d empty records: %d bytes on the wire, %d decoded", len(recs), len(raw), need)
	}
	if _, err := ParseBatches(raw, need-1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("decoded past the limit: %v, want ErrTooLarge", err)
	}
	if got, err := ParseBatches(raw, need); err != nil || len(got[0].Records) != len(recs) {
		t.Errorf("decoded within the limit: %v", err)
	}
	b.Reset(0)
	b.Add(&Record{Headers: make([]kmsg.Header, 1000)})
	raw = b.AppendTo(nil)
	if _, err := ParseBatches(raw, recordSize+1000*headerSize-1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("headers past the limit: %v, want ErrTooLarge", err)
	}
	if _, err := ParseBatches(raw, recordSize+1000*headerSize); err != nil {
		t.Errorf("headers within the limit: %v", err)
	}
	zs := compressedBatch(t, CodecZstd, recs)
	if len(zs) >= len(recs) {
		t.Fatalf("%d records compressed into %d bytes", len(recs), len(zs))
	}
	if got, err := ParseBatches(zs, 64<<20); err != nil || len(got[0].Records) != len(recs) {
		t.Errorf("%d records in %d compressed bytes: %v", len(recs), len(zs), err)
	}
}

// A zstd frame that asks for a window past MaxZstdWindow is refused
// before its window is allocated; one of Kafka's producers' sizes reads.
func TestZstdWindowBounded(t *testing.T) {
	// A frame by hand: magic, a descriptor without content size (so the
	// window descriptor counts), the window as 2^(10+exponent), one raw
	// block, the last.
	frame := func(windowLog int) []byte {
		content := []byte("a small value in a frame with a large window")
		out := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, byte(windowLog-10) << 3}
		block := 1 | len(content)<<3 // last, raw
		out = append(out, byte(block), byte(block>>8), byte(block>>16))
		return append(out, content...)
	}
	if _, err := Decompress(CodecZstd, nil, frame(27), 1<<20); err == nil { // 128 MiB
		t.Error("a frame asking for a window past the bound was read")
	}
	if out, err := Decompress(CodecZstd, nil, frame(23), 1<<20); err != nil || !bytes.HasPrefix(out, []byte("a small value")) {
		t.Errorf("a frame of an 8 MiB window: %q, %v", out, err)
	}
}

// WalkBatch reads the records ParseBatch decodes, in every codec, LogAppendTime
// too, and fails every batch ParseBatch fails (TestParseBatchRejects' among
// them) with the same error.
func TestWalkBatchAsParseBatch(t *testing.T) {
	recs := sampleRecords()
	var b Builder
	b.Reset(0)
	for i := range recs {
		b.Add(&recs[i])
	}
	batches := [][]byte{b.AppendTo(nil)}
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		batches = append(batches, compressedBatch(t, c, recs))
	}
	appendTime := bytes.Clone(batches[0])
	SetLogAppendTime(appendTime, 1_800_000_000_000)
	batches = append(batches, appendTime)
	var buf []byte
	for i, raw := range batches {
		parsed, err := ParseBatch(raw, 1<<20)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		var walked []Record
		h, err := WalkBatch(raw, 1<<20, &buf, func(j int, r *Record) {
			if j != len(walked) {
				t.Fatalf("record %d walked as %d", len(walked), j)
			}
			c := *r // its fields are valid only during the call
			c.Key, c.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
			c.Headers = nil
			for _, hd := range r.Headers {
				c.Headers = append(c.Headers, kmsg.Header{Key: string([]byte(hd.Key)), Value: bytes.Clone(hd.Value)})
			}
			walked = append(walked, c)
		})
		if err != nil {
			t.Fatalf("batch %d walked: %v", i, err)
		}
		sameRecords(t, parsed.Records, walked)
		if h.NumRecords != parsed.Header.NumRecords || h.ProducerID != parsed.Header.ProducerID {
			t.Fatalf("batch %d: header %+v, parsed %+v", i, h, parsed.Header)
		}
	}
	// Damaged batches: each byte of the plain one flipped in turn.
	for at := range batches[0] {
		bad := bytes.Clone(batches[0])
		bad[at] ^= 0x41
		_, perr := ParseBatch(bad, 1<<20)
		_, werr := WalkBatch(bad, 1<<20, &buf, func(int, *Record) {})
		if (perr == nil) != (werr == nil) || perr != nil && (errors.Is(perr, ErrInvalid) != errors.Is(werr, ErrInvalid) || errors.Is(perr, ErrBadMagic) != errors.Is(werr, ErrBadMagic)) {
			t.Fatalf("byte %d flipped: parsed %v, walked %v", at, perr, werr)
		}
	}
}

// Walking a batch allocates nothing per record: a flood of batches of
// empty records costs their decompressed bytes, in a buffer used again,
// and no decoded records.
func TestWalkBatchAllocatesNoRecords(t *testing.T) {
	if raceDetector {
		t.Skip("allocations are counted without the race detector (go test without -race runs this)")
	}
	allocs := func(n int) float64 {
		var b Builder
		b.Reset(0)
		for range n {
			b.Add(&Record{Timestamp: 1, Headers: []kmsg.Header{{Key: "h", Value: []byte("v")}}})
		}
		raw, err := b.AppendCompressedTo(nil, CodecZstd)
		if err != nil {
			t.Fatal(err)
		}
		var buf []byte
		walked := 0
		WalkBatch(raw, 1<<26, &buf, func(int, *Record) {}) //nolint:errcheck // warms buf
		return testing.AllocsPerRun(20, func() {
			if _, err := WalkBatch(raw, 1<<26, &buf, func(int, *Record) { walked++ }); err != nil {
				t.Fatal(err)
			}
		})
	}
	few, many := allocs(10), allocs(100_000)
	if many > few+2 {
		t.Fatalf("walking 100,000 records allocated %.0f times, 10 records %.0f: allocations grow with the records", many, few)
	}
}

func FuzzWalkBatch(f *testing.F) {
	addSampleBatches(f)
	var buf []byte
	f.Fuzz(func(t *testing.T, data []byte) {
		parsed, perr := ParseBatch(data, 16<<20)
		n := 0
		_, werr := WalkBatch(data, 16<<20, &buf, func(int, *Record) { n++ })
		if errors.Is(perr, ErrTooLarge) {
			return // decoded records count for ParseBatch only
		}
		if (perr == nil) != (werr == nil) {
			t.Fatalf("parsed: %v; walked: %v", perr, werr)
		}
		if perr == nil && n != len(parsed.Records) {
			t.Fatalf("walked %d records, parsed %d", n, len(parsed.Records))
		}
	})
}

// BenchmarkProducedBatch: checking a producer's batch of 1,000 records of
// 100 bytes, decoded into records (ParseBatch, as a compacted topic's are)
// and walked in place (WalkBatch, as every other topic's are).
func BenchmarkProducedBatch(b *testing.B) {
	recs := make([]Record, 1000)
	for i := range recs {
		recs[i] = Record{Key: []byte(fmt.Sprintf("key-%d", i)), Value: bytes.Repeat([]byte{byte(i)}, 100), Timestamp: 1700000000000 + int64(i)}
	}
	for _, c := range []Codec{CodecNone, CodecLZ4, CodecZstd} {
		raw := compressedBatch(&testing.T{}, c, recs)
		b.Run(c.String()+"/parse", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseBatch(raw, 1<<26); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.String()+"/walk", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				if _, err := WalkBatch(raw, 1<<26, &buf, func(int, *Record) {}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A producer's batch claiming more records than the offsets it spans is
// refused before any record is read: its span is what walking it costs
// (the produce path schedules long walks by it).
func TestWalkBatchRefusesCountBeyondSpan(t *testing.T) {
	var b Builder
	b.Reset(0)
	for range 10_000 {
		b.Add(&Record{Timestamp: 1})
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[lastDeltaAt:], 0) // one offset, 10,000 records claimed
	raw = fixCRC(raw)
	walked := 0
	var buf []byte
	if _, err := WalkBatch(raw, 1<<20, &buf, func(int, *Record) { walked++ }); !errors.Is(err, ErrInvalid) || walked != 0 {
		t.Fatalf("10,000 records claimed over one offset: %v after %d records walked, want ErrInvalid before any", err, walked)
	}
	if Span(raw) != 1 {
		t.Fatalf("span %d", Span(raw))
	}
}
