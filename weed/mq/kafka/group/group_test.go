package group

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership/membershiptest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/waitfor"
)

func newCoordinator(t *testing.T, files *filerfstest.Files) *Coordinator {
	t.Helper()
	c := New(Options{
		Store:                 offset.NewStore(files),
		InitialRebalanceDelay: 20 * time.Millisecond,
		MinSessionTimeout:     10 * time.Millisecond,
	})
	c.Start()
	t.Cleanup(c.Close)
	return c
}

type joiner struct {
	c        *Coordinator
	group    string
	id       string
	instance *string
	session  int32
	meta     string
}

func (j *joiner) joinAsync(t *testing.T) chan *kmsg.JoinGroupResponse {
	out := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		for {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Version = 9
			req.Group, req.MemberID, req.InstanceID = j.group, j.id, j.instance
			req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = j.session, 2000
			req.ProtocolType = "consumer"
			req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte(j.meta)}}
			resp, e := j.c.JoinGroup(context.Background(), req, Client{ID: "test", Host: "/127.0.0.1"})
			if e != nil {
				resp = JoinError(req, e)
			}
			if resp.ErrorCode == kerr.MemberIDRequired.Code {
				j.id = resp.MemberID
				continue
			}
			if resp.ErrorCode == 0 {
				j.id = resp.MemberID
			}
			out <- resp
			return
		}
	}()
	return out
}

func (j *joiner) join(t *testing.T) *kmsg.JoinGroupResponse {
	t.Helper()
	select {
	case r := <-j.joinAsync(t):
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("JoinGroup did not return")
		return nil
	}
}

func (j *joiner) sync(t *testing.T, gen int32, assign map[string]string) *kmsg.SyncGroupResponse {
	t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.Generation, req.MemberID, req.InstanceID = j.group, gen, j.id, j.instance
	for m, a := range assign {
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte(a)})
	}
	resp, e := j.c.SyncGroup(context.Background(), req)
	if e != nil {
		return SyncError(req, e)
	}
	return resp
}

func (j *joiner) heartbeat(gen int32) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.Generation, req.MemberID, req.InstanceID = j.group, gen, j.id, j.instance
	if e := j.c.Heartbeat(context.Background(), req); e != nil {
		return e.Code
	}
	return 0
}

func TestJoinSyncHeartbeat(t *testing.T) {
	c := newCoordinator(t, filerfstest.New())
	a := &joiner{c: c, group: "g", session: 5000, meta: "a"}
	b := &joiner{c: c, group: "g", session: 5000, meta: "b"}
	ra, rb := a.joinAsync(t), b.joinAsync(t)
	ja, jb := <-ra, <-rb
	if ja.ErrorCode != 0 || jb.ErrorCode != 0 {
		t.Fatalf("join errors %d %d", ja.ErrorCode, jb.ErrorCode)
	}
	if ja.Generation != 1 || jb.Generation != 1 || ja.LeaderID != jb.LeaderID {
		t.Fatalf("generations %d %d, leaders %s %s", ja.Generation, jb.Generation, ja.LeaderID, jb.LeaderID)
	}
	leader, follower := a, b
	lresp := ja
	if ja.LeaderID != a.id {
		leader, follower, lresp = b, a, jb
	}
	if len(lresp.Members) != 2 {
		t.Fatalf("leader got %d members", len(lresp.Members))
	}
	// The follower's sync waits for the leader's.
	fsync := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { fsync <- follower.sync(t, 1, nil) }()
	time.Sleep(20 * time.Millisecond)
	if code := follower.heartbeat(1); code != 0 {
		t.Fatalf("heartbeat while completing: %v", kerr.ErrorForCode(code))
	}
	ls := leader.sync(t, 1, map[string]string{leader.id: "L", follower.id: "F"})
	fs := <-fsync
	if ls.ErrorCode != 0 || string(ls.MemberAssignment) != "L" || fs.ErrorCode != 0 || string(fs.MemberAssignment) != "F" {
		t.Fatalf("sync: leader %d %q, follower %d %q", ls.ErrorCode, ls.MemberAssignment, fs.ErrorCode, fs.MemberAssignment)
	}
	if code := leader.heartbeat(0); code != kerr.IllegalGeneration.Code {
		t.Fatalf("stale generation heartbeat: %v", kerr.ErrorForCode(code))
	}
	if code := (&joiner{c: c, group: "g", id: "nobody"}).heartbeat(1); code != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member heartbeat: %v", kerr.ErrorForCode(code))
	}

	// A third member: the others learn of the rebalance by heartbeat.
	third := &joiner{c: c, group: "g", session: 5000, meta: "c"}
	r3 := third.joinAsync(t)
	waitCode(t, func() int16 { return leader.heartbeat(1) }, kerr.RebalanceInProgress.Code)
	r1, r2 := leader.joinAsync(t), follower.joinAsync(t)
	j1, j2, j3 := <-r1, <-r2, <-r3
	if j1.Generation != 2 || j2.Generation != 2 || j3.Generation != 2 {
		t.Fatalf("generation after third joined: %d %d %d", j1.Generation, j2.Generation, j3.Generation)
	}

	// A member leaves: the others rebalance without it.
	errs, e := c.LeaveGroup(context.Background(), "g", []Leaving{{MemberID: third.id}})
	if e != nil || errs[0] != nil {
		t.Fatalf("leave: %v %v", e, errs)
	}
	errs, e = c.LeaveGroup(context.Background(), "g", []Leaving{{MemberID: third.id}})
	if e != nil || errs[0] != kerr.UnknownMemberID {
		t.Fatalf("leaving twice: %v %v", e, errs)
	}
}

