package txn

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership/membershiptest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// fakes: files in memory, a log that records markers, groups that record
// commits.
type marker struct {
	topic  string
	part   int32
	pid    int64
	epoch  int16
	commit bool
	bumped bool // the end raised the epoch (storage.Marker.Bumped)
}

type fakeLog struct {
	mu      sync.Mutex
	next    int64
	markers []marker
	// coordinators are the markers' coordinator epochs, in their order.
	coordinators []int32
	fail         bool
}

func (l *fakeLog) NewProducerID(context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	return l.next, nil
}

func (l *fakeLog) WriteMarker(_ context.Context, topic string, part int32, m storage.Marker) error {
	pid, epoch, coordinatorEpoch, commit := m.ProducerID, m.Epoch, m.CoordinatorEpoch, m.Commit
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail {
		return errors.New("broker down")
	}
	l.markers = append(l.markers, marker{topic, part, pid, epoch, commit, m.Bumped})
	l.coordinators = append(l.coordinators, coordinatorEpoch)
	return nil
}

// fakeGroups records the markers sent to groups.
type fakeGroups struct {
	mu   sync.Mutex
	ends []groupEnd
}

type groupEnd struct {
	group  string
	pid    int64
	epoch  int16
	commit bool
}

func (g *fakeGroups) EndTxnOffsets(_ context.Context, group string, pid int64, epoch int16, _ int32, commit bool) *kerr.Error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ends = append(g.ends, groupEnd{group, pid, epoch, commit})
	return nil
}

