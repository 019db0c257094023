package protocol_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup v0-5: the leader's request brings every member's assignment
// and each member gets its own; a follower's SyncGroup, sent first, waits
// for the leader's; a member the leader gave nothing gets an empty
// assignment; v5 answers with the protocol type and name.
func TestSyncGroupVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrSyncGroupRequest(), 0, 5)
	for _, v := range []int16{0, 3, 4, 5} {
		groupID := "sg-v" + strconv.Itoa(int(v))
		c := dial(t, g.addr)
		j := join(t, c, 4, groupID, "t")
		req := syncRequest(groupID, j.MemberID, j.Generation, map[string][]byte{j.MemberID: {1, 2, 3}, "someone-else": {9}})
		if v >= 5 {
			req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		}
		resp := c.do(req, v).(*kmsg.SyncGroupResponse)
		if resp.ErrorCode != 0 || string(resp.MemberAssignment) != "\x01\x02\x03" {
			t.Errorf("v%d: %s, assignment %x", v, errName(resp.ErrorCode), resp.MemberAssignment)
		}
		if v >= 5 && (resp.ProtocolType == nil || *resp.ProtocolType != "consumer" || resp.Protocol == nil || *resp.Protocol != "range") {
			t.Errorf("v%d: protocol type %v, protocol %v", v, resp.ProtocolType, resp.Protocol)
		}
	}

	// Two members: the follower syncs first and waits.
	leader, leaderID, gen := stableMember(t, g.addr, "sg-two", "t")
	follower := dial(t, g.addr)
	fj := follower.do(joinRequest("sg-two", "", nil, "t"), 5).(*kmsg.JoinGroupResponse)
	joined := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		resp, err := follower.send(joinRequest("sg-two", fj.MemberID, nil, "t"), 5)
		if err != nil {
			t.Error(err)
		}
		joined <- resp.(*kmsg.JoinGroupResponse)
	}()
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "sg-two", leaderID, gen
	eventually(t, "a rebalance", func() bool {
		return leader.do(hb, 4).(*kmsg.HeartbeatResponse).ErrorCode == kerr.RebalanceInProgress.Code
	})
	lj := leader.do(joinRequest("sg-two", leaderID, nil, "t"), 5).(*kmsg.JoinGroupResponse)
	fjoined := <-joined
	synced := make(chan *kmsg.SyncGroupResponse, 1)
	go func() {
		resp, err := follower.send(syncRequest("sg-two", fjoined.MemberID, fjoined.Generation, nil), 5)
		if err != nil {
			t.Error(err)
		}
		synced <- resp.(*kmsg.SyncGroupResponse)
	}()
	// The follower is answered only once the leader has synced: not in
	// the next 100 ms without it.
	select {
	case resp := <-synced:
		t.Fatalf("the follower's sync answered before the leader's: %s %q", errName(resp.ErrorCode), resp.MemberAssignment)
	case <-time.After(100 * time.Millisecond):
	}
	ls := leader.do(syncRequest("sg-two", leaderID, lj.Generation, map[string][]byte{leaderID: []byte("L"), fjoined.MemberID: []byte("F")}), 5).(*kmsg.SyncGroupResponse)
	fs := <-synced
	if ls.ErrorCode != 0 || string(ls.MemberAssignment) != "L" || fs.ErrorCode != 0 || string(fs.MemberAssignment) != "F" {
		t.Fatalf("leader: %s %q; follower: %s %q", errName(ls.ErrorCode), ls.MemberAssignment, errName(fs.ErrorCode), fs.MemberAssignment)
	}
	// A leader that assigns nothing to a member: it gets an empty
	// assignment (not null).
	again := leader.do(syncRequest("sg-two", leaderID, lj.Generation, nil), 5).(*kmsg.SyncGroupResponse)
	if again.ErrorCode != 0 || string(again.MemberAssignment) != "L" {
		t.Errorf("a second sync of the stable generation: %s %q", errName(again.ErrorCode), again.MemberAssignment)
	}
	empty := dial(t, g.addr)
	ej := join(t, empty, 5, "sg-empty", "t")
	es := empty.do(syncRequest("sg-empty", ej.MemberID, ej.Generation, map[string][]byte{"other": {1}}), 5).(*kmsg.SyncGroupResponse)
	if es.ErrorCode != 0 || es.MemberAssignment == nil || len(es.MemberAssignment) != 0 {
		t.Errorf("assigned nothing: %s %v (nil %v)", errName(es.ErrorCode), es.MemberAssignment, es.MemberAssignment == nil)
	}
}

// Errors: an unknown group or member (UNKNOWN_MEMBER_ID), another
// generation (ILLEGAL_GENERATION), another protocol type or name (v5,
// INCONSISTENT_GROUP_PROTOCOL), a sync while the group is preparing a
// rebalance (REBALANCE_IN_PROGRESS); GROUP_AUTHORIZATION_FAILED without
// Read on the group.
func TestSyncGroupErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	c, id, gen := stableMember(t, g.addr, "sg-err", "t")
	code(t, "an unknown group", c.do(syncRequest("sg-nobody", id, gen, nil), 3).(*kmsg.SyncGroupResponse).ErrorCode, kerr.UnknownMemberID)
	code(t, "an unknown member", c.do(syncRequest("sg-err", "stranger", gen, nil), 3).(*kmsg.SyncGroupResponse).ErrorCode, kerr.UnknownMemberID)
	code(t, "another generation", c.do(syncRequest("sg-err", id, gen+1, nil), 3).(*kmsg.SyncGroupResponse).ErrorCode, kerr.IllegalGeneration)
	wrongType := syncRequest("sg-err", id, gen, nil)
	wrongType.ProtocolType = kmsg.StringPtr("connect")
	code(t, "another protocol type", c.do(wrongType, 5).(*kmsg.SyncGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol)
	wrongName := syncRequest("sg-err", id, gen, nil)
	wrongName.Protocol = kmsg.StringPtr("roundrobin")
	code(t, "another protocol", c.do(wrongName, 5).(*kmsg.SyncGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol)
	// A second member starts a rebalance: the first one's sync of its
	// generation is refused until it joins again.
	newcomer := dial(t, g.addr)
	nj := newcomer.do(joinRequest("sg-err", "", nil, "t"), 5).(*kmsg.JoinGroupResponse)
	joined := make(chan error, 1)
	go func() {
		_, err := newcomer.send(joinRequest("sg-err", nj.MemberID, nil, "t"), 5)
		joined <- err
	}()
	eventually(t, "REBALANCE_IN_PROGRESS", func() bool {
		return c.do(syncRequest("sg-err", id, gen, nil), 3).(*kmsg.SyncGroupResponse).ErrorCode == kerr.RebalanceInProgress.Code
	})
	rejoined := c.do(joinRequest("sg-err", id, nil, "t"), 5).(*kmsg.JoinGroupResponse) // ends the join phase at once
	if err := <-joined; err != nil || rejoined.ErrorCode != 0 {
		t.Fatalf("the rebalance: %v %s", err, errName(rejoined.ErrorCode))
	}
	code(t, "the last generation", c.do(syncRequest("sg-err", id, gen, nil), 3).(*kmsg.SyncGroupResponse).ErrorCode, kerr.IllegalGeneration)

	secured := startGateway(t, gatewayOptions{authorizer: true})
	code(t, "without Read on the group", roundTrip(t, secured.addr, syncRequest("sg", "m", 1, nil), 5).(*kmsg.SyncGroupResponse).ErrorCode, kerr.GroupAuthorizationFailed)
}
