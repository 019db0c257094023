package protocol

// Heartbeat, versions 0-4. REBALANCE_IN_PROGRESS tells a member to join
// again; ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID and FENCED_INSTANCE_ID fence
// members of an older generation or incarnation.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.Heartbeat, 0, 4, (*Handler).handleHeartbeat) }

func (h *Handler) handleHeartbeat(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.HeartbeatRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		if !h.allowedGroup(r, kmsg.ACLOperationRead, req.Group) {
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		if e := h.groups.Heartbeat(ctx, req); e != nil {
			resp.ErrorCode = e.Code
		}
		return resp, nil
	}
}
