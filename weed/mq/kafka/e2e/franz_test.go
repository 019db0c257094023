package e2e

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func sameRecord(t *testing.T, i int, want, got *kgo.Record) {
	t.Helper()
	eqBytes := func(what string, w, g []byte) {
		if (w == nil) != (g == nil) || !bytes.Equal(w, g) {
			t.Errorf("record %d: %s = %q (nil %v), want %q (nil %v)", i, what, g, g == nil, w, w == nil)
		}
	}
	eqBytes("key", want.Key, got.Key)
	eqBytes("value", want.Value, got.Value)
	if len(want.Headers) != len(got.Headers) {
		t.Errorf("record %d: %d headers, want %d", i, len(got.Headers), len(want.Headers))
	} else {
		for j := range want.Headers {
			if want.Headers[j].Key != got.Headers[j].Key {
				t.Errorf("record %d header %d: key %q, want %q", i, j, got.Headers[j].Key, want.Headers[j].Key)
			}
			eqBytes(fmt.Sprintf("header %d value", j), want.Headers[j].Value, got.Headers[j].Value)
		}
	}
	if !want.Timestamp.IsZero() && want.Timestamp.UnixMilli() != got.Timestamp.UnixMilli() {
		t.Errorf("record %d: timestamp %v, want %v", i, got.Timestamp.UnixMilli(), want.Timestamp.UnixMilli())
	}
}

// TestFranzRecordFidelity checks that what goes in comes out: keys and values
// with null distinct from empty, headers in order with duplicates, and the
// producer's timestamps, at dense offsets from 0 (a day ahead too, on a
// topic whose message.timestamp.after.max.ms allows it: Kafka 4's default
// of an hour refuses it, as the gateway does).
func TestFranzRecordFidelity(t *testing.T) {
	topic := newTopic(t)
	after := "172800000"
	createTopic(t, topic, 1, map[string]*string{"message.timestamp.after.max.ms": &after})
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	want := []*kgo.Record{
		{Key: []byte("plain-key"), Value: []byte("plain value"), Timestamp: base},
		{Key: nil, Value: []byte("null key"), Timestamp: base.Add(time.Millisecond)},
		{Key: []byte{}, Value: []byte("empty key"), Timestamp: base.Add(time.Millisecond)},
		{Key: []byte("null value"), Value: nil, Timestamp: base.Add(2 * time.Millisecond)},
		{Key: []byte("empty value"), Value: []byte{}, Timestamp: base.Add(2 * time.Millisecond)},
		{Key: nil, Value: nil, Timestamp: base.Add(3 * time.Millisecond)},
		{Key: []byte("h"), Value: []byte("headers"), Timestamp: base.Add(4 * time.Millisecond), Headers: []kgo.RecordHeader{
			{Key: "b", Value: []byte("1")}, {Key: "a", Value: []byte("2")}, {Key: "b", Value: []byte("3")},
			{Key: "null", Value: nil}, {Key: "empty", Value: []byte{}}, {Key: "", Value: []byte("empty name")},
		}},
		{Key: []byte("older"), Value: []byte("timestamp goes back"), Timestamp: base.Add(-24 * time.Hour)},
		{Key: []byte("epoch"), Value: []byte("timestamp zero"), Timestamp: time.UnixMilli(0)},
		{Key: []byte("future"), Value: []byte("a day ahead"), Timestamp: time.Now().Add(24 * time.Hour).Truncate(time.Millisecond)},
		{Key: []byte("magic"), Value: []byte{0x00, 'K', 'G', 'W', 1, 0}, Timestamp: base.Add(5 * time.Millisecond)},
		{Key: []byte("binary"), Value: []byte{0, 1, 2, 255, 254}, Timestamp: base.Add(5 * time.Millisecond)},
	}
	for _, r := range want {
		r.Topic = topic
	}
	roundTrip(t, newClient(t), topic, want)
}

// roundTrip produces want to a one-partition topic, reads it back and
// checks every record equals what was sent, at dense offsets from 0.
func roundTrip(t *testing.T, cl *kgo.Client, topic string, want []*kgo.Record) {
	t.Helper()
	produceSync(t, cl, want...)
	got := consumeN(t, topic, len(want))
	for i := range want {
		if got[i].Offset != int64(i) {
			t.Fatalf("record %d at offset %d", i, got[i].Offset)
		}
		sameRecord(t, i, want[i], got[i])
	}
}

// TestFranzCodecs produces with every compression codec and reads back.
func TestFranzCodecs(t *testing.T) {
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := newTopic(t)
			createTopic(t, topic, 1, nil)
			cl := newClient(t, kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(50*time.Millisecond))
			var want []*kgo.Record
			for i := 0; i < 500; i++ {
				want = append(want, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("key-%d", i%7)),
					Value:   bytes.Repeat([]byte(fmt.Sprintf("value %d ", i)), 20),
					Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(fmt.Sprint(i))}}})
			}
			roundTrip(t, cl, topic, want)
		})
	}
}

// TestFranzPartitionsKeyOrder spreads keyed records over four partitions:
// each key stays in one partition, in the order produced, at dense offsets.
func TestFranzPartitionsKeyOrder(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 4, nil)
	cl := newClient(t, kgo.ProducerLinger(10*time.Millisecond))
	const n = 2000
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("key-%d", i%16)), Value: []byte(fmt.Sprint(i))})
	}
	produceSync(t, cl, recs...)
	got := consumeN(t, topic, n)
	partOf := map[string]int32{}
	last := map[string]int{}
	nextOffset := map[int32]int64{}
	perPart := map[int32]int{}
	for _, r := range got {
		k := string(r.Key)
		if p, ok := partOf[k]; ok && p != r.Partition {
			t.Fatalf("key %s in partitions %d and %d", k, p, r.Partition)
		}
		partOf[k] = r.Partition
		var v int
		fmt.Sscan(string(r.Value), &v)
		if prev, ok := last[k]; ok && v <= prev {
			t.Fatalf("key %s: %d after %d", k, v, prev)
		}
		last[k] = v
		if r.Offset != nextOffset[r.Partition] {
			t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, nextOffset[r.Partition])
		}
		nextOffset[r.Partition]++
		perPart[r.Partition]++
	}
	if len(perPart) < 2 {
		t.Fatalf("records landed in %d partitions: %v", len(perPart), perPart)
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != int64(perPart[o.Partition]) {
			t.Errorf("partition %d: end offset %d (%v), want %d", o.Partition, o.Offset, o.Err, perPart[o.Partition])
		}
	})
}
