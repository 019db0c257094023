package protocol_test

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

// cgHeartbeat is a ConsumerGroupHeartbeat that changes nothing: a member
// keeping its session.
func cgHeartbeat(group, member string, epoch int32) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
	return req
}

// cgJoin is a member's first heartbeat, subscribed to topics.
func cgJoin(group, member string, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	req := cgHeartbeat(group, member, 0)
	req.RebalanceTimeoutMillis = 60_000
	req.SubscribedTopicNames = topics
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return req
}

// owning is a heartbeat reporting what the member owns.
func owning(req *kmsg.ConsumerGroupHeartbeatRequest, id [16]byte, ps ...int32) *kmsg.ConsumerGroupHeartbeatRequest {
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: id, Partitions: ps}}
	return req
}

// cg sends a heartbeat at v1 and checks its error code.
func cg(t *testing.T, c *rawConn, req *kmsg.ConsumerGroupHeartbeatRequest, want *kerr.Error) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	resp := c.do(req, 1).(*kmsg.ConsumerGroupHeartbeatResponse)
	code(t, "ConsumerGroupHeartbeat of "+req.MemberID, resp.ErrorCode, want)
	return resp
}

// assigned is the assignment of a heartbeat's answer, by partition (nil:
// no assignment in the answer).
func assigned(resp *kmsg.ConsumerGroupHeartbeatResponse, id [16]byte) []int32 {
	if resp.Assignment == nil {
		return nil
	}
	out := []int32{}
	for _, t := range resp.Assignment.Topics {
		if t.TopicID == id {
			out = append(out, t.Partitions...)
		}
	}
	slices.Sort(out)
	return out
}

func wantAssigned(t *testing.T, what string, resp *kmsg.ConsumerGroupHeartbeatResponse, id [16]byte, want ...int32) {
	t.Helper()
	got := assigned(resp, id)
	if got == nil || !slices.Equal(got, append([]int32{}, want...)) {
		if got == nil && want == nil {
			return
		}
		t.Fatalf("%s: assigned %v (nil: none in the answer), want %v", what, got, want)
	}
}

