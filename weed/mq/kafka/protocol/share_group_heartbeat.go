package protocol

// ShareGroupHeartbeat, version 1 (KIP-932; v0 was Kafka 4.0's early
// access): share group membership, as Kafka's group coordinator serves it
// (see package group): the member id is the client's; the simple assignor
// gives each partition one member, or several once there are more members
// than partitions; the session timeout and heartbeat interval are the
// group's share.session.timeout.ms and share.heartbeat.interval.ms. Needs
// Read on the group and Describe on each topic subscribed to.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/feature"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
)

func init() { register(kmsg.ShareGroupHeartbeat, 1, 1, (*Handler).handleShareGroupHeartbeat) }

func (h *Handler) handleShareGroupHeartbeat(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.ShareGroupHeartbeatRequest)
	return func() (kmsg.Response, error) {
		if h.features().Level(feature.Share) < 1 {
			return group.ShareHeartbeatError(req, kerr.UnsupportedVersion, "Share groups are off: share.version is 0."), nil
		}
		if !h.allowedGroup(r, kmsg.ACLOperationRead, req.GroupID) {
			return group.ShareHeartbeatError(req, kerr.GroupAuthorizationFailed, ""), nil
		}
		for _, t := range req.SubscribedTopicNames {
			if !h.allowedTopic(r, kmsg.ACLOperationDescribe, t) {
				return group.ShareHeartbeatError(req, kerr.TopicAuthorizationFailed, fmt.Sprintf("Topic %s is not authorized.", t)), nil
			}
		}
		return h.groups.ShareGroupHeartbeat(ctx, req, group.Client{ID: r.ClientID, Host: r.ClientHost}), nil
	}
}
