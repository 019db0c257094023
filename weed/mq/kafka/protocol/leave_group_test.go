package protocol_test

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func leaveOne(groupID, memberID string) *kmsg.LeaveGroupRequest {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group, req.MemberID = groupID, memberID
	return req
}

func leaveMembers(groupID string, members ...kmsg.LeaveGroupRequestMember) *kmsg.LeaveGroupRequest {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group, req.Members = groupID, members
	return req
}

// LeaveGroup v0-2 removes one member by id: the group empties (or the
// others rebalance); an unknown member or group gets UNKNOWN_MEMBER_ID.
func TestLeaveGroupVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrLeaveGroupRequest(), 0, 5)
	for _, v := range []int16{0, 1, 2} {
		groupID := "lv-v" + strconv.Itoa(int(v))
		c, id, _ := stableMember(t, g.addr, groupID, "t")
		code(t, "an unknown member", c.do(leaveOne(groupID, "stranger"), v).(*kmsg.LeaveGroupResponse).ErrorCode, kerr.UnknownMemberID)
		code(t, "an unknown group", c.do(leaveOne("lv-none", id), v).(*kmsg.LeaveGroupResponse).ErrorCode, kerr.UnknownMemberID)
		resp := c.do(leaveOne(groupID, id), v).(*kmsg.LeaveGroupResponse)
		code(t, "the member", resp.ErrorCode, nil)
		if d := describeGroup(t, g.addr, groupID); d.State != "Empty" || len(d.Members) != 0 {
			t.Errorf("v%d: after the only member left: %s with %d members", v, d.State, len(d.Members))
		}
		code(t, "leaving again", c.do(leaveOne(groupID, id), v).(*kmsg.LeaveGroupResponse).ErrorCode, kerr.UnknownMemberID)
	}
}

// LeaveGroup v3-5 removes a batch of members, each by member id or by
// group.instance.id, with an error each, in request order: an unknown one
// UNKNOWN_MEMBER_ID, a static member named with another incarnation's id
// FENCED_INSTANCE_ID; the members that remain rebalance. A member id handed
// out and not yet joined with (MEMBER_ID_REQUIRED) may leave too.
func TestLeaveGroupBatch(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	instance := "lv-inst"
	sc := dial(t, g.addr)
	static := sc.do(joinRequest("lv-batch", "", &instance, "t"), 5).(*kmsg.JoinGroupResponse)
	sc.do(syncRequest("lv-batch", static.MemberID, static.Generation, nil), 3)
	pending := dial(t, g.addr).do(joinRequest("lv-batch", "", nil, "t"), 5).(*kmsg.JoinGroupResponse)
	if pending.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("pending member: %s", errName(pending.ErrorCode))
	}
	other := "lv-other"
	for _, v := range []int16{3, 5} {
		members := []kmsg.LeaveGroupRequestMember{
			{MemberID: "stranger"},
			{MemberID: "wrong-incarnation", InstanceID: &instance},
			{InstanceID: &other},
		}
		if v == 5 {
			members[0].Reason = kmsg.StringPtr("shutting down")
		}
		resp := roundTrip(t, g.addr, leaveMembers("lv-batch", members...), v).(*kmsg.LeaveGroupResponse)
		code(t, "the request", resp.ErrorCode, nil)
		if len(resp.Members) != 3 {
			t.Fatalf("v%d: %d members answered", v, len(resp.Members))
		}
		for i, want := range []*kerr.Error{kerr.UnknownMemberID, kerr.FencedInstanceID, kerr.UnknownMemberID} {
			if resp.Members[i].MemberID != members[i].MemberID || (members[i].InstanceID != nil) != (resp.Members[i].InstanceID != nil) {
				t.Errorf("v%d: member %d answered as %+v", v, i, resp.Members[i])
			}
			code(t, "member "+members[i].MemberID, resp.Members[i].ErrorCode, want)
		}
	}
	resp := roundTrip(t, g.addr, leaveMembers("lv-batch", kmsg.LeaveGroupRequestMember{MemberID: pending.MemberID},
		kmsg.LeaveGroupRequestMember{InstanceID: &instance}), 4).(*kmsg.LeaveGroupResponse)
	if resp.ErrorCode != 0 || len(resp.Members) != 2 || resp.Members[0].ErrorCode != 0 || resp.Members[1].ErrorCode != 0 {
		t.Fatalf("the pending and the static member: %+v", resp)
	}
	eventually(t, "the group empty", func() bool { return describeGroup(t, g.addr, "lv-batch").State == "Empty" })

	// Of two members, one leaves: the other rebalances.
	leader, leaderID, gen := stableMember(t, g.addr, "lv-two", "t")
	fc := dial(t, g.addr)
	fj := fc.do(joinRequest("lv-two", "", nil, "t"), 5).(*kmsg.JoinGroupResponse)
	joined := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		resp, err := fc.send(joinRequest("lv-two", fj.MemberID, nil, "t"), 5)
		if err != nil {
			t.Error(err)
		}
		joined <- resp.(*kmsg.JoinGroupResponse)
	}()
	eventually(t, "a rebalance", func() bool {
		return leader.do(heartbeat("lv-two", leaderID, gen), 4).(*kmsg.HeartbeatResponse).ErrorCode == kerr.RebalanceInProgress.Code
	})
	lj := leader.do(joinRequest("lv-two", leaderID, nil, "t"), 5).(*kmsg.JoinGroupResponse)
	<-joined
	leader.do(syncRequest("lv-two", leaderID, lj.Generation, nil), 3)
	code(t, "the follower leaves", leader.do(leaveOne("lv-two", fj.MemberID), 2).(*kmsg.LeaveGroupResponse).ErrorCode, nil)
	code(t, "the leader after the follower left", leader.do(heartbeat("lv-two", leaderID, lj.Generation), 4).(*kmsg.HeartbeatResponse).ErrorCode, kerr.RebalanceInProgress)

	secured := startGateway(t, gatewayOptions{authorizer: true})
	code(t, "without Read on the group", roundTrip(t, secured.addr, leaveMembers("g", kmsg.LeaveGroupRequestMember{MemberID: "m"}), 5).(*kmsg.LeaveGroupResponse).ErrorCode, kerr.GroupAuthorizationFailed)
}
