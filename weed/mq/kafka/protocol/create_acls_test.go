package protocol_test

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

// aclAdmin is a gateway with an authorizer where User:ANONYMOUS may manage
// ACLs (Alter on the cluster, which implies Describe) and nothing else.
func aclAdmin(t *testing.T) *testGateway {
	t.Helper()
	return startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, acl.ClusterName),
	}})
}

func creation(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation) kmsg.CreateACLsRequestCreation {
	return kmsg.CreateACLsRequestCreation{ResourceType: rt, ResourceName: name, ResourcePatternType: pt, Principal: principal, Host: host,
		Operation: op, PermissionType: kmsg.ACLPermissionTypeAllow}
}

func createACLs(creations ...kmsg.CreateACLsRequestCreation) *kmsg.CreateACLsRequest {
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = creations
	return req
}

// canDescribe reports whether User:ANONYMOUS may describe a topic
// (ListOffsets answers anything but TOPIC_AUTHORIZATION_FAILED).
func canDescribe(t *testing.T, addr, topic string) bool {
	t.Helper()
	return listedPartitions(t, roundTrip(t, addr, listOffsets(topic, 0, [2]int64{0, -1}), 5))[0].ErrorCode != kerr.TopicAuthorizationFailed.Code
}

// CreateAcls v0-3: the bindings apply on this gateway at once; v0 knows
// only LITERAL patterns, v1+ PREFIXED too; a binding that exists already is
// created again without error (and listed once).
func TestCreateAclsVersions(t *testing.T) {
	g := aclAdmin(t)
	servesVersions(t, g.addr, kmsg.NewPtrCreateACLsRequest(), 0, 3)
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	for v := int16(0); v <= 3; v++ {
		topic := "cacl-v" + strconv.Itoa(int(v))
		g.topic(t, topic, 1, nil)
		if canDescribe(t, g.addr, topic) {
			t.Fatalf("v%d: %s described before any ACL", v, topic)
		}
		resp := roundTrip(t, g.addr, createACLs(creation(kmsg.ACLResourceTypeTopic, topic, lit, anonymous, "*", kmsg.ACLOperationRead)), v).(*kmsg.CreateACLsResponse)
		if len(resp.Results) != 1 || resp.Results[0].ErrorCode != 0 {
			t.Fatalf("v%d: %+v", v, resp.Results)
		}
		if !canDescribe(t, g.addr, topic) {
			t.Errorf("v%d: the new ACL does not apply", v)
		}
	}
	g.topic(t, "pre-x", 1, nil)
	resp := roundTrip(t, g.addr, createACLs(creation(kmsg.ACLResourceTypeTopic, "pre-", pre, anonymous, "*", kmsg.ACLOperationDescribe)), 1).(*kmsg.CreateACLsResponse)
	if code(t, "a PREFIXED binding", resp.Results[0].ErrorCode, nil); !canDescribe(t, g.addr, "pre-x") {
		t.Error("the PREFIXED binding does not apply")
	}
	// v0 has no pattern type: a would-be PREFIXED binding is LITERAL.
	g.topic(t, "v0pre-x", 1, nil)
	roundTrip(t, g.addr, createACLs(creation(kmsg.ACLResourceTypeTopic, "v0pre-", pre, anonymous, "*", kmsg.ACLOperationDescribe)), 0)
	if canDescribe(t, g.addr, "v0pre-x") || !canDescribe(t, g.addr, "v0pre-") {
		t.Error("a v0 binding is not LITERAL")
	}
	again := roundTrip(t, g.addr, createACLs(creation(kmsg.ACLResourceTypeTopic, "pre-", pre, anonymous, "*", kmsg.ACLOperationDescribe)), 3).(*kmsg.CreateACLsResponse)
	code(t, "the same binding again", again.Results[0].ErrorCode, nil)
	if n := len(g.authz.Bindings(acl.Filter{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: kmsg.StringPtr("pre-"), PatternType: pre,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny})); n != 1 {
		t.Errorf("%d bindings of pre- after creating it twice", n)
	}
}