// ConsumerGroupHeartbeat v0-1 refuses what Kafka refuses, in Kafka's
// order and with its messages, and changes nothing then; v0 joins get a
// member id from the coordinator.
func TestConsumerGroupHeartbeatChecks(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrConsumerGroupHeartbeatRequest(), 0, 1)
	g.topic(t, "cgc", 2, nil)
	c := dial(t, g.addr)
	blank := " "
	for _, tc := range []struct {
		what string
		req  func() *kmsg.ConsumerGroupHeartbeatRequest
		want *kerr.Error
		msg  string
	}{
		{"no member id (v1)", func() *kmsg.ConsumerGroupHeartbeatRequest { return cgJoin("cgc-g", "", "cgc") }, kerr.InvalidRequest, "MemberId can't be empty."},
		{"no group", func() *kmsg.ConsumerGroupHeartbeatRequest { return cgJoin(" ", "m", "cgc") }, kerr.InvalidRequest, "GroupId can't be empty."},
		{"a blank instance id", func() *kmsg.ConsumerGroupHeartbeatRequest {
			r := cgJoin("cgc-g", "m", "cgc")
			r.InstanceID = &blank
			return r
		}, kerr.InvalidRequest, "InstanceId can't be empty."},
		{"a blank rack", func() *kmsg.ConsumerGroupHeartbeatRequest {
			r := cgJoin("cgc-g", "m", "cgc")
			r.RackID = &blank
			return r
		}, kerr.InvalidRequest, "RackId can't be empty."},
		{"a join without rebalance timeout", func() *kmsg.ConsumerGroupHeartbeatRequest {
			r := cgJoin("cgc-g", "m", "cgc")
			r.RebalanceTimeoutMillis = -1
			return r
		}, kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."},
		{"a join with owned partitions", func() *kmsg.ConsumerGroupHeartbeatRequest {
			return owning(cgJoin("cgc-g", "m", "cgc"), [16]byte{1}, 0)
		}, kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."},
		{"a join without owned partitions", func() *kmsg.ConsumerGroupHeartbeatRequest {
			r := cgJoin("cgc-g", "m", "cgc")
			r.Topics = nil
			return r
		}, kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."},
		{"a join without subscription", func() *kmsg.ConsumerGroupHeartbeatRequest {
			r := cgJoin("cgc-g", "m")
			r.SubscribedTopicNames = nil
			return r
		}, kerr.InvalidRequest, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."},
		{"a dynamic member leaving for a while", func() *kmsg.ConsumerGroupHeartbeatRequest { return cgHeartbeat("cgc-g", "m", -2) }, kerr.InvalidRequest, "InstanceId can't be null."},
		{"epoch -3", func() *kmsg.ConsumerGroupHeartbeatRequest { return cgHeartbeat("cgc-g", "m", -3) }, kerr.InvalidRequest, "MemberEpoch is invalid."},
		{"an assignor not served", func() *kmsg.ConsumerGroupHeartbeatRequest {
			r := cgJoin("cgc-g", "m", "cgc")
			r.ServerAssignor = kmsg.StringPtr("sticky")
			return r
		}, kerr.UnsupportedAssignor, "ServerAssignor sticky is not supported. Supported assignors: uniform, range."},
		{"an invalid regex", func() *kmsg.ConsumerGroupHeartbeatRequest {
			r := cgJoin("cgc-g", "m")
			r.SubscribedTopicRegex = kmsg.StringPtr("cgc(")
			return r
		}, kerr.InvalidRegularExpression, "SubscribedTopicRegex `cgc(` is not a valid regular expression: error parsing regexp: missing closing ): `cgc(`."},
		{"a heartbeat to no group", func() *kmsg.ConsumerGroupHeartbeatRequest { return cgHeartbeat("cgc-none", "m", 3) }, kerr.GroupIDNotFound, "Consumer group cgc-none not found."},
		{"leaving no group", func() *kmsg.ConsumerGroupHeartbeatRequest { return cgHeartbeat("cgc-none", "m", -1) }, kerr.GroupIDNotFound, "Group cgc-none not found."},
	} {
		resp := c.do(tc.req(), 1).(*kmsg.ConsumerGroupHeartbeatResponse)
		code(t, tc.what, resp.ErrorCode, tc.want)
		if resp.ErrorMessage == nil || *resp.ErrorMessage != tc.msg {
			t.Errorf("%s: message %v, want %q", tc.what, resp.ErrorMessage, tc.msg)
		}
		if resp.MemberID != nil || resp.MemberEpoch != 0 || resp.HeartbeatIntervalMillis != 0 || resp.Assignment != nil {
			t.Errorf("%s: an error answer with more than its error: %+v", tc.what, resp)
		}
	}
	// Nothing of the refused requests stayed: the group does not exist.
	code(t, "the refused group", c.do(cgHeartbeat("cgc-g", "m", 1), 1).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.GroupIDNotFound)

	// v0: the coordinator names a joining member.
	join0 := cgJoin("cgc-v0", "", "cgc")
	resp := c.do(join0, 0).(*kmsg.ConsumerGroupHeartbeatResponse)
	code(t, "a v0 join", resp.ErrorCode, nil)
	if resp.MemberID == nil || len(*resp.MemberID) != 22 || resp.MemberEpoch != 1 || resp.HeartbeatIntervalMillis != 1000 {
		t.Fatalf("v0 join: member id %v, epoch %d, interval %d; want a 22-character id, epoch 1, 1000 ms", resp.MemberID, resp.MemberEpoch, resp.HeartbeatIntervalMillis)
	}
	if got := assigned(resp, g.backendTopicID(t, "cgc")); !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("v0 join: assigned %v, want [0 1]", got)
	}

	// Authorization: Read on the group, Describe on each topic named.
	secured := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "cgc-ok"),
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "cgc"),
	}})
	secured.topic(t, "cgc", 2, nil)
	secured.topic(t, "cgc-secret", 2, nil)
	sc := dial(t, secured.addr)
	code(t, "without Read on the group", sc.do(cgJoin("cgc-denied", "m", "cgc"), 1).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.GroupAuthorizationFailed)
	code(t, "a topic it may not describe", sc.do(cgJoin("cgc-ok", "m", "cgc", "cgc-secret"), 1).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.TopicAuthorizationFailed)
	code(t, "allowed", sc.do(cgJoin("cgc-ok", "m", "cgc"), 1).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, nil)
	// A regex subscribes only to the topics the member may describe.
	re := cgJoin("cgc-ok", "r")
	re.SubscribedTopicRegex = kmsg.StringPtr("cgc.*")
	resp = cg(t, sc, re, nil)
	if n := len(assigned(resp, secured.backendTopicID(t, "cgc"))) + len(assigned(resp, secured.backendTopicID(t, "cgc-secret"))); n > 2 || len(assigned(resp, secured.backendTopicID(t, "cgc-secret"))) > 0 {
		t.Fatalf("a regex member was given a topic it may not describe: %+v", resp.Assignment)
	}
}

