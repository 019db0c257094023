package protocol

// ConsumerGroupHeartbeat, versions 0-1: the consumer group protocol of
// KIP-848, as Kafka's group coordinator serves it (see package group):
// server-side assignors uniform and range, incremental reconciliation,
// static members, regex subscriptions (v1; the member id is the client's
// from v1 on, v0 joins get one from the coordinator). Needs Read on the
// group (GROUP_AUTHORIZATION_FAILED) and Describe on every subscribed
// topic name (TOPIC_AUTHORIZATION_FAILED), as Kafka 4 checks them; a regex
// subscribes a member only to the topics its principal may describe.
// Differs from Kafka: a classic group with members does not become a
// consumer group (online upgrade; GROUP_ID_NOT_FOUND until it is empty),
// and classic members do not join a consumer group with members.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/feature"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
)

func init() { register(kmsg.ConsumerGroupHeartbeat, 0, 1, (*Handler).handleConsumerGroupHeartbeat) }

func (h *Handler) handleConsumerGroupHeartbeat(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	return func() (kmsg.Response, error) {
		if h.features().Level(feature.Group) < 1 {
			return group.HeartbeatError(req, kerr.UnsupportedVersion, "The consumer group protocol is off: group.version is 0."), nil
		}
		if !h.allowedGroup(r, kmsg.ACLOperationRead, req.Group) {
			return group.HeartbeatError(req, kerr.GroupAuthorizationFailed, ""), nil
		}
		for _, t := range req.SubscribedTopicNames {
			if !h.allowedTopic(r, kmsg.ACLOperationDescribe, t) {
				return group.HeartbeatError(req, kerr.TopicAuthorizationFailed, fmt.Sprintf("Topic %s is not authorized.", t)), nil
			}
		}
		cl := group.Client{ID: r.ClientID, Host: r.ClientHost}
		return h.groups.ConsumerGroupHeartbeat(ctx, req, cl, r.Principal), nil
	}
}