// Bindings Kafka refuses get INVALID_REQUEST with the reason, each its
// own; the valid ones of the request are created.
func TestCreateAclsErrors(t *testing.T) {
	g := aclAdmin(t)
	lit := kmsg.ACLResourcePatternTypeLiteral
	good := creation(kmsg.ACLResourceTypeGroup, "cacl-g", lit, "User:alice", "*", kmsg.ACLOperationRead)
	bad := []kmsg.CreateACLsRequestCreation{
		creation(kmsg.ACLResourceTypeTopic, "t", lit, "alice", "*", kmsg.ACLOperationRead),                                      // not TYPE:name
		creation(kmsg.ACLResourceTypeTopic, "*", kmsg.ACLResourcePatternTypePrefixed, "User:alice", "*", kmsg.ACLOperationRead), // PREFIXED *
		creation(kmsg.ACLResourceTypeCluster, "other", lit, "User:alice", "*", kmsg.ACLOperationAlter),                          // the cluster is kafka-cluster
		creation(kmsg.ACLResourceTypeTopic, "t", lit, "User:alice", "*", kmsg.ACLOperationAny),                                  // not a concrete operation
		creation(kmsg.ACLResourceTypeTopic, "t", lit, "User:alice", "", kmsg.ACLOperationRead),                                  // no host
		creation(kmsg.ACLResourceTypeAny, "t", lit, "User:alice", "*", kmsg.ACLOperationRead),                                   // not a resource type
		creation(kmsg.ACLResourceTypeTopic, "", lit, "User:alice", "*", kmsg.ACLOperationRead),                                  // no name
	}
	noPerm := creation(kmsg.ACLResourceTypeTopic, "t", lit, "User:alice", "*", kmsg.ACLOperationRead)
	noPerm.PermissionType = kmsg.ACLPermissionTypeAny
	bad = append(bad, noPerm)
	resp := roundTrip(t, g.addr, createACLs(append([]kmsg.CreateACLsRequestCreation{good}, bad...)...), 3).(*kmsg.CreateACLsResponse)
	if len(resp.Results) != 1+len(bad) {
		t.Fatalf("%d results for %d creations", len(resp.Results), 1+len(bad))
	}
	code(t, "the valid binding", resp.Results[0].ErrorCode, nil)
	for i, r := range resp.Results[1:] {
		if code(t, "invalid binding "+strconv.Itoa(int(i)), r.ErrorCode, kerr.InvalidRequest); r.ErrorMessage == nil || *r.ErrorMessage == "" {
			t.Errorf("invalid binding %d: no reason", i)
		}
	}
	if bs := g.authz.Bindings(acl.Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
		Principal: kmsg.StringPtr("User:alice"), Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}); len(bs) != 1 || bs[0].ResourceName != "cacl-g" {
		t.Errorf("alice's bindings: %+v", bs)
	}
}

// Without an authorizer every creation gets SECURITY_DISABLED with a
// message; without Alter on the cluster CLUSTER_AUTHORIZATION_FAILED.
func TestCreateAclsRefused(t *testing.T) {
	c := creation(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, anonymous, "*", kmsg.ACLOperationRead)
	open := startGateway(t, gatewayOptions{})
	resp := roundTrip(t, open.addr, createACLs(c, c), 2).(*kmsg.CreateACLsResponse)
	for _, r := range resp.Results {
		if code(t, "without an authorizer", r.ErrorCode, kerr.SecurityDisabled); r.ErrorMessage == nil {
			t.Error("SECURITY_DISABLED without a message")
		}
	}
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, acl.ClusterName),
	}})
	resp = roundTrip(t, g.addr, createACLs(c), 2).(*kmsg.CreateACLsResponse)
	code(t, "with Describe on the cluster only", resp.Results[0].ErrorCode, kerr.ClusterAuthorizationFailed)
	if canDescribe(t, g.addr, "t") {
		t.Error("a refused binding applies")
	}
}