func waitCode(t *testing.T, f func() int16, want int16) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := f()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %v, want %v", kerr.ErrorForCode(got), kerr.ErrorForCode(want))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stable brings a one-member group to Stable and returns its generation.
func stable(t *testing.T, j *joiner) int32 {
	t.Helper()
	jr := j.join(t)
	if jr.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(jr.ErrorCode))
	}
	if sr := j.sync(t, jr.Generation, map[string]string{j.id: "assigned"}); sr.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(sr.ErrorCode))
	}
	return jr.Generation
}

func TestSessionTimeoutRemovesMember(t *testing.T) {
	c := newCoordinator(t, filerfstest.New())
	j := &joiner{c: c, group: "g", session: 100}
	gen := stable(t, j)
	time.Sleep(300 * time.Millisecond)
	if code := j.heartbeat(gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat after session expired: %v", kerr.ErrorForCode(code))
	}
	d := c.Describe(context.Background(), "g", 5)
	if d.State != string(Empty) || len(d.Members) != 0 {
		t.Fatalf("group after expiry: %s with %d members", d.State, len(d.Members))
	}
}

func TestStaticMemberRejoinKeepsGeneration(t *testing.T) {
	c := newCoordinator(t, filerfstest.New())
	inst := "instance-1"
	j := &joiner{c: c, group: "g", session: 5000, instance: &inst}
	gen := stable(t, j)
	old := j.id

	again := &joiner{c: c, group: "g", session: 5000, instance: &inst}
	jr := again.join(t)
	if jr.ErrorCode != 0 || jr.Generation != gen || again.id == old || !jr.SkipAssignment {
		t.Fatalf("static rejoin: err %v gen %d (was %d) id changed %v skip %v", kerr.ErrorForCode(jr.ErrorCode), jr.Generation, gen, again.id != old, jr.SkipAssignment)
	}
	if sr := again.sync(t, gen, nil); sr.ErrorCode != 0 || string(sr.MemberAssignment) != "assigned" {
		t.Fatalf("static member's assignment after rejoin: %v %q", kerr.ErrorForCode(sr.ErrorCode), sr.MemberAssignment)
	}
	if code := j.heartbeat(gen); code != kerr.FencedInstanceID.Code {
		t.Fatalf("old incarnation's heartbeat: %v", kerr.ErrorForCode(code))
	}
}

