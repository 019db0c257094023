package protocol

// Authorization: with -authorizer.enabled every handler asks the one
// authorizer what Kafka's asks before it acts (see each API's file), and
// answers TOPIC_, GROUP_, CLUSTER_ or TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// where Kafka does. Without it every principal may do everything, as in
// Kafka without an authorizer.

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// clientIP is the request's client address as ACL hosts name it.
func (r *Request) clientIP() string { return strings.TrimPrefix(r.ClientHost, "/") }

// allowed reports whether the request's principal may do op on the
// resource.
func (h *Handler) allowed(r *Request, op acl.Operation, rt acl.ResourceType, name string) bool {
	if h.cfg.Authorizer == nil {
		return true
	}
	if h.cfg.Authorizer.Authorize(r.Principal, r.clientIP(), op, rt, name) {
		return true
	}
	h.auditDenied(r, op, rt, name)
	return false
}

func (h *Handler) allowedTopic(r *Request, op acl.Operation, topic string) bool {
	return h.allowed(r, op, kmsg.ACLResourceTypeTopic, topic)
}

func (h *Handler) allowedGroup(r *Request, op acl.Operation, group string) bool {
	return h.allowed(r, op, kmsg.ACLResourceTypeGroup, group)
}

func (h *Handler) allowedTxn(r *Request, op acl.Operation, id string) bool {
	return h.allowed(r, op, kmsg.ACLResourceTypeTransactionalId, id)
}

func (h *Handler) allowedCluster(r *Request, op acl.Operation) bool {
	return h.allowed(r, op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}

// authorizedOperations is what the principal may do on a resource, for
// the fields that ask (Metadata v8+, DescribeGroups v3+, DescribeCluster):
// Kafka's "not asked" value when not asked.
func (h *Handler) authorizedOperations(r *Request, asked bool, rt acl.ResourceType, name string) int32 {
	const notAsked = -2147483648
	if !asked {
		return notAsked
	}
	if h.cfg.Authorizer == nil {
		var bits int32
		for _, op := range acl.Operations[rt] {
			bits |= 1 << op
		}
		return bits
	}
	return h.cfg.Authorizer.AuthorizedOperations(r.Principal, r.clientIP(), rt, name)
}

// authorizedTopic describes a topic the principal may do op on;
// TOPIC_AUTHORIZATION_FAILED, before looking, for one it may not (so that
// an unauthorized principal does not learn which topics exist).
func (h *Handler) authorizedTopic(ctx context.Context, r *Request, op acl.Operation, name string) (storage.TopicInfo, *kerr.Error) {
	if !h.allowedTopic(r, op, name) {
		return storage.TopicInfo{}, kerr.TopicAuthorizationFailed
	}
	info, err := h.describeTopic(ctx, name)
	return info, kafkaErr(err, kerr.KafkaStorageError)
}

// lookupTopic finds a topic by id (byID) or by name, with the Kafka error
// for one that does not exist or cannot be looked up, or that the
// principal may not do op on (TOPIC_AUTHORIZATION_FAILED).
func (h *Handler) lookupTopic(ctx context.Context, r *Request, op acl.Operation, byID bool, name string, id [16]byte) (storage.TopicInfo, *kerr.Error) {
	if !byID {
		return h.authorizedTopic(ctx, r, op, name)
	}
	info, err := h.backend.TopicByID(ctx, id)
	if err != nil {
		return info, kafkaErr(err, kerr.KafkaStorageError)
	}
	if !h.allowedTopic(r, op, info.Name) {
		return storage.TopicInfo{}, kerr.TopicAuthorizationFailed
	}
	return info, nil
}
