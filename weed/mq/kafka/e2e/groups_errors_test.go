package e2e

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupErrors drives the group protocol with raw requests and checks
// Kafka's answers to requests that break its rules.
func TestGroupErrors(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 2, nil)
	group := topic + "-group"
	cl := newClient(t)
	ctx := ctxT(t)
	meta, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil || len(meta.Brokers) != 1 {
		t.Fatalf("metadata: %v %+v", err, meta)
	}
	node := meta.Brokers[0].NodeID
	coord := cl.Broker(int(node)) // requests go to the one gateway as sent

	// FindCoordinator v4+ finds several groups' coordinators at once.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{group, group + "-x", group + "-y"}
	kr, err := coord.RetriableRequest(ctx, fc)
	if err != nil {
		t.Fatal(err)
	}
	if fc.Version < 4 {
		t.Fatalf("FindCoordinator v%d, want 4+", fc.Version)
	}
	coords := kr.(*kmsg.FindCoordinatorResponse).Coordinators
	var keys []string
	for _, c := range coords {
		keys = append(keys, c.Key)
		if c.ErrorCode != 0 || c.NodeID != node || c.Host != "127.0.0.1" || int(c.Port) != gw.port {
			t.Errorf("coordinator of %s: node %d at %s:%d, error %d", c.Key, c.NodeID, c.Host, c.Port, c.ErrorCode)
		}
	}
	if slices.Sort(keys); !slices.Equal(keys, []string{group, group + "-x", group + "-y"}) {
		t.Errorf("coordinators for %v", keys)
	}

	consumerMeta := kmsg.NewConsumerMemberMetadata()
	consumerMeta.Topics = []string{topic}
	protoMeta := consumerMeta.AppendTo(nil)
	ms := int32(groupSession.Milliseconds())
	// A JoinGroup waits for the rebalance: like Kafka, the gateway answers
	// a connection's requests in order, so a join that must wait for
	// another member goes on its own connection (joinOn), as a real
	// member's would.
	var joinOn func(br *kgo.Broker, groupID, memberID, protocolType string, sessionMillis int32, protocols ...string) (*kmsg.JoinGroupResponse, error)
	join := func(groupID, memberID, protocolType string, sessionMillis int32, protocols ...string) (*kmsg.JoinGroupResponse, error) {
		return joinOn(coord, groupID, memberID, protocolType, sessionMillis, protocols...)
	}
	joinOn = func(br *kgo.Broker, groupID, memberID, protocolType string, sessionMillis int32, protocols ...string) (*kmsg.JoinGroupResponse, error) {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = groupID, memberID, protocolType
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = sessionMillis, int32(groupRebalance.Milliseconds())
		for _, name := range protocols {
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = name, protoMeta
			req.Protocols = append(req.Protocols, p)
		}
		resp, err := br.RetriableRequest(ctx, req)
		if err != nil {
			return nil, err
		}
		if req.Version < 4 {
			return nil, fmt.Errorf("JoinGroup v%d, want 4+", req.Version)
		}
		return resp.(*kmsg.JoinGroupResponse), nil
	}
	mustJoin := func(groupID, memberID, protocolType string, sessionMillis int32, protocols ...string) *kmsg.JoinGroupResponse {
		t.Helper()
		r, err := join(groupID, memberID, protocolType, sessionMillis, protocols...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	syncGroup := func(memberID string, generation int32, assignments map[string][]byte) (*kmsg.SyncGroupResponse, error) {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID, req.Generation = group, memberID, generation
		req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		for id, a := range assignments {
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID, ga.MemberAssignment = id, a
			req.GroupAssignment = append(req.GroupAssignment, ga)
		}
		resp, err := coord.RetriableRequest(ctx, req)
		if err != nil {
			return nil, err
		}
		return resp.(*kmsg.SyncGroupResponse), nil
	}
	heartbeat := func(memberID string, generation int32) int16 {
		t.Helper()
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = group, memberID, generation
		resp, err := coord.RetriableRequest(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.HeartbeatResponse).ErrorCode
	}
	tid := topicID(t, cl, topic)
	commit := func(memberID string, generation int32, offset int64) int16 {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = group, memberID, generation
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = topic, tid
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := coord.RetriableRequest(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.OffsetCommitResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			t.Fatalf("OffsetCommit answered %+v", r.Topics)
		}
		return r.Topics[0].Partitions[0].ErrorCode
	}
	assignment := func(partitions ...int32) []byte {
		a := kmsg.NewConsumerMemberAssignment()
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = topic, partitions
		a.Topics = append(a.Topics, at)
		return a.AppendTo(nil)
	}
	expect := func(what string, got int16, want *kerr.Error) {
		t.Helper()
		expectCode(t, what, got, want)
	}

	// Joins Kafka refuses outright.
	expect("session timeout 1000 ms", mustJoin(group, "", "consumer", 1000, "range").ErrorCode, kerr.InvalidSessionTimeout)
	expect("empty group id", mustJoin("", "", "consumer", ms, "range").ErrorCode, kerr.InvalidGroupID)

	// KIP-394: a first join without a member id is given one to join with.
	r := mustJoin(group, "", "consumer", ms, "range")
	if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" {
		t.Fatalf("first join: %v with member id %q, want MEMBER_ID_REQUIRED and an id", kerr.ErrorForCode(r.ErrorCode), r.MemberID)
	}
	a := r.MemberID
	r = mustJoin(group, a, "consumer", ms, "range")
	if r.ErrorCode != 0 || r.MemberID != a || r.LeaderID != a || r.Generation < 1 || r.Protocol == nil || *r.Protocol != "range" ||
		len(r.Members) != 1 || r.Members[0].MemberID != a || !bytes.Equal(r.Members[0].ProtocolMetadata, protoMeta) {
		t.Fatalf("join with the member id: %+v", r)
	}
	if r.Version >= 7 && (r.ProtocolType == nil || *r.ProtocolType != "consumer") {
		t.Errorf("join: protocol type %v", r.ProtocolType)
	}
	gen := r.Generation

	// SyncGroup: the wrong generation, then the right one.
	s, err := syncGroup(a, gen+1, map[string][]byte{a: assignment(0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	expect("SyncGroup with the next generation", s.ErrorCode, kerr.IllegalGeneration)
	s, err = syncGroup(a, gen, map[string][]byte{a: assignment(0, 1)})
	if err != nil || s.ErrorCode != 0 || !bytes.Equal(s.MemberAssignment, assignment(0, 1)) {
		t.Fatalf("SyncGroup: %v %+v", err, s)
	}

	// Heartbeats.
	expect("heartbeat", heartbeat(a, gen), nil)
	expect("heartbeat of an unknown member", heartbeat("no-such-member", gen), kerr.UnknownMemberID)
	expect("heartbeat with the next generation", heartbeat(a, gen+1), kerr.IllegalGeneration)

	// Commits: a member's, and those Kafka refuses in a group with members.
	expect("member's commit", commit(a, gen, 5), nil)
	expect("commit without member id or generation to a group with members", commit("", -1, 6), kerr.UnknownMemberID)
	expect("commit with the next generation", commit(a, gen+1, 6), kerr.IllegalGeneration)
	expect("commit of an unknown member", commit("no-such-member", gen, 6), kerr.UnknownMemberID)

	// A member with another protocol type, or no protocol in common with
	// the group, cannot join.
	expect("join as connect", mustJoin(group, "", "connect", ms, "range").ErrorCode, kerr.InconsistentGroupProtocol)
	expect("join with roundrobin only", mustJoin(group, "", "consumer", ms, "roundrobin").ErrorCode, kerr.InconsistentGroupProtocol)

	// A second member's join starts a rebalance; a's heartbeat learns of
	// it, a may still commit with its generation, and a's rejoin completes
	// the next generation for both.
	r = mustJoin(group, "", "consumer", ms, "range", "roundrobin")
	if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" || r.MemberID == a {
		t.Fatalf("second member's first join: %v with member id %q", kerr.ErrorForCode(r.ErrorCode), r.MemberID)
	}
	b := r.MemberID
	type joined struct {
		r   *kmsg.JoinGroupResponse
		err error
	}
	bJoined := make(chan joined, 1)
	bConn := newClient(t).Broker(int(node))
	go func() {
		r, err := joinOn(bConn, group, b, "consumer", ms, "range", "roundrobin")
		bJoined <- joined{r, err}
	}()
	eventually(t, 10*time.Second, "a's heartbeat sees the rebalance", func() error {
		if code := heartbeat(a, gen); code != kerr.RebalanceInProgress.Code {
			return fmt.Errorf("heartbeat: %v", kerr.ErrorForCode(code))
		}
		return nil
	})
	expect("commit while the group prepares a rebalance", commit(a, gen, 7), nil)
	aJoined := make(chan joined, 1)
	go func() {
		r, err := join(group, a, "consumer", ms, "range")
		aJoined <- joined{r, err}
	}()
	var ja, jb joined
	for i := 0; i < 2; i++ {
		select {
		case ja = <-aJoined:
		case jb = <-bJoined:
		case <-time.After(30 * time.Second):
			t.Fatal("the rebalance did not complete")
		}
	}
	if ja.err != nil || jb.err != nil {
		t.Fatalf("joins: %v, %v", ja.err, jb.err)
	}
	gen2 := gen + 1
	for _, j := range []*kmsg.JoinGroupResponse{ja.r, jb.r} {
		if j.ErrorCode != 0 || j.Generation != gen2 || j.LeaderID != ja.r.LeaderID || j.Protocol == nil || *j.Protocol != "range" {
			t.Fatalf("rejoin: %+v, want generation %d", j, gen2)
		}
	}
	leader, follower, leaderResp := a, b, ja.r
	if ja.r.LeaderID == b {
		leader, follower, leaderResp = b, a, jb.r
	} else if ja.r.LeaderID != a {
		t.Fatalf("leader %q is neither member", ja.r.LeaderID)
	}
	var ids []string
	for _, m := range leaderResp.Members {
		ids = append(ids, m.MemberID)
	}
	slices.Sort(ids)
	if want := slices.Sorted(slices.Values([]string{a, b})); !slices.Equal(ids, want) {
		t.Errorf("leader told of members %v, want %v", ids, want)
	}
	expect("heartbeat with the old generation", heartbeat(a, gen), kerr.IllegalGeneration)
	followerSynced := make(chan *kmsg.SyncGroupResponse, 1)
	go func() {
		s, err := syncGroup(follower, gen2, nil)
		if err != nil {
			t.Errorf("follower's sync: %v", err)
		}
		followerSynced <- s
	}()
	s, err = syncGroup(leader, gen2, map[string][]byte{leader: assignment(0), follower: assignment(1)})
	if err != nil || s.ErrorCode != 0 || !bytes.Equal(s.MemberAssignment, assignment(0)) {
		t.Fatalf("leader's sync: %v %+v", err, s)
	}
	select {
	case s = <-followerSynced:
		if s == nil || s.ErrorCode != 0 || !bytes.Equal(s.MemberAssignment, assignment(1)) {
			t.Fatalf("follower's sync: %+v", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the follower's sync was not answered")
	}
	expect("a's heartbeat", heartbeat(a, gen2), nil)
	expect("b's heartbeat", heartbeat(b, gen2), nil)

	// OffsetFetch v8+ reads two groups at once.
	other := group + "-other"
	var offsets kadm.Offsets
	offsets.AddOffset(topic, 1, 3, -1)
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, other, offsets); err != nil {
		t.Fatal(err)
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	for _, g := range []string{group, other} {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		of.Groups = append(of.Groups, rg)
	}
	kr, err = coord.RetriableRequest(ctx, of)
	if err != nil {
		t.Fatal(err)
	}
	if of.Version < 8 {
		t.Fatalf("OffsetFetch v%d, want 8+", of.Version)
	}
	fetched := map[string]map[int32]int64{}
	for _, g := range kr.(*kmsg.OffsetFetchResponse).Groups {
		if g.ErrorCode != 0 {
			t.Errorf("OffsetFetch of %s: %v", g.Group, kerr.ErrorForCode(g.ErrorCode))
		}
		fetched[g.Group] = map[int32]int64{}
		for _, ft := range g.Topics {
			if ft.Topic != topic && ft.TopicID != tid {
				t.Errorf("OffsetFetch of %s: topic %q %x", g.Group, ft.Topic, ft.TopicID)
				continue
			}
			for _, fp := range ft.Partitions {
				fetched[g.Group][fp.Partition] = fp.Offset
			}
		}
	}
	want := map[string]map[int32]int64{group: {0: 7}, other: {1: 3}}
	if len(fetched) != 2 || !maps.Equal(fetched[group], want[group]) || !maps.Equal(fetched[other], want[other]) {
		t.Errorf("OffsetFetch of two groups: %v, want %v", fetched, want)
	}

	// Both leave at once (LeaveGroup v3+): the group is Empty.
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group = group
	for _, id := range []string{a, b} {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		lv.Members = append(lv.Members, m)
	}
	kr, err = coord.RetriableRequest(ctx, lv)
	if err != nil {
		t.Fatal(err)
	}
	lr := kr.(*kmsg.LeaveGroupResponse)
	if lv.Version < 3 || lr.ErrorCode != 0 || len(lr.Members) != 2 || lr.Members[0].ErrorCode != 0 || lr.Members[1].ErrorCode != 0 {
		t.Errorf("LeaveGroup v%d: %+v", lv.Version, lr)
	}
	expect("heartbeat after leaving", heartbeat(a, gen2), kerr.UnknownMemberID)
	d, err := describe(ctx, kadm.NewClient(cl), group)
	if err != nil || d.State != "Empty" || len(d.Members) != 0 {
		t.Errorf("group after both left: %+v %v", d, err)
	}
}