func TestCommitsAndStateSurviveRestart(t *testing.T) {
	files := filerfstest.New()
	c := newCoordinator(t, files)
	j := &joiner{c: c, group: "g/1", session: 5000}
	gen := stable(t, j)
	meta := "m"
	offs := offset.Topics{"t": {0: {Offset: 42, LeaderEpoch: 3, Metadata: &meta}}}
	if e := c.CommitOffsets(context.Background(), "g/1", Committer{Generation: gen, MemberID: j.id}, offs); e != nil {
		t.Fatalf("commit: %v", e)
	}
	if e := c.CommitOffsets(context.Background(), "g/1", Committer{Generation: gen + 1, MemberID: j.id}, offs); e != kerr.IllegalGeneration {
		t.Fatalf("commit with a future generation: %v", e)
	}
	if e := c.CommitOffsets(context.Background(), "g/1", Committer{Generation: -1}, offs); e != kerr.UnknownMemberID {
		t.Fatalf("simple commit to a group with members: %v", e)
	}
	if e := c.DeleteGroup(context.Background(), "g/1"); e != kerr.NonEmptyGroup {
		t.Fatalf("deleting a group with members: %v", e)
	}
	c.Close()

	// A new coordinator on the same files: the member carries on.
	c2 := newCoordinator(t, files)
	j.c = c2
	if code := j.heartbeat(gen); code != 0 {
		t.Fatalf("heartbeat after restart: %v", kerr.ErrorForCode(code))
	}
	got, e := c2.FetchOffsets(context.Background(), "g/1", nil)
	if e != nil || got["t"][0].Offset != 42 || got["t"][0].LeaderEpoch != 3 || *got["t"][0].Metadata != "m" {
		t.Fatalf("offsets after restart: %v %v", got, e)
	}
	list, _ := c2.List(context.Background())
	if len(list) != 1 || list[0].Name != "g/1" || list[0].State != Stable {
		t.Fatalf("groups after restart: %+v", list)
	}
	if _, e := c2.LeaveGroup(context.Background(), "g/1", []Leaving{{MemberID: j.id}}); e != nil {
		t.Fatalf("leave: %v", e)
	}
	waitCode(t, func() int16 {
		if e := c2.DeleteGroup(context.Background(), "g/1"); e != nil {
			return e.Code
		}
		return 0
	}, 0)
	if left := files.Paths(); len(left) != 0 {
		t.Fatalf("files left after delete: %v", left)
	}
	if e := c2.DeleteGroup(context.Background(), "g/1"); e != kerr.GroupIDNotFound {
		t.Fatalf("deleting a deleted group: %v", e)
	}
}

func TestSimpleCommits(t *testing.T) {
	c := newCoordinator(t, filerfstest.New())
	if e := c.CommitOffsets(context.Background(), "simple", Committer{Generation: 5, MemberID: "x"}, offset.Topics{"t": {0: {Offset: 1}}}); e != kerr.IllegalGeneration {
		t.Fatalf("member commit to an unknown group: %v", e)
	}
	if e := c.CommitOffsets(context.Background(), "simple", Committer{Generation: -1}, offset.Topics{"t": {0: {Offset: 7}, 1: {Offset: 9}}}); e != nil {
		t.Fatalf("simple commit: %v", e)
	}
	got, _ := c.FetchOffsets(context.Background(), "simple", []string{"t", "u"})
	if len(got) != 1 || got["t"][0].Offset != 7 || got["t"][1].Offset != 9 {
		t.Fatalf("fetched %v", got)
	}
	d := c.Describe(context.Background(), "simple", 6)
	if d.ErrorCode != 0 || d.State != string(Empty) {
		t.Fatalf("describe simple group: %v %s", kerr.ErrorForCode(d.ErrorCode), d.State)
	}
	if d := c.Describe(context.Background(), "nothing", 6); d.ErrorCode != kerr.GroupIDNotFound.Code || d.State != string(Dead) {
		t.Fatalf("describe unknown group: %v %s", kerr.ErrorForCode(d.ErrorCode), d.State)
	}
}

