package membership

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
)

// fakeFiler keeps files and locks in memory, with locks expiring on the
// test's clock; down makes every call fail, as a filer cut off.
type fakeFiler struct {
	mu    sync.Mutex
	files *filerfstest.Files
	locks *filerfstest.Locks
	down  map[string]bool // by lock owner prefix (gateway address)
	// beforeWrite, if set, runs before each conditional write (another
	// gateway's write landing first).
	beforeWrite func(addr, name string)
}

func newFakeFiler(now func() time.Time) *fakeFiler {
	return &fakeFiler{files: filerfstest.New(), locks: filerfstest.NewLocks(now), down: map[string]bool{}}
}

var errDown = errors.New("filer unreachable")

// filerFor is the filer as the gateway at addr reaches it.
type filerFor struct {
	*fakeFiler
	addr string
}

func (f filerFor) cut() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down[f.addr]
}

func (f filerFor) ReadFile(ctx context.Context, dir, name string) ([]byte, error) {
	if f.cut() {
		return nil, errDown
	}
	return f.files.ReadFile(ctx, dir, name)
}

func (f filerFor) WriteFile(ctx context.Context, dir, name string, data []byte) error {
	if f.cut() {
		return errDown
	}
	return f.files.WriteFile(ctx, dir, name, data)
}

func (f filerFor) ReadFileVersion(ctx context.Context, dir, name string) ([]byte, string, error) {
	if f.cut() {
		return nil, "", errDown
	}
	return f.files.ReadFileVersion(ctx, dir, name)
}

func (f filerFor) WriteFileIf(ctx context.Context, dir, name string, data []byte, version string) (string, error) {
	if f.cut() {
		return "", errDown
	}
	if f.beforeWrite != nil {
		f.beforeWrite(f.addr, name)
	}
	return f.files.WriteFileIf(ctx, dir, name, data, version)
}

func (f filerFor) RemoveIf(ctx context.Context, dir, name, version string) error {
	if f.cut() {
		return errDown
	}
	return f.files.RemoveIf(ctx, dir, name, version)
}

func (f filerFor) ListFiles(ctx context.Context, dir string) ([]filerfs.File, error) {
	if f.cut() {
		return nil, errDown
	}
	return f.files.ListFiles(ctx, dir)
}

func (f filerFor) Remove(ctx context.Context, dir, name string) error {
	if f.cut() {
		return errDown
	}
	return f.files.Remove(ctx, dir, name)
}

func (f filerFor) Lock(ctx context.Context, name, owner, token string, ttl time.Duration) (string, error) {
	if f.cut() {
		return "", errDown
	}
	return f.locks.Lock(ctx, name, owner, token, ttl)
}

func (f filerFor) Unlock(ctx context.Context, name, token string) error {
	if f.cut() {
		return errDown
	}
	return f.locks.Unlock(ctx, name, token)
}

func (f filerFor) LockOwner(ctx context.Context, name string) (string, error) {
	if f.cut() {
		return "", errDown
	}
	return f.locks.LockOwner(ctx, name)
}

type cluster struct {
	t     *testing.T
	clock time.Time
	filer *fakeFiler
	gws   []*Membership
}

func newCluster(t *testing.T, n int) *cluster {
	c := &cluster{t: t, clock: time.Unix(1_000_000, 0)}
	c.filer = newFakeFiler(func() time.Time { return c.clock })
	for i := 0; i < n; i++ {
		c.add(i)
	}
	return c
}

func (c *cluster) add(i int) *Membership {
	self := Member{NodeID: int32(i + 1), Host: "127.0.0.1", Port: int32(9092 + i)}
	m := New(Options{Self: self, Filer: filerFor{c.filer, self.Addr()}, now: func() time.Time { return c.clock }})
	if i < len(c.gws) {
		c.gws[i] = m
	} else {
		c.gws = append(c.gws, m)
	}
	return m
}

