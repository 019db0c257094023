package protocol

// DescribeTopicPartitions (KIP-966), version 0: what Kafka 4's admin
// client (kafka-topics --describe) asks instead of Metadata, answered as
// Kafka's handler answers it.
//
// An empty topic list means every topic the principal may describe (the
// others are left out silently); named topics that it may not describe get
// TOPIC_AUTHORIZATION_FAILED without a topic id, after the others, unknown
// ones UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for a name no
// topic can have). Topics are answered in name order, from the cursor's
// topic and partition on, until ResponsePartitionLimit partitions (at most
// MaxDescribedPartitions, at least 1) are in the response; NextCursor then
// names the first partition left out (partition 0 of the next topic when a
// topic ended exactly at the limit). A cursor whose topic is not among the
// named ones, or with a negative partition, gets every named topic
// INVALID_REQUEST, as Kafka answers. Partitions are those of Metadata: the
// gateway that leads a partition is its leader and only replica and in-sync
// replica; eligible leader replicas, the last known ones and offline
// replicas are empty. Where no gateway is known the leader is -1 without an
// error code, as Kafka answers a partition without a live leader (Metadata
// says LEADER_NOT_AVAILABLE). The internal topics are included, as in
// Metadata. Unlike Kafka, a backend that cannot list the topics gets an
// empty answer (as Metadata here), and one that cannot describe a named
// topic gets it LEADER_NOT_AVAILABLE.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

func init() {
	register(kmsg.DescribeTopicPartitions, 0, 0, (*Handler).handleDescribeTopicPartitions)
}

func (h *Handler) handleDescribeTopicPartitions(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	all := len(req.Topics) == 0
	var from string
	if req.Cursor != nil {
		from = req.Cursor.Topic
	}

	// The topics to answer, from the cursor's on, in name order.
	var names []string
	listed := map[string]storage.TopicInfo{}
	if all {
		topics, err := h.backend.ListTopics(ctx)
		if err != nil {
			return now(resp)
		}
		for _, t := range topics {
			if t.Name >= from {
				names = append(names, t.Name)
				listed[t.Name] = t
			}
		}
	} else {
		for _, rt := range req.Topics {
			if rt.Topic >= from {
				names = append(names, rt.Topic)
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if req.Cursor != nil {
		if _, named := slices.BinarySearch(names, req.Cursor.Topic); (!all && !named) || req.Cursor.Partition < 0 {
			return now(describeTopicPartitionsRefused(req, resp))
		}
	}

	remaining := int64(max(min(req.ResponsePartitionLimit, MaxDescribedPartitions), 1))
	var denied []kmsg.DescribeTopicPartitionsResponseTopic
	for _, name := range names {
		if !h.allowedTopic(r, kmsg.ACLOperationDescribe, name) {
			if !all {
				st := kmsg.NewDescribeTopicPartitionsResponseTopic()
				st.Topic = kmsg.StringPtr(name)
				st.ErrorCode = kerr.TopicAuthorizationFailed.Code
				denied = append(denied, st)
			}
			continue
		}
		if remaining == 0 {
			// The previous topic ended at the limit: the next page
			// begins with this one, whether it exists or not.
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name}
			break
		}
		info, ok := listed[name]
		if !ok { // a named topic
			var e *kerr.Error
			if e = storage.ValidTopicName(name); e == nil {
				var err error
				info, err = h.describeTopic(ctx, name)
				e = kafkaErr(err, kerr.LeaderNotAvailable)
			}
			if e != nil {
				st := kmsg.NewDescribeTopicPartitionsResponseTopic()
				st.Topic = kmsg.StringPtr(name)
				st.ErrorCode = e.Code
				st.IsInternal = internalTopic(name)
				resp.Topics = append(resp.Topics, st)
				continue
			}
		}
		var start int64
		if req.Cursor != nil && name == req.Cursor.Topic {
			start = int64(req.Cursor.Partition)
		}
		end := min(int64(info.Partitions), start+remaining)
		st := kmsg.NewDescribeTopicPartitionsResponseTopic()
		st.Topic = kmsg.StringPtr(info.Name)
		st.TopicID = info.ID
		st.IsInternal = internalTopic(info.Name)
		st.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		ids := h.gateways()
		for p := start; p < end; p++ {
			st.Partitions = append(st.Partitions, h.describedPartition(info, int32(p), ids))
		}
		resp.Topics = append(resp.Topics, st)
		if end < int64(info.Partitions) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: info.Name, Partition: int32(end)}
			break
		}
		remaining -= int64(len(st.Partitions))
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		t.AuthorizedOperations = h.authorizedOperations(r, true, kmsg.ACLResourceTypeTopic, *t.Topic)
	}
	resp.Topics = append(resp.Topics, denied...)
	return now(resp)
}

// describedPartition is a partition as DescribeTopicPartitions shows it.
func (h *Handler) describedPartition(t storage.TopicInfo, partition int32, ids gatewaySet) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	sp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	sp.Partition = partition
	sp.Replicas, sp.ISR = []int32{}, []int32{}
	sp.EligibleLeaderReplicas, sp.LastKnownELR, sp.OfflineReplicas = []int32{}, []int32{}, []int32{}
	leader, epoch, ok := h.partitionLeader(t.Name, partition)
	sp.LeaderID, sp.LeaderEpoch = leader, epoch
	if ok {
		sp.Replicas = ids.replicas(t.Name, partition, leader, t.ReplicationFactor)
		sp.ISR = sp.Replicas
	}
	return sp
}

// describeTopicPartitionsRefused is Kafka's answer to a request it
// refuses: every named topic with INVALID_REQUEST.
func describeTopicPartitionsRefused(req *kmsg.DescribeTopicPartitionsRequest, resp *kmsg.DescribeTopicPartitionsResponse) *kmsg.DescribeTopicPartitionsResponse {
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeTopicPartitionsResponseTopic()
		st.Topic = kmsg.StringPtr(rt.Topic)
		st.ErrorCode = kerr.InvalidRequest.Code
		st.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
