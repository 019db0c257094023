package seaweedmq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/wal"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/waitfor"
)

// TestNextTs checks which timestamps ts_ns carries exactly: increasing ones,
// and repeats within the same millisecond; not ones that go back, are
// negative or lie far ahead. ts_ns itself always increases.
func TestNextTs(t *testing.T) {
	const soon = -2 // a timestamp just ahead of the clock at its step
	now := time.Now().UnixMilli()
	p := &partition{}
	last := int64(0)
	for i, tc := range []struct {
		ts    int64
		exact bool
	}{
		{now - 1000, true},
		{now - 1000, true}, // same millisecond again
		{now - 1000, true},
		{now - 999, true},
		{now - 5000, false}, // goes back
		{now - 500, false},  // behind ts_ns, which moved to the clock after the step back
		{-1, false},
		{now + int64(2*time.Hour/time.Millisecond), false}, // far ahead
		{soon, true}, // ahead of ts_ns, which moved to the clock again
	} {
		if tc.ts == soon {
			// Taken now: the clock moved on since now (far more than a
			// millisecond under the race detector on a busy machine).
			tc.ts = time.Now().UnixMilli() + 50
		}
		ts, exact := p.nextTs(tc.ts)
		if ts <= last {
			t.Fatalf("step %d: ts_ns %d not after %d", i, ts, last)
		}
		last = ts
		if exact != tc.exact {
			t.Fatalf("step %d: timestamp %d exact %v, want %v", i, tc.ts, exact, tc.exact)
		}
		if exact && ts/int64(time.Millisecond) != tc.ts {
			t.Fatalf("step %d: ts_ns %d does not carry %d", i, ts, tc.ts)
		}
	}
}

func TestTopicIDStable(t *testing.T) {
	a, b := topicID(DefaultNamespace, "orders", 42), topicID(DefaultNamespace, "orders", 42)
	if a != b || a == [16]byte{} {
		t.Fatalf("ids %x %x", a, b)
	}
	if topicID(DefaultNamespace, "orders", 43) == a || topicID(DefaultNamespace, "orders2", 42) == a || topicID("kafka_other", "orders", 42) == a {
		t.Fatal("different topics share an id")
	}
}

// A read finds the first segment it needs by binary search over the
// highest offset_max so far: it once looked at every segment of the
// partition, months of them, on each fetch.
func TestSegmentListingIndex(t *testing.T) {
	l := &segmentListing{}
	for _, m := range []int64{99, 199, 299, 150, 399, -1, 599} {
		l.segs = append(l.segs, segment{maxOffset: m})
	}
	l.index()
	for _, c := range []struct {
		offset int64
		want   int
	}{{0, 0}, {99, 0}, {100, 1}, {250, 2}, {300, 4}, {400, 5}, {5000, 5}} {
		if got := l.from(c.offset); got != c.want {
			t.Errorf("a read from offset %d starts at segment %d, want %d", c.offset, got, c.want)
		}
	}
	if got := (&segmentListing{}).from(7); got != 0 {
		t.Errorf("no segments: %d", got)
	}
}

// A deleted topic's segment listings and decoded segments are dropped:
// they stayed in memory for every topic ever read.
func TestSegmentStoreForget(t *testing.T) {
	var ss segmentStore
	ss.init()
	for _, dir := range []string{"/topics/kafka/gone/v1/0000-1260", "/topics/kafka/gone/v1/1260-2520", "/topics/kafka/kept/v1/0000-2520"} {
		ss.listings[dir] = &flushedState{listing: &segmentListing{dir: dir}}
		key := dir + "/seg@10"
		ss.byKey[key] = ss.lru.PushFront(&decodedSegment{key: key, bytes: 100})
		ss.bytes += 100
		ss.ends[key] = 5
	}
	ss.forget("/topics/kafka/gone/")
	if len(ss.listings) != 1 || ss.listings["/topics/kafka/kept/v1/0000-2520"] == nil || len(ss.byKey) != 1 || ss.lru.Len() != 1 || ss.bytes != 100 || len(ss.ends) != 1 {
		t.Fatalf("after forgetting: %d listings, %d decoded (%d in the LRU, %d bytes), %d ends", len(ss.listings), len(ss.byKey), ss.lru.Len(), ss.bytes, len(ss.ends))
	}
}

// The segment listings of partitions no read asked for in listingIdle are
// dropped (at most once a minute): every partition ever read kept its
// listing, each segment's entry, for good.
func TestIdleListingsDropped(t *testing.T) {
	var ss segmentStore
	ss.init()
	now := time.Now()
	for dir, used := range map[string]time.Time{"busy": now.Add(-time.Minute), "idle": now.Add(-11 * time.Minute)} {
		st := &flushedState{listing: &segmentListing{dir: dir}}
		st.used.Store(used.UnixNano())
		ss.listings[dir] = st
	}
	ss.sweepIdleLocked(now)
	if len(ss.listings) != 1 || ss.listings["busy"] == nil {
		t.Fatalf("listings kept: %v", ss.listings)
	}
}