// The reconciliation of KIP-848, step by step as Kafka does it: a second
// member gets its partitions only once the first has revoked them; the
// first keeps its epoch until then; an answer carries the assignment when
// it changed, at a join, or for a full request.
func TestConsumerGroupReconciliation(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	id := g.topic(t, "cgr", 4, nil).ID
	c := dial(t, g.addr)

	r := cg(t, c, cgJoin("cgr-g", "m1", "cgr"), nil)
	if r.MemberEpoch != 1 || *r.MemberID != "m1" {
		t.Fatalf("m1 joined at epoch %d as %s", r.MemberEpoch, *r.MemberID)
	}
	wantAssigned(t, "m1 alone", r, id, 0, 1, 2, 3)
	r = cg(t, c, cgHeartbeat("cgr-g", "m1", 1), nil)
	if r.Assignment != nil || r.MemberEpoch != 1 {
		t.Fatalf("an unchanged heartbeat: epoch %d, assignment %+v", r.MemberEpoch, r.Assignment)
	}

	// m2 joins: epoch 2, but its partitions are still m1's.
	r = cg(t, c, cgJoin("cgr-g", "m2", "cgr"), nil)
	if r.MemberEpoch != 2 {
		t.Fatalf("m2 joined at epoch %d, want 2", r.MemberEpoch)
	}
	wantAssigned(t, "m2 before m1 revoked", r, id)
	if st := describeConsumerGroup(t, g.addr, "cgr-g"); st.State != "Reconciling" || st.Epoch != 2 || st.AssignmentEpoch != 2 {
		t.Fatalf("while reconciling: %s, epochs %d/%d", st.State, st.Epoch, st.AssignmentEpoch)
	}
	// m1 is asked to revoke two, keeping its epoch.
	r = cg(t, c, cgHeartbeat("cgr-g", "m1", 1), nil)
	if r.MemberEpoch != 1 {
		t.Fatalf("m1 moved to epoch %d before revoking", r.MemberEpoch)
	}
	kept := assigned(r, id)
	if len(kept) != 2 {
		t.Fatalf("m1 keeps %v, want two partitions", kept)
	}
	given := slices.DeleteFunc([]int32{0, 1, 2, 3}, func(p int32) bool { return slices.Contains(kept, p) })
	// m2 still waits.
	if r := cg(t, c, cgHeartbeat("cgr-g", "m2", 2), nil); r.Assignment != nil || r.MemberEpoch != 2 {
		t.Fatalf("m2 before m1 revoked: epoch %d, assignment %+v", r.MemberEpoch, r.Assignment)
	}
	// Still owning them, m1 waits at epoch 1.
	if r := cg(t, c, owning(cgHeartbeat("cgr-g", "m1", 1), id, 0, 1, 2, 3), nil); r.MemberEpoch != 1 || r.Assignment != nil {
		t.Fatalf("m1 still owning what it revokes: epoch %d, assignment %+v", r.MemberEpoch, r.Assignment)
	}
	// m1 reports them revoked: epoch 2.
	if r := cg(t, c, owning(cgHeartbeat("cgr-g", "m1", 1), id, kept...), nil); r.MemberEpoch != 2 || r.Assignment != nil {
		t.Fatalf("m1 after revoking: epoch %d, assignment %+v", r.MemberEpoch, r.Assignment)
	}
	// m2 gets them.
	r = cg(t, c, cgHeartbeat("cgr-g", "m2", 2), nil)
	wantAssigned(t, "m2 once m1 revoked", r, id, given...)
	if st := describeConsumerGroup(t, g.addr, "cgr-g"); st.State != "Stable" {
		t.Fatalf("after reconciling: %s", st.State)
	}
	// A full request gets the assignment though nothing changed.
	full := owning(cgHeartbeat("cgr-g", "m2", 2), id, given...)
	full.RebalanceTimeoutMillis, full.SubscribedTopicNames = 60_000, []string{"cgr"}
	wantAssigned(t, "a full request", cg(t, c, full, nil), id, given...)

	// Epochs: ahead is fenced; the previous one is accepted when it owns
	// no more than it has (an answer was lost); behind otherwise fenced.
	code(t, "an epoch ahead", c.do(cgHeartbeat("cgr-g", "m2", 3), 1).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.FencedMemberEpoch)
	if r := cg(t, c, owning(cgHeartbeat("cgr-g", "m1", 1), id, kept...), nil); r.MemberEpoch != 2 {
		t.Fatalf("the previous epoch: answered epoch %d", r.MemberEpoch)
	}
	code(t, "the previous epoch owning more", c.do(owning(cgHeartbeat("cgr-g", "m1", 1), id, 0, 1, 2, 3), 1).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.FencedMemberEpoch)
	code(t, "the previous epoch, owning unsaid", c.do(cgHeartbeat("cgr-g", "m1", 1), 1).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.FencedMemberEpoch)
	code(t, "an unknown member", c.do(cgHeartbeat("cgr-g", "m9", 2), 1).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
	// A member joining again with its id gets its whole assignment.
	wantAssigned(t, "m1 joining again", cg(t, c, cgJoin("cgr-g", "m1", "cgr"), nil), id, kept...)

	// m1 leaves: epoch 3; m2 gets everything.
	if r := cg(t, c, cgHeartbeat("cgr-g", "m1", -1), nil); r.MemberEpoch != -1 || *r.MemberID != "m1" {
		t.Fatalf("leaving: epoch %d, member %v", r.MemberEpoch, r.MemberID)
	}
	if st := describeConsumerGroup(t, g.addr, "cgr-g"); st.State != "Assigning" || st.Epoch != 3 {
		t.Fatalf("after m1 left: %s at epoch %d, want Assigning at 3", st.State, st.Epoch)
	}
	r = cg(t, c, cgHeartbeat("cgr-g", "m2", 2), nil)
	wantAssigned(t, "m2 alone", r, id, 0, 1, 2, 3)
	if r.MemberEpoch != 3 {
		t.Fatalf("m2 alone at epoch %d, want 3", r.MemberEpoch)
	}
	code(t, "m1 after leaving", c.do(cgHeartbeat("cgr-g", "m1", 2), 1).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
}

// Static members (group.instance.id): another member cannot take a live
// one's instance id (UNRELEASED_INSTANCE_ID); one that left for a while
// (-2) keeps its partitions, and whoever joins with its instance id gets
// them at once; the older incarnation is fenced.
func TestConsumerGroupStatic(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	id := g.topic(t, "cgs", 2, nil).ID
	c := dial(t, g.addr)
	inst := "cgs-instance"
	a := cgJoin("cgs-g", "a", "cgs")
	a.InstanceID = &inst
	wantAssigned(t, "a", cg(t, c, a, nil), id, 0, 1)
	b := cgJoin("cgs-g", "b", "cgs")
	b.InstanceID = &inst
	cg(t, c, b, kerr.UnreleasedInstanceID)

	away := cgHeartbeat("cgs-g", "a", -2)
	away.InstanceID = &inst
	if r := cg(t, c, away, nil); r.MemberEpoch != -2 || *r.MemberID != "a" {
		t.Fatalf("leaving for a while: epoch %d, member %v", r.MemberEpoch, r.MemberID)
	}
	before := describeConsumerGroup(t, g.addr, "cgs-g").Epoch
	r := cg(t, c, b, nil)
	wantAssigned(t, "b in a's place", r, id, 0, 1)
	if st := describeConsumerGroup(t, g.addr, "cgs-g"); st.Epoch != before || len(st.Members) != 1 || st.Members[0].MemberID != "b" {
		t.Fatalf("after b took a's place: epoch %d (was %d), members %+v", st.Epoch, before, st.Members)
	}
	old := cgHeartbeat("cgs-g", "a", 1)
	old.InstanceID = &inst
	cg(t, c, old, kerr.FencedInstanceID)
}

// A member silent for group.consumer.session.timeout.ms is fenced and the
// others get its partitions; one that does not revoke within its rebalance
// timeout is fenced too.
func TestConsumerGroupTimeouts(t *testing.T) {
	g := startGateway(t, gatewayOptions{consumerSession: 500 * time.Millisecond})
	id := g.topic(t, "cgt", 2, nil).ID
	c := dial(t, g.addr)
	cg(t, c, cgJoin("cgt-g", "a", "cgt"), nil)
	cg(t, c, cgJoin("cgt-g", "b", "cgt"), nil)
	// b goes silent; a heartbeats until it owns both.
	epoch := int32(1)
	var got []int32
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		r := cg(t, c, owning(cgHeartbeat("cgt-g", "a", epoch), id, got...), nil)
		epoch = r.MemberEpoch
		if r.Assignment != nil {
			got = assigned(r, id)
		}
		if len(got) == 2 {
			break
		}
	}
	if len(got) != 2 {
		t.Fatalf("a owns %v after b's session ended, want both", got)
	}
	cg(t, c, cgHeartbeat("cgt-g", "b", 2), kerr.UnknownMemberID)

	// A member that keeps what it must revoke past its rebalance
	// timeout is fenced.
	slow := cgJoin("cgt-r", "slow", "cgt")
	slow.RebalanceTimeoutMillis = 300
	cg(t, c, slow, nil)
	cg(t, c, cgJoin("cgt-r", "quick", "cgt"), nil)
	fenced := false
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && !fenced; time.Sleep(100 * time.Millisecond) {
		r := c.do(owning(cgHeartbeat("cgt-r", "slow", 1), id, 0, 1), 1).(*kmsg.ConsumerGroupHeartbeatResponse)
		fenced = r.ErrorCode == kerr.UnknownMemberID.Code
		c.do(cgHeartbeat("cgt-r", "quick", 2), 1)
	}
	if !fenced {
		t.Fatal("a member holding partitions past its 300 ms rebalance timeout was not fenced")
	}
}

// A regex subscription (v1) takes the topics it matches whole, and those
// created later; a topic deleted leaves the assignment.
func TestConsumerGroupRegex(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	a := g.topic(t, "cgx-a", 2, nil).ID
	g.topic(t, "other-cgx-b", 2, nil)
	c := dial(t, g.addr)
	join := cgJoin("cgx-g", "m")
	join.SubscribedTopicNames = nil
	join.SubscribedTopicRegex = kmsg.StringPtr("cgx-.*")
	r := cg(t, c, join, nil)
	wantAssigned(t, "the regex's topic", r, a, 0, 1)
	if len(r.Assignment.Topics) != 1 {
		t.Fatalf("a regex matching part of a name was taken: %+v", r.Assignment)
	}
	// A topic created later is assigned.
	b := g.topic(t, "cgx-b", 3, nil).ID
	epoch := r.MemberEpoch
	eventually(t, "the topic created later assigned", func() bool {
		r := cg(t, c, cgHeartbeat("cgx-g", "m", epoch), nil)
		epoch = r.MemberEpoch
		return len(assigned(r, b)) == 3
	})
	// Deleted, it is revoked.
	if err := g.backend.DeleteTopic(ctxFor(t), "cgx-b"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted topic revoked", func() bool {
		r := cg(t, c, cgHeartbeat("cgx-g", "m", epoch), nil)
		epoch = r.MemberEpoch
		return r.Assignment != nil && len(assigned(r, b)) == 0 && len(assigned(r, a)) == 2
	})
}