func TestJoinValidation(t *testing.T) {
	c := newCoordinator(t, filerfstest.New())
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.Group, req.SessionTimeoutMillis, req.ProtocolType = "g", 1, "consumer"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	if _, e := c.JoinGroup(context.Background(), req, Client{}); e != kerr.InvalidSessionTimeout {
		t.Fatalf("tiny session timeout: %v", e)
	}
	req.SessionTimeoutMillis, req.Group = 1000, ""
	if _, e := c.JoinGroup(context.Background(), req, Client{}); e != kerr.InvalidGroupID {
		t.Fatalf("empty group id: %v", e)
	}
	a := &joiner{c: c, group: "g", session: 5000}
	stable(t, a)
	req.Group, req.ProtocolType = "g", "connect"
	if resp, e := c.JoinGroup(context.Background(), req, Client{}); e != nil || resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("another protocol type: %v %v", e, resp)
	}
}

// TestRebalanceEndsWhenAllRejoin: a rebalance of an existing group ends as
// soon as every member is back, not at the rebalance timeout.
func TestRebalanceEndsWhenAllRejoin(t *testing.T) {
	c := newCoordinator(t, filerfstest.New())
	a := &joiner{c: c, group: "g", session: 5000}
	gen := stable(t, a)
	b := &joiner{c: c, group: "g", session: 5000}
	rb := b.joinAsync(t)
	waitCode(t, func() int16 { return a.heartbeat(gen) }, kerr.RebalanceInProgress.Code)
	start := time.Now()
	ja := a.join(t)
	jb := <-rb
	// The joiners' rebalance timeout is 2 s.
	if took := time.Since(start); took > time.Second || ja.Generation != gen+1 || jb.Generation != gen+1 {
		t.Fatalf("rebalance took %v, generations %d %d", took, ja.Generation, jb.Generation)
	}
}

func TestOwnershipMovesBetweenCoordinators(t *testing.T) {
	files := filerfstest.New()
	own := membershiptest.New(0)
	var cs []*Coordinator
	for i := 0; i < 2; i++ {
		c := New(Options{Store: offset.NewStore(files), InitialRebalanceDelay: 20 * time.Millisecond,
			MinSessionTimeout: 10 * time.Millisecond, Serving: own.Serving(i), Changed: own.Changed})
		c.Start()
		t.Cleanup(c.Close)
		cs = append(cs, c)
	}
	ctx := context.Background()
	j := &joiner{c: cs[0], group: "moving", session: 5000}
	gen := stable(t, j)
	offs := offset.Topics{"t": {0: {Offset: 7}}}
	if e := cs[0].CommitOffsets(ctx, "moving", Committer{Generation: gen, MemberID: j.id}, offs); e != nil {
		t.Fatalf("commit: %v", e)
	}
	// The gateway that does not own the group sends clients away.
	if code := (&joiner{c: cs[1], group: "moving", id: j.id}).heartbeat(gen); code != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat at the other gateway: %v", kerr.ErrorForCode(code))
	}

	// The group moves: the old owner refuses and drops it; the new one
	// loads it from the filer and the member carries on without a
	// rebalance, its commits intact.
	own.Move(1)
	if code := j.heartbeat(gen); code != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat at the old owner: %v", kerr.ErrorForCode(code))
	}
	waitCode(t, func() int16 {
		cs[0].mu.Lock()
		defer cs[0].mu.Unlock()
		return int16(len(cs[0].groups))
	}, 0)
	j.c = cs[1]
	if code := j.heartbeat(gen); code != 0 {
		t.Fatalf("heartbeat at the new owner: %v", kerr.ErrorForCode(code))
	}
	if e := cs[1].CommitOffsets(ctx, "moving", Committer{Generation: gen, MemberID: j.id}, offset.Topics{"t": {0: {Offset: 9}}}); e != nil {
		t.Fatalf("commit at the new owner: %v", e)
	}

	// And back: the first gateway must not use what it held before.
	own.Move(0)
	j.c = cs[0]
	if code := j.heartbeat(gen); code != 0 {
		t.Fatalf("heartbeat back at the first owner: %v", kerr.ErrorForCode(code))
	}
	got, e := cs[0].FetchOffsets(ctx, "moving", nil)
	if e != nil || got["t"][0].Offset != 9 {
		t.Fatalf("offsets back at the first owner: %v %v (want the commit made at the second)", got, e)
	}
	if l, e := cs[1].List(ctx); e != nil || len(l) != 0 {
		t.Fatalf("the gateway that lost the group lists %v %v", l, e)
	}
}

