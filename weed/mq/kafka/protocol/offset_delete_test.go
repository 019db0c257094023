package protocol_test

import (
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func offsetDelete(groupID string, topics map[string][]int32) *kmsg.OffsetDeleteRequest {
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = groupID
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = name
		for _, p := range topics[name] {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteRequestTopicPartition{Partition: p})
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func offsetDeleteCodes(resp *kmsg.OffsetDeleteResponse) map[string]int16 {
	out := map[string]int16{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			out[rt.Topic+"/"+strconv.Itoa(int(p.Partition))] = p.ErrorCode
		}
	}
	return out
}

// OffsetDelete v0: an empty group's commits of the partitions named go,
// the others stay; an unknown group is GROUP_ID_NOT_FOUND, an unknown
// topic UNKNOWN_TOPIC_OR_PARTITION.
func TestOffsetDeleteVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrOffsetDeleteRequest(), 0, 0)
	g.topic(t, "od-a", 2, nil)
	g.topic(t, "od-b", 1, nil)
	roundTrip(t, g.addr, offsetCommit("od", -1, "", "od-a", map[int32]int64{0: 3, 1: 4}), 8)
	roundTrip(t, g.addr, offsetCommit("od", -1, "", "od-b", map[int32]int64{0: 5}), 8)
	resp := roundTrip(t, g.addr, offsetDelete("od", map[string][]int32{"od-a": {0, 5, -1}, "od-none": {0}}), 0).(*kmsg.OffsetDeleteResponse)
	code(t, "the request", resp.ErrorCode, nil)
	codes := offsetDeleteCodes(resp)
	code(t, "od-a/0", codes["od-a/0"], nil)
	code(t, "a partition od-a does not have", codes["od-a/5"], kerr.UnknownTopicOrPartition)
	code(t, "partition -1", codes["od-a/-1"], kerr.UnknownTopicOrPartition)
	code(t, "an unknown topic", codes["od-none/0"], kerr.UnknownTopicOrPartition)
	if got := committed(t, g.addr, "od", "od-a", 0, 1); !slices.Equal(got, []int64{-1, 4}) {
		t.Errorf("od-a after deleting partition 0: %v", got)
	}
	if got := committed(t, g.addr, "od", "od-b", 0); !slices.Equal(got, []int64{5}) {
		t.Errorf("od-b: %v", got)
	}
	none := roundTrip(t, g.addr, offsetDelete("od-nobody", map[string][]int32{"od-a": {0}}), 0).(*kmsg.OffsetDeleteResponse)
	code(t, "an unknown group", none.ErrorCode, kerr.GroupIDNotFound)
}

// A consumer group with members keeps the commits of the topics they are
// subscribed to (GROUP_SUBSCRIBED_TO_TOPIC) and deletes the others'; a
// non-empty group of another protocol type is NON_EMPTY_GROUP.
func TestOffsetDeleteSubscribed(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "od-sub", 1, nil)
	g.topic(t, "od-free", 1, nil)
	c, id, gen := stableMember(t, g.addr, "od-g", "od-sub")
	for _, topic := range []string{"od-sub", "od-free"} {
		code(t, "commit "+topic, commitCodes(c.do(offsetCommit("od-g", gen, id, topic, map[int32]int64{0: 7}), 8))[0], nil)
	}
	resp := roundTrip(t, g.addr, offsetDelete("od-g", map[string][]int32{"od-sub": {0}, "od-free": {0}}), 0).(*kmsg.OffsetDeleteResponse)
	codes := offsetDeleteCodes(resp)
	code(t, "a subscribed topic", codes["od-sub/0"], kerr.GroupSubscribedToTopic)
	code(t, "a topic nobody subscribes to", codes["od-free/0"], nil)
	if got := committed(t, g.addr, "od-g", "od-sub", 0); !slices.Equal(got, []int64{7}) {
		t.Errorf("the subscribed topic's commit: %v", got)
	}
	if got := committed(t, g.addr, "od-g", "od-free", 0); !slices.Equal(got, []int64{-1}) {
		t.Errorf("the other topic's commit: %v", got)
	}

	connect := dial(t, g.addr)
	req := joinRequest("od-connect", "", nil, "od-free")
	req.ProtocolType = "connect"
	first := connect.do(req, 5).(*kmsg.JoinGroupResponse)
	req.MemberID = first.MemberID
	if j := connect.do(req, 5).(*kmsg.JoinGroupResponse); j.ErrorCode != 0 {
		t.Fatalf("connect member: %s", errName(j.ErrorCode))
	}
	nonEmpty := roundTrip(t, g.addr, offsetDelete("od-connect", map[string][]int32{"od-free": {0}}), 0).(*kmsg.OffsetDeleteResponse)
	code(t, "a connect group with a member", nonEmpty.ErrorCode, kerr.NonEmptyGroup)
}

// With an authorizer: Delete on the group (GROUP_AUTHORIZATION_FAILED for
// the request) and Read on each topic (TOPIC_AUTHORIZATION_FAILED for its
// partitions).
func TestOffsetDeleteAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "oda"),
		binding(anonymous, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeGroup, "oda"),
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "oda-nodelete"),
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "oda-read"),
	}})
	g.topic(t, "oda-read", 1, nil)
	g.topic(t, "oda-hidden", 1, nil)
	roundTrip(t, g.addr, offsetCommit("oda", -1, "", "oda-read", map[int32]int64{0: 1}), 8)
	roundTrip(t, g.addr, offsetCommit("oda-nodelete", -1, "", "oda-read", map[int32]int64{0: 1}), 8)
	resp := roundTrip(t, g.addr, offsetDelete("oda", map[string][]int32{"oda-read": {0}, "oda-hidden": {0}}), 0).(*kmsg.OffsetDeleteResponse)
	codes := offsetDeleteCodes(resp)
	code(t, "a readable topic", codes["oda-read/0"], nil)
	code(t, "a hidden topic", codes["oda-hidden/0"], kerr.TopicAuthorizationFailed)
	denied := roundTrip(t, g.addr, offsetDelete("oda-nodelete", map[string][]int32{"oda-read": {0}}), 0).(*kmsg.OffsetDeleteResponse)
	code(t, "without Delete on the group", denied.ErrorCode, kerr.GroupAuthorizationFailed)
	if got := committed(t, g.addr, "oda-nodelete", "oda-read", 0); !slices.Equal(got, []int64{1}) {
		t.Errorf("the refused group's commit: %v", got)
	}
}
