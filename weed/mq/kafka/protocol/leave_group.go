package protocol

// LeaveGroup, versions 0-5. v3+ removes a batch of members, each by member
// id or by group.instance.id (static members), with an error per member.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
)

func init() { register(kmsg.LeaveGroup, 0, 5, (*Handler).handleLeaveGroup) }

func (h *Handler) handleLeaveGroup(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.LeaveGroupRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		if !h.allowedGroup(r, kmsg.ACLOperationRead, req.Group) {
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		if r.Version < 3 {
			errs, e := h.groups.LeaveGroup(ctx, req.Group, []group.Leaving{{MemberID: req.MemberID}})
			if e == nil {
				e = errs[0]
			}
			resp.ErrorCode = errCode(e)
			return resp, nil
		}
		leaving := make([]group.Leaving, len(req.Members))
		for i, m := range req.Members {
			leaving[i] = group.Leaving{MemberID: m.MemberID, InstanceID: m.InstanceID, Reason: m.Reason}
		}
		errs, e := h.groups.LeaveGroup(ctx, req.Group, leaving)
		if e != nil {
			resp.ErrorCode = e.Code
			return resp, nil
		}
		for i, m := range req.Members {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, errCode(errs[i])
			resp.Members = append(resp.Members, rm)
		}
		return resp, nil
	}
}
