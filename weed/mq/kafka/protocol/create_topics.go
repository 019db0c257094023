package protocol

// CreateTopics, versions 2-7.
//
// The partition count is SeaweedMQ's (at most 2520); -1 takes
// -default-partitions. Replication is SeaweedFS's, so the replication factor
// must be -1 or 1 and manual replica assignments are refused. Configs are
// checked against what this gateway honours (see topic_config.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.CreateTopics, 2, 7, (*Handler).handleCreateTopics) }

func (h *Handler) handleCreateTopics(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		fail := func(e *kerr.Error, msg string) {
			st.ErrorCode = e.Code
			st.ErrorMessage = &msg
		}
		configs := map[string]string{}
		for _, c := range rt.Configs {
			if c.Value != nil {
				configs[c.Name] = *c.Value
			}
		}
		partitions := rt.NumPartitions
		if partitions == -1 {
			partitions = h.cfg.DefaultPartitions
		}
		switch {
		case !h.allowedCluster(r, kmsg.ACLOperationCreate) && !h.allowedTopic(r, kmsg.ACLOperationCreate, rt.Topic):
			fail(kerr.TopicAuthorizationFailed, "Create on the cluster or the topic is needed")
		case seen[rt.Topic] > 1:
			fail(kerr.InvalidRequest, "topic named more than once in the request")
		case validTopicName(rt.Topic) != nil:
			fail(kerr.InvalidTopicException, "topic names use at most 249 of [a-zA-Z0-9._-] and are not . or ..")
		case partitions < 1 || partitions > MaxPartitions:
			fail(kerr.InvalidPartitions, "partition count must be between 1 and 2520")
		case rt.ReplicationFactor != -1 && rt.ReplicationFactor != 1:
			fail(kerr.InvalidReplicationFactor, "replication is SeaweedFS's: the replication factor must be 1 or -1")
		case len(rt.ReplicaAssignment) > 0:
			fail(kerr.InvalidReplicaAssignment, "manual replica assignment is not supported")
		default:
			if err := validateTopicConfigs(configs); err != nil {
				fail(kerr.InvalidConfig, err.Error())
				break
			}
			info, err := h.backend.CreateTopic(ctx, TopicSpec{Name: rt.Topic, Partitions: partitions, Configs: configs, ValidateOnly: req.ValidateOnly})
			if err != nil {
				fail(kafkaErr(err, kerr.RequestTimedOut), err.Error())
				break
			}
			st.TopicID = info.ID
			st.NumPartitions, st.ReplicationFactor = partitions, 1
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
	return now(resp)
}
