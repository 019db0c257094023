package protocol

// FindCoordinator, versions 0-6: the gateway that owns the group or
// transactional id (COORDINATOR_NOT_AVAILABLE while none is known); v4+
// answers each of a batch of keys.
// Share-group keys (type 2) are refused with INVALID_REQUEST: share groups
// are not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
)

func init() { register(kmsg.FindCoordinator, 0, 6, (*Handler).handleFindCoordinator) }

func (h *Handler) handleFindCoordinator(_ context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	find := func(key string) (membership.Member, int16) {
		switch req.CoordinatorType {
		case 0:
			if !h.allowedGroup(r, kmsg.ACLOperationDescribe, key) {
				return membership.Member{NodeID: -1}, kerr.GroupAuthorizationFailed.Code
			}
			key = membership.GroupKey(key)
		case 1:
			if !h.allowedTxn(r, kmsg.ACLOperationDescribe, key) {
				return membership.Member{NodeID: -1}, kerr.TransactionalIDAuthorizationFailed.Code
			}
			key = membership.TxnKey(key)
		default:
			return membership.Member{NodeID: -1}, kerr.InvalidRequest.Code
		}
		m, _, ok := h.cluster.Owner(key)
		if !ok {
			return membership.Member{NodeID: -1}, kerr.CoordinatorNotAvailable.Code
		}
		return m, 0
	}
	if r.Version < 4 {
		m, code := find(req.CoordinatorKey)
		resp.ErrorCode, resp.NodeID = code, m.NodeID
		resp.Host, resp.Port = m.Endpoint(r.Listener)
		return now(resp)
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		m, code := find(key)
		c.Key, c.ErrorCode, c.NodeID = key, code, m.NodeID
		c.Host, c.Port = m.Endpoint(r.Listener)
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return now(resp)
}
