package protocol

// ListGroups, versions 0-5: every group with its protocol type; v4+ with
// its state and a filter on states, v5+ with its type ("classic", or
// "consumer" for KIP-848's consumer groups, protocol type "consumer") and
// a filter on types.
// Filters match regardless of case, as Kafka's do.

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ListGroups, 0, 5, (*Handler).handleListGroups) }

func (h *Handler) handleListGroups(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.ListGroupsRequest)
	matches := func(filter []string, v string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, v) })
	}
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
		groups, e := h.groups.List(ctx)
		if e != nil {
			resp.ErrorCode = e.Code
			return resp, nil
		}
		// Every group with Describe on the cluster, else those the
		// principal may describe, as Kafka lists them.
		all := h.allowedCluster(r, kmsg.ACLOperationDescribe)
		for _, g := range groups {
			if !all && !h.allowedGroup(r, kmsg.ACLOperationDescribe, g.Name) {
				continue
			}
			if !matches(req.StatesFilter, string(g.State)) || !matches(req.TypesFilter, g.Type) {
				continue
			}
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.Name, g.ProtocolType, string(g.State), g.Type
			resp.Groups = append(resp.Groups, lg)
		}
		return resp, nil
	}
}