// TestLoggedInOrder: batches reach readers (the tail, the high watermark)
// in offset order whatever order the log finishes them in; a durable one
// is answered once logged, at its offset; one the log refused fails with
// a retriable error, as does every batch after it, and the partition is
// recovered before its next write.
func TestLoggedInOrder(t *testing.T) {
	p := &partition{hw: 10, next: 10, ready: true}
	var bs []*pendingBatch
	for i := 0; i < 4; i++ {
		b := &pendingBatch{base: p.next, n: 2, durable: true, app: storage.NewAppended(), recs: []byte{byte(i)}}
		p.next += 2
		p.pending = append(p.pending, b)
		bs = append(bs, b)
	}
	p.logged(bs[1], nil)
	if p.knownHW() != 10 || len(p.tail) != 0 {
		t.Fatalf("after the second: hw %d, tail %d", p.knownHW(), len(p.tail))
	}
	p.logged(bs[0], nil)
	if p.knownHW() != 14 || len(p.tail) != 2 || p.tail[0].base != 10 || p.tail[1].base != 12 {
		t.Fatalf("after the first: hw %d, tail %+v", p.knownHW(), p.tail)
	}
	for i, b := range bs[:2] {
		<-b.app.Done
		if b.app.Err != nil || b.app.Base != int64(10+2*i) {
			t.Fatalf("batch %d: %d %v", i, b.app.Base, b.app.Err)
		}
	}
	p.logged(bs[3], nil)
	p.logged(bs[2], wal.ErrClosed)
	for _, b := range bs[2:] {
		<-b.app.Done
		if !errors.Is(b.app.Err, kerr.NotLeaderForPartition) {
			t.Fatalf("after a refused batch: %v", b.app.Err)
		}
	}
	if p.knownHW() != 14 || len(p.tail) != 2 || len(p.pending) != 0 {
		t.Fatalf("after the refusal: hw %d, tail %d, pending %d", p.knownHW(), len(p.tail), len(p.pending))
	}
	eventuallyTrue(t, func() bool {
		p.writeMu.Lock()
		defer p.writeMu.Unlock()
		return !p.ready
	})
}

// TestLoggedAfterRelease: a batch the write-ahead log takes once the
// partition was released stays out of the tail (its offsets may be the
// next leader's), while one logged before stays, to be written as a
// segment (found by TestFaults: a gateway cut off from SeaweedFS, its log
// commit landing after the cut healed, wrote its tail over the new
// leader's records at the same offsets).
func TestLoggedAfterRelease(t *testing.T) {
	p := &partition{hw: 0, next: 0, ready: true}
	var bs []*pendingBatch
	for i := 0; i < 2; i++ {
		b := &pendingBatch{base: p.next, n: 1, durable: true, app: storage.NewAppended(), recs: []byte{byte(i)}}
		p.next++
		p.pending = append(p.pending, b)
		bs = append(bs, b)
	}
	p.logged(bs[0], nil)
	p.release()
	p.logged(bs[1], nil)
	if len(p.tail) != 1 || p.tail[0].base != 0 || len(p.pending) != 0 {
		t.Fatalf("tail %+v, pending %d: want the batch logged before the release alone", p.tail, len(p.pending))
	}
	// The batch logged after the release is in no tail: it is answered
	// NOT_LEADER_OR_FOLLOWER, never as stored at its offsets (a fault run
	// had such batches acknowledged at offsets a new object of the
	// partition, in the same term, then gave to other records).
	for i, b := range bs {
		<-b.app.Done
		if err := b.app.Err; (err == nil) != (i == 0) || (err != nil && !errors.Is(err, kerr.NotLeaderForPartition)) {
			t.Errorf("batch %d answered %v", i, err)
		}
	}
}

