package node

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/iceberg"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage/storagetest"
)

// The tables read a partition as a read_committed consumer does, from
// the batches as stored, decoded one at a time: no markers, no records
// of aborted transactions, none from the first open transaction on;
// records stored singly (a batch the log cleaner touched, a marker) in
// their place among the batches; from an offset inside a batch; and in
// pieces of about maxBytes that add up to the whole.
func TestIcebergSourceReadsCommitted(t *testing.T) {
	ctx := context.Background()
	b := storagetest.New()
	if _, err := b.CreateTopic(ctx, storage.TopicSpec{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	var w record.Builder
	next := int64(0)
	batch := func(txn *record.TxnMark, codec record.Codec, n int) {
		t.Helper()
		w.ResetTxn(next, txn)
		for i := 0; i < n; i++ {
			w.Add(&record.Record{Key: []byte("k"), Value: fmt.Appendf(nil, "v%d", next+int64(i)), Timestamp: 1000 + next})
		}
		raw, err := w.AppendCompressedTo(nil, codec)
		if err != nil {
			t.Fatal(err)
		}
		if txn != nil {
			raw = transactional(raw, txn)
		}
		if app := b.AppendBatch(ctx, "t", 0, raw, true); app.Err != nil || app.Base != next {
			t.Fatalf("appended at %d: %v", app.Base, app.Err)
		}
		next += int64(n)
	}
	marker := func(pid int64, commit bool) {
		t.Helper()
		if err := b.WriteMarker(ctx, "t", 0, storage.Marker{ProducerID: pid, Commit: commit}); err != nil {
			t.Fatal(err)
		}
		next++
	}
	batch(nil, record.CodecNone, 5)                            // 0-4
	batch(&record.TxnMark{ProducerID: 7}, record.CodecNone, 3) // 5-7, aborted
	marker(7, false)                                           // 8
	batch(nil, record.CodecSnappy, 3)                          // 9-11, 10 compacted away
	b.Compact("t", 0, 10)
	batch(&record.TxnMark{ProducerID: 8}, record.CodecZstd, 2) // 12-13, committed
	marker(8, true)                                            // 14
	batch(nil, record.CodecLZ4, 4)                             // 15-18
	if app := b.Append(ctx, "t", 0, []record.Record{{Value: []byte("v19"), Timestamp: 1019}}, true); app.Err != nil {
		t.Fatal(app.Err)
	}
	next++                                                     // 19, stored singly
	batch(&record.TxnMark{ProducerID: 9}, record.CodecNone, 2) // 20-21, open

	var want []int64
	for _, o := range []int64{0, 1, 2, 3, 4, 9, 11, 12, 13, 15, 16, 17, 18, 19} {
		want = append(want, o)
	}
	s := &icebergSource{backend: b}
	check := func(recs []iceberg.Record, from int64) []int64 {
		t.Helper()
		var got []int64
		for _, r := range recs {
			if string(r.Value) != fmt.Sprintf("v%d", r.Offset) {
				t.Fatalf("offset %d holds %q", r.Offset, r.Value)
			}
			got = append(got, r.Offset)
		}
		return got
	}

	recs, n, err := s.Read(ctx, "t", 0, 0, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := check(recs, 0); !slices.Equal(got, want) || n != 20 {
		t.Fatalf("read offsets %v, next %d; want %v, next 20", got, n, want)
	}

	recs, n, err = s.Read(ctx, "t", 0, 2, 1<<20, []iceberg.Record{{Offset: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := check(recs[1:], 2); recs[0].Offset != -1 || !slices.Equal(got, want[2:]) || n != 20 {
		t.Fatalf("read from 2: offsets %v, next %d; want %v after what was there, next 20", got, n, want[2:])
	}

	// In pieces of about one record's bytes.
	var got []int64
	for from, reads := int64(0), 0; from < 20; reads++ {
		if reads > 40 {
			t.Fatalf("no progress at %d", from)
		}
		recs, n, err := s.Read(ctx, "t", 0, from, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n <= from {
			t.Fatalf("a read from %d returned next %d", from, n)
		}
		got = append(got, check(recs, from)...)
		from = n
	}
	if !slices.Equal(got, want) {
		t.Fatalf("read in pieces: %v, want %v", got, want)
	}
}

// transactional marks a batch as a transaction's: its producer and the
// transactional attribute (at their places in a v2 batch header), with
// its CRC made again.
func transactional(raw []byte, txn *record.TxnMark) []byte {
	raw = slices.Clone(raw)
	binary.BigEndian.PutUint16(raw[21:], binary.BigEndian.Uint16(raw[21:])|record.AttrTransactional)
	binary.BigEndian.PutUint64(raw[43:], uint64(txn.ProducerID))
	binary.BigEndian.PutUint16(raw[51:], uint16(txn.Epoch))
	binary.BigEndian.PutUint32(raw[53:], 0)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}
