package protocol

// StreamsGroupHeartbeat, versions 0-1: the Streams group protocol of
// KIP-1071 (Kafka Streams with group.protocol=streams), as Kafka's group
// coordinator serves it (see package group): the topology resolved
// against the topics, tasks assigned by the sticky task assignor (active
// and standby tasks; no warm-up tasks, as Kafka 4.4 assigns none),
// incremental reconciliation. Needs streams.version 1 (UNSUPPORTED_VERSION
// otherwise, as Kafka), Read on the group (GROUP_AUTHORIZATION_FAILED) and,
// on joining, Describe on every topic of the topology
// (TOPIC_AUTHORIZATION_FAILED). The internal topics the topology lacks
// (changelogs, repartition topics) are created as the member asks them
// (partitions resolved, its configs), as Kafka's broker creates them,
// when the principal may create topics; the member is told
// MISSING_INTERNAL_TOPICS meanwhile.

import (
	"context"
	"fmt"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/feature"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

func init() {
	register(kmsg.StreamsGroupHeartbeat, 0, 1, (*Handler).handleStreamsGroupHeartbeat)
}

func (h *Handler) handleStreamsGroupHeartbeat(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.StreamsGroupHeartbeatRequest)
	return func() (kmsg.Response, error) {
		if h.features().Level(feature.Streams) < 1 {
			return group.StreamsHeartbeatError(req, kerr.UnsupportedVersion, "The streams group protocol is off: streams.version is 0."), nil
		}
		if !h.allowedGroup(r, kmsg.ACLOperationRead, req.Group) {
			return group.StreamsHeartbeatError(req, kerr.GroupAuthorizationFailed, ""), nil
		}
		if top := req.Topology; top != nil {
			for _, st := range top.Subtopologies {
				topics := append(append([]string{}, st.SourceTopics...), st.RepartitionSinkTopics...)
				for _, t := range append(st.StateChangelogTopics, st.RepartitionSourceTopics...) {
					topics = append(topics, t.Topic)
					if t.NumPartitions < 0 || t.NumPartitions > MaxPartitions {
						return group.StreamsHeartbeatError(req, kerr.StreamsInvalidTopology, fmt.Sprintf("Topic %s: %d partitions, not between 0 and %d.", t.Topic, t.NumPartitions, MaxPartitions)), nil
					}
				}
				for _, t := range topics {
					if storage.ValidTopicName(t) != nil || internalTopic(t) {
						return group.StreamsHeartbeatError(req, kerr.StreamsInvalidTopology, fmt.Sprintf("Topic %s is not a valid topic of a topology.", t)), nil
					}
					if !h.allowedTopic(r, kmsg.ACLOperationDescribe, t) {
						return group.StreamsHeartbeatError(req, kerr.TopicAuthorizationFailed, fmt.Sprintf("Topic %s is not authorized.", t)), nil
					}
				}
			}
		}
		cl := group.Client{ID: r.ClientID, Host: r.ClientHost}
		resp, create := h.groups.StreamsGroupHeartbeat(ctx, req, cl)
		if len(create) > 0 {
			h.createInternalTopics(ctx, r, req.Group, resp, create)
		}
		return resp, nil
	}
}

// createInternalTopics creates a streams group's missing internal topics;
// what could not be created is told in the MISSING_INTERNAL_TOPICS status.
func (h *Handler) createInternalTopics(ctx context.Context, r *Request, groupName string, resp *kmsg.StreamsGroupHeartbeatResponse, create []group.InternalTopic) {
	var failed string
	for _, t := range create {
		if !h.allowedCluster(r, kmsg.ACLOperationCreate) && !h.allowedTopic(r, kmsg.ACLOperationCreate, t.Name) {
			failed += fmt.Sprintf("; Unauthorized to CREATE on topic %s", t.Name)
			continue
		}
		configs := maps.Clone(t.Configs)
		if err := validateTopicConfigs(configs); err != nil {
			failed += fmt.Sprintf("; Creation failed: %s (%v)", t.Name, err)
			continue
		}
		_, err := h.backend.CreateTopic(ctx, storage.TopicSpec{Name: t.Name, Partitions: t.Partitions, Configs: configs})
		if err != nil && kafkaErr(err, nil) != kerr.TopicAlreadyExists {
			failed += fmt.Sprintf("; Creation failed: %s (%v)", t.Name, err)
			continue
		}
		glog.V(1).Infof("kafka group %s: internal topic %s created (%d partitions)", groupName, t.Name, t.Partitions)
	}
	if failed == "" {
		return
	}
	for i, s := range resp.Status {
		if s.StatusCode == group.StatusMissingInternalTopics {
			resp.Status[i].StatusDetail += failed
		}
	}
}
