package seaweedmq

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/logentry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/wal"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/waitfor"
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
func walTestBatchEntry(dir string, base int64, n int) wal.Batch {
	var w logentry.Records
	w.AddBatch(2000, testBatch(n), base)
	return wal.Batch{Dir: dir, Base: base, N: n, Recs: w.Buf}
}

// TestStoredRecords: reads from inside a batch entry get its records from
// there on, at their offsets.
func TestStoredRecords(t *testing.T) {
	b := walTestBatchEntry("/d", 2, 5)
	es, err := b.Entries(4)
	if err != nil || len(es) != 1 {
		t.Fatalf("entries from 4: %v %v", es, err)
	}
	re := logentry.FromLogEntry(es[0])
	recs, err := storedRecords(&re, nil, 4)
	if err != nil || len(recs) != 3 || recs[0].Offset != 4 || string(recs[0].Value) != "v2" || recs[2].Offset != 6 || recs[2].Timestamp != 1004 {
		t.Fatalf("records from 4: %+v %v", recs, err)
	}
}

// TestExpandEntries: the cleaner sees a batch entry as its records, each
// with its key and timestamp, at their offsets.
func TestExpandEntries(t *testing.T) {
	wb := walTestBatchEntry("/d", 10, 3)
	es, err := wb.Entries(0)
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

// A segment written for a compacted partition wakes the log cleaner for a
// round soon, not a whole backoff later; rounds woken so come no more
// often than a fifth of the backoff.
func TestCleanerWokenBySegments(t *testing.T) {
	loop := &Client{stop: make(chan struct{}), cleanerWake: make(chan struct{}, 1)}
	var n atomic.Int32
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		loop.cleanLoop(10*time.Second, func() { n.Add(1) }) // woken rounds at least 2 s apart
	}()
	defer func() { close(loop.stop); <-ended }()
	loop.wakeCleaner()
	waitfor.True(t, 5*time.Second, "a round after a wake, before the backoff's", func() bool { return n.Load() == 1 })
	loop.wakeCleaner()
	time.Sleep(200 * time.Millisecond) // the gap is what is under test
	if got := n.Load(); got != 1 {
		t.Fatalf("%d rounds within 200 ms of the last: woken rounds come at most each fifth of the backoff", got)
	}
	waitfor.True(t, 5*time.Second, "the second woken round, after the gap", func() bool { return n.Load() == 2 })
}
