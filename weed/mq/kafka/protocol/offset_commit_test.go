package protocol_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func commitCodes(resp kmsg.Response) []int16 {
	var out []int16
	for _, rt := range resp.(*kmsg.OffsetCommitResponse).Topics {
		for _, p := range rt.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

// OffsetCommit v0-10 by a group-less consumer (v0 has no generation, later
// versions send -1 and no member): what is committed is what OffsetFetch
// reads back, offset, leader epoch (v6+) and metadata; v10 names topics by
// id. The retention time of v2-4 and the timestamp of v1 are accepted.
func TestOffsetCommitVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrOffsetCommitRequest(), 0, 10)
	info := g.topic(t, "oc", 3, nil)
	for v := int16(0); v <= 10; v++ {
		groupID := "oc-v" + string(rune('a'+v))
		req := offsetCommit(groupID, -1, "", "oc", map[int32]int64{0: int64(10 + v), 2: int64(20 + v)})
		req.RetentionTimeMillis = 60_000
		req.Topics[0].Partitions[0].Metadata = kmsg.StringPtr("meta-" + groupID)
		req.Topics[0].Partitions[0].LeaderEpoch = 7
		req.Topics[0].Partitions[0].Timestamp = 1234
		if v >= 10 {
			req.Topics[0].Topic, req.Topics[0].TopicID = "", info.ID
		}
		resp := roundTrip(t, g.addr, req, v).(*kmsg.OffsetCommitResponse)
		if len(resp.Topics) != 1 || (v < 10 && resp.Topics[0].Topic != "oc") || (v >= 10 && resp.Topics[0].TopicID != info.ID) {
			t.Fatalf("v%d: topics %+v", v, resp.Topics)
		}
		if codes := commitCodes(resp); !slices.Equal(codes, []int16{0, 0}) {
			t.Fatalf("v%d: codes %v", v, codes)
		}
		fetch := kmsg.NewPtrOffsetFetchRequest()
		fetch.Group = groupID
		fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "oc", Partitions: []int32{0, 1, 2}}}
		got := roundTrip(t, g.addr, fetch, 7).(*kmsg.OffsetFetchResponse).Topics[0].Partitions
		wantEpoch := int32(-1)
		if v >= 6 {
			wantEpoch = 7
		}
		if got[0].Offset != int64(10+v) || got[0].Metadata == nil || *got[0].Metadata != "meta-"+groupID || got[0].LeaderEpoch != wantEpoch ||
			got[1].Offset != -1 || got[2].Offset != int64(20+v) {
			t.Errorf("v%d: read back %+v", v, got)
		}
	}
}

// Errors: partitions of an unknown topic, or one the topic lacks,
// UNKNOWN_TOPIC_OR_PARTITION; an unknown topic id (v10)
// UNKNOWN_TOPIC_ID; metadata over 4096 bytes OFFSET_METADATA_TOO_LARGE -
// each partition's own, the others committed; an empty group id
// INVALID_GROUP_ID; a generation for a group that does not exist
// ILLEGAL_GENERATION.
func TestOffsetCommitErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "oce", 2, nil)
	req := offsetCommit("oce-g", -1, "", "oce", map[int32]int64{0: 5, 1: 6, 4: 7})
	req.Topics[0].Partitions[1].Metadata = kmsg.StringPtr(strings.Repeat("m", 4097))
	other := kmsg.NewOffsetCommitRequestTopic()
	other.Topic = "oce-none"
	other.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}
	bad := kmsg.NewOffsetCommitRequestTopic()
	bad.Topic = "bad/name"
	bad.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}
	req.Topics = append(req.Topics, other, bad)
	codes := commitCodes(roundTrip(t, g.addr, req, 8))
	want := []int16{0, kerr.OffsetMetadataTooLarge.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code}
	if !slices.Equal(codes, want) {
		t.Errorf("codes %v, want %v", codes, want)
	}
	if got := committed(t, g.addr, "oce-g", "oce", 0, 1); !slices.Equal(got, []int64{5, -1}) {
		t.Errorf("committed %v, want only partition 0's", got)
	}
	byID := offsetCommit("oce-g", -1, "", "", map[int32]int64{0: 1})
	byID.Topics[0].TopicID = [16]byte{4, 4}
	code(t, "an unknown topic id", commitCodes(roundTrip(t, g.addr, byID, 10))[0], kerr.UnknownTopicID)
	code(t, "no group id", commitCodes(roundTrip(t, g.addr, offsetCommit("", -1, "", "oce", map[int32]int64{0: 1}), 8))[0], kerr.InvalidGroupID)
	code(t, "a generation of no group", commitCodes(roundTrip(t, g.addr, offsetCommit("oce-nobody", 3, "m", "oce", map[int32]int64{0: 1}), 8))[0], kerr.IllegalGeneration)
}