// An empty classic group (here one that only commits) becomes a consumer
// group at its first ConsumerGroupHeartbeat, its offsets kept; a consumer
// group with members refuses classic members; empty, it becomes classic
// again at a JoinGroup; a classic group with members stays classic.
func TestConsumerGroupConversion(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "cgv", 2, nil)
	c := dial(t, g.addr)
	code(t, "a simple commit", c.do(offsetCommit("cgv-g", -1, "", "cgv", map[int32]int64{0: 7}), 8).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)
	cg(t, c, cgJoin("cgv-g", "m", "cgv"), nil)
	if got := committed(t, g.addr, "cgv-g", "cgv", 0); got[0] != 7 {
		t.Fatalf("the offset after becoming a consumer group: %d, want 7", got[0])
	}
	code(t, "a classic member joining", c.do(joinRequest("cgv-g", "", nil, "cgv"), 5).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol)
	code(t, "a classic heartbeat", c.do(heartbeat("cgv-g", "m", 1), 4).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
	code(t, "a classic sync", c.do(syncRequest("cgv-g", "m", 1, nil), 5).(*kmsg.SyncGroupResponse).ErrorCode, kerr.UnknownMemberID)
	cg(t, c, cgHeartbeat("cgv-g", "m", -1), nil)
	// Empty: classic again.
	_, _, _ = stableMember(t, g.addr, "cgv-g", "cgv")
	if d := describeGroup(t, g.addr, "cgv-g"); d.State != "Stable" || d.ProtocolType != "consumer" || len(d.Members) != 1 {
		t.Fatalf("the classic group again: %+v", d)
	}
	if got := committed(t, g.addr, "cgv-g", "cgv", 0); got[0] != 7 {
		t.Fatalf("the offset after becoming classic again: %d, want 7", got[0])
	}
	// With members, it stays classic.
	r := c.do(cgJoin("cgv-g", "n", "cgv"), 1).(*kmsg.ConsumerGroupHeartbeatResponse)
	code(t, "a consumer member joining a classic group with members", r.ErrorCode, kerr.GroupIDNotFound)
	code(t, "a heartbeat to a classic group", c.do(cgHeartbeat("cgv-g", "n", 1), 1).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.GroupIDNotFound)
}

