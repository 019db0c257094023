package protocol

// DescribeGroups, versions 0-6: state, protocol and members of each group;
// member metadata and assignments while the group is Stable, as Kafka
// shows them. A group that does not exist is Dead (v6+: with
// GROUP_ID_NOT_FOUND). A group the principal may not describe gets
// GROUP_AUTHORIZATION_FAILED; asked for (v3+), the authorized operations
// are the principal's on the group.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeGroups, 0, 6, (*Handler).handleDescribeGroups) }

func (h *Handler) handleDescribeGroups(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DescribeGroupsRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, name := range req.Groups {
			if !h.allowedGroup(r, kmsg.ACLOperationDescribe, name) {
				d := kmsg.NewDescribeGroupsResponseGroup()
				d.Group, d.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
				d.AuthorizedOperations = h.authorizedOperations(r, req.IncludeAuthorizedOperations, kmsg.ACLResourceTypeGroup, name)
				resp.Groups = append(resp.Groups, d)
				continue
			}
			d := h.groups.Describe(ctx, name, r.Version)
			d.AuthorizedOperations = h.authorizedOperations(r, req.IncludeAuthorizedOperations, kmsg.ACLResourceTypeGroup, name)
			resp.Groups = append(resp.Groups, d)
		}
		return resp, nil
	}
}
