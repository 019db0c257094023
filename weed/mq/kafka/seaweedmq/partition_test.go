package seaweedmq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/schema_pb"
)

// A partition released while an operation holds it (a recovery stalled
// by the filer) is released at once: the sweep that releases what a view
// change took away does not wait for it (a fault run saw a sweep, stuck
// on one such partition, release the others 26 s late, one of them by
// then led again in a new term). The partition's next object here waits
// for that operation before it runs, so that the two never give offsets
// at once.
func TestReleaseDoesNotWait(t *testing.T) {
	c := &Client{opts: Options{TopicCacheTTL: time.Hour}}
	c.parts.init()
	c.flusher = newFlusher(c)
	c.topics.byName = map[string]*topicEntry{"t": {parts: []*mq_pb.BrokerPartitionAssignment{{}}, read: time.Now()}}

	old := c.parts.get(c, "t", 0)
	old.writeMu.Lock() // an operation under way

	released := make(chan struct{})
	go func() {
		c.Release("t", 0)
		close(released)
	}()
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("Release waited for the operation holding the partition")
	}
	if !old.isReleased() || !old.isDropped() {
		t.Fatal("the released partition is not marked released")
	}

	// A next object that is released before it ran (a fetch waited on
	// it) leaves the wait to the one after it.
	c.parts.get(c, "t", 0)
	c.Release("t", 0)

	var ran *partition
	done := make(chan struct{})
	go func() {
		defer close(done)
		ran, _ = c.withPartition(context.Background(), "t", 0, func(*partition) {})
	}()
	select {
	case <-done:
		t.Fatal("the partition's next object ran while the released one was held")
	case <-time.After(200 * time.Millisecond):
	}
	old.writeMu.Unlock() // the operation ends
	<-done
	if ran == old || ran == nil {
		t.Fatalf("ran on %p, the released object is %p", ran, old)
	}
	old.writeMu.Lock()
	dropped := old.dropped
	old.writeMu.Unlock()
	if !dropped {
		t.Error("the released object was not fenced")
	}

	// Released with no operation under way, nothing is left to wait for.
	c.Release("t", 0)
	c.parts.mu.Lock()
	n := len(c.parts.fenced)
	c.parts.mu.Unlock()
	if n != 0 {
		t.Errorf("%d released partitions kept to wait for", n)
	}
}

// A partition is recovered only by its leader, and again in each term it
// leads it in. A fault run had a gateway recover partitions while it led
// none (requests admitted before it lost them, held by the filer's cut),
// then lead one again and answer reads, in the new term, from that
// object: its end was behind the partition's, and a consumer asking for
// its leader epoch's end went back to it.
func TestRecoveredOnlyByTheLeaderInItsTerm(t *testing.T) {
	term := int64(0)
	c := &Client{opts: Options{TopicCacheTTL: time.Hour, Term: func(string, int32) int64 { return term }}}
	c.parts.init()
	c.topics.byName = map[string]*topicEntry{
		"t":    {parts: []*mq_pb.BrokerPartitionAssignment{{Partition: &schema_pb.Partition{}}}, read: time.Now()},
		"gone": {read: time.Now()}, // no partition: opening it fails before any I/O
	}
	ctx := context.Background()

	// Not led here: not recovered (the storage is nil: recovering would
	// panic), NOT_LEADER_OR_FOLLOWER.
	p := c.parts.get(c, "t", 0)
	if err := c.ensureReady(ctx, p); !errors.Is(err, kerr.NotLeaderForPartition) || p.ready {
		t.Fatalf("opened while not led: %v, ready %v", err, p.ready)
	}

	// Opened in term 3: ready in term 3, and while not led (reads are
	// refused before, by the ownership check).
	q := &partition{c: c, topic: "gone", index: 0, ready: true, term: 3, hw: -1}
	for _, term = range []int64{3, 0} {
		if err := c.ensureReady(ctx, q); err != nil || !q.ready {
			t.Fatalf("term %d: %v, ready %v", term, err, q.ready)
		}
	}
	// Led again in term 5: recovered again before use.
	term = 5
	if err := c.ensureReady(ctx, q); err == nil || q.ready {
		t.Fatalf("term 5, opened in 3: used as it was (%v, ready %v)", err, q.ready)
	}
}
