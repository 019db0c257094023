package protocol_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func heartbeat(groupID, memberID string, generation int32) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = groupID, memberID, generation
	return req
}

// Heartbeat v0-4: a member of the current generation of a stable group
// gets no error; an unknown group or member UNKNOWN_MEMBER_ID, another
// generation ILLEGAL_GENERATION; while the group prepares a rebalance
// REBALANCE_IN_PROGRESS, which tells the member to join again.
func TestHeartbeatVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrHeartbeatRequest(), 0, 4)
	c, id, gen := stableMember(t, g.addr, "hb", "t")
	for v := int16(0); v <= 4; v++ {
		resp := c.do(heartbeat("hb", id, gen), v).(*kmsg.HeartbeatResponse)
		code(t, "a stable member", resp.ErrorCode, nil)
		if v >= 1 && resp.ThrottleMillis != 0 {
			t.Errorf("v%d: throttled", v)
		}
		code(t, "an unknown group", c.do(heartbeat("hb-none", id, gen), v).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
		code(t, "an unknown member", c.do(heartbeat("hb", "stranger", gen), v).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
		code(t, "an old generation", c.do(heartbeat("hb", id, gen-1), v).(*kmsg.HeartbeatResponse).ErrorCode, kerr.IllegalGeneration)
		code(t, "a later generation", c.do(heartbeat("hb", id, gen+1), v).(*kmsg.HeartbeatResponse).ErrorCode, kerr.IllegalGeneration)
	}
	// A second member starts a rebalance.
	newcomer := dial(t, g.addr)
	nj := newcomer.do(joinRequest("hb", "", nil, "t"), 5).(*kmsg.JoinGroupResponse)
	joined := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		resp, err := newcomer.send(joinRequest("hb", nj.MemberID, nil, "t"), 5)
		if err != nil {
			t.Error(err)
		}
		joined <- resp.(*kmsg.JoinGroupResponse)
	}()
	eventually(t, "REBALANCE_IN_PROGRESS", func() bool {
		return c.do(heartbeat("hb", id, gen), 0).(*kmsg.HeartbeatResponse).ErrorCode == kerr.RebalanceInProgress.Code
	})
	rejoined := c.do(joinRequest("hb", id, nil, "t"), 5).(*kmsg.JoinGroupResponse)
	<-joined
	// Waiting for the leader's SyncGroup (CompletingRebalance) the new
	// generation's members heartbeat without error.
	code(t, "the new generation, before its sync", c.do(heartbeat("hb", id, rejoined.Generation), 4).(*kmsg.HeartbeatResponse).ErrorCode, nil)
	code(t, "the last generation", c.do(heartbeat("hb", id, gen), 4).(*kmsg.HeartbeatResponse).ErrorCode, kerr.IllegalGeneration)
}

// A member whose session ends without a heartbeat is removed (its next
// heartbeat gets UNKNOWN_MEMBER_ID) and the group empties; a static member's
// older incarnation gets FENCED_INSTANCE_ID (v3+); without Read on the
// group GROUP_AUTHORIZATION_FAILED.
func TestHeartbeatSessionAndFencing(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	c := dial(t, g.addr)
	req := joinRequest("hb-session", "", nil, "t")
	req.SessionTimeoutMillis = 200
	first := c.do(req, 5).(*kmsg.JoinGroupResponse)
	req.MemberID = first.MemberID
	j := c.do(req, 5).(*kmsg.JoinGroupResponse)
	c.do(syncRequest("hb-session", j.MemberID, j.Generation, nil), 3)
	code(t, "within the session", c.do(heartbeat("hb-session", j.MemberID, j.Generation), 4).(*kmsg.HeartbeatResponse).ErrorCode, nil)
	eventually(t, "the member removed after its 200 ms session", func() bool {
		return describeGroup(t, g.addr, "hb-session").State == "Empty"
	})
	code(t, "after the session", c.do(heartbeat("hb-session", j.MemberID, j.Generation), 4).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)

	instance := "hb-inst"
	old := dial(t, g.addr).do(joinRequest("hb-static", "", &instance, "t"), 5).(*kmsg.JoinGroupResponse)
	roundTrip(t, g.addr, syncRequest("hb-static", old.MemberID, old.Generation, nil), 3)
	newer := dial(t, g.addr).do(joinRequest("hb-static", "", &instance, "t"), 5).(*kmsg.JoinGroupResponse)
	fenced := heartbeat("hb-static", old.MemberID, old.Generation)
	fenced.InstanceID = &instance
	code(t, "the older incarnation", roundTrip(t, g.addr, fenced, 3).(*kmsg.HeartbeatResponse).ErrorCode, kerr.FencedInstanceID)
	current := heartbeat("hb-static", newer.MemberID, newer.Generation)
	current.InstanceID = &instance
	code(t, "the newer incarnation", roundTrip(t, g.addr, current, 4).(*kmsg.HeartbeatResponse).ErrorCode, nil)

	secured := startGateway(t, gatewayOptions{authorizer: true})
	code(t, "without Read on the group", roundTrip(t, secured.addr, heartbeat("g", "m", 1), 4).(*kmsg.HeartbeatResponse).ErrorCode, kerr.GroupAuthorizationFailed)
}
