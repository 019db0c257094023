package e2e

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupFranz: franz-go members share a topic, eagerly (range) and
// cooperatively (cooperative-sticky) with the classic protocol, and with
// the consumer group protocol of KIP-848 (kgo.ServerSideBalancer, six
// partitions). Two members, then a third while records keep coming; one
// leaves cleanly and its partitions move at once; one crashes with records
// consumed but not committed, and the survivor takes its partitions once
// its session expires, resuming exactly at its last commit. No partition
// is ever owned by two members at once; every record is consumed, none
// twice except the crashed member's uncommitted ones, and the commits end
// at the high watermarks.
func TestGroupFranz(t *testing.T) {
	for _, tc := range []struct {
		name       string
		partitions int32
		opts       []kgo.Opt
	}{
		{"eager-range", 4, []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}},
		{"cooperative-sticky", 4, []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}},
		{"kip-848", 6, []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := newTopic(t)
			group := topic + "-group"
			parts := int(tc.partitions)
			createTopic(t, topic, tc.partitions, nil)
			produced := map[int32][]string{}
			produceBatch(t, topic, 0, 400, produced)
			for p := int32(0); p < tc.partitions; p++ {
				if len(produced[p]) == 0 {
					t.Fatalf("no record in partition %d: the keys must reach every partition", p)
				}
			}
			log := &consumedLog{}
			start := func(name string) *franzMember {
				return startMember(t, name, group, topic, log, tc.opts...)
			}

			// Two members, then a third while more records come.
			m1 := start("m1")
			m2 := start("m2")
			waitAssigned(t, parts, m1, m2)
			m3 := start("m3")
			produceBatch(t, topic, 400, 400, produced)
			waitAssigned(t, parts, m1, m2, m3)
			waitGroup(t, group, topic, "Stable", m1, m2, m3)
			waitConsumed(t, log, produced)
			waitCommitted(t, group, topic, highWatermarks(t, topic, produced))

			// m1 leaves cleanly: its partitions move without waiting for
			// its session to expire.
			leaving := time.Now()
			m1.leave()
			waitAssigned(t, parts, m2, m3)
			if took := time.Since(leaving); took >= groupSession {
				t.Errorf("m1's partitions moved %v after it left, not before its %v session would expire: LeaveGroup had no effect", took, groupSession)
			}
			waitGroup(t, group, topic, "Stable", m2, m3)

			// m2 consumes records without committing them, then crashes.
			m2.noCommit.Store(true)
			produceBatch(t, topic, 800, 400, produced)
			eventually(t, 30*time.Second, "m2 consumes records it does not commit", func() error {
				if m2.uncommitted.Load() == 0 {
					return errors.New("none yet")
				}
				return nil
			})
			ownedAtCrash := m2.ownedSet() // before the crash: closing clears it
			crashed := m2.crash()
			crashSeq := len(log.snapshot())
			commitAtCrash, err := committed(ctxT(t), kadm.NewClient(newClient(t)), group, topic)
			if err != nil {
				t.Fatal(err)
			}

			// m3 takes over m2's partitions when m2's session expires, and
			// not before: a member is not dropped because its connections
			// closed.
			waitAssigned(t, parts, m3)
			took := time.Since(crashed)
			if took < groupSession-groupHeartbeat-time.Second {
				t.Errorf("m2's partitions moved %v after it crashed, before its %v session expired", took, groupSession)
			}
			if took > groupSession+10*time.Second {
				t.Errorf("m2's partitions moved only %v after it crashed (session %v)", took, groupSession)
			}
			waitGroup(t, group, topic, "Stable", m3)
			waitConsumed(t, log, produced)
			hwm := highWatermarks(t, topic, produced)
			waitCommitted(t, group, topic, hwm)

			// Only m2's uncommitted records came twice: first to m2, then
			// to m3 after the crash. m3 resumed each of m2's partitions
			// exactly at m2's last commit.
			recs := log.snapshot()
			seen, _ := byRecord(t, recs, produced)
			for at, cs := range seen {
				redelivery := cs[0].member == "m2" && ownedAtCrash[at.partition] && at.offset >= commitAtCrash[at.partition]
				switch {
				case len(cs) == 1 && redelivery:
					t.Errorf("%d/%d: consumed by m2 after its last commit (%d), never again after the crash", at.partition, at.offset, commitAtCrash[at.partition])
				case len(cs) > 1 && !(redelivery && len(cs) == 2 && cs[1].seq >= crashSeq):
					t.Errorf("%d/%d consumed %d times: %+v", at.partition, at.offset, len(cs), cs)
				}
			}
			for p := range ownedAtCrash {
				if commitAtCrash[p] >= hwm[p] {
					continue
				}
				first := int64(-1)
				for _, c := range recs[crashSeq:] {
					if c.partition == p {
						first = c.offset
						break
					}
				}
				if first != commitAtCrash[p] {
					t.Errorf("partition %d: consumption resumed at %d after the crash, want m2's last commit %d", p, first, commitAtCrash[p])
				}
			}
			noFailures(t, m1, m3)
			log.noOverlaps(t)

			// The last member leaves: the group is Empty and keeps its
			// commits.
			m3.leave()
			waitGroup(t, group, topic, "Empty")
			waitCommitted(t, group, topic, hwm)
		})
	}
}

