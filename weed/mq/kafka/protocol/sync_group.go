package protocol

// SyncGroup, versions 0-5. The leader's request brings every member's
// assignment; a follower's answer waits for it. v5+ checks the protocol
// type and name against the group's (INCONSISTENT_GROUP_PROTOCOL).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
)

func init() { register(kmsg.SyncGroup, 0, 5, (*Handler).handleSyncGroup) }

func (h *Handler) handleSyncGroup(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.SyncGroupRequest)
	if !h.allowedGroup(r, kmsg.ACLOperationRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return now(resp)
	}
	return func() (kmsg.Response, error) {
		waitStart := time.Now()
		resp, e := h.groups.SyncGroup(ctx, req)
		r.waitedSince(waitStart) // the leader's assignment
		if e != nil {
			return group.SyncError(req, e), nil
		}
		return resp, nil
	}
}
