package seaweedmq

import (
	"context"
	"testing"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"
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