// step advances the clock by a poll and polls every live gateway.
func (c *cluster) step(dead ...int) {
	c.clock = c.clock.Add(DefaultPoll)
	for i, m := range c.gws {
		if contains(dead, i) {
			continue
		}
		m.poll(context.Background())
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// servers returns which gateways serve key now.
func (c *cluster) servers(key string, dead ...int) []int {
	var out []int
	for i, m := range c.gws {
		if contains(dead, i) {
			continue
		}
		if _, ok := m.Serving(key); ok {
			out = append(out, i)
		}
	}
	return out
}

var keys = func() []string {
	var ks []string
	for p := int32(0); p < 64; p++ {
		ks = append(ks, PartitionKey("t", p))
	}
	return append(ks, GroupKey("g1"), GroupKey("g2"), TxnKey("tx"))
}()

// checkOneServer fails if a key is served by more than one gateway, and
// returns how many keys are served by none.
func (c *cluster) checkOneServer(dead ...int) (unserved int) {
	c.t.Helper()
	for _, k := range keys {
		s := c.servers(k, dead...)
		if len(s) > 1 {
			c.t.Fatalf("at %v key %q served by gateways %v", c.clock, k, s)
		}
		if len(s) == 0 {
			unserved++
		}
	}
	return unserved
}

func TestJoinSettleAndAgree(t *testing.T) {
	c := newCluster(t, 3)
	for i := 0; i < 3; i++ {
		c.step()
		c.checkOneServer()
	}
	// All three in the view; after Settle every key has one server.
	for i := 0; i < 4; i++ {
		c.step()
		c.checkOneServer()
	}
	if n := c.checkOneServer(); n != 0 {
		t.Fatalf("%d keys unserved after settling", n)
	}
	for _, m := range c.gws {
		if err := m.Ready(); err != nil {
			t.Fatalf("node %d not ready: %v", m.opts.Self.NodeID, err)
		}
		if got := len(m.Members()); got != 3 {
			t.Fatalf("node %d sees %d members", m.opts.Self.NodeID, got)
		}
	}
	// Every gateway names the same owner for every key.
	owners := map[int]int{}
	for _, k := range keys {
		want, _, _ := c.gws[0].Owner(k)
		for _, m := range c.gws[1:] {
			if got, _, _ := m.Owner(k); got != want {
				t.Fatalf("key %q: owner %v and %v", k, want, got)
			}
		}
		owners[int(want.NodeID)]++
	}
	if len(owners) != 3 {
		t.Fatalf("keys spread over %d gateways: %v", len(owners), owners)
	}
}

func TestDeathMovesKeysWithoutOverlap(t *testing.T) {
	c := newCluster(t, 3)
	for i := 0; i < 8; i++ {
		c.step()
	}
	epoch := c.gws[0].Epoch()
	before := map[string]int32{}
	beforeEpoch := map[string]int64{}
	for _, k := range keys {
		o, e, _ := c.gws[0].Owner(k)
		before[k], beforeEpoch[k] = o.NodeID, e
	}
	// Gateway 1 (the controller, lowest id) dies without a goodbye.
	dead := 0
	for i := 0; i < 15; i++ {
		c.step(dead)
		c.checkOneServer(dead)
	}
	if n := c.checkOneServer(dead); n != 0 {
		t.Fatalf("%d keys unserved after failover", n)
	}
	if c.gws[1].Epoch() <= epoch {
		t.Fatalf("epoch %d did not grow past %d", c.gws[1].Epoch(), epoch)
	}
	// Only the dead gateway's keys moved, and only their epochs grew; the
	// live gateways agree on them.
	for _, k := range keys {
		o, e, _ := c.gws[1].Owner(k)
		if _, e2, _ := c.gws[2].Owner(k); e2 != e {
			t.Fatalf("key %q: epochs %d and %d", k, e, e2)
		}
		if before[k] != 1 && (o.NodeID != before[k] || e != beforeEpoch[k]) {
			t.Fatalf("key %q moved from live node %d to %d, epoch %d to %d", k, before[k], o.NodeID, beforeEpoch[k], e)
		}
		if before[k] == 1 && e <= beforeEpoch[k] {
			t.Fatalf("key %q moved from the dead node with epoch %d, had %d", k, e, beforeEpoch[k])
		}
		if o.NodeID == 1 {
			t.Fatalf("key %q still owned by the dead node", k)
		}
	}
	// It comes back at the same address: it waits for its old lock, then
	// takes its keys back, never overlapping.
	c.add(dead)
	for i := 0; i < 15; i++ {
		c.step()
		c.checkOneServer()
	}
	if n := c.checkOneServer(); n != 0 {
		t.Fatalf("%d keys unserved after the return", n)
	}
	for _, k := range keys {
		if o, _, _ := c.gws[2].Owner(k); o.NodeID != before[k] {
			t.Fatalf("key %q owned by %d after the return, %d before", k, o.NodeID, before[k])
		}
	}
}

func TestCutOffGatewayStopsBeforeTakeover(t *testing.T) {
	c := newCluster(t, 3)
	for i := 0; i < 8; i++ {
		c.step()
	}
	// Gateway 3 loses the filer but keeps running and answering.
	c.filer.mu.Lock()
	c.filer.down[c.gws[2].opts.Self.Addr()] = true
	c.filer.mu.Unlock()
	for i := 0; i < 15; i++ {
		c.step()
		c.checkOneServer()
	}
	if err := c.gws[2].Ready(); err == nil {
		t.Fatal("a gateway cut off from the filer says it is ready")
	}
	if n := c.checkOneServer(); n != 0 {
		t.Fatalf("%d keys unserved after the others took over", n)
	}
}

func TestTermChangesWhenOwnershipBreaks(t *testing.T) {
	c := newCluster(t, 2)
	for i := 0; i < 8; i++ {
		c.step()
	}
	// A key that gateway 1 owns with two gateways and keeps with three.
	var key string
	var term int64
	for _, k := range keys {
		if tm, ok := c.gws[0].Serving(k); ok {
			key, term = k, tm
			break
		}
	}
	if key == "" {
		t.Fatal("gateway 1 serves nothing")
	}
	// Gateway 2 leaves for good: gateway 1's key keeps its term.
	c.gws[1].Close()
	for i := 0; i < 8; i++ {
		c.step(1)
	}
	if tm, ok := c.gws[0].Serving(key); !ok || tm != term {
		t.Fatalf("key %q: serving %v term %d, want term %d kept", key, ok, tm, term)
	}
	// Views read with a gap say themselves whether the owner stayed a
	// member (Since): one that left and came back in the gap starts a new
	// term after it.
	m := c.gws[0]
	m.mu.Lock()
	last := m.history[len(m.history)-1]
	last.view.Epoch += 2
	last.view.Since = maps.Clone(last.view.Since)
	last.view.Since[m.opts.Self.NodeID] = last.view.Epoch
	last.seen = c.clock
	m.history = append(m.history, last)
	m.mu.Unlock()
	if _, ok := m.Serving(key); ok {
		t.Fatal("served right after a gap in the views")
	}
	c.clock = c.clock.Add(DefaultSettle)
	m.mu.Lock()
	m.readAt, m.leaseEnd = c.clock, c.clock.Add(time.Second)
	m.mu.Unlock()
	if tm, ok := m.Serving(key); !ok || tm != last.view.Epoch {
		t.Fatalf("after the gap and Settle: serving %v term %d, want term %d", ok, tm, last.view.Epoch)
	}
}

// announce is what the poll loop does after each poll and at each
// deadline nextChangeLocked names.
func announce(m *Membership) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.announceLocked()
	return m.nextChangeLocked(m.opts.now())
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Changed is closed at every change of what Serving answers, and only
// then: a new view, a view held for the settle time, the lease going
// stale. The coordinators react to it instead of polling Serving.
func TestChangedAnnounces(t *testing.T) {
	c := newCluster(t, 1)
	m := c.gws[0]
	key := GroupKey("g1")
	ch := m.Changed()
	c.step()
	c.step() // the first poll writes the view, the second reads it
	announce(m)
	if !closed(ch) {
		t.Fatal("no announcement of the first view")
	}
	ch = m.Changed()
	if announce(m); closed(ch) {
		t.Fatal("announced with nothing changed")
	}
	if _, ok := m.Serving(key); ok {
		t.Fatal("serving before the settle time")
	}
	// The next change comes with time alone: the settle time of the view.
	wait := announce(m)
	if wait <= 0 || wait > DefaultSettle+time.Millisecond {
		t.Fatalf("next change in %v, want within the settle time %v", wait, DefaultSettle)
	}
	for i := 0; i < int(DefaultSettle/DefaultPoll); i++ {
		c.step()
	}
	announce(m)
	if !closed(ch) {
		t.Fatal("no announcement once the view settled")
	}
	if _, ok := m.Serving(key); !ok {
		t.Fatal("not serving after the settle time")
	}
	// No poll succeeds for longer than the view lease: serving stops,
	// and that is announced too.
	ch = m.Changed()
	c.clock = c.clock.Add(DefaultViewLease)
	announce(m)
	if !closed(ch) {
		t.Fatal("no announcement when the view went stale")
	}
	if _, ok := m.Serving(key); ok {
		t.Fatal("serving on a stale view")
	}
}

// A gateway restarted with other listeners is not ready while the view
// still names it with the old ones (the view's writer died and its lock
// has not run out): clients told those addresses got "connection refused".
// It is once a view with its listeners is written.
func TestRestartedWithOtherListenersReadyOnceTheViewHasThem(t *testing.T) {
	c := newCluster(t, 2)
	for i := 0; i < 6; i++ {
		c.step()
	}
	if err := c.gws[1].Ready(); err != nil {
		t.Fatalf("before the restart: %v", err)
	}
	// Node 1 (the view's writer) dies; node 2 restarts on other ports.
	old := c.gws[1].opts.Self
	self := old
	self.Listeners = "PLAINTEXT://127.0.0.1:9093,SASL_PLAINTEXT://127.0.0.1:9999"
	c.gws[1].Close()
	c.gws[1] = New(Options{Self: self, Filer: filerFor{c.filer, self.Addr()}, now: func() time.Time { return c.clock }})
	for i := 0; i < 4; i++ { // past the settle time, within node 1's lock TTL
		c.step(0)
		if err := c.gws[1].Ready(); err == nil {
			t.Fatalf("ready %d s after the restart with the view naming its old listeners", i+1)
		}
		// What it tells clients of itself is what it is, whatever the view says.
		for _, m := range c.gws[1].Members() {
			if m.NodeID == self.NodeID && m != self {
				t.Fatalf("members name the restarted gateway %+v, want %+v", m, self)
			}
		}
	}
	deadline := 20
	for c.gws[1].Ready() != nil {
		if deadline--; deadline == 0 {
			t.Fatalf("never ready: %v", c.gws[1].Ready())
		}
		c.step(0)
	}
	c.gws[1].mu.RLock()
	ms := c.gws[1].history[len(c.gws[1].history)-1].view.Members
	c.gws[1].mu.RUnlock()
	if len(ms) != 1 || ms[0] != self {
		t.Fatalf("the view's members %+v, want only the restarted gateway as it is", ms)
	}
}

// A view written over one written since it was read (a write sent before
// a cut lands after the view lock expired and another gateway wrote the
// next views) is refused: the epoch never goes back, so a term, a view's
// epoch, is never given to two owners of one key.
func TestViewWriteRefusedOverALaterView(t *testing.T) {
	c := newCluster(t, 2)
	for i := 0; i < 6; i++ {
		c.step()
	}
	before, err := c.gws[0].readView(context.Background())
	if err != nil || len(before.Members) != 2 {
		t.Fatalf("view %+v, %v: want both gateways in it", before, err)
	}
	// Gateway 1 writes the view for a third gateway; before its write
	// lands, gateway 2 writes two views (the third's, then one without
	// it), each epoch up by one.
	third := Member{NodeID: 3, Host: "127.0.0.1", Port: 9094}
	later := before.next(append(slices.Clone(before.Members), third))
	later = later.next(before.Members)
	c.filer.beforeWrite = func(addr, name string) {
		c.filer.beforeWrite = nil
		data, _ := json.Marshal(later)
		if err := c.filer.files.WriteFile(context.Background(), viewDir, viewFile, data); err != nil {
			t.Error(err)
		}
	}
	err = c.gws[0].writeView(context.Background(), append(slices.Clone(before.Members), third))
	if !errors.Is(err, filerfs.ErrChanged) {
		t.Fatalf("the late write: %v, want it refused", err)
	}
	got, err := c.gws[0].readView(context.Background())
	if err != nil || got.Epoch != before.Epoch+2 || len(got.Members) != 2 {
		t.Fatalf("view epoch %d with %d members (%v), want the later view's, epoch %d", got.Epoch, len(got.Members), err, before.Epoch+2)
	}
}
