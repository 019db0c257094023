package protocol_test

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
)

type epochAsk struct {
	partition, current, epoch int32
}

func offsetForLeaderEpoch(topic string, asks ...epochAsk) *kmsg.OffsetForLeaderEpochRequest {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	for _, a := range asks {
		p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch = a.partition, a.current, a.epoch
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func epochEnds(t *testing.T, resp kmsg.Response) []kmsg.OffsetForLeaderEpochResponseTopicPartition {
	t.Helper()
	r := resp.(*kmsg.OffsetForLeaderEpochResponse)
	if len(r.Topics) != 1 {
		t.Fatalf("%d topics answered", len(r.Topics))
	}
	return r.Topics[0].Partitions
}

// OffsetForLeaderEpoch v0-4: a partition led by its one gateway since
// epoch 0 ends at its end for every epoch up to the current one, and an
// epoch it never had is unknown (-1, -1, no error), as Kafka answers; a
// client believing in a newer current epoch (v2+) gets
// UNKNOWN_LEADER_EPOCH, one that does not say (-1) is not checked.
func TestOffsetForLeaderEpochVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrOffsetForLeaderEpochRequest(), 0, 4)
	g.topic(t, "ofle", 2, nil)
	g.write(t, "ofle", 0, 0, "a", "b", "c", "d", "e")
	for v := int16(0); v <= 4; v++ {
		parts := epochEnds(t, roundTrip(t, g.addr, offsetForLeaderEpoch("ofle", epochAsk{0, -1, 0}, epochAsk{1, -1, 0}, epochAsk{0, -1, 1}), v))
		if len(parts) != 3 {
			t.Fatalf("v%d: %d partitions", v, len(parts))
		}
		if p := parts[0]; p.ErrorCode != 0 || p.EndOffset != 5 || (v >= 1 && p.LeaderEpoch != 0) {
			t.Errorf("v%d: epoch 0 of partition 0: %s end %d epoch %d", v, errName(p.ErrorCode), p.EndOffset, p.LeaderEpoch)
		}
		if p := parts[1]; p.ErrorCode != 0 || p.EndOffset != 0 {
			t.Errorf("v%d: epoch 0 of the empty partition: %s end %d", v, errName(p.ErrorCode), p.EndOffset)
		}
		if p := parts[2]; p.ErrorCode != 0 || p.EndOffset != -1 || (v >= 1 && p.LeaderEpoch != -1) {
			t.Errorf("v%d: epoch 1, never had: %s end %d epoch %d", v, errName(p.ErrorCode), p.EndOffset, p.LeaderEpoch)
		}
	}
	for _, v := range []int16{2, 4} {
		parts := epochEnds(t, roundTrip(t, g.addr, offsetForLeaderEpoch("ofle", epochAsk{0, 1, 0}, epochAsk{0, 0, 0}), v))
		code(t, "a newer current epoch", parts[0].ErrorCode, kerr.UnknownLeaderEpoch)
		if p := parts[1]; p.ErrorCode != 0 || p.EndOffset != 5 {
			t.Errorf("v%d: the current epoch 0: %s end %d", v, errName(p.ErrorCode), p.EndOffset)
		}
	}
}

// Errors: an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; with
// an authorizer, Describe on the topic (TOPIC_AUTHORIZATION_FAILED).
func TestOffsetForLeaderEpochErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "ofle"),
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "ofle-none"),
	}})
	g.topic(t, "ofle", 1, nil)
	g.topic(t, "ofle-hidden", 1, nil)
	parts := epochEnds(t, roundTrip(t, g.addr, offsetForLeaderEpoch("ofle", epochAsk{3, -1, 0}, epochAsk{0, -1, 0}), 4))
	code(t, "partition 3 of 1", parts[0].ErrorCode, kerr.UnknownTopicOrPartition)
	code(t, "partition 0", parts[1].ErrorCode, nil)
	code(t, "an unknown topic", epochEnds(t, roundTrip(t, g.addr, offsetForLeaderEpoch("ofle-none", epochAsk{0, -1, 0}), 3))[0].ErrorCode, kerr.UnknownTopicOrPartition)
	code(t, "without Describe", epochEnds(t, roundTrip(t, g.addr, offsetForLeaderEpoch("ofle-hidden", epochAsk{0, -1, 0}), 3))[0].ErrorCode, kerr.TopicAuthorizationFailed)
}

// A partition led since epoch 3: every epoch up to 3 ends at the
// partition's end (nothing is truncated when leaders change), a later one
// is unknown (-1, -1); from v2 a client's current epoch older than 3 is
// FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH; v0-1 do not check it.
func TestOffsetForLeaderEpochEpochs(t *testing.T) {
	fc := newFakeCluster(0, map[string]fakeOwner{membership.PartitionKey("ofe", 0): {0, 3}})
	g := startGateway(t, gatewayOptions{cluster: fc})
	g.topic(t, "ofe", 1, nil)
	g.write(t, "ofe", 0, 0, "a", "b", "c", "d")
	for _, v := range []int16{1, 2, 4} {
		parts := epochEnds(t, roundTrip(t, g.addr, offsetForLeaderEpoch("ofe",
			epochAsk{0, -1, 3}, epochAsk{0, -1, 1}, epochAsk{0, -1, 4}, epochAsk{0, 3, 2}, epochAsk{0, 2, 3}, epochAsk{0, 4, 3}), v))
		want := []struct {
			code          *kerr.Error
			epoch, offset int64
		}{{nil, 3, 4}, {nil, 1, 4}, {nil, -1, -1}, {nil, 2, 4}, {kerr.FencedLeaderEpoch, -1, -1}, {kerr.UnknownLeaderEpoch, -1, -1}}
		if v < 2 {
			want[4], want[5] = want[0], want[0]
		}
		for i, w := range want {
			p := parts[i]
			code(t, "ask "+strconv.Itoa(i), p.ErrorCode, w.code)
			if int64(p.LeaderEpoch) != w.epoch || p.EndOffset != w.offset {
				t.Errorf("v%d: ask %d: epoch %d end %d, want %d %d", v, i, p.LeaderEpoch, p.EndOffset, w.epoch, w.offset)
			}
		}
	}
}