func start(t *testing.T, files filerfs.VersionedFiles, log *fakeLog, groups *fakeGroups) *Coordinator {
	t.Helper()
	c := New(Options{Files: files, Log: log, Groups: groups})
	c.Start()
	t.Cleanup(c.Close)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, e := c.List(); e == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatal("not loaded")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gateways are n coordinators of as many gateways over one filer and
// log, owning as own says, loaded.
func gateways(t *testing.T, files filerfs.VersionedFiles, log *fakeLog, groups *fakeGroups, own *membershiptest.Owners, n int) []*Coordinator {
	t.Helper()
	var cs []*Coordinator
	for i := 0; i < n; i++ {
		c := New(Options{Files: files, Log: log, Groups: groups, Serving: own.Serving(i), Changed: own.Changed})
		c.Start()
		t.Cleanup(c.Close)
		for _, e := c.List(); e != nil; _, e = c.List() {
			time.Sleep(5 * time.Millisecond)
		}
		cs = append(cs, c)
	}
	return cs
}

func TestCommitWritesMarkersAndOffsets(t *testing.T) {
	files, log, groups := filerfstest.New(), &fakeLog{}, &fakeGroups{}
	c := start(t, files, log, groups)
	ctx := context.Background()
	pid, epoch, e := c.InitProducerID(ctx, "tx", time.Minute, -1, -1)
	if e != nil || epoch != 0 {
		t.Fatalf("init: %d %d %v", pid, epoch, e)
	}
	if e := c.EndTxn(ctx, "tx", pid, epoch, true); e != kerr.InvalidTxnState {
		t.Fatalf("end without a transaction: %v", e)
	}
	if e := c.AddPartitions(ctx, "tx", pid, epoch, map[string][]int32{"a": {0, 1}}); e != nil {
		t.Fatal(e)
	}
	if e := c.AddGroup(ctx, "tx", pid, epoch, "g"); e != nil {
		t.Fatal(e)
	}
	if e := c.EndTxn(ctx, "tx", pid, epoch, true); e != nil {
		t.Fatal(e)
	}
	if len(log.markers) != 2 || !log.markers[0].commit || len(groups.ends) != 1 || groups.ends[0] != (groupEnd{"g", pid, epoch, true}) {
		t.Fatalf("markers %+v, group markers %+v", log.markers, groups.ends)
	}
	// Transactions v1: the end keeps the epoch of the transaction's
	// batches, and its markers say so.
	if log.markers[0].epoch != epoch || log.markers[0].bumped || log.markers[1].bumped {
		t.Fatalf("markers %+v, want epoch %d, not raised by the end", log.markers, epoch)
	}
	if e := c.EndTxn(ctx, "tx", pid, epoch, true); e != nil {
		t.Fatalf("a retried commit: %v", e)
	}
	if e := c.EndTxn(ctx, "tx", pid, epoch, false); e != kerr.InvalidTxnState {
		t.Fatalf("an abort after the commit: %v", e)
	}
}

func TestFencingAndTimeouts(t *testing.T) {
	files, log, groups := filerfstest.New(), &fakeLog{}, &fakeGroups{}
	c := start(t, files, log, groups)
	ctx := context.Background()
	if _, _, e := c.InitProducerID(ctx, "tx", 16*time.Minute, -1, -1); e != kerr.InvalidTransactionTimeout {
		t.Fatalf("a 16 minute timeout: %v", e)
	}
	pid, e0, _ := c.InitProducerID(ctx, "tx", time.Minute, -1, -1)
	c.AddPartitions(ctx, "tx", pid, e0, map[string][]int32{"a": {0}})
	// A second producer of the id fences the first and aborts its
	// transaction.
	pid2, e1, e := c.InitProducerID(ctx, "tx", 100*time.Millisecond, -1, -1)
	if e != nil || pid2 != pid || e1 <= e0 {
		t.Fatalf("second init: %d %d %v", pid2, e1, e)
	}
	if len(log.markers) != 1 || log.markers[0].commit || !log.markers[0].bumped {
		t.Fatalf("the open transaction was not aborted at a raised epoch: %+v", log.markers)
	}
	if e := c.AddPartitions(ctx, "tx", pid, e0, map[string][]int32{"a": {0}}); e != kerr.ProducerFenced {
		t.Fatalf("the fenced producer: %v", e)
	}
	// An abandoned transaction is aborted after its timeout, and its
	// producer fenced.
	if e := c.AddPartitions(ctx, "tx", pid, e1, map[string][]int32{"a": {1}}); e != nil {
		t.Fatal(e)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, _, _ := c.Describe("tx")
		if d.State == CompleteAbort {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not aborted after its timeout: %s", d.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if e := c.EndTxn(ctx, "tx", pid, e1, true); e != kerr.ProducerFenced {
		t.Fatalf("commit after the timeout: %v", e)
	}
}

func TestRestartFinishesDecidedTransactions(t *testing.T) {
	files, log, groups := filerfstest.New(), &fakeLog{}, &fakeGroups{}
	c := start(t, files, log, groups)
	ctx := context.Background()
	pid, epoch, _ := c.InitProducerID(ctx, "tx", time.Minute, -1, -1)
	c.AddPartitions(ctx, "tx", pid, epoch, map[string][]int32{"a": {0, 1}})
	log.fail = true // the markers cannot be written: the decision is saved only
	if e := c.EndTxn(ctx, "tx", pid, epoch, true); e != kerr.CoordinatorNotAvailable {
		t.Fatalf("end with the log down: %v", e)
	}
	var st saved
	data, _ := files.Get(Dir + "/tx")
	json.Unmarshal(data, &st) //nolint:errcheck // checked below
	if st.State != PrepareCommit {
		t.Fatalf("saved state %s", st.State)
	}
	c.Close()
	log.fail = false
	c2 := start(t, files, log, groups)
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, _, _ := c2.Describe("tx")
		if d.State == CompleteCommit {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not finished after the restart: %s", d.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(log.markers) != 2 || !log.markers[0].commit || !log.markers[1].commit {
		t.Fatalf("markers after the restart: %+v", log.markers)
	}
}

// TestOwnershipMoves: a transactional id moves to another gateway's
// coordinator mid-transaction: the old one sends clients away, the new one
// loads the id when a write or request names it, and finishes a
// transaction decided on the old one.
func TestOwnershipMoves(t *testing.T) {
	files, log, groups := filerfstest.New(), &fakeLog{}, &fakeGroups{}
	own := membershiptest.New(0)
	cs := gateways(t, files, log, groups, own, 2)
	ctx := context.Background()
	id := "moving"
	if _, _, e := cs[1].InitProducerID(ctx, id, time.Minute, -1, -1); e != kerr.NotCoordinator {
		t.Fatalf("init at the gateway not coordinating: %v", e)
	}
	pid, epoch, e := cs[0].InitProducerID(ctx, id, time.Minute, -1, -1)
	if e != nil {
		t.Fatal(e)
	}
	if e := cs[0].AddPartitions(ctx, id, pid, epoch, map[string][]int32{"a": {0}}); e != nil {
		t.Fatal(e)
	}
	own.Move(1)
	if e := cs[0].EndTxn(ctx, id, pid, epoch, true); e != kerr.NotCoordinator {
		t.Fatalf("end at the old coordinator: %v", e)
	}
	wrote := false
	if e := cs[1].Verify(ctx, &id, pid, epoch, "a", 0, false, func() { wrote = true }); e != nil || !wrote {
		t.Fatalf("a write of the transaction at the new coordinator: %v (written %v)", e, wrote)
	}
	if e := cs[1].Verify(ctx, &id, pid, epoch, "a", 1, false, func() {}); e != kerr.InvalidTxnState {
		t.Fatalf("a write to a partition not added: %v", e)
	}
	// Decided there, its markers fail; it moves back and is finished.
	log.mu.Lock()
	log.fail = true
	log.mu.Unlock()
	if e := cs[1].EndTxn(ctx, id, pid, epoch, true); e == nil {
		t.Fatal("end succeeded with the markers failing")
	}
	log.mu.Lock()
	log.fail = false
	log.mu.Unlock()
	own.Move(0)
	if e := cs[0].EndTxn(ctx, id, pid, epoch, true); e != nil {
		t.Fatalf("the producer's retry at the first coordinator again: %v", e)
	}
	d, ok, e := cs[0].Describe(id)
	if e != nil || !ok || d.State != CompleteCommit {
		t.Fatalf("after the retry: %+v %v %v", d, ok, e)
	}
	if len(log.markers) != 1 || !log.markers[0].commit {
		t.Fatalf("markers %+v", log.markers)
	}
}

// Transactional ids with no transaction going on expire after
// transactional.id.expiration.ms unchanged, from memory and the filer, as
// Kafka's do; one with an open transaction never does. They were kept, and
// listed and re-read every few seconds, forever.
func TestTransactionalIDsExpire(t *testing.T) {
	files, log, groups := filerfstest.New(), &fakeLog{}, &fakeGroups{}
	c := start(t, files, log, groups)
	ctx := context.Background()
	day := 24 * time.Hour
	idle, _, e := c.InitProducerID(ctx, "idle", time.Minute, -1, -1)
	if e != nil {
		t.Fatal(e)
	}
	done, doneEpoch, _ := c.InitProducerID(ctx, "done", time.Minute, -1, -1)
	c.AddPartitions(ctx, "done", done, doneEpoch, map[string][]int32{"a": {0}})
	if e := c.EndTxn(ctx, "done", done, doneEpoch, true); e != nil {
		t.Fatal(e)
	}
	open, openEpoch, _ := c.InitProducerID(ctx, "open", time.Minute, -1, -1)
	if e := c.AddPartitions(ctx, "open", open, openEpoch, map[string][]int32{"a": {1}}); e != nil {
		t.Fatal(e)
	}
	c.ExpireIDs(time.Now().Add(6 * day))
	if all, _ := c.List(); len(all) != 3 {
		t.Fatalf("%d ids 6 days on, want 3", len(all))
	}
	c.ExpireIDs(time.Now().Add(8 * day))
	all, _ := c.List()
	if len(all) != 1 || all[0].ID != "open" {
		t.Fatalf("ids 8 days on: %+v, want only the open transaction's", all)
	}
	if _, err := files.ReadFile(ctx, Dir, "idle"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the expired id's file: %v", err)
	}
	// A fresh coordinator (a restart) does not bring them back; the
	// expired id's producer starts afresh.
	c2 := start(t, files, log, groups)
	if all, _ := c2.List(); len(all) != 1 {
		t.Fatalf("%d ids after a restart, want 1", len(all))
	}
	if e := c2.AddPartitions(ctx, "idle", idle, 0, map[string][]int32{"a": {2}}); e != kerr.InvalidProducerIDMapping {
		t.Fatalf("the expired id's old producer: %v, want INVALID_PRODUCER_ID_MAPPING", e)
	}
	if _, epoch, e := c2.InitProducerID(ctx, "idle", time.Minute, -1, -1); e != nil || epoch != 0 {
		t.Fatalf("init of the expired id: epoch %d, %v", epoch, e)
	}
}

// An expired id's file is removed only as its coordinator last read or
// wrote it: a removal landing once another gateway took the id over and
// wrote it leaves that (before, it removed it, and the other's producer
// was then unknown).
func TestExpiryLeavesAnIDWrittenSince(t *testing.T) {
	files, log, groups := filerfstest.New(), &fakeLog{}, &fakeGroups{}
	c := start(t, files, log, groups)
	ctx := context.Background()
	if _, _, e := c.InitProducerID(ctx, "idle", time.Minute, -1, -1); e != nil {
		t.Fatal(e)
	}
	data, err := files.ReadFile(ctx, Dir, "idle")
	if err != nil {
		t.Fatal(err)
	}
	written := []byte(strings.Replace(string(data), `"epoch":0`, `"epoch":1`, 1))
	files.BeforeNextWriteIf(func() {
		if err := files.WriteFile(ctx, Dir, "idle", written); err != nil {
			t.Error(err)
		}
	})
	c.ExpireIDs(time.Now().Add(8 * 24 * time.Hour))
	if got, err := files.ReadFile(ctx, Dir, "idle"); err != nil || string(got) != string(written) {
		t.Fatalf("the id's file after a late expiry: %q, %v; want what the other gateway wrote", got, err)
	}
	// Read again when next asked: the next producer goes on from the
	// other gateway's epoch.
	if _, epoch, e := c.InitProducerID(ctx, "idle", time.Minute, -1, -1); e != nil || epoch != 2 {
		t.Fatalf("init after the other gateway's epoch 1: epoch %d, %v; want 2", epoch, e)
	}
}

// With several gateways the saved ids are listed again (each listing reads
// every id's state) when what the gateway serves changes, to take over the
// ids that came, not every 3 s as they were.
func TestIDsListedWhenTheViewChanges(t *testing.T) {
	files, log, groups := filerfstest.New(), &fakeLog{}, &fakeGroups{}
	own := membershiptest.New(0)
	cs := gateways(t, files, log, groups, own, 2)
	if _, _, e := cs[0].InitProducerID(context.Background(), "moving", time.Minute, -1, -1); e != nil {
		t.Fatal(e)
	}
	before := files.Listings()
	time.Sleep(300 * time.Millisecond)
	after := files.Listings()
	if after != before {
		t.Fatalf("%d listings in 300 ms with the view unchanged", after-before)
	}
	// The id moves with a new view: the gateway it came to lists it
	// without being asked.
	own.Move(1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		all, _ := cs[1].List()
		if len(all) == 1 && all[0].ID == "moving" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the id taken over is not listed: %+v", all)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A coordinator whose copy of a transactional id is stale (another gateway
// saved the id since: it paused while the id moved) cannot save over it:
// the save is refused by the filer, the copy dropped and read again. Its
// late saves once overwrote the new coordinator's state.
func TestStaleSavesRefused(t *testing.T) {
	files, log, groups := filerfstest.New(), &fakeLog{}, &fakeGroups{}
	old := start(t, files, log, groups)
	ctx := context.Background()
	pid, epoch, e := old.InitProducerID(ctx, "x", time.Minute, -1, -1)
	if e != nil {
		t.Fatal(e)
	}
	// The id moves: the new coordinator fences the producer with a new
	// epoch, while the old one still holds the id at the old epoch.
	moved := start(t, files, log, groups)
	_, newEpoch, e := moved.InitProducerID(ctx, "x", time.Minute, -1, -1)
	if e != nil || newEpoch != epoch+1 {
		t.Fatalf("init on the new coordinator: epoch %d, %v", newEpoch, e)
	}
	if e := old.AddPartitions(ctx, "x", pid, epoch, map[string][]int32{"a": {0}}); e == nil {
		t.Fatal("the stale coordinator began a transaction of a fenced producer")
	}
	var st saved
	data, _ := files.ReadFile(ctx, Dir, "x")
	if err := json.Unmarshal(data, &st); err != nil || st.Epoch != newEpoch || st.State != Empty {
		t.Fatalf("the saved state: %+v %v, want the new coordinator's (epoch %d, Empty)", st, err, newEpoch)
	}
	// Read again, the old copy knows the producer is fenced.
	if e := old.AddPartitions(ctx, "x", pid, epoch, map[string][]int32{"a": {0}}); e != kerr.ProducerFenced && e != kerr.InvalidProducerEpoch {
		t.Fatalf("the old producer after the copy was read again: %v, want it fenced", e)
	}
}

// A transactional id seeded from another cluster (a topic link's source,
// at its promotion) goes on as the same producer, its epoch raised; its
// ongoing transaction is aborted when the producer initializes; an id
// with a state here is not seeded over.
func TestSeededFromAnotherCluster(t *testing.T) {
	files, log, groups := filerfstest.New(), &fakeLog{}, &fakeGroups{}
	ctx := context.Background()
	if ok, err := Seed(ctx, files, "moved", 7000, 3, 60000, nil, 0); !ok || err != nil {
		t.Fatalf("seed: %v %v", ok, err)
	}
	if ok, err := Seed(ctx, files, "hanging", 7001, 1, 60000, map[string][]int32{"t": {0, 2}}, 1_700_000_000_000); !ok || err != nil {
		t.Fatalf("seed an ongoing one: %v %v", ok, err)
	}
	if ok, err := Seed(ctx, files, "moved", 1, 0, 60000, nil, 0); ok || err != nil {
		t.Fatalf("seeded over a state: %v %v", ok, err)
	}
	c := start(t, files, log, groups)
	pid, epoch, e := c.InitProducerID(ctx, "moved", time.Minute, -1, -1)
	if e != nil || pid != 7000 || epoch != 4 {
		t.Fatalf("init of a seeded id: producer %d epoch %d, %v; want 7000, 4", pid, epoch, e)
	}
	pid, epoch, e = c.InitProducerID(ctx, "hanging", time.Minute, -1, -1)
	if e != nil || pid != 7001 || epoch <= 1 {
		t.Fatalf("init of a seeded ongoing id: producer %d epoch %d, %v", pid, epoch, e)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	aborted := map[int32]bool{}
	for _, m := range log.markers {
		if m.topic == "t" && m.pid == 7001 && !m.commit {
			aborted[m.part] = true
		}
	}
	if !aborted[0] || !aborted[2] || len(log.markers) != 2 {
		t.Fatalf("markers %+v, want aborts of t/0 and t/2", log.markers)
	}
}