// A group with members: only a member of the current generation commits
// (UNKNOWN_MEMBER_ID for a stranger or a group-less commit,
// ILLEGAL_GENERATION for another generation); while the group awaits its
// leader's assignment REBALANCE_IN_PROGRESS. v0 commits as a group-less
// consumer, so it is refused too.
func TestOffsetCommitMembers(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "ocm", 1, nil)
	c, id, gen := stableMember(t, g.addr, "ocm-g", "ocm")
	code(t, "the member", commitCodes(c.do(offsetCommit("ocm-g", gen, id, "ocm", map[int32]int64{0: 3}), 9))[0], nil)
	code(t, "a stranger", commitCodes(c.do(offsetCommit("ocm-g", gen, "stranger", "ocm", map[int32]int64{0: 4}), 9))[0], kerr.UnknownMemberID)
	code(t, "a group-less commit", commitCodes(c.do(offsetCommit("ocm-g", -1, "", "ocm", map[int32]int64{0: 4}), 9))[0], kerr.UnknownMemberID)
	code(t, "v0", commitCodes(c.do(offsetCommit("ocm-g", -1, "", "ocm", map[int32]int64{0: 4}), 0))[0], kerr.UnknownMemberID)
	code(t, "another generation", commitCodes(c.do(offsetCommit("ocm-g", gen+1, id, "ocm", map[int32]int64{0: 4}), 9))[0], kerr.IllegalGeneration)
	if got := committed(t, g.addr, "ocm-g", "ocm", 0); !slices.Equal(got, []int64{3}) {
		t.Errorf("committed %v, want the member's 3", got)
	}
	// A rebalance: generation 2 waits for the leader's SyncGroup.
	newcomer := dial(t, g.addr)
	nj := newcomer.do(joinRequest("ocm-g", "", nil, "ocm"), 5).(*kmsg.JoinGroupResponse)
	joined := make(chan error, 1)
	go func() {
		_, err := newcomer.send(joinRequest("ocm-g", nj.MemberID, nil, "ocm"), 5)
		joined <- err
	}()
	eventually(t, "REBALANCE_IN_PROGRESS", func() bool {
		return c.do(heartbeat("ocm-g", id, gen), 4).(*kmsg.HeartbeatResponse).ErrorCode == kerr.RebalanceInProgress.Code
	})
	j := c.do(joinRequest("ocm-g", id, nil, "ocm"), 5).(*kmsg.JoinGroupResponse)
	if err := <-joined; err != nil {
		t.Fatal(err)
	}
	code(t, "before the sync", commitCodes(c.do(offsetCommit("ocm-g", j.Generation, id, "ocm", map[int32]int64{0: 5}), 9))[0], kerr.RebalanceInProgress)
	c.do(syncRequest("ocm-g", id, j.Generation, nil), 3)
	code(t, "after the sync", commitCodes(c.do(offsetCommit("ocm-g", j.Generation, id, "ocm", map[int32]int64{0: 6}), 9))[0], nil)
}

// With an authorizer a commit needs Read on the group
// (GROUP_AUTHORIZATION_FAILED for every partition) and Read on the topic
// (TOPIC_AUTHORIZATION_FAILED for its partitions).
func TestOffsetCommitAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "oca-g"),
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "oca-read"),
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "oca-described"),
	}})
	g.topic(t, "oca-read", 1, nil)
	g.topic(t, "oca-described", 1, nil)
	req := offsetCommit("oca-g", -1, "", "oca-read", map[int32]int64{0: 1})
	second := offsetCommit("", -1, "", "oca-described", map[int32]int64{0: 1}).Topics[0]
	req.Topics = append(req.Topics, second)
	if codes := commitCodes(roundTrip(t, g.addr, req, 8)); !slices.Equal(codes, []int16{0, kerr.TopicAuthorizationFailed.Code}) {
		t.Errorf("codes %v", codes)
	}
	req.Group = "oca-other"
	if codes := commitCodes(roundTrip(t, g.addr, req, 8)); !slices.Equal(codes, []int16{kerr.GroupAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code}) {
		t.Errorf("without Read on the group: codes %v", codes)
	}
}
