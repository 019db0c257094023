package share

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/waitfor"
)

// clock is a settable time for the store's locks.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) get() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func newTestStore(t *testing.T, files *filerfstest.Files, lock time.Duration, limit int16) (*Store, *clock) {
	t.Helper()
	limits := DefaultLimits
	limits.LockDuration, limits.MinLockDuration, limits.DeliveryLimit = lock, time.Millisecond, limit
	s := NewStore(files, NewConfigs(files, limits))
	c := &clock{now: time.Unix(1000, 0)}
	s.now = c.get
	t.Cleanup(s.Close)
	return s, c
}

func startAt(o int64) func(context.Context, Reset) (int64, error) {
	return func(context.Context, Reset) (int64, error) { return o, nil }
}

var key = Key{Group: "g", Topic: "t", Partition: 0}

var tid = [16]byte{1}

// A share-partition acquires records for one member at a time, skips
// those others hold, gets them acknowledged only by their member, moves
// its start past what is done, and archives a record delivered the most
// times instead of releasing it.
func TestPartitionAcquireAcknowledge(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestStore(t, filerfstest.New(), time.Hour, 2)
	p, err := s.Partition(ctx, key, tid, 1, startAt(10))
	if err != nil {
		t.Fatal(err)
	}
	if from, ok := p.NextOffset(); from != 10 || !ok {
		t.Fatalf("next offset %d %v, want 10", from, ok)
	}
	a := p.Acquire("m1", 10, 15, 3, 0, nil) // 10..12
	if !slices.Equal(a, []Range{{10, 12, 1}}) {
		t.Fatalf("m1 acquired %v", a)
	}
	b := p.Acquire("m2", 10, 15, 10, 1, nil) // 13, 14, one to a range
	if !slices.Equal(b, []Range{{13, 13, 1}, {14, 14, 1}}) {
		t.Fatalf("m2 acquired %v", b)
	}
	if e := p.Acknowledge(ctx, "m2", []Ack{{10, 10, []int8{AckAccept}}}); e != kerr.InvalidRecordState {
		t.Fatalf("m2 acknowledging m1's record: %v", e)
	}
	if e := p.Acknowledge(ctx, "m1", []Ack{{10, 20, []int8{AckAccept}}}); e != kerr.InvalidRequest {
		t.Fatalf("acknowledging past the records in flight: %v", e)
	}
	// m1 accepts 10, rejects 11, releases 12.
	if e := p.Acknowledge(ctx, "m1", []Ack{{10, 12, []int8{AckAccept, AckReject, AckRelease}}}); e != nil {
		t.Fatal(e)
	}
	if p.Start() != 12 {
		t.Fatalf("start %d after 10 and 11 are done, want 12", p.Start())
	}
	if from, _ := p.NextOffset(); from != 12 {
		t.Fatalf("next offset %d, want the released 12", from)
	}
	// 12 comes again, its second delivery; released once more it is
	// archived (the limit is 2).
	if c := p.Acquire("m1", 12, 13, 10, 0, nil); !slices.Equal(c, []Range{{12, 12, 2}}) {
		t.Fatalf("redelivery %v", c)
	}
	if e := p.Acknowledge(ctx, "m1", []Ack{{12, 12, []int8{AckRelease}}}); e != nil {
		t.Fatal(e)
	}
	if p.Start() != 13 {
		t.Fatalf("start %d: 12 delivered the most times is archived, want 13", p.Start())
	}
	// m2's records: done by its member only; the start goes past them.
	if e := p.Acknowledge(ctx, "m2", []Ack{{13, 14, []int8{AckAccept}}}); e != nil {
		t.Fatal(e)
	}
	if p.Start() != 15 {
		t.Fatalf("start %d, want 15", p.Start())
	}
	// Acknowledging what is done already (before the start) is no error.
	if e := p.Acknowledge(ctx, "m2", []Ack{{13, 14, []int8{AckAccept}}}); e != nil {
		t.Fatalf("acknowledging before the start: %v", e)
	}
}

