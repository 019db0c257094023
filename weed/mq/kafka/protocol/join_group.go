package protocol

// JoinGroup, versions 0-9: the classic group protocol, as Kafka serves it
// (see package group). v4+ hands a new member its id with MEMBER_ID_REQUIRED
// first; v5+ carries group.instance.id for static members; v9 tells a
// static leader coming back to keep its assignment (SkipAssignment). The
// answer waits until the group's join phase ends.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
)

func init() { register(kmsg.JoinGroup, 0, 9, (*Handler).handleJoinGroup) }

func (h *Handler) handleJoinGroup(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.JoinGroupRequest)
	cl := group.Client{ID: r.ClientID, Host: r.ClientHost}
	if !h.allowedGroup(r, kmsg.ACLOperationRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation = kerr.GroupAuthorizationFailed.Code, -1
		return now(resp)
	}
	return func() (kmsg.Response, error) {
		waitStart := time.Now()
		resp, e := h.groups.JoinGroup(ctx, req, cl)
		r.waitedSince(waitStart) // the rebalance
		if e != nil {
			return group.JoinError(req, e), nil
		}
		return resp, nil
	}
}