func TestTxnOffsetsWaitForTheirMarker(t *testing.T) {
	files := filerfstest.New()
	c := newCoordinator(t, files)
	ctx := context.Background()
	j := &joiner{c: c, group: "txg", session: 5000}
	gen := stable(t, j)
	who := Committer{Generation: gen, MemberID: j.id}
	if e := c.AddTxnOffsets(ctx, "txg", Committer{Generation: gen + 1, MemberID: j.id}, 7, 0, offset.Topics{"t": {0: {Offset: 5}}}); e != kerr.IllegalGeneration {
		t.Fatalf("txn offsets of a wrong generation: %v", e)
	}
	if e := c.AddTxnOffsets(ctx, "txg", who, 7, 0, offset.Topics{"t": {0: {Offset: 5}}}); e != nil {
		t.Fatal(e)
	}
	if e := c.AddTxnOffsets(ctx, "txg", who, 8, 0, offset.Topics{"t": {1: {Offset: 3}}}); e != nil {
		t.Fatal(e)
	}
	if !c.PendingTxnOffsets(ctx, "txg", "t", 0) || !c.PendingTxnOffsets(ctx, "txg", "t", 1) || c.PendingTxnOffsets(ctx, "txg", "t", 2) {
		t.Fatal("pending offsets not reported")
	}
	if got, _ := c.FetchOffsets(ctx, "txg", nil); len(got["t"]) != 0 {
		t.Fatalf("offsets of open transactions visible: %v", got)
	}
	// The pending offsets are saved with the group: a gateway taking it
	// over holds them too.
	c.Close()
	c = newCoordinator(t, files)
	if !c.PendingTxnOffsets(ctx, "txg", "t", 0) {
		t.Fatal("pending offsets lost with the restart")
	}
	if err := c.EndTxnOffsets(ctx, "txg", 7, 0, 0, true); err != nil {
		t.Fatal(err)
	}
	if err := c.EndTxnOffsets(ctx, "txg", 8, 0, 0, false); err != nil {
		t.Fatal(err)
	}
	if err := c.EndTxnOffsets(ctx, "txg", 7, 0, 0, true); err != nil {
		t.Fatalf("a repeated marker: %v", err)
	}
	got, e := c.FetchOffsets(ctx, "txg", nil)
	if e != nil || got["t"][0].Offset != 5 || len(got["t"]) != 1 {
		t.Fatalf("after commit of producer 7 and abort of 8: %v %v", got, e)
	}
	if c.PendingTxnOffsets(ctx, "txg", "t", 0) || c.PendingTxnOffsets(ctx, "txg", "t", 1) {
		t.Fatal("offsets still pending after their markers")
	}
}

// A marker from a transaction coordinator deposed since (its epoch below
// the last marker's for the producer) is refused, and leaves the
// producer's next transaction's offsets pending: a deposed coordinator's
// late commit marker once could commit them before their transaction
// ended. The epoch is kept with the group, across a restart.
func TestTxnOffsetsMarkerFromDeposedCoordinator(t *testing.T) {
	files := filerfstest.New()
	c := newCoordinator(t, files)
	ctx := context.Background()
	j := &joiner{c: c, group: "txf", session: 5000}
	gen := stable(t, j)
	who := Committer{Generation: gen, MemberID: j.id}
	if e := c.AddTxnOffsets(ctx, "txf", who, 7, 0, offset.Topics{"t": {0: {Offset: 5}}}); e != nil {
		t.Fatal(e)
	}
	// The transaction's new coordinator (epoch 3) commits it.
	if e := c.EndTxnOffsets(ctx, "txf", 7, 0, 3, true); e != nil {
		t.Fatal(e)
	}
	// The producer's next transaction commits offset 9.
	if e := c.AddTxnOffsets(ctx, "txf", who, 7, 0, offset.Topics{"t": {0: {Offset: 9}}}); e != nil {
		t.Fatal(e)
	}
	c.Close()
	c = newCoordinator(t, files)
	// The deposed coordinator's (epoch 2) marker for the first comes late.
	if e := c.EndTxnOffsets(ctx, "txf", 7, 0, 2, true); e != kerr.TransactionCoordinatorFenced {
		t.Fatalf("a deposed coordinator's marker: %v, want TRANSACTION_COORDINATOR_FENCED", e)
	}
	got, e := c.FetchOffsets(ctx, "txf", nil)
	if e != nil || got["t"][0].Offset != 5 || !c.PendingTxnOffsets(ctx, "txf", "t", 0) {
		t.Fatalf("after the refused marker: %v %v, want offset 5 and 9 pending", got, e)
	}
	// The current coordinator's commits them.
	if e := c.EndTxnOffsets(ctx, "txf", 7, 0, 3, true); e != nil {
		t.Fatal(e)
	}
	if got, e := c.FetchOffsets(ctx, "txf", nil); e != nil || got["t"][0].Offset != 9 {
		t.Fatalf("after the commit: %v %v", got, e)
	}
}

