package protocol

// DescribeAcls, versions 0-3: the ACLs a filter selects, grouped by
// resource pattern, from the store every gateway shares. Needs Describe on
// the cluster; without -authorizer.enabled it answers SECURITY_DISABLED,
// as Kafka without an authorizer. v0 knows only LITERAL patterns.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func init() { register(kmsg.DescribeACLs, 0, 3, (*Handler).handleDescribeAcls) }

// aclsDenied answers what every ACL API answers first: SECURITY_DISABLED
// without an authorizer, CLUSTER_AUTHORIZATION_FAILED without op on the
// cluster.
func (h *Handler) aclsDenied(r *Request, op acl.Operation) (*kerr.Error, string) {
	switch {
	case h.cfg.Authorizer == nil:
		return kerr.SecurityDisabled, "no authorizer is configured (-authorizer.enabled)"
	case !h.allowedCluster(r, op):
		return kerr.ClusterAuthorizationFailed, ""
	}
	return nil, ""
}

func (h *Handler) handleDescribeAcls(_ context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if e, msg := h.aclsDenied(r, kmsg.ACLOperationDescribe); e != nil {
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return now(resp)
	}
	f := acl.Filter{ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType}
	if r.Version == 0 {
		f.PatternType = kmsg.ACLResourcePatternTypeLiteral
	}
	if msg := f.ValidFilter(); msg != "" {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, &msg
		return now(resp)
	}
	type pattern struct {
		rt   acl.ResourceType
		name string
		pt   acl.PatternType
	}
	at := map[pattern]int{}
	for _, b := range h.cfg.Authorizer.Bindings(f) {
		p := pattern{b.ResourceType, b.ResourceName, b.PatternType}
		i, ok := at[p]
		if !ok {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = p.rt, p.name, p.pt
			resp.Resources = append(resp.Resources, res)
			i = len(resp.Resources) - 1
			at[p] = i
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, a)
	}
	return now(resp)
}
