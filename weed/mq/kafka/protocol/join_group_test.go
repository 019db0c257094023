package protocol_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup v0-9: a new group's first member is its leader in generation
// 1, with the members' metadata; from v4 a new member gets its id with
// MEMBER_ID_REQUIRED first and joins again with it; v7+ names the protocol
// type; v9 says SkipAssignment (false for a new leader).
func TestJoinGroupVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrJoinGroupRequest(), 0, 9)
	for _, v := range []int16{0, 1, 2, 3, 4, 5, 7, 8, 9} {
		groupID := "jg-v" + strconv.Itoa(int(v))
		resp := join(t, dial(t, g.addr), v, groupID, "topic-a", "topic-b")
		if resp.Generation != 1 || resp.LeaderID != resp.MemberID || !strings.HasPrefix(resp.MemberID, "raw-client-") {
			t.Errorf("v%d: generation %d, leader %q, member %q", v, resp.Generation, resp.LeaderID, resp.MemberID)
		}
		if resp.Protocol == nil || *resp.Protocol != "range" || (v >= 7 && (resp.ProtocolType == nil || *resp.ProtocolType != "consumer")) {
			t.Errorf("v%d: protocol %v type %v", v, resp.Protocol, resp.ProtocolType)
		}
		if v >= 9 && resp.SkipAssignment {
			t.Errorf("v%d: a new leader told to skip the assignment", v)
		}
		if len(resp.Members) != 1 || resp.Members[0].MemberID != resp.MemberID || !bytes.Equal(resp.Members[0].ProtocolMetadata, subscription("topic-a", "topic-b")) {
			t.Errorf("v%d: the leader's members: %+v", v, resp.Members)
		}
		if v >= 2 && resp.ThrottleMillis != 0 {
			t.Errorf("v%d: throttled", v)
		}
	}
}

// A second member: the stable group rebalances; its first member hears of
// it in its heartbeat (REBALANCE_IN_PROGRESS), joins again, and both are
// answered in generation 2, the leader with both members' metadata, the
// follower with none.
func TestJoinGroupRebalance(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	leader, leaderID, gen := stableMember(t, g.addr, "jg-two", "a")
	follower := dial(t, g.addr)
	first := follower.do(joinRequest("jg-two", "", nil, "b"), 5).(*kmsg.JoinGroupResponse)
	if first.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("the second member: %s", errName(first.ErrorCode))
	}
	followerDone := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		resp, err := follower.send(joinRequest("jg-two", first.MemberID, nil, "b"), 5)
		if err != nil {
			t.Error(err)
		}
		followerDone <- resp.(*kmsg.JoinGroupResponse)
	}()
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "jg-two", leaderID, gen
	eventually(t, "the leader's heartbeat says REBALANCE_IN_PROGRESS", func() bool {
		return leader.do(hb, 4).(*kmsg.HeartbeatResponse).ErrorCode == kerr.RebalanceInProgress.Code
	})
	again := leader.do(joinRequest("jg-two", leaderID, nil, "a"), 5).(*kmsg.JoinGroupResponse)
	other := <-followerDone
	if again.ErrorCode != 0 || other.ErrorCode != 0 || again.Generation != gen+1 || other.Generation != gen+1 {
		t.Fatalf("rejoined: %s gen %d; follower: %s gen %d", errName(again.ErrorCode), again.Generation, errName(other.ErrorCode), other.Generation)
	}
	if again.LeaderID != leaderID || other.LeaderID != leaderID || len(again.Members) != 2 || len(other.Members) != 0 {
		t.Fatalf("leader %q/%q (want %q), %d and %d members listed", again.LeaderID, other.LeaderID, leaderID, len(again.Members), len(other.Members))
	}
	metas := map[string][]byte{}
	for _, m := range again.Members {
		metas[m.MemberID] = m.ProtocolMetadata
	}
	if !bytes.Equal(metas[leaderID], subscription("a")) || !bytes.Equal(metas[first.MemberID], subscription("b")) {
		t.Errorf("members' metadata %v", metas)
	}
}

