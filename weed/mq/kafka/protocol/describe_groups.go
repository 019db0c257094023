package protocol

// DescribeGroups, versions 0-6: state, protocol and members of each group;
// member metadata and assignments while the group is Stable, as Kafka
// shows them. A group that does not exist is Dead (v6+: with
// GROUP_ID_NOT_FOUND). There are no ACLs: asked for (v3+), the authorized
// operations are all of a group's (read, describe, delete).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeGroups, 0, 6, (*Handler).handleDescribeGroups) }

// groupOperations is READ(3), DELETE(6) and DESCRIBE(8) as an ACL bitfield.
const groupOperations = 1<<3 | 1<<6 | 1<<8

func (h *Handler) handleDescribeGroups(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DescribeGroupsRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, name := range req.Groups {
			d := h.groups.Describe(ctx, name, r.Version)
			if req.IncludeAuthorizedOperations {
				d.AuthorizedOperations = groupOperations
			}
			resp.Groups = append(resp.Groups, d)
		}
		return resp, nil
	}
}
