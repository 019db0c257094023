package protocol

// DeleteGroups, versions 0-3: removes empty groups with their committed
// offsets. A group with members gets NON_EMPTY_GROUP, an unknown one
// GROUP_ID_NOT_FOUND.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DeleteGroups, 0, 3, (*Handler).handleDeleteGroups) }

func (h *Handler) handleDeleteGroups(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DeleteGroupsRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
		for _, name := range req.Groups {
			g := kmsg.NewDeleteGroupsResponseGroup()
			g.Group = name
			if !h.allowedGroup(r, kmsg.ACLOperationDelete, name) {
				g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			} else if e := h.groups.DeleteGroup(ctx, name); e != nil {
				g.ErrorCode = e.Code
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}
}