// TestGroupCommitRestart: commits survive a gateway restart, for a new
// member and for a member that stays up across it.
func TestGroupCommitRestart(t *testing.T) {
	t.Run("new-member", func(t *testing.T) {
		topic := newTopic(t)
		group := topic + "-group"
		createTopic(t, topic, 4, nil)
		produced := map[int32][]string{}
		produceBatch(t, topic, 0, 400, produced)

		// A member reads half the records, commits them synchronously and
		// leaves.
		cl, done := groupClient(t, "first", group, topic)
		next := map[int32]int64{}
		for _, r := range pollN(t, cl, 200) {
			if r.Offset != next[r.Partition] || string(r.Value) != produced[r.Partition][r.Offset] {
				t.Fatalf("partition %d: %q at %d, want offset %d", r.Partition, r.Value, r.Offset, next[r.Partition])
			}
			next[r.Partition] = r.Offset + 1
		}
		if err := cl.CommitUncommittedOffsets(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		done()
		waitCommitted(t, group, topic, next)

		restartGateway(t)
		waitCommitted(t, group, topic, next)

		// A new member resumes at the commits: no record lost, none read
		// again.
		cl, done = groupClient(t, "second", group, topic)
		resumed := maps.Clone(next)
		for _, r := range pollN(t, cl, 200) {
			if r.Offset != resumed[r.Partition] || string(r.Value) != produced[r.Partition][r.Offset] {
				t.Fatalf("partition %d: %q at %d, want offset %d (committed %d)", r.Partition, r.Value, r.Offset, resumed[r.Partition], next[r.Partition])
			}
			resumed[r.Partition] = r.Offset + 1
		}
		hwm := highWatermarks(t, topic, produced)
		if !maps.Equal(resumed, hwm) {
			t.Fatalf("read up to %v, high watermarks %v", resumed, hwm)
		}
		if err := cl.CommitUncommittedOffsets(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		done()
		waitCommitted(t, group, topic, hwm)
	})

	// A member rides out the restart: it reconnects, stays in the group
	// and goes on consuming. A member of a consumer group of the KIP-848
	// protocol keeps its epoch and its assignment (the group's state is
	// read from the filer by the restarted gateway).
	memberStays := func(t *testing.T, kip848 bool) {
		topic := newTopic(t)
		group := topic + "-group"
		createTopic(t, topic, 4, nil)
		produced := map[int32][]string{}
		produceBatch(t, topic, 0, 400, produced)
		log := &consumedLog{}
		var opts []kgo.Opt
		if kip848 {
			opts = []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer()}
		}
		m := startMember(t, "stayer", group, topic, log, opts...)
		waitAssigned(t, 4, m)
		waitConsumed(t, log, produced)
		waitCommitted(t, group, topic, highWatermarks(t, topic, produced))

		before, epoch, changes := m.memberID(), m.generation(), m.changeCount()
		restartGateway(t)
		produceBatch(t, topic, 400, 400, produced)
		waitConsumed(t, log, produced)
		hwm := highWatermarks(t, topic, produced)
		waitCommitted(t, group, topic, hwm)
		waitAssigned(t, 4, m)
		waitGroup(t, group, topic, "Stable", m)
		if after := m.memberID(); after != before {
			t.Logf("the member rejoined across the restart: member id %s, then %s", before, after)
		}
		if kip848 && (m.memberID() != before || m.generation() != epoch || m.changeCount() != changes) {
			t.Errorf("across the restart: member %s epoch %d, %d assignment changes; before %s epoch %d, %d changes",
				m.memberID(), m.generation(), m.changeCount(), before, epoch, changes)
		}
		// Everything was committed before the restart: nothing comes twice.
		seen, _ := byRecord(t, log.snapshot(), produced)
		for at, cs := range seen {
			if len(cs) > 1 {
				t.Errorf("%d/%d consumed %d times", at.partition, at.offset, len(cs))
			}
		}
		m.leave()
		waitGroup(t, group, topic, "Empty")
		waitCommitted(t, group, topic, hwm)
	}
	t.Run("member-stays", func(t *testing.T) { memberStays(t, false) })
	t.Run("member-stays-kip-848", func(t *testing.T) { memberStays(t, true) })
}

// TestGroupStatic: static members (instance ids). One restarted within its
// session gets its partitions back in the same generation and the other
// member notices nothing; a second process with the same instance id fences
// the first.
func TestGroupStatic(t *testing.T) {
	topic := newTopic(t)
	group := topic + "-group"
	createTopic(t, topic, 4, nil)
	produced := map[int32][]string{}
	produceBatch(t, topic, 0, 100, produced)
	log := &consumedLog{}
	static := func(id string) []kgo.Opt {
		return []kgo.Opt{kgo.InstanceID(id), kgo.SessionTimeout(10 * time.Second), kgo.Balancers(kgo.RangeBalancer())}
	}
	a := startMember(t, "static-a", group, topic, log, static("a")...)
	waitAssigned(t, 4, a)
	b := startMember(t, "static-b", group, topic, log, static("b")...)
	waitAssigned(t, 4, a, b)
	waitGroup(t, group, topic, "Stable", a, b)
	gen := a.generation()
	if b.generation() != gen {
		t.Fatalf("generations %d and %d", gen, b.generation())
	}
	aOwned, bOwned, aChanges, oldB := a.ownedSet(), b.ownedSet(), a.changeCount(), b.memberID()
	adm := kadm.NewClient(newClient(t))
	// checkStatic checks the group has a and the member with b's instance
	// id, in the same generation, with the same partitions, a untouched.
	checkStatic := func(bNow *franzMember) {
		t.Helper()
		waitAssigned(t, 4, a, bNow)
		if got := bNow.ownedSet(); !maps.Equal(got, bOwned) {
			t.Errorf("%s owns %v, instance b owned %v", bNow.name, got, bOwned)
		}
		if bNow.generation() != gen || a.generation() != gen {
			t.Errorf("generations %d and %d, want %d: the group rebalanced", a.generation(), bNow.generation(), gen)
		}
		if !maps.Equal(a.ownedSet(), aOwned) || a.changeCount() != aChanges {
			t.Errorf("a was reassigned: owns %v, owned %v", a.ownedSet(), aOwned)
		}
		waitGroup(t, group, topic, "Stable", a, bNow)
		d, err := describe(ctxT(t), adm, group)
		if err != nil || len(d.Members) != 2 {
			t.Fatalf("described %+v %v", d, err)
		}
		for i, want := range []*franzMember{a, bNow} {
			m := d.Members[i] // sorted by instance id
			if m.InstanceID == nil || *m.InstanceID != []string{"a", "b"}[i] || m.MemberID != want.memberID() {
				t.Errorf("described member %d: instance %v, member id %s; want %s", i, m.InstanceID, m.MemberID, want.memberID())
			}
		}
	}

	// b restarts within its session: it sends no LeaveGroup, and its
	// successor gets a new member id and b's partitions, without a
	// rebalance.
	b.leave()
	b2 := startMember(t, "static-b", group, topic, log, static("b")...)
	checkStatic(b2)
	if b2.memberID() == oldB {
		t.Errorf("the restarted member kept member id %s", oldB)
	}

	// Another process with instance id b (and b's client id: Kafka keeps a
	// replaced static member's client id) takes its place and fences b2.
	b3 := startMember(t, "static-b", group, topic, log, static("b")...)
	eventually(t, 20*time.Second, "b2 fenced", func() error {
		fenced := func(err error) bool { return errors.Is(err, kerr.FencedInstanceID) }
		poll, _, groupErrs := b2.failures()
		if !slices.ContainsFunc(poll, fenced) || !slices.ContainsFunc(groupErrs, fenced) {
			return fmt.Errorf("poll errors %v, group errors %v", poll, groupErrs)
		}
		if owned := b2.ownedSet(); len(owned) != 0 {
			return fmt.Errorf("b2 still owns %v", owned)
		}
		return nil
	})
	checkStatic(b3)

	// The group goes on consuming.
	produceBatch(t, topic, 100, 100, produced)
	waitConsumed(t, log, produced)
	noFailures(t, a, b3)
}
