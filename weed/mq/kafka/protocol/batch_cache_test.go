package protocol

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage/storagetest"
)

// text is n compressible records, as applications produce them.
func text(n, from int) []record.Record {
	out := make([]record.Record, n)
	for i := range out {
		out[i] = record.Record{Key: []byte(fmt.Sprint("user-", (from+i)%7)), Timestamp: int64(1000 + from + i),
			Value: []byte(fmt.Sprintf(`{"order":%d,"status":"shipped","items":["book","lamp","chair"],"note":"leave at the door"}`, from+i))}
	}
	return out
}

func compressedOf(t *testing.T, base int64, codec record.Codec, recs []record.Record) []byte {
	t.Helper()
	var b record.Builder
	b.Reset(base)
	for i := range recs {
		b.Add(&recs[i])
	}
	out, err := b.AppendCompressedTo(nil, codec)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func fetchAt(t *testing.T, h *Handler, version int16, topic string, offset int64) *kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.MaxBytes, req.SessionEpoch = 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := handle(t, h, req).(*kmsg.FetchResponse)
	sp := &resp.Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		t.Fatalf("fetch %s at %d: error %d", topic, offset, sp.ErrorCode)
	}
	return sp
}

// fetchedBatches parses a fetch's batches: their codecs, and the records.
func fetchedBatches(t *testing.T, data []byte) ([]record.Codec, []record.Record) {
	t.Helper()
	batches, err := record.ParseBatches(data, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	var codecs []record.Codec
	var recs []record.Record
	for _, b := range batches {
		codecs = append(codecs, b.Codec())
		recs = append(recs, b.Records...)
	}
	return codecs, recs
}

func sameRecords(t *testing.T, got, want []record.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) || got[i].Timestamp != want[i].Timestamp {
			t.Fatalf("record %d: %q=%q@%d, want %q=%q@%d", i, got[i].Key, got[i].Value, got[i].Timestamp, want[i].Key, want[i].Value, want[i].Timestamp)
		}
	}
}