// OffsetCommit and OffsetFetch of a consumer group's members carry their
// member epoch (v9+): a commit at an epoch ahead is STALE_MEMBER_EPOCH, as
// is one behind for a partition given since (KIP-1251), older versions
// UNSUPPORTED_VERSION; a commit without member while members are there is
// UNKNOWN_MEMBER_ID. OffsetDelete of a subscribed topic and DeleteGroups
// of a group with members are refused.
func TestConsumerGroupOffsets(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	id := g.topic(t, "cgo", 2, nil).ID
	g.topic(t, "cgo-other", 1, nil)
	c := dial(t, g.addr)
	r := cg(t, c, cgJoin("cgo-g", "m", "cgo"), nil)
	wantAssigned(t, "m", r, id, 0, 1)
	commit := func(epoch int32, member string, version int16) int16 {
		return c.do(offsetCommit("cgo-g", epoch, member, "cgo", map[int32]int64{0: 5}), version).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	code(t, "a commit at the member's epoch", commit(1, "m", 9), nil)
	code(t, "an epoch ahead", commit(2, "m", 9), kerr.StaleMemberEpoch)
	code(t, "OffsetCommit v8", commit(1, "m", 8), kerr.UnsupportedVersion)
	code(t, "an unknown member", commit(1, "x", 9), kerr.UnknownMemberID)
	code(t, "no member while members are there", commit(-1, "", 9), kerr.UnknownMemberID)
	// The partitions given at epoch 1 may be committed at epoch 1 after
	// the member moved on; a partition given later may not.
	cg(t, c, cgJoin("cgo-g", "n", "cgo"), nil) // epoch 2: m keeps one partition
	r = cg(t, c, cgHeartbeat("cgo-g", "m", 1), nil)
	keep := assigned(r, id)
	cg(t, c, owning(cgHeartbeat("cgo-g", "m", 1), id, keep...), nil) // m at epoch 2
	kc := c.do(offsetCommit("cgo-g", 1, "m", "cgo", map[int32]int64{keep[0]: 6}), 9).(*kmsg.OffsetCommitResponse)
	code(t, "a partition given at the older epoch", kc.Topics[0].Partitions[0].ErrorCode, nil)

	fetch := func(member *string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetFetchRequest()
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch = "cgo-g", member, epoch
		req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
		return c.do(req, 9).(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode
	}
	code(t, "OffsetFetch by an admin", fetch(nil, -1), nil)
	code(t, "OffsetFetch at the member's epoch", fetch(kmsg.StringPtr("m"), 2), nil)
	code(t, "OffsetFetch at another epoch", fetch(kmsg.StringPtr("m"), 1), kerr.StaleMemberEpoch)
	code(t, "OffsetFetch of an unknown member", fetch(kmsg.StringPtr("x"), 1), kerr.UnknownMemberID)

	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "cgo-g"
	for _, topic := range []string{"cgo", "cgo-other"} {
		dt := kmsg.NewOffsetDeleteRequestTopic()
		dt.Topic, dt.Partitions = topic, []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		del.Topics = append(del.Topics, dt)
	}
	dr := c.do(del, 0).(*kmsg.OffsetDeleteResponse)
	code(t, "OffsetDelete of a subscribed topic", dr.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)
	code(t, "OffsetDelete of another topic", dr.Topics[1].Partitions[0].ErrorCode, nil)
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"cgo-g"}
	code(t, "DeleteGroups with members", c.do(dg, 2).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, kerr.NonEmptyGroup)
	cg(t, c, cgHeartbeat("cgo-g", "m", -1), nil)
	cg(t, c, cgHeartbeat("cgo-g", "n", -1), nil)
	code(t, "DeleteGroups once empty", c.do(dg, 2).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, nil)
	code(t, "a heartbeat after the deletion", c.do(cgHeartbeat("cgo-g", "m", 2), 1).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.GroupIDNotFound)
}

// backendTopicID is a topic's id in the gateway's backend.
func (g *testGateway) backendTopicID(t *testing.T, name string) [16]byte {
	t.Helper()
	info, err := g.backend.DescribeTopic(ctxFor(t), name)
	if err != nil {
		t.Fatal(err)
	}
	return info.ID
}

// describeConsumerGroup is a group as ConsumerGroupDescribe v1 shows it.
func describeConsumerGroup(t *testing.T, addr, name string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{name}
	resp := roundTrip(t, addr, req, 1).(*kmsg.ConsumerGroupDescribeResponse)
	if len(resp.Groups) != 1 {
		t.Fatalf("ConsumerGroupDescribe %s: %d groups", name, len(resp.Groups))
	}
	return resp.Groups[0]
}

// A consumer group's configs (KIP-848's consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms, librdkafka's 0081 sets one) are set
// within Kafka's bounds, shown by DescribeConfigs, and the heartbeat
// interval given to the group's members is the group's.
func TestConsumerGroupConfigs(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "cgc", 1, nil)
	group := kmsg.ConfigResourceTypeGroupConfig
	set := func(name, v string) configOp {
		return configOp{name, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(v)}
	}
	c, msg := alterCode(roundTrip(t, g.addr, incrementalAlter(false, group, "cgc-g", set("consumer.session.timeout.ms", "50000"),
		set("consumer.heartbeat.interval.ms", "6000")), 1))
	code(t, "consumer group configs: "+msg, c, nil)
	c, _ = alterCode(roundTrip(t, g.addr, incrementalAlter(false, group, "cgc-g", set("consumer.heartbeat.interval.ms", "1000")), 1))
	code(t, "a heartbeat interval below Kafka's bound", c, kerr.InvalidConfig)
	resp := roundTrip(t, g.addr, describeConfigs(false, false, configResource(group, "cgc-g", "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms")), 4).(*kmsg.DescribeConfigsResponse)
	cs := configsOf(resp.Resources[0])
	if s := cs["consumer.session.timeout.ms"]; s.Value == nil || *s.Value != "50000" || s.Source != kmsg.ConfigSourceGroupConfig {
		t.Errorf("consumer.session.timeout.ms: %+v", s)
	}
	conn := dial(t, g.addr)
	if r := cg(t, conn, cgJoin("cgc-g", "a", "cgc"), nil); r.HeartbeatIntervalMillis != 6000 {
		t.Errorf("heartbeat interval %d ms, want the group's 6000", r.HeartbeatIntervalMillis)
	}
	if r := cg(t, conn, cgJoin("cgc-other", "a", "cgc"), nil); r.HeartbeatIntervalMillis == 6000 {
		t.Error("another group got this group's heartbeat interval")
	}
}