// A panic on a group's goroutine unloads that group only: those waiting on
// it get an answer at once, and the next request loads it afresh (it once
// ended the process).
func TestGroupPanicUnloadsTheGroup(t *testing.T) {
	c := newCoordinator(t, filerfstest.New())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g, e := c.lookup(ctx, "g", true)
	if e != nil {
		t.Fatal(e)
	}
	if _, err := call(ctx, g, func() int { panic("a bug in the group") }); !errors.Is(err, errGroupGone) {
		t.Fatalf("waiting on the panicking call: %v, want the group gone", err)
	}
	again, e := c.lookup(ctx, "g", true)
	if e != nil || again == g {
		t.Fatalf("after the panic: %v, same group %v", e, again == g)
	}
	if v, err := call(ctx, again, func() int { return 7 }); err != nil || v != 7 {
		t.Fatalf("the reloaded group: %v %v", v, err)
	}
}

// A slow filer does not stall a group: while its state is being saved
// (here held back), its members' heartbeats are answered; the request
// waiting for the save is answered once it is done. The save once ran on
// the group's goroutine, which answered nothing meanwhile.
func TestSlowSaveLeavesTheGroupAnswering(t *testing.T) {
	files := filerfstest.New()
	c := newCoordinator(t, files)
	ctx := context.Background()
	j := &joiner{c: c, group: "slow", session: 5000}
	gen := stable(t, j)
	gate := make(chan struct{})
	files.Gate(gate)
	saved := make(chan *kerr.Error, 1)
	go func() {
		saved <- c.AddTxnOffsets(ctx, "slow", Committer{Generation: -1}, 9, 0, offset.Topics{"t": {0: {Offset: 3}}})
	}()
	for i := 0; i < 5; i++ {
		answered := make(chan int16, 1)
		go func() { answered <- j.heartbeat(gen) }()
		select {
		case code := <-answered:
			if code != 0 {
				t.Fatalf("heartbeat during the save: %v", kerr.ErrorForCode(code))
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a heartbeat waited for the filer")
		}
	}
	select {
	case e := <-saved:
		t.Fatalf("answered before the save was done: %v", e)
	default:
	}
	files.Gate(nil)
	close(gate)
	if e := <-saved; e != nil {
		t.Fatal(e)
	}
	if !c.PendingTxnOffsets(ctx, "slow", "t", 0) {
		t.Fatal("the transaction's offsets are not held")
	}
}

// group.max.size: a classic group of two takes no third member (ids
// handed out and not yet back counted), as Kafka refuses it; a static
// member's restart replaces its old self.
func TestClassicGroupMaxSize(t *testing.T) {
	c := New(Options{Store: offset.NewStore(filerfstest.New()), InitialRebalanceDelay: 20 * time.Millisecond,
		MinSessionTimeout: 10 * time.Millisecond, ClassicMaxSize: 2})
	c.Start()
	t.Cleanup(c.Close)
	static := "s"
	a := &joiner{c: c, group: "g", session: 5000, meta: "a", instance: &static}
	b := &joiner{c: c, group: "g", session: 5000, meta: "b"}
	ra, rb := a.joinAsync(t), b.joinAsync(t)
	if ja, jb := <-ra, <-rb; ja.ErrorCode != 0 || jb.ErrorCode != 0 {
		t.Fatalf("the first two: %v %v", kerr.ErrorForCode(ja.ErrorCode), kerr.ErrorForCode(jb.ErrorCode))
	}
	third := &joiner{c: c, group: "g", session: 5000, meta: "c"}
	if r := third.join(t); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("a third member: %v, want GROUP_MAX_SIZE_REACHED", kerr.ErrorForCode(r.ErrorCode))
	}
	// The static member again, as after its restart: it replaces its old
	// self, no new member.
	again := &joiner{c: c, group: "g", session: 5000, meta: "a", instance: &static}
	if r := <-again.joinAsync(t); r.ErrorCode == kerr.GroupMaxSizeReached.Code {
		t.Fatal("a static member's restart refused as a new member")
	}
}

