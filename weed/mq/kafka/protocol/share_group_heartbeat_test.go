package protocol_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func sgHeartbeat(group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatRequest {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	if topics != nil {
		req.SubscribedTopicNames = topics
	}
	return req
}

func sg(t *testing.T, c *rawConn, req *kmsg.ShareGroupHeartbeatRequest, want *kerr.Error) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	resp := c.do(req, 1).(*kmsg.ShareGroupHeartbeatResponse)
	code(t, "ShareGroupHeartbeat of "+req.MemberID, resp.ErrorCode, want)
	return resp
}

func sgAssigned(resp *kmsg.ShareGroupHeartbeatResponse) []int32 {
	if resp.Assignment == nil {
		return nil
	}
	out := []int32{}
	for _, tp := range resp.Assignment.TopicPartitions {
		out = append(out, tp.Partitions...)
	}
	slices.Sort(out)
	return out
}

// ShareGroupHeartbeat v1: Kafka's checks; the simple assignor gives each
// member its own partitions while they are as many as the partitions, and
// shares them once members outnumber them; a member takes its assignment
// at its heartbeat, with no revocation; the group's epoch moves with
// members coming and going. A share group is no group of another type.
func TestShareGroupHeartbeat(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	for _, v := range []struct {
		req      kmsg.Request
		min, max int16
	}{
		{kmsg.NewPtrShareGroupHeartbeatRequest(), 1, 1}, {kmsg.NewPtrShareGroupDescribeRequest(), 1, 1},
		{kmsg.NewPtrShareFetchRequest(), 1, 2}, {kmsg.NewPtrShareAcknowledgeRequest(), 1, 2},
		{kmsg.NewPtrDescribeShareGroupOffsetsRequest(), 0, 1}, {kmsg.NewPtrAlterShareGroupOffsetsRequest(), 0, 0},
		{kmsg.NewPtrDeleteShareGroupOffsetsRequest(), 0, 0},
	} {
		servesVersions(t, g.addr, v.req, v.min, v.max)
	}
	g.topic(t, "sgh", 2, nil)
	c := dial(t, g.addr)
	sg(t, c, sgHeartbeat("sgh-g", "", 0, "sgh"), kerr.InvalidRequest)
	sg(t, c, sgHeartbeat("sgh-g", "m1", 0), kerr.InvalidRequest)
	sg(t, c, sgHeartbeat("sgh-g", "m1", -2), kerr.InvalidRequest)
	sg(t, c, sgHeartbeat("sgh-none", "m1", 3), kerr.GroupIDNotFound)

	r := sg(t, c, sgHeartbeat("sgh-g", "m1", 0, "sgh"), nil)
	if r.MemberEpoch != 1 || !slices.Equal(sgAssigned(r), []int32{0, 1}) || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("m1 alone: epoch %d, assigned %v, interval %d", r.MemberEpoch, sgAssigned(r), r.HeartbeatIntervalMillis)
	}
	r = sg(t, c, sgHeartbeat("sgh-g", "m2", 0, "sgh"), nil)
	if r.MemberEpoch != 2 || len(sgAssigned(r)) != 1 {
		t.Fatalf("m2: epoch %d, assigned %v", r.MemberEpoch, sgAssigned(r))
	}
	m2 := sgAssigned(r)
	r = sg(t, c, sgHeartbeat("sgh-g", "m1", 1), nil)
	if r.MemberEpoch != 2 || len(sgAssigned(r)) != 1 || sgAssigned(r)[0] == m2[0] {
		t.Fatalf("m1 after m2 joined: epoch %d, assigned %v (m2 has %v)", r.MemberEpoch, sgAssigned(r), m2)
	}
	// A third member: three members on two partitions, each partition
	// is shared by two of them.
	if r := sg(t, c, sgHeartbeat("sgh-g", "m3", 0, "sgh"), nil); r.MemberEpoch != 3 {
		t.Fatalf("m3 joined at epoch %d, want 3", r.MemberEpoch)
	}
	holders := map[int32]int{}
	for m, epoch := range map[string]int32{"m1": 2, "m2": 2, "m3": 3} {
		r := sg(t, c, sgHeartbeat("sgh-g", m, epoch, "sgh"), nil) // a full request: the assignment comes
		for _, p := range sgAssigned(r) {
			holders[p]++
		}
	}
	if holders[0] != 2 || holders[1] != 2 {
		t.Fatalf("members per partition %v, want two for each", holders)
	}
	sg(t, c, sgHeartbeat("sgh-g", "m1", 7), kerr.FencedMemberEpoch)
	sg(t, c, sgHeartbeat("sgh-g", "mx", 3), kerr.UnknownMemberID)

	// Described as a share group; not a group of another type.
	dreq := kmsg.NewPtrShareGroupDescribeRequest()
	dreq.GroupIDs = []string{"sgh-g", "sgh-none"}
	dresp := c.do(dreq, 1).(*kmsg.ShareGroupDescribeResponse)
	if d := dresp.Groups[0]; d.ErrorCode != 0 || d.GroupState != "Stable" || d.Assignor != "simple" || len(d.Members) != 3 || d.GroupEpoch != 3 {
		t.Fatalf("described: %+v", d)
	}
	code(t, "describing no group", dresp.Groups[1].ErrorCode, kerr.GroupIDNotFound)
	if d := describeConsumerGroup(t, g.addr, "sgh-g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ConsumerGroupDescribe of a share group: %s", errName(d.ErrorCode))
	}
	code(t, "a consumer member", c.do(cgJoin("sgh-g", "c1", "sgh"), 1).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.GroupIDNotFound)
	code(t, "a classic member", c.do(joinRequest("sgh-g", "", nil, "sgh"), 5).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol)
	code(t, "a commit", c.do(offsetCommit("sgh-g", -1, "", "sgh", map[int32]int64{0: 1}), 8).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.GroupIDNotFound)
	if d := describeGroup(t, g.addr, "sgh-g"); d.State != "Dead" {
		t.Fatalf("DescribeGroups of a share group: %+v", d)
	}
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.TypesFilter = []string{"Share"}
	lresp := c.do(lreq, 5).(*kmsg.ListGroupsResponse)
	if len(lresp.Groups) != 1 || lresp.Groups[0].Group != "sgh-g" || lresp.Groups[0].GroupType != "share" || lresp.Groups[0].ProtocolType != "share" {
		t.Fatalf("ListGroups of type share: %+v", lresp.Groups)
	}
	cg(t, c, cgJoin("cg-only", "c", "sgh"), nil)
	sg(t, c, sgHeartbeat("cg-only", "s", 0, "sgh"), kerr.GroupIDNotFound)

	// Leaving: the group empties; then it may be deleted.
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"sgh-g"}
	code(t, "deleting a share group with members", c.do(del, 2).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, kerr.NonEmptyGroup)
	for _, m := range []string{"m1", "m2", "m3"} {
		if r := sg(t, c, sgHeartbeat("sgh-g", m, -1), nil); r.MemberEpoch != -1 {
			t.Fatalf("%s leaving: epoch %d", m, r.MemberEpoch)
		}
	}
	dresp = c.do(dreq, 1).(*kmsg.ShareGroupDescribeResponse)
	if d := dresp.Groups[0]; d.GroupState != "Empty" || len(d.Members) != 0 {
		t.Fatalf("after every member left: %+v", d)
	}
	code(t, "deleting the empty share group", c.do(del, 2).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, nil)
}
