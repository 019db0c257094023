package protocol

// CreateAcls, versions 0-3: stores ACL bindings in the filer, where every
// gateway reads them within seconds (acl.RefreshEvery); this gateway at
// once. Needs Alter on the cluster. A binding Kafka would refuse (an
// unknown type, a principal that is not TYPE:name, a PREFIXED "*") gets
// INVALID_REQUEST with the reason; one that exists already is a success.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func init() { register(kmsg.CreateACLs, 0, 3, (*Handler).handleCreateAcls) }

func (h *Handler) handleCreateAcls(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.CreateACLsRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
		resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
		if e, msg := h.aclsDenied(r, kmsg.ACLOperationAlter); e != nil {
			for i := range resp.Results {
				resp.Results[i].ErrorCode = e.Code
				if msg != "" {
					resp.Results[i].ErrorMessage = &msg
				}
			}
			return resp, nil
		}
		var valid []acl.Binding
		var at []int
		for i, c := range req.Creations {
			b := acl.Binding{ResourceType: c.ResourceType, ResourceName: c.ResourceName, PatternType: c.ResourcePatternType,
				Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType}
			if r.Version == 0 {
				b.PatternType = kmsg.ACLResourcePatternTypeLiteral
			}
			if msg := b.Validate(); msg != "" {
				resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, &msg
				continue
			}
			valid, at = append(valid, b), append(at, i)
		}
		for j, err := range h.cfg.Authorizer.Create(ctx, valid) {
			if err != nil {
				msg := err.Error()
				resp.Results[at[j]].ErrorCode, resp.Results[at[j]].ErrorMessage = kerr.KafkaStorageError.Code, &msg
			}
		}
		return resp, nil
	}
}
