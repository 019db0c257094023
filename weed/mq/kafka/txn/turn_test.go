package txn

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
)

// stalledFiles holds the saves of one transactional id back until stall
// is closed, telling saving when one is held.
type stalledFiles struct {
	filerfs.VersionedFiles
	id     string
	stall  chan struct{}
	saving chan struct{}
}

func (f *stalledFiles) WriteFileIf(ctx context.Context, dir, name string, data []byte, version string) (string, error) {
	if name == filerfs.Escape(f.id) {
		f.saving <- struct{}{}
		<-f.stall
	}
	return f.VersionedFiles.WriteFileIf(ctx, dir, name, data, version)
}

// within fails the test unless fn returns before the deadline: what must
// not wait for the filer.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s waited for another operation's I/O", what)
	}
}

// While an operation on a transactional id waits for the filer, what only
// reads the coordinator answers, another id's operations go on, and a
// second operation on the same id waits for its turn, giving up with its
// request's context (CONCURRENT_TRANSACTIONS, which producers retry).
func TestSaveHoldsOnlyItsIDsTurn(t *testing.T) {
	files := &stalledFiles{VersionedFiles: filerfstest.New(), id: "tx", stall: make(chan struct{}), saving: make(chan struct{}, 10)}
	close(files.stall) // until the end below
	log, groups := &fakeLog{}, &fakeGroups{}
	c := start(t, files, log, groups)
	ctx := context.Background()
	pid, epoch, e := c.InitProducerID(ctx, "tx", time.Minute, -1, -1)
	if e != nil {
		t.Fatal(e)
	}
	other, otherEpoch, e := c.InitProducerID(ctx, "other", time.Minute, -1, -1)
	if e != nil {
		t.Fatal(e)
	}
	if e := c.AddPartitions(ctx, "tx", pid, epoch, map[string][]int32{"a": {0}}); e != nil {
		t.Fatal(e)
	}

	for len(files.saving) > 0 {
		<-files.saving
	}
	files.stall = make(chan struct{})
	ended := make(chan *kerr.Error, 1)
	go func() { ended <- c.EndTxn(ctx, "tx", pid, epoch, true) }()
	<-files.saving // the commit's decision is being saved

	within(t, "DescribeTransactions", func() {
		if d, ok, e := c.Describe("tx"); e != nil || !ok || d.State != Ongoing {
			t.Errorf("describe during the save: %+v %v %v", d, ok, e)
		}
	})
	within(t, "ListTransactions", func() {
		if l, e := c.List(); e != nil || len(l) != 2 {
			t.Errorf("list during the save: %+v %v", l, e)
		}
	})
	within(t, "a transactional write's check", func() {
		wrote := false
		if e := c.Verify(ctx, nil, pid, epoch, "a", 0, false, func() { wrote = true }); e != nil || !wrote {
			t.Errorf("a write to the open transaction during its end's save: %v, written %v", e, wrote)
		}
	})
	within(t, "another id's operation", func() {
		if e := c.AddPartitions(ctx, "other", other, otherEpoch, map[string][]int32{"b": {0}}); e != nil {
			t.Errorf("another id's add: %v", e)
		}
	})
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if e := c.AddPartitions(short, "tx", pid, epoch, map[string][]int32{"a": {1}}); e != kerr.ConcurrentTransactions {
		t.Fatalf("an add while the end is saved, given up: %v", e)
	}
	if len(log.markers) != 0 {
		t.Fatalf("markers before the decision is saved: %+v", log.markers)
	}
	close(files.stall)
	if e := <-ended; e != nil {
		t.Fatal(e)
	}
	if len(log.markers) != 1 || !log.markers[0].commit {
		t.Fatalf("markers: %+v", log.markers)
	}
}

// A transaction's markers wait for its writes going on: a write admitted
// before the decision lands before them, and none is admitted after.
func TestMarkersWaitForTheWritesGoingOn(t *testing.T) {
	files, log, groups := filerfstest.New(), &fakeLog{}, &fakeGroups{}
	c := start(t, files, log, groups)
	ctx := context.Background()
	pid, epoch, e := c.InitProducerID(ctx, "tx", time.Minute, -1, -1)
	if e != nil {
		t.Fatal(e)
	}
	if e := c.AddPartitions(ctx, "tx", pid, epoch, map[string][]int32{"a": {0}}); e != nil {
		t.Fatal(e)
	}
	writing, release := make(chan struct{}), make(chan struct{})
	written := make(chan int, 1)
	go func() {
		e := c.Verify(ctx, nil, pid, epoch, "a", 0, false, func() {
			close(writing)
			<-release
			log.mu.Lock()
			written <- len(log.markers) // markers before the write ended
			log.mu.Unlock()
		})
		if e != nil {
			t.Errorf("the write: %v", e)
		}
	}()
	<-writing
	ended := make(chan *kerr.Error, 1)
	go func() { ended <- c.EndTxn(ctx, "tx", pid, epoch, false) }()
	within(t, "the abort's decision", func() {
		for d, _, _ := c.Describe("tx"); d.State != PrepareAbort; d, _, _ = c.Describe("tx") {
			time.Sleep(time.Millisecond)
		}
	})
	if e := c.Verify(ctx, nil, pid, epoch, "a", 0, false, func() { t.Error("a write admitted after the decision") }); e != kerr.InvalidTxnState {
		t.Fatalf("a write after the decision: %v", e)
	}
	close(release)
	if n := <-written; n != 0 {
		t.Fatalf("%d markers written before the transaction's write ended", n)
	}
	if e := <-ended; e != nil {
		t.Fatal(e)
	}
	if len(log.markers) != 1 || log.markers[0].commit {
		t.Fatalf("markers: %+v", log.markers)
	}
}
