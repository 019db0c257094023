package protocol_test

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func electCodes(resp *kmsg.ElectLeadersResponse) map[string]int16 {
	out := map[string]int16{}
	for _, rt := range resp.Topics {
		if internal(rt.Topic) {
			continue
		}
		for _, p := range rt.Partitions {
			out[rt.Topic+"/"+strconv.Itoa(int(p.Partition))] = p.ErrorCode
		}
	}
	return out
}

// ElectLeaders v0-2: each partition has its one leader already, so every
// partition asked for (every partition of every topic with a null list)
// gets ELECTION_NOT_NEEDED; an unknown topic or partition
// UNKNOWN_TOPIC_OR_PARTITION.
func TestElectLeadersVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrElectLeadersRequest(), 0, 2)
	g.topic(t, "el", 2, nil)
	g.topic(t, "el-b", 1, nil)
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrElectLeadersRequest()
		req.TimeoutMillis = 5000
		req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "el", Partitions: []int32{1, 0, 7}}, {Topic: "el-none", Partitions: []int32{0}}}
		resp := roundTrip(t, g.addr, req, v).(*kmsg.ElectLeadersResponse)
		codes := electCodes(resp)
		code(t, "el/0", codes["el/0"], kerr.ElectionNotNeeded)
		code(t, "el/1", codes["el/1"], kerr.ElectionNotNeeded)
		code(t, "partition 7 of 2", codes["el/7"], kerr.UnknownTopicOrPartition)
		code(t, "an unknown topic", codes["el-none/0"], kerr.UnknownTopicOrPartition)
		if resp.Topics[0].Partitions[0].Partition != 1 {
			t.Errorf("v%d: partitions out of request order: %+v", v, resp.Topics[0].Partitions)
		}
		req.Topics = nil
		all := electCodes(roundTrip(t, g.addr, req, v).(*kmsg.ElectLeadersResponse))
		if len(all) != 3 || all["el/0"] != kerr.ElectionNotNeeded.Code || all["el/1"] != kerr.ElectionNotNeeded.Code || all["el-b/0"] != kerr.ElectionNotNeeded.Code {
			t.Errorf("v%d, every partition: %v", v, all)
		}
	}
}

// With an authorizer it needs Alter on the cluster: from v1
// CLUSTER_AUTHORIZATION_FAILED for the request, v0 for each partition.
func TestElectLeadersAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true})
	g.topic(t, "ela", 1, nil)
	req := kmsg.NewPtrElectLeadersRequest()
	req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "ela", Partitions: []int32{0}}}
	code(t, "v0", electCodes(roundTrip(t, g.addr, req, 0).(*kmsg.ElectLeadersResponse))["ela/0"], kerr.ClusterAuthorizationFailed)
	for _, v := range []int16{1, 2} {
		resp := roundTrip(t, g.addr, req, v).(*kmsg.ElectLeadersResponse)
		if code(t, "v1+", resp.ErrorCode, kerr.ClusterAuthorizationFailed); len(resp.Topics) != 0 {
			t.Errorf("v%d: %+v", v, resp.Topics)
		}
	}
	g.allow(t, binding(anonymous, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, acl.ClusterName))
	code(t, "with Alter", electCodes(roundTrip(t, g.addr, req, 2).(*kmsg.ElectLeadersResponse))["ela/0"], kerr.ElectionNotNeeded)
}