// Errors: a session timeout outside the gateway's bounds
// (INVALID_SESSION_TIMEOUT), an empty group id (INVALID_GROUP_ID), a
// member id the group never gave (UNKNOWN_MEMBER_ID), a protocol type or
// protocols the group's members do not share
// (INCONSISTENT_GROUP_PROTOCOL); each with generation -1 and, with an
// authorizer, GROUP_AUTHORIZATION_FAILED without Read on the group.
func TestJoinGroupErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	stableMember(t, g.addr, "jg-err", "t")
	c := dial(t, g.addr)
	short := joinRequest("jg-err-new", "", nil, "t")
	short.SessionTimeoutMillis = 50
	connect := joinRequest("jg-err", "", nil, "t")
	connect.ProtocolType = "connect"
	otherProtocol := joinRequest("jg-err", "", nil, "t")
	otherProtocol.Protocols[0].Name = "roundrobin"
	noType := joinRequest("jg-err-empty", "", nil, "t")
	noType.ProtocolType = ""
	for _, tc := range []struct {
		name string
		req  *kmsg.JoinGroupRequest
		want *kerr.Error
	}{
		{"a 50 ms session", short, kerr.InvalidSessionTimeout},
		{"no group id", joinRequest("", "", nil, "t"), kerr.InvalidGroupID},
		{"a made-up member id", joinRequest("jg-err", "raw-client-made-up", nil, "t"), kerr.UnknownMemberID},
		{"another protocol type", connect, kerr.InconsistentGroupProtocol},
		{"no protocol in common", otherProtocol, kerr.InconsistentGroupProtocol},
		{"no protocol type", noType, kerr.InconsistentGroupProtocol},
	} {
		for _, v := range []int16{3, 9} {
			resp := c.do(tc.req, v).(*kmsg.JoinGroupResponse)
			code(t, tc.name, resp.ErrorCode, tc.want)
			if resp.Generation != -1 {
				t.Errorf("%s: generation %d", tc.name, resp.Generation)
			}
		}
	}

	secured := startGateway(t, gatewayOptions{authorizer: true})
	resp := roundTrip(t, secured.addr, joinRequest("jg-denied", "", nil, "t"), 6).(*kmsg.JoinGroupResponse)
	if code(t, "without Read on the group", resp.ErrorCode, kerr.GroupAuthorizationFailed); resp.Generation != -1 {
		t.Errorf("denied: generation %d", resp.Generation)
	}
}

// Static members (v5+, KIP-345) join without MEMBER_ID_REQUIRED; a new
// incarnation of a stable group's static leader is answered at once in the
// same generation under a new id, told (v9) to keep its assignment
// (KIP-814), and the old incarnation is fenced (FENCED_INSTANCE_ID).
func TestJoinGroupStaticMember(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	instance := "inst-1"
	c := dial(t, g.addr)
	first := c.do(joinRequest("jg-static", "", &instance, "t"), 5).(*kmsg.JoinGroupResponse)
	if first.ErrorCode != 0 || first.Generation != 1 || first.LeaderID != first.MemberID {
		t.Fatalf("static join: %s generation %d", errName(first.ErrorCode), first.Generation)
	}
	if len(first.Members) != 1 || first.Members[0].InstanceID == nil || *first.Members[0].InstanceID != instance {
		t.Fatalf("members %+v", first.Members)
	}
	s := c.do(syncRequest("jg-static", first.MemberID, 1, map[string][]byte{first.MemberID: []byte("kept")}), 3).(*kmsg.SyncGroupResponse)
	code(t, "sync", s.ErrorCode, nil)

	back := dial(t, g.addr).do(joinRequest("jg-static", "", &instance, "t"), 9).(*kmsg.JoinGroupResponse)
	if back.ErrorCode != 0 || back.Generation != 1 || back.MemberID == first.MemberID || back.LeaderID != back.MemberID || !back.SkipAssignment {
		t.Fatalf("the static leader back: %s generation %d member %q leader %q skip %v", errName(back.ErrorCode), back.Generation, back.MemberID, back.LeaderID, back.SkipAssignment)
	}
	sync := syncRequest("jg-static", back.MemberID, 1, nil)
	sync.InstanceID = &instance
	if s := roundTrip(t, g.addr, sync, 3).(*kmsg.SyncGroupResponse); s.ErrorCode != 0 || string(s.MemberAssignment) != "kept" {
		t.Errorf("the new incarnation's sync: %s, assignment %q", errName(s.ErrorCode), s.MemberAssignment)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = "jg-static", first.MemberID, 1, &instance
	code(t, "the old incarnation's heartbeat", roundTrip(t, g.addr, hb, 3).(*kmsg.HeartbeatResponse).ErrorCode, kerr.FencedInstanceID)
	rejoin := joinRequest("jg-static", first.MemberID, &instance, "t")
	code(t, "the old incarnation's JoinGroup", roundTrip(t, g.addr, rejoin, 5).(*kmsg.JoinGroupResponse).ErrorCode, kerr.FencedInstanceID)
}