// A record whose lock runs out goes back (its delivery count kept), and
// is archived once it was delivered the most times; renewing a lock keeps
// the record.
func TestPartitionLocksExpire(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestStore(t, filerfstest.New(), 50*time.Millisecond, 2)
	s.now = time.Now
	p, err := s.Partition(ctx, key, tid, 1, startAt(0))
	if err != nil {
		t.Fatal(err)
	}
	p.Acquire("m1", 0, 2, 10, 0, nil)
	waitFor(t, "the locks to run out", func() bool { from, _ := p.NextOffset(); return from == 0 })
	if again := p.Acquire("m2", 0, 2, 10, 0, nil); !slices.Equal(again, []Range{{0, 1, 2}}) {
		t.Fatalf("after the lock ran out: %v", again)
	}
	// m2 renews 0 again and again; 1 runs out: the second delivery was
	// the last, so it is archived.
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		if e := p.Acknowledge(ctx, "m2", []Ack{{0, 0, []int8{AckRenew}}}); e != nil {
			t.Fatalf("renewing: %v", e)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if e := p.Acknowledge(ctx, "m2", []Ack{{1, 1, []int8{AckAccept}}}); e != kerr.InvalidRecordState {
		t.Fatalf("accepting a record whose lock ran out: %v", e)
	}
	if e := p.Acknowledge(ctx, "m2", []Ack{{0, 0, []int8{AckAccept}}}); e != nil {
		t.Fatalf("accepting the renewed record: %v", e)
	}
	if p.Start() != 2 {
		t.Fatalf("start %d: 0 accepted and 1 archived, want 2", p.Start())
	}
}

// The share-partition is saved at each acknowledgement: another gateway
// (a new store on the same files, in a later term) starts where it was,
// acquired records available again with their delivery counts; the old
// one's next write is refused and its copy dropped.
func TestPartitionSavedAndFenced(t *testing.T) {
	ctx := context.Background()
	files := filerfstest.New()
	s1, _ := newTestStore(t, files, time.Hour, 5)
	p1, err := s1.Partition(ctx, key, tid, 1, startAt(100))
	if err != nil {
		t.Fatal(err)
	}
	p1.Acquire("m1", 100, 110, 10, 0, nil)
	if e := p1.Acknowledge(ctx, "m1", []Ack{{100, 104, []int8{AckAccept}}}); e != nil {
		t.Fatal(e)
	}
	s2, _ := newTestStore(t, files, time.Hour, 5)
	p2, err := s2.Partition(ctx, key, tid, 2, startAt(0))
	if err != nil {
		t.Fatal(err)
	}
	if p2.Start() != 105 {
		t.Fatalf("the new leader starts at %d, want 105", p2.Start())
	}
	if got := p2.Acquire("m2", 105, 112, 10, 0, nil); !slices.Equal(got, []Range{{105, 109, 2}, {110, 111, 1}}) {
		t.Fatalf("the new leader acquired %v: m1's 105-109 a second time, then new ones", got)
	}
	if e := p2.Acknowledge(ctx, "m2", []Ack{{105, 105, []int8{AckAccept}}}); e != nil {
		t.Fatal(e)
	}
	if e := p1.Acknowledge(ctx, "m1", []Ack{{105, 105, []int8{AckAccept}}}); e != kerr.NotLeaderForPartition {
		t.Fatalf("the old leader's write: %v", e)
	}
	offs, err := s2.TopicOffsets(ctx, "g", "t")
	if err != nil || len(offs) != 1 || offs[0].StartOffset != 106 {
		t.Fatalf("saved offsets %+v %v, want start 106", offs, err)
	}
}

// CheckAcks refuses what Kafka refuses.
func TestCheckAcks(t *testing.T) {
	for _, tc := range []struct {
		acks    []Ack
		version int16
		renew   bool
		ok      bool
	}{
		{[]Ack{{0, 3, []int8{1}}, {4, 5, []int8{2, 3}}}, 1, false, true},
		{[]Ack{{3, 0, []int8{1}}}, 1, false, false},                    // first past last
		{[]Ack{{0, 3, []int8{1}}, {2, 5, []int8{1}}}, 1, false, false}, // overlapping
		{[]Ack{{0, 3, nil}}, 1, false, false},                          // no type
		{[]Ack{{0, 3, []int8{1, 1}}}, 1, false, false},                 // types of another count
		{[]Ack{{0, 0, []int8{5}}}, 2, false, false},                    // unknown type
		{[]Ack{{0, 0, []int8{4}}}, 2, false, false},                    // renew outside a renewal
		{[]Ack{{0, 0, []int8{4}}}, 1, true, false},                     // renew before v2
		{[]Ack{{0, 0, []int8{4}}}, 2, true, true},
	} {
		if got := CheckAcks(tc.acks, tc.version, tc.renew); got != tc.ok {
			t.Errorf("%+v v%d renew %v: %v, want %v", tc.acks, tc.version, tc.renew, got, tc.ok)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitfor.True(t, 5*time.Second, what, cond)
}

// A topic deleted and created again under its name (a new id) starts its
// share-partitions afresh, whatever the old one's were; a released
// partition (its leadership gone) is read from the filer again.
func TestPartitionOfATopicCreatedAgain(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestStore(t, filerfstest.New(), time.Hour, 5)
	p, err := s.Partition(ctx, key, tid, 1, startAt(50))
	if err != nil {
		t.Fatal(err)
	}
	p.Acquire("m", 50, 60, 10, 0, nil)
	if e := p.Acknowledge(ctx, "m", []Ack{{50, 59, []int8{AckAccept}}}); e != nil {
		t.Fatal(e)
	}
	s.Release("t", 0)
	if again, err := s.Partition(ctx, key, tid, 1, startAt(0)); err != nil || again == p || again.Start() != 60 {
		t.Fatalf("after a release: %v, start %d, want a copy read again at 60", err, again.Start())
	}
	renewed, err := s.Partition(ctx, key, [16]byte{2}, 1, startAt(0))
	if err != nil || renewed.Start() != 0 {
		t.Fatalf("the topic created again: %v, start %d, want 0", err, renewed.Start())
	}
}

// Idle drops what is held of a group's share-partitions no member holds
// records of (they are read again from the filer), and keeps the others.
func TestIdleDropsWhatNobodyHolds(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestStore(t, filerfstest.New(), time.Hour, 5)
	free, _ := s.Partition(ctx, key, tid, 1, startAt(0))
	heldKey := Key{Group: "g", Topic: "t", Partition: 1}
	held, _ := s.Partition(ctx, heldKey, tid, 1, startAt(0))
	held.Acquire("m", 0, 3, 10, 0, nil)
	s.Idle("g")
	if got := s.Held([]Key{key, heldKey}); len(got) != 1 || got[0] != held {
		t.Fatalf("held after Idle: %v, want only the partition with acquired records", got)
	}
	if !free.isDropped() {
		t.Fatal("the dropped copy still answers")
	}
}