// fastGzip is a batch of recs compressed as no batch the gateway builds
// is: gzip at its fastest level.
func fastGzip(t *testing.T, recs []record.Record) []byte {
	t.Helper()
	var rb record.Builder
	rb.Reset(0)
	for i := range recs {
		rb.Add(&recs[i])
	}
	var b kmsg.RecordBatch
	if err := b.ReadFrom(rb.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	w.Write(b.Records) //nolint:errcheck // a bytes.Buffer
	w.Close()          //nolint:errcheck // a bytes.Buffer
	b.Records = buf.Bytes()
	b.Attributes |= int16(record.CodecGzip)
	b.Length = int32(record.BatchHeaderLen - 12 + len(b.Records))
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// Batches produced through the gateway come back byte for byte as the
// producer compressed them (base offset set), as Kafka returns them.
func TestProducedBatchesFetchedAsProduced(t *testing.T) {
	b := storagetest.New()
	if _, err := b.CreateTopic(context.Background(), storage.TopicSpec{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	h := New(Config{}, b, nil, nil)
	one, two := fastGzip(t, text(50, 0)), fastGzip(t, text(30, 50))
	for _, raw := range [][]byte{one, two} {
		resp := handle(t, h, produceRaw(raw, 5000)).(*kmsg.ProduceResponse)
		if e := resp.Topics[0].Partitions[0].ErrorCode; e != 0 {
			t.Fatalf("produce: error %d", e)
		}
	}
	want := append(append([]byte(nil), one...), two...)
	record.SetBaseOffset(want[len(one):], 50)
	record.SetBaseOffset(want[:len(one)], 0)
	if got := fetchAt(t, h, 12, "t", 0).RecordBatches; !bytes.Equal(got, want) {
		t.Fatalf("fetched %d bytes, not the %d produced", len(got), len(want))
	}
	// From the second batch on: that batch alone, as produced.
	if got := fetchAt(t, h, 12, "t", 50).RecordBatches; !bytes.Equal(got, want[len(one):]) {
		t.Fatalf("fetched from 50: %d bytes, not the second batch's %d", len(got), len(two))
	}
	// Mid-batch: the batch that holds the offset, whole, as Kafka returns
	// it (the client skips the records before the offset it asked for).
	if got := fetchAt(t, h, 12, "t", 20).RecordBatches; !bytes.Equal(got, want) {
		t.Fatalf("fetched from 20: %d bytes, not the %d produced", len(got), len(want))
	}
}

// A cached batch is not served once the log cleaner removed some of its
// records: the fetch has what the log still holds, at their offsets, and a
// built batch cached before is not served either.
func TestCachedBatchesFollowCompaction(t *testing.T) {
	b := storagetest.New()
	if _, err := b.CreateTopic(context.Background(), storage.TopicSpec{Name: "t", Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}}); err != nil {
		t.Fatal(err)
	}
	h := New(Config{}, b, nil, nil)
	raw := fastGzip(t, text(20, 0))
	if resp := handle(t, h, produceRaw(raw, 5000)).(*kmsg.ProduceResponse); resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce: error %d", resp.Topics[0].Partitions[0].ErrorCode)
	}
	offsets := func(from int64) []int64 {
		_, recs := fetchedBatches(t, fetchAt(t, h, 12, "t", from).RecordBatches)
		var out []int64
		for _, r := range recs {
			out = append(out, r.Timestamp-1000) // text's timestamps are 1000 + its index
		}
		return out
	}
	if got := offsets(0); len(got) != 20 {
		t.Fatalf("before cleaning: %v", got)
	}
	offsets(5) // builds and caches a batch from offset 5
	b.Compact("t", 0, 2, 3, 7)
	want := []int64{0, 1, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}
	if got := offsets(0); !slices.Equal(got, want) {
		t.Errorf("after cleaning, from 0: %v, want %v", got, want)
	}
	if got := offsets(5); !slices.Equal(got, want[3:]) {
		t.Errorf("after cleaning, from 5: %v, want %v", got, want[3:])
	}
}

// Records the gateway did not see produced are compressed with the topic's
// compression.type, zstd only for clients that read it (Fetch v10+,
// KIP-110), and compressed once for all the consumers that read them.
func TestStoredRecordsCompressedWithTheTopicsCodec(t *testing.T) {
	b := storagetest.New()
	ctx := context.Background()
	if _, err := b.CreateTopic(ctx, storage.TopicSpec{Name: "z", Partitions: 1, Configs: map[string]string{"compression.type": "zstd"}}); err != nil {
		t.Fatal(err)
	}
	recs := text(200, 0)
	b.Append(ctx, "z", 0, recs, true)
	h := New(Config{}, b, nil, nil)
	first := fetchAt(t, h, 12, "z", 0).RecordBatches
	codecs, got := fetchedBatches(t, first)
	if len(codecs) != 1 || codecs[0] != record.CodecZstd {
		t.Fatalf("codecs %v, want one zstd batch", codecs)
	}
	sameRecords(t, got, recs)
	var plain record.Builder
	plain.Reset(0)
	for i := range recs {
		plain.Add(&recs[i])
	}
	if uncompressed := len(plain.AppendTo(nil)); len(first)*3 > uncompressed {
		t.Fatalf("zstd batch of %d bytes for %d uncompressed", len(first), uncompressed)
	}
	if again := fetchAt(t, h, 12, "z", 0).RecordBatches; !bytes.Equal(again, first) {
		t.Fatal("a second consumer got other bytes")
	}
	if h.batches.get(batchKey{partition: 0, base: 0, topicID: mustTopic(t, b, "z").ID}) == nil {
		t.Fatal("the built batch is not cached")
	}
	codecs, got = fetchedBatches(t, fetchAt(t, h, 9, "z", 0).RecordBatches)
	if len(codecs) != 1 || codecs[0] != record.CodecNone {
		t.Fatalf("Fetch v9 got codecs %v, want none", codecs)
	}
	sameRecords(t, got, recs)
}

// Without a compression.type, records are compressed with the codec last
// produced to the topic; produced batches of another codec than a topic's
// compression.type are not served as they are.
func TestProducersCodecUsedForOtherRecords(t *testing.T) {
	b := storagetest.New()
	ctx := context.Background()
	if _, err := b.CreateTopic(ctx, storage.TopicSpec{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	h := New(Config{}, b, nil, nil)
	handle(t, h, produceRaw(compressedOf(t, 0, record.CodecLZ4, text(10, 0)), 5000))
	b.Append(ctx, "t", 0, text(10, 10), true) // written around this gateway
	codecs, got := fetchedBatches(t, fetchAt(t, h, 12, "t", 10).RecordBatches)
	if len(codecs) != 1 || codecs[0] != record.CodecLZ4 {
		t.Fatalf("codecs %v, want lz4", codecs)
	}
	sameRecords(t, got, text(10, 10))

	if _, err := b.CreateTopic(ctx, storage.TopicSpec{Name: "s", Partitions: 1, Configs: map[string]string{"compression.type": "snappy"}}); err != nil {
		t.Fatal(err)
	}
	req := produceRaw(compressedOf(t, 0, record.CodecGzip, text(10, 0)), 5000)
	req.Topics[0].Topic = "s"
	handle(t, h, req)
	codecs, got = fetchedBatches(t, fetchAt(t, h, 12, "s", 0).RecordBatches)
	if len(codecs) != 1 || codecs[0] != record.CodecSnappy {
		t.Fatalf("codecs %v, want snappy (the topic's)", codecs)
	}
	sameRecords(t, got, text(10, 0))
}

func mustTopic(t *testing.T, b *storagetest.Backend, name string) storage.TopicInfo {
	t.Helper()
	info, err := b.DescribeTopic(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// BenchmarkFetchCompress is the CPU a fetch of records the gateway did not
// see produced costs per MB (uncompressed), by codec: what the cache saves
// the consumers after the first.
func BenchmarkFetchCompress(b *testing.B) {
	recs := make([]storage.StoredRecord, 1000)
	for i, r := range text(1000, 0) {
		recs[i] = storage.StoredRecord{Offset: int64(i), Record: r}
	}
	var plain record.Builder
	plain.Reset(0)
	for i := range recs {
		plain.Add(&recs[i].Record)
	}
	size := int64(len(plain.AppendTo(nil)))
	for _, codec := range []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		b.Run(codec.String(), func(b *testing.B) {
			h := New(Config{FetchBatchCacheBytes: -1}, nil, nil, nil)
			var bld record.Builder
			var dst []byte
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				dst = h.appendBatches(&bld, dst[:0], [16]byte{}, 0, recs, codec)
			}
			b.ReportMetric(float64(len(dst))/float64(size), "ratio")
		})
	}
}
