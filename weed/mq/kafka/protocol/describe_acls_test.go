package protocol_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func aclFilter(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal *string) *kmsg.DescribeACLsRequest {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal = rt, name, pt, principal
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	return req
}

// describedACLs flattens a DescribeAcls answer: "type name pattern:
// principal op" sorted.
func describedACLs(t *testing.T, resp *kmsg.DescribeACLsResponse) []string {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("DescribeAcls: %s", errName(resp.ErrorCode))
	}
	var out []string
	seen := map[string]bool{}
	for _, r := range resp.Resources {
		key := r.ResourceType.String() + " " + r.ResourceName + " " + r.ResourcePatternType.String()
		if seen[key] {
			t.Errorf("resource %s answered twice", key)
		}
		seen[key] = true
		for _, a := range r.ACLs {
			out = append(out, key+": "+a.Principal+" "+a.Operation.String())
		}
	}
	slices.Sort(out)
	return out
}

// DescribeAcls v0-3: the bindings a filter selects, grouped by resource
// pattern; MATCH (v1+) selects the literal, wildcard and prefixed patterns
// a name falls under; v0 knows only LITERAL patterns.
func TestDescribeAclsVersions(t *testing.T) {
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	prefixed := binding("User:carol", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t")
	prefixed.PatternType = pre
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, acl.ClusterName),
		binding("User:alice", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t1"),
		binding("User:bob", kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "t1"),
		prefixed,
		binding("User:dave", kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "*"),
		binding("User:alice", kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "g"),
	}})
	servesVersions(t, g.addr, kmsg.NewPtrDescribeACLsRequest(), 0, 3)
	topics := []string{"TOPIC * LITERAL: User:dave DESCRIBE", "TOPIC t PREFIXED: User:carol READ", "TOPIC t1 LITERAL: User:alice READ", "TOPIC t1 LITERAL: User:bob WRITE"}
	for v := int16(1); v <= 3; v++ {
		all := describedACLs(t, roundTrip(t, g.addr, aclFilter(kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny, nil), v).(*kmsg.DescribeACLsResponse))
		if len(all) != 6 {
			t.Errorf("v%d, everything: %v", v, all)
		}
		if got := describedACLs(t, roundTrip(t, g.addr, aclFilter(kmsg.ACLResourceTypeTopic, nil, kmsg.ACLResourcePatternTypeAny, nil), v).(*kmsg.DescribeACLsResponse)); !slices.Equal(got, topics) {
			t.Errorf("v%d, topics: %v", v, got)
		}
		match := describedACLs(t, roundTrip(t, g.addr, aclFilter(kmsg.ACLResourceTypeTopic, kmsg.StringPtr("t1"), kmsg.ACLResourcePatternTypeMatch, nil), v).(*kmsg.DescribeACLsResponse))
		if !slices.Equal(match, topics) {
			t.Errorf("v%d, MATCH t1: %v", v, match)
		}
		literal := describedACLs(t, roundTrip(t, g.addr, aclFilter(kmsg.ACLResourceTypeTopic, kmsg.StringPtr("t1"), lit, nil), v).(*kmsg.DescribeACLsResponse))
		if !slices.Equal(literal, topics[2:]) {
			t.Errorf("v%d, LITERAL t1: %v", v, literal)
		}
		alice := describedACLs(t, roundTrip(t, g.addr, aclFilter(kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny, kmsg.StringPtr("User:alice")), v).(*kmsg.DescribeACLsResponse))
		if !slices.Equal(alice, []string{"GROUP g LITERAL: User:alice READ", "TOPIC t1 LITERAL: User:alice READ"}) {
			t.Errorf("v%d, alice's: %v", v, alice)
		}
	}
	// v0: literal patterns only, whatever the filter would say.
	v0 := describedACLs(t, roundTrip(t, g.addr, aclFilter(kmsg.ACLResourceTypeTopic, nil, kmsg.ACLResourcePatternTypeAny, nil), 0).(*kmsg.DescribeACLsResponse))
	if slices.Contains(v0, topics[1]) || len(v0) != 3 {
		t.Errorf("v0, topics: %v", v0)
	}
	// Filters that select nothing: INVALID_REQUEST with a reason.
	for _, bad := range []*kmsg.DescribeACLsRequest{
		aclFilter(kmsg.ACLResourceTypeUnknown, nil, kmsg.ACLResourcePatternTypeAny, nil),
		aclFilter(kmsg.ACLResourceTypeTopic, nil, kmsg.ACLResourcePatternTypeUnknown, nil),
	} {
		resp := roundTrip(t, g.addr, bad, 2).(*kmsg.DescribeACLsResponse)
		if code(t, "a bad filter", resp.ErrorCode, kerr.InvalidRequest); resp.ErrorMessage == nil || len(resp.Resources) != 0 {
			t.Errorf("a bad filter: message %v, %d resources", resp.ErrorMessage, len(resp.Resources))
		}
	}
	// As a client lists them.
	described, err := kadm.NewClient(client(t, g.addr)).DescribeACLs(ctxFor(t), kadm.NewACLs().Topics("t1").ResourcePatternType(kadm.ACLPatternLiteral).
		Allow().AllowHosts().Operations(kadm.OpAny))
	if err != nil || len(described) != 1 || described[0].Err != nil || len(described[0].Described) != 2 {
		t.Fatalf("kadm: %+v %v", described, err)
	}
}

// Without an authorizer DescribeAcls answers SECURITY_DISABLED (with a
// message), as Kafka without one; without Describe on the cluster
// CLUSTER_AUTHORIZATION_FAILED.
func TestDescribeAclsRefused(t *testing.T) {
	open := startGateway(t, gatewayOptions{})
	resp := roundTrip(t, open.addr, aclFilter(kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny, nil), 3).(*kmsg.DescribeACLsResponse)
	if code(t, "without an authorizer", resp.ErrorCode, kerr.SecurityDisabled); resp.ErrorMessage == nil {
		t.Error("no message")
	}
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{binding("User:alice", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t")}})
	resp = roundTrip(t, g.addr, aclFilter(kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny, nil), 3).(*kmsg.DescribeACLsResponse)
	if code(t, "without Describe on the cluster", resp.ErrorCode, kerr.ClusterAuthorizationFailed); len(resp.Resources) != 0 {
		t.Errorf("ACLs shown: %+v", resp.Resources)
	}
}
