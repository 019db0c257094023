package protocol

// AlterPartitionReassignments (versions 0-1) and ListPartitionReassignments
// (version 0), what kafka-reassign-partitions.sh asks, answered as a cluster
// whose replicas SeaweedFS keeps: a partition's one replica is its leader,
// the gateway the cluster's ownership gives it, and its records are
// replicated by SeaweedFS. So no reassignment is ever in progress (the
// list is empty), a reassignment to the replica a partition has is done
// at once, any other is INVALID_REPLICA_ASSIGNMENT with why, and
// cancelling one NO_REASSIGNMENT_IN_PROGRESS, as Kafka answers them. ALTER
// (to reassign) or DESCRIBE (to list) on the cluster is needed, as in
// Kafka.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

func init() {
	register(kmsg.AlterPartitionAssignments, 0, 1, (*Handler).handleAlterPartitionReassignments)
	register(kmsg.ListPartitionReassignments, 0, 0, (*Handler).handleListPartitionReassignments)
}

func (h *Handler) handleAlterPartitionReassignments(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	if !h.allowedCluster(r, kmsg.ACLOperationAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return now(resp)
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		info, err := h.describeTopic(ctx, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			if e, msg := h.reassign(info, err, rp.Partition, rp.Replicas); e != nil {
				sp.ErrorCode = e.Code
				if msg != "" {
					sp.ErrorMessage = &msg
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return now(resp)
}

// reassign answers the reassignment of one partition to replicas (nil: a
// cancellation): nil if it is done.
func (h *Handler) reassign(info storage.TopicInfo, lookup error, partition int32, replicas []int32) (*kerr.Error, string) {
	switch {
	case lookup != nil:
		return kafkaErr(lookup, kerr.UnknownTopicOrPartition), ""
	case partition < 0 || partition >= info.Partitions:
		return kerr.UnknownTopicOrPartition, ""
	case replicas == nil:
		return kerr.NoReassignmentInProgress, "no reassignment is in progress: a partition's replica never moves"
	}
	leader, _, ok := h.cluster.Owner(membership.PartitionKey(info.Name, partition))
	if ok && len(replicas) == 1 && replicas[0] == leader.NodeID {
		return nil, "" // the replica it has: nothing to move
	}
	return kerr.InvalidReplicaAssignment, fmt.Sprintf("partition %s-%d has one replica, its leader (broker %d), which the gateways' ownership chooses; "+
		"its records are replicated by SeaweedFS, so there is nothing to reassign", info.Name, partition, leader.NodeID)
}

func (h *Handler) handleListPartitionReassignments(_ context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !h.allowedCluster(r, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return now(resp)
	}
	resp.Topics = []kmsg.ListPartitionReassignmentsResponseTopic{} // none is ever in progress
	return now(resp)
}
