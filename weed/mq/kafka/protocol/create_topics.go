package protocol

// CreateTopics, versions 2-7.
//
// The partition count is SeaweedMQ's (at most 2520); -1 takes
// -default-partitions. The replication factor is the copies SeaweedFS
// keeps of the topic's files (the storage maps it onto a replication and
// refuses one the cluster cannot place, INVALID_REPLICATION_FACTOR); -1
// takes -default.replication.factor. A manual replica assignment is
// checked as Kafka checks it (partitions 0 to n-1, live gateways) and sets
// the partition count and the replication factor (its first list's
// length), and changes nothing else (create_partitions.go's
// badAssignment).
// Configs are checked against Kafka's (see topic_config.go).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

func init() { register(kmsg.CreateTopics, 2, 7, (*Handler).handleCreateTopics) }

func (h *Handler) handleCreateTopics(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	quota := h.mutations(r, 6)
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		fail := func(e *kerr.Error, msg string) {
			st.ErrorCode = e.Code
			st.ErrorMessage = &msg
		}
		configs := map[string]string{}
		nullConfig := ""
		for _, c := range rt.Configs {
			if c.Value == nil {
				nullConfig = c.Name
				continue
			}
			configs[c.Name] = *c.Value
		}
		partitions := rt.NumPartitions
		if partitions == -1 {
			partitions = h.cfg.DefaultPartitions
		}
		assigned := ""
		factor := rt.ReplicationFactor
		if len(rt.ReplicaAssignment) > 0 {
			partitions = int32(len(rt.ReplicaAssignment))
			assigned = h.badCreateAssignment(rt.ReplicaAssignment)
			factor = int16(len(rt.ReplicaAssignment[0].Replicas))
		}
		switch {
		case !h.allowedCluster(r, kmsg.ACLOperationCreate) && !h.allowedTopic(r, kmsg.ACLOperationCreate, rt.Topic):
			fail(kerr.TopicAuthorizationFailed, "Create on the cluster or the topic is needed")
		case seen[rt.Topic] > 1:
			fail(kerr.InvalidRequest, "topic named more than once in the request")
		case storage.ValidTopicName(rt.Topic) != nil:
			fail(kerr.InvalidTopicException, "topic names use at most 249 of [a-zA-Z0-9._-] and are not ., .. or "+storage.ReservedTopic+" (SeaweedFS's)")
		case partitions < 1 || partitions > MaxPartitions:
			fail(kerr.InvalidPartitions, "partition count must be between 1 and 2520")
		case len(rt.ReplicaAssignment) > 0 && (rt.NumPartitions != -1 || rt.ReplicationFactor != -1):
			fail(kerr.InvalidRequest, "a replica assignment is given with the partition count and replication factor -1")
		case assigned != "":
			fail(kerr.InvalidReplicaAssignment, assigned)
		case factor == 0 || factor < -1:
			fail(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
		case nullConfig != "":
			fail(kerr.InvalidConfig, "setting "+nullConfig+" has a null value")
		default:
			if err := validateTopicConfigs(configs); err != nil {
				fail(kerr.InvalidConfig, err.Error())
				break
			}
			if !req.ValidateOnly && !quota.take(partitions) {
				fail(kerr.ThrottlingQuotaExceeded, throttleMessage)
				break
			}
			info, err := h.backend.CreateTopic(ctx, storage.TopicSpec{Name: rt.Topic, Partitions: partitions, ReplicationFactor: factor,
				Configs: configs, ValidateOnly: req.ValidateOnly})
			if err != nil {
				fail(kafkaErr(err, kerr.RequestTimedOut), err.Error())
				break
			}
			st.TopicID = info.ID
			st.NumPartitions, st.ReplicationFactor = partitions, max(info.ReplicationFactor, 1)
			for _, tc := range topicConfigs {
				c := kmsg.NewCreateTopicsResponseTopicConfig()
				c.Name = tc.name
				v, set := configs[tc.name]
				if !set {
					v = tc.def
				}
				c.Value = &v
				c.Source = int8(kmsg.ConfigSourceDefaultConfig)
				if set {
					c.Source = int8(kmsg.ConfigSourceDynamicTopicConfig)
				}
				st.Configs = append(st.Configs, c)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	quota.done(resp)
	return now(resp)
}

// badCreateAssignment checks CreateTopics' replica assignment: partitions
// 0 to n-1, each once, then as badAssignment.
func (h *Handler) badCreateAssignment(as []kmsg.CreateTopicsRequestTopicReplicaAssignment) string {
	lists := make([][]int32, len(as))
	seen := make([]bool, len(as))
	for _, a := range as {
		if a.Partition < 0 || int(a.Partition) >= len(as) || seen[a.Partition] {
			return fmt.Sprintf("The partitions of a manual assignment are 0 to %d, each once; partition %d is not.", len(as)-1, a.Partition)
		}
		seen[a.Partition] = true
		lists[a.Partition] = a.Replicas
	}
	return h.badAssignment(lists)
}