// A leader's assignment that would make the group's state larger than
// MaxStateBytes is not saved: its SyncGroup gets UNKNOWN_SERVER_ERROR, as
// Kafka answers a group record too large for its log, and the state in the
// filer stays within the bound. A small assignment then goes through.
func TestGroupStateBounded(t *testing.T) {
	files := filerfstest.New()
	c := newCoordinator(t, files)
	a := &joiner{c: c, group: "g", session: 5000, meta: "a"}
	j := a.join(t)
	if j.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(j.ErrorCode))
	}
	huge := strings.Repeat("x", MaxStateBytes)
	if r := a.sync(t, j.Generation, map[string]string{a.id: huge}); r.ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("a %d-byte assignment: %v, want UNKNOWN_SERVER_ERROR", len(huge), kerr.ErrorForCode(r.ErrorCode))
	}
	if data, _, err := offset.NewStore(files).LoadState(context.Background(), "g"); err != nil || len(data) > MaxStateBytes {
		t.Fatalf("the saved state: %d bytes (%v)", len(data), err)
	}
	j = a.join(t)
	if j.ErrorCode != 0 {
		t.Fatalf("join again: %v", kerr.ErrorForCode(j.ErrorCode))
	}
	if r := a.sync(t, j.Generation, map[string]string{a.id: "small"}); r.ErrorCode != 0 || string(r.MemberAssignment) != "small" {
		t.Fatalf("a small assignment: %v %q", kerr.ErrorForCode(r.ErrorCode), r.MemberAssignment)
	}
}

// DeleteGroup right after the last member left, while the save of the
// empty group is still on its way to the filer: the removal, conditional
// on the version the group holds, waits for that save. Not waiting, it
// was answered NOT_COORDINATOR on a single gateway whenever the save
// landed first (librdkafka's 0081 saw it).
func TestDeleteGroupAfterItsSave(t *testing.T) {
	files := filerfstest.New()
	c := newCoordinator(t, files)
	j := &joiner{c: c, group: "g", session: 5000}
	stable(t, j)
	g, e := c.lookup(context.Background(), "g", false)
	if e != nil || g == nil {
		t.Fatalf("the group: %v", e)
	}
	gate := make(chan struct{})
	files.Gate(gate)
	left := make(chan *kerr.Error, 1)
	go func() {
		_, e := c.LeaveGroup(context.Background(), "g", []Leaving{{MemberID: j.id}})
		left <- e
	}()
	waitfor.True(t, 5*time.Second, "the empty group's save under way", func() bool {
		saving, err := call(context.Background(), g, func() bool { return g.saving })
		return err == nil && saving
	})
	deleted := make(chan *kerr.Error, 1)
	go func() { deleted <- c.DeleteGroup(context.Background(), "g") }()
	select {
	case e := <-deleted:
		t.Fatalf("DeleteGroup answered %v while the group's save was under way: its removal is conditional on what that save writes", e)
	case <-time.After(200 * time.Millisecond): // the wait is what is under test
	}
	files.Gate(nil)
	close(gate)
	if e := <-left; e != nil {
		t.Fatalf("leave: %v", e)
	}
	if e := <-deleted; e != nil {
		t.Fatalf("DeleteGroup while the empty group's save was under way: %v, want success", e)
	}
	if paths := files.Paths(); len(paths) != 0 {
		t.Fatalf("files left after delete: %v", paths)
	}
}
