package protocol_test

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func deleteFilter(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal *string, op kmsg.ACLOperation) kmsg.DeleteACLsRequestFilter {
	return kmsg.DeleteACLsRequestFilter{ResourceType: rt, ResourceName: name, ResourcePatternType: pt, Principal: principal,
		Operation: op, PermissionType: kmsg.ACLPermissionTypeAny}
}

func deleteACLs(filters ...kmsg.DeleteACLsRequestFilter) *kmsg.DeleteACLsRequest {
	req := kmsg.NewPtrDeleteACLsRequest()
	req.Filters = filters
	return req
}

// DeleteAcls v0-3: each filter removes the bindings it selects and answers
// them; a bad filter INVALID_REQUEST, the others carried out; a deleted
// binding stops applying on this gateway at once; v0 deletes only LITERAL
// patterns.
func TestDeleteAclsVersions(t *testing.T) {
	g := aclAdmin(t)
	servesVersions(t, g.addr, kmsg.NewPtrDeleteACLsRequest(), 0, 3)
	lit, pre, anyPattern := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLResourcePatternTypeAny
	for v := int16(0); v <= 3; v++ {
		topic := "dacl-v" + strconv.Itoa(int(v))
		prefixed := binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, topic)
		prefixed.PatternType = pre
		g.allow(t, binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, topic), prefixed,
			binding("User:alice", kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, topic))
		g.topic(t, topic, 1, nil)
		if !canDescribe(t, g.addr, topic) {
			t.Fatalf("v%d: %s not described with the ACLs", v, topic)
		}
		badFilter := deleteFilter(kmsg.ACLResourceTypeTopic, nil, anyPattern, nil, kmsg.ACLOperationUnknown)
		resp := roundTrip(t, g.addr, deleteACLs(
			deleteFilter(kmsg.ACLResourceTypeTopic, &topic, anyPattern, kmsg.StringPtr(anonymous), kmsg.ACLOperationAny),
			badFilter,
			deleteFilter(kmsg.ACLResourceTypeGroup, nil, anyPattern, kmsg.StringPtr("User:alice"), kmsg.ACLOperationAny),
		), v).(*kmsg.DeleteACLsResponse)
		if len(resp.Results) != 3 {
			t.Fatalf("v%d: %d results", v, len(resp.Results))
		}
		code(t, "the topic filter", resp.Results[0].ErrorCode, nil)
		code(t, "a bad filter", resp.Results[1].ErrorCode, kerr.InvalidRequest)
		code(t, "the group filter", resp.Results[2].ErrorCode, nil)
		wantTopic := 2
		if v == 0 {
			wantTopic = 1 // the PREFIXED binding is not a v0 filter's
		}
		if n := len(resp.Results[0].MatchingACLs); n != wantTopic {
			t.Errorf("v%d: the topic filter deleted %d bindings, want %d", v, n, wantTopic)
		}
		for _, m := range resp.Results[0].MatchingACLs {
			if m.ResourceName != topic || m.Principal != anonymous || m.Host != "*" || (v == 0 && m.ResourcePatternType != lit) {
				t.Errorf("v%d: deleted %+v", v, m)
			}
		}
		if len(resp.Results[2].MatchingACLs) != 1 || resp.Results[2].MatchingACLs[0].Operation != kmsg.ACLOperationRead {
			t.Errorf("v%d: the group filter deleted %+v", v, resp.Results[2].MatchingACLs)
		}
		if v > 0 && canDescribe(t, g.addr, topic) {
			t.Errorf("v%d: the deleted bindings still apply", v)
		}
		if v == 0 && !canDescribe(t, g.addr, topic) {
			t.Error("v0 deleted the PREFIXED binding too")
		}
	}
}

// Without an authorizer every filter gets SECURITY_DISABLED; without Alter
// on the cluster CLUSTER_AUTHORIZATION_FAILED, and nothing is deleted.
func TestDeleteAclsRefused(t *testing.T) {
	f := deleteFilter(kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny, nil, kmsg.ACLOperationAny)
	open := startGateway(t, gatewayOptions{})
	resp := roundTrip(t, open.addr, deleteACLs(f), 3).(*kmsg.DeleteACLsResponse)
	if code(t, "without an authorizer", resp.Results[0].ErrorCode, kerr.SecurityDisabled); resp.Results[0].ErrorMessage == nil {
		t.Error("no message")
	}
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, acl.ClusterName),
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "kept"),
	}})
	resp = roundTrip(t, g.addr, deleteACLs(f), 3).(*kmsg.DeleteACLsResponse)
	if code(t, "with Describe on the cluster only", resp.Results[0].ErrorCode, kerr.ClusterAuthorizationFailed); len(resp.Results[0].MatchingACLs) != 0 {
		t.Errorf("deleted %+v", resp.Results[0].MatchingACLs)
	}
	g.topic(t, "kept", 1, nil)
	if !canDescribe(t, g.addr, "kept") {
		t.Error("a binding went")
	}
}
