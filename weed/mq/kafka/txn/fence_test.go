package txn

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership/membershiptest"
)

// failingFiles is the filer, refusing writes while down is set.
type failingFiles struct {
	*filerfstest.Files
	down atomic.Bool
}

func (f *failingFiles) WriteFileIf(ctx context.Context, dir, name string, data []byte, version string) (string, error) {
	if f.down.Load() {
		return "", errors.New("filer down")
	}
	return f.Files.WriteFileIf(ctx, dir, name, data, version)
}

func savedState(t *testing.T, files *filerfstest.Files, id string) saved {
	t.Helper()
	var st saved
	data, err := files.ReadFile(context.Background(), Dir, id)
	if err != nil || json.Unmarshal(data, &st) != nil {
		t.Fatalf("the saved state of %s: %v", id, err)
	}
	return st
}

// A transaction's timeout whose abort cannot be saved (the filer down)
// leaves it open, in memory as in the filer, and writes no marker; the
// abort is tried again and carried out once the filer is back. The
// unsaved abort once stayed in memory and its markers were written by the
// next retry round, while the filer still held the transaction open for
// another gateway to commit: found by TestFaults (a transaction answered
// committed whose records were aborted).
func TestTimeoutAbortNotSavedWritesNoMarker(t *testing.T) {
	files, log, groups := &failingFiles{Files: filerfstest.New()}, &fakeLog{}, &fakeGroups{}
	c := start(t, files, log, groups)
	ctx := context.Background()
	pid, epoch, e := c.InitProducerID(ctx, "slow", 200*time.Millisecond, -1, -1)
	if e != nil {
		t.Fatal(e)
	}
	if e := c.AddPartitions(ctx, "slow", pid, epoch, map[string][]int32{"a": {0, 1}}); e != nil {
		t.Fatal(e)
	}
	files.down.Store(true)
	time.Sleep(500 * time.Millisecond) // the timeout passed; its abort was not saved
	c.retryUnfinished()                // the round that finishes decided transactions
	log.mu.Lock()
	written := len(log.markers)
	log.mu.Unlock()
	if written != 0 {
		t.Fatalf("%d markers written for an abort the filer does not hold", written)
	}
	if d, _, _ := c.Describe("slow"); d.State != Ongoing || d.Epoch != epoch {
		t.Fatalf("in memory: %s epoch %d, want what the filer holds (Ongoing, epoch %d)", d.State, d.Epoch, epoch)
	}
	files.down.Store(false)
	deadline := time.Now().Add(2*retryEvery + time.Second)
	for savedState(t, files.Files, "slow").State != CompleteAbort {
		if time.Now().After(deadline) {
			t.Fatalf("not aborted once the filer was back: %+v", savedState(t, files.Files, "slow"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.markers) != 2 || log.markers[0].commit || log.markers[1].commit || log.markers[0].epoch != epoch+1 || !log.markers[0].bumped {
		t.Fatalf("markers %+v, want two aborts at epoch %d", log.markers, epoch+1)
	}
}

// Markers carry the term of the coordinator's ownership of the id (the
// coordinator epoch partitions fence deposed coordinators by), and a
// coordinator deposed since its decision writes none: the id's new
// coordinator finishes it.
func TestMarkersCarryTheCoordinatorsTerm(t *testing.T) {
	files, log, groups := filerfstest.New(), &fakeLog{}, &fakeGroups{}
	own := membershiptest.New(0)
	cs := gateways(t, files, log, groups, own, 2)
	ctx := context.Background()
	pid, epoch, e := cs[0].InitProducerID(ctx, "m", time.Minute, -1, -1)
	if e != nil {
		t.Fatal(e)
	}
	if e := cs[0].AddPartitions(ctx, "m", pid, epoch, map[string][]int32{"a": {0}}); e != nil {
		t.Fatal(e)
	}
	if e := cs[0].EndTxn(ctx, "m", pid, epoch, true); e != nil {
		t.Fatal(e)
	}
	log.mu.Lock()
	first := append([]int32(nil), log.coordinators...)
	log.mu.Unlock()
	if len(first) != 1 || first[0] != 1 {
		t.Fatalf("coordinator epochs %v, want [1] (term 1)", first)
	}
	// The next transaction is decided, its markers cannot be written;
	// then the id moves (term 2).
	if e := cs[0].AddPartitions(ctx, "m", pid, epoch, map[string][]int32{"a": {1}}); e != nil {
		t.Fatal(e)
	}
	log.mu.Lock()
	log.fail = true
	log.mu.Unlock()
	if e := cs[0].EndTxn(ctx, "m", pid, epoch, true); e == nil {
		t.Fatal("ended with its markers refused")
	}
	cs[0].mu.Lock()
	deposed := cs[0].txns["m"]
	cs[0].mu.Unlock()
	own.Move(1)
	log.mu.Lock()
	log.fail = false
	log.mu.Unlock()
	deposed.mu.Lock()
	err := cs[0].finish(ctx, deposed)
	deposed.mu.Unlock()
	log.mu.Lock()
	written := len(log.markers)
	log.mu.Unlock()
	if !errors.Is(err, kerr.NotCoordinator) || written != 1 {
		t.Fatalf("the deposed coordinator's finish: %v, %d markers in all", err, written)
	}
	// The new coordinator finishes it, with its own term.
	deadline := time.Now().Add(5 * time.Second)
	for savedState(t, files, "m").State != CompleteCommit {
		if time.Now().After(deadline) {
			t.Fatalf("not finished by the new coordinator: %+v", savedState(t, files, "m"))
		}
		cs[1].retryUnfinished()
		time.Sleep(20 * time.Millisecond)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.coordinators) != 2 || log.coordinators[1] != 2 || !log.markers[1].commit {
		t.Fatalf("markers %+v from coordinator epochs %v, want the commit's from 2", log.markers, log.coordinators)
	}
}
