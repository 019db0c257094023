package protocol

// DeleteAcls, versions 0-3: removes the bindings each filter selects and
// answers them. Needs Alter on the cluster. Every gateway stops applying
// them within seconds (acl.RefreshEvery); this gateway at once.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func init() { register(kmsg.DeleteACLs, 0, 3, (*Handler).handleDeleteAcls) }

func (h *Handler) handleDeleteAcls(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DeleteACLsRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
		resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
		fail := func(i int, e *kerr.Error, msg string) {
			resp.Results[i].ErrorCode = e.Code
			if msg != "" {
				resp.Results[i].ErrorMessage = &msg
			}
		}
		if e, msg := h.aclsDenied(r, kmsg.ACLOperationAlter); e != nil {
			for i := range resp.Results {
				fail(i, e, msg)
			}
			return resp, nil
		}
		var filters []acl.Filter
		var at []int
		for i, rf := range req.Filters {
			f := acl.Filter{ResourceType: rf.ResourceType, ResourceName: rf.ResourceName, PatternType: rf.ResourcePatternType,
				Principal: rf.Principal, Host: rf.Host, Operation: rf.Operation, Permission: rf.PermissionType}
			if r.Version == 0 {
				f.PatternType = kmsg.ACLResourcePatternTypeLiteral
			}
			if msg := f.ValidFilter(); msg != "" {
				fail(i, kerr.InvalidRequest, msg)
				continue
			}
			filters, at = append(filters, f), append(at, i)
		}
		deleted, errs := h.cfg.Authorizer.Delete(ctx, filters)
		for j, bs := range deleted {
			i := at[j]
			if errs[j] != nil {
				fail(i, kerr.KafkaStorageError, errs[j].Error())
			}
			for _, b := range bs {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName, m.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
				m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
				resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
			}
		}
		return resp, nil
	}
}