// A batch the write-ahead log takes once this gateway's term over the
// partition has ended, before the gateway learns it (a pause, a cut while
// the log's commit waited), fails as one the log refused, and so do those
// after it: the successor may have given their offsets to other records
// (a fault run read an aborted transaction's record and lost the marker
// that ended it so). It enters no tail, moves no high watermark, and the
// partition is recovered before its next use.
func TestLoggedAfterTermEnded(t *testing.T) {
	term := int64(7)
	c := &Client{opts: Options{Term: func(string, int32) int64 { return term }}}
	p := &partition{c: c, hw: 0, next: 0, ready: true, term: 7}
	var bs []*pendingBatch
	for i := 0; i < 3; i++ {
		b := &pendingBatch{base: p.next, n: 1, durable: true, app: storage.NewAppended(), recs: []byte{byte(i)}}
		b.term = p.term
		p.next++
		p.pending = append(p.pending, b)
		bs = append(bs, b)
	}
	p.logged(bs[0], nil)
	term = 9 // another gateway's view: this one has not noticed yet
	p.logged(bs[2], nil)
	p.logged(bs[1], nil)
	if len(p.tail) != 1 || p.tail[0].base != 0 || p.knownHW() != 1 || len(p.pending) != 0 {
		t.Fatalf("tail %+v, high watermark %d, pending %d: want the batch logged in the term alone", p.tail, p.knownHW(), len(p.pending))
	}
	for i, b := range bs {
		<-b.app.Done
		if err := b.app.Err; (err == nil) != (i == 0) || (err != nil && !errors.Is(err, kerr.NotLeaderForPartition)) {
			t.Errorf("batch %d answered %v", i, err)
		}
	}
	eventuallyTrue(t, func() bool {
		p.writeMu.Lock()
		defer p.writeMu.Unlock()
		return !p.ready
	})
}

func eventuallyTrue(t *testing.T, cond func() bool) {
	t.Helper()
	waitfor.True(t, 5*time.Second, "the condition", cond)
}

// TestDropIdle: a partition nobody used for idleAfter is dropped, even one
// a fetch once waited on (its channel is closed, waking any waiter, which
// takes the partition afresh); one used lately, or with a tail, is kept.
func TestDropIdle(t *testing.T) {
	c := &Client{}
	c.parts.init()
	old := time.Now().Add(-2 * idleAfter)
	waited := c.parts.get(c, "t", 0)
	ch := waited.waitPast(5)
	waited.used = old
	busy := c.parts.get(c, "t", 1)
	tailed := c.parts.get(c, "t", 2)
	tailed.used = old
	tailed.tail = []*tailBatch{{base: 0, n: 1}}
	for _, p := range c.parts.all() {
		c.dropIdle(p, time.Now())
	}
	select {
	case <-ch:
	default:
		t.Fatal("the waiter of a dropped partition was not woken")
	}
	if !waited.isDropped() || busy.isDropped() || tailed.isDropped() {
		t.Fatalf("dropped: waited %v, busy %v, tailed %v", waited.isDropped(), busy.isDropped(), tailed.isDropped())
	}
	if n := len(c.parts.all()); n != 2 {
		t.Fatalf("%d partitions held, want 2", n)
	}
}

// A partition whose tail no segment holds yet has reached its cap (its
// segments are not being written: a volume server hung or full) refuses
// produce with a retriable error, counted, instead of holding it all in
// memory.
func TestTailCapRefusesProduce(t *testing.T) {
	p := &partition{topic: "t", ready: true, tailBytes: tailCap}
	before := testutil.ToFloat64(metrics.TailFull)
	records := []record.Record{{Value: []byte("v")}}
	app := (&Client{}).appendLocked(context.Background(), p, &records[0], 1, nil, records, true)
	<-app.Done
	if !errors.Is(app.Err, kerr.KafkaStorageError) || !kerr.IsRetriable(kerr.KafkaStorageError) {
		t.Fatalf("produce to a full tail: %v, want the retriable KAFKA_STORAGE_ERROR", app.Err)
	}
	if got := testutil.ToFloat64(metrics.TailFull); got != before+1 {
		t.Fatalf("tail_full_total went from %v to %v", before, got)
	}
}

// An append to a partition whose tail is at its cap waits until a
// segment write makes room, rather than being refused at once (librdkafka's
// producer, not idempotent with many requests in flight, retried refused
// batches after later ones: librdkafka's 0038 read its records out of
// order); it gives up with its context.
func TestTailCapWaitsForRoom(t *testing.T) {
	c := &Client{}
	c.parts.init()
	c.flusher = newFlusher(c)
	p := c.parts.get(c, "t", 0)
	p.tailBytes = tailCap
	before := testutil.ToFloat64(metrics.TailWaits)
	done := make(chan struct{})
	go func() {
		c.waitForTailRoom(context.Background(), "t", 0)
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("an append to a full tail went on at once")
	case <-time.After(100 * time.Millisecond):
	}
	p.notifyMu.Lock()
	p.tailBytes = tailCap - 1 // a segment was written
	p.notifyMu.Unlock()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("the append still waits once the tail has room")
	}
	if got := testutil.ToFloat64(metrics.TailWaits); got != before+1 {
		t.Fatalf("tail_waits_total went from %v to %v", before, got)
	}

	p.tailBytes = tailCap
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	c.waitForTailRoom(ctx, "t", 0)
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the wait outlived its context by %v", took)
	}
	c.waitForTailRoom(context.Background(), "t", 1) // no such partition held: no wait
}
