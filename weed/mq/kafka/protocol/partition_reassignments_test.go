package protocol_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func reassignment(topic string, replicas map[int32][]int32, order ...int32) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	for _, p := range order {
		rt.Partitions = append(rt.Partitions, kmsg.AlterPartitionAssignmentsRequestTopicPartition{Partition: p, Replicas: replicas[p]})
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// AlterPartitionReassignments v0-1 and ListPartitionReassignments v0, as a
// cluster whose replicas SeaweedFS keeps answers them: a reassignment to
// the partition's one replica (its leader) is done at once, another is
// INVALID_REPLICA_ASSIGNMENT with why, a cancellation
// NO_REASSIGNMENT_IN_PROGRESS, an unknown partition or topic
// UNKNOWN_TOPIC_OR_PARTITION; no reassignment is ever listed.
func TestPartitionReassignments(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrAlterPartitionAssignmentsRequest(), 0, 1)
	servesVersions(t, g.addr, kmsg.NewPtrListPartitionReassignmentsRequest(), 0, 0)
	g.topic(t, "pr", 3, nil)
	self := roundTrip(t, g.addr, kmsg.NewPtrMetadataRequest(), 12).(*kmsg.MetadataResponse).Brokers[0].NodeID
	for v := int16(0); v <= 1; v++ {
		req := reassignment("pr", map[int32][]int32{0: {self}, 1: {self, self + 1}, 2: nil, 5: {self}}, 0, 1, 2, 5)
		resp := roundTrip(t, g.addr, req, v).(*kmsg.AlterPartitionAssignmentsResponse)
		code(t, "AlterPartitionReassignments", resp.ErrorCode, nil)
		want := map[int32]*kerr.Error{0: nil, 1: kerr.InvalidReplicaAssignment, 2: kerr.NoReassignmentInProgress, 5: kerr.UnknownTopicOrPartition}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != len(want) {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
		for _, p := range resp.Topics[0].Partitions {
			code(t, fmt.Sprintf("v%d: partition %d", v, p.Partition), p.ErrorCode, want[p.Partition])
			if p.Partition == 1 && (p.ErrorMessage == nil || *p.ErrorMessage == "") {
				t.Errorf("v%d: a refused reassignment without a message", v)
			}
		}
		resp = roundTrip(t, g.addr, reassignment("pr-none", map[int32][]int32{0: {self}}, 0), v).(*kmsg.AlterPartitionAssignmentsResponse)
		code(t, "an unknown topic", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	}
	list := kmsg.NewPtrListPartitionReassignmentsRequest()
	lresp := roundTrip(t, g.addr, list, 0).(*kmsg.ListPartitionReassignmentsResponse)
	if lresp.ErrorCode != 0 || len(lresp.Topics) != 0 {
		t.Errorf("listed %+v (%s)", lresp.Topics, errName(lresp.ErrorCode))
	}
}

// Reassignments need ALTER on the cluster, their listing DESCRIBE, as in
// Kafka.
func TestPartitionReassignmentsAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true})
	resp := roundTrip(t, g.addr, reassignment("pr", map[int32][]int32{0: {0}}, 0), 1).(*kmsg.AlterPartitionAssignmentsResponse)
	code(t, "reassigning without ALTER", resp.ErrorCode, kerr.ClusterAuthorizationFailed)
	lresp := roundTrip(t, g.addr, kmsg.NewPtrListPartitionReassignmentsRequest(), 0).(*kmsg.ListPartitionReassignmentsResponse)
	code(t, "listing without DESCRIBE", lresp.ErrorCode, kerr.ClusterAuthorizationFailed)
}
