package protocol_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func describeQuorum(topic string, partitions ...int32) *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rt.Partitions = append(rt.Partitions, kmsg.DescribeQuorumRequestTopicPartition{Partition: p})
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// DescribeQuorum v0-2 describes the gateways' view as __cluster_metadata's
// quorum: the controller leads at the view's epoch, every gateway of the
// view a voter at that epoch, heard from now (v1+), no observers; v2 names
// each voter's listeners. Another topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION.
func TestDescribeQuorumVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{cluster: newFakeCluster(1, nil)})
	servesVersions(t, g.addr, kmsg.NewPtrDescribeQuorumRequest(), 0, 2)
	for v := int16(0); v <= 2; v++ {
		resp := roundTrip(t, g.addr, describeQuorum("__cluster_metadata", 0), v).(*kmsg.DescribeQuorumResponse)
		code(t, "DescribeQuorum", resp.ErrorCode, nil)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
		p := resp.Topics[0].Partitions[0]
		code(t, "partition 0", p.ErrorCode, nil)
		if p.LeaderID != 1 || p.LeaderEpoch != 7 || p.HighWatermark != 7 || len(p.Observers) != 0 {
			t.Errorf("v%d: leader %d at epoch %d, high watermark %d, observers %v", v, p.LeaderID, p.LeaderEpoch, p.HighWatermark, p.Observers)
		}
		var voters []int32
		for _, r := range p.CurrentVoters {
			voters = append(voters, r.ReplicaID)
			if r.LogEndOffset != 7 || v >= 1 && (r.LastFetchTimestamp <= 0 || r.LastCaughtUpTimestamp <= 0) {
				t.Errorf("v%d: voter %d at %d, last heard %d", v, r.ReplicaID, r.LogEndOffset, r.LastFetchTimestamp)
			}
		}
		if !slices.Equal(voters, []int32{0, 1}) {
			t.Errorf("v%d: voters %v", v, voters)
		}
		if v >= 2 && (len(resp.Nodes) != 2 || len(resp.Nodes[1].Listeners) != 1 || resp.Nodes[1].Listeners[0].Port != 19092) {
			t.Errorf("v%d: nodes %+v", v, resp.Nodes)
		}
	}
	resp := roundTrip(t, g.addr, describeQuorum("other", 0), 2).(*kmsg.DescribeQuorumResponse)
	code(t, "another topic", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	resp = roundTrip(t, g.addr, describeQuorum("__cluster_metadata", 1), 2).(*kmsg.DescribeQuorumResponse)
	code(t, "partition 1", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
}

// DescribeQuorum needs DESCRIBE on the cluster, as in Kafka.
func TestDescribeQuorumAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true})
	resp := roundTrip(t, g.addr, describeQuorum("__cluster_metadata", 0), 2).(*kmsg.DescribeQuorumResponse)
	code(t, "without DESCRIBE", resp.ErrorCode, kerr.ClusterAuthorizationFailed)
	g.allow(t, binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, acl.ClusterName))
	resp = roundTrip(t, g.addr, describeQuorum("__cluster_metadata", 0), 2).(*kmsg.DescribeQuorumResponse)
	code(t, "with DESCRIBE", resp.ErrorCode, nil)
}
