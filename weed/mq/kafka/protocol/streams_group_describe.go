package protocol

// StreamsGroupDescribe, versions 0-1 (KIP-1071): each streams group's
// state, epochs, topology and members with their tasks (package group).
// Describe on each group is needed (GROUP_AUTHORIZATION_FAILED); a group
// that is not a streams group is GROUP_ID_NOT_FOUND. v1's topology
// description is the one a member sent
// (streams_group_topology_description_update.go): AVAILABLE, or NOT_STORED
// until one is (NOT_REQUESTED when not asked).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.StreamsGroupDescribe, 0, 1, (*Handler).handleStreamsGroupDescribe)
}

// Kafka's TopologyDescriptionStatus values.
const (
	topologyDescriptionNotRequested = 0
	topologyDescriptionNotStored    = 1
	topologyDescriptionAvailable    = 3
)

func (h *Handler) handleStreamsGroupDescribe(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.StreamsGroupDescribeRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
		for _, name := range req.Groups {
			var d kmsg.StreamsGroupDescribeResponseGroup
			if !h.allowedGroup(r, kmsg.ACLOperationDescribe, name) {
				d = kmsg.NewStreamsGroupDescribeResponseGroup()
				d.Group, d.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
				d.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
			} else {
				d = h.groups.DescribeStreams(ctx, name)
			}
			d.AuthorizedOperations = h.authorizedOperations(r, req.IncludeAuthorizedOperations, kmsg.ACLResourceTypeGroup, name)
			d.TopologyDescriptionStatus = topologyDescriptionNotRequested
			switch {
			case !req.IncludeTopologyDescription:
				d.TopologyDescription = nil
			case d.TopologyDescription != nil:
				d.TopologyDescriptionStatus = topologyDescriptionAvailable
			default:
				d.TopologyDescriptionStatus = topologyDescriptionNotStored
			}
			resp.Groups = append(resp.Groups, d)
		}
		return resp, nil
	}
}
