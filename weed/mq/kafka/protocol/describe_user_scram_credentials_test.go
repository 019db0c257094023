package protocol_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func describeSCRAM(users ...string) *kmsg.DescribeUserSCRAMCredentialsRequest {
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range users {
		req.Users = append(req.Users, kmsg.DescribeUserSCRAMCredentialsRequestUser{Name: u})
	}
	return req
}

// both is a user's credentials as the store makes them from a password:
// SCRAM-SHA-256 (1) and SCRAM-SHA-512 (2), 4096 iterations.
var both = []kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{{Mechanism: 1, Iterations: 4096}, {Mechanism: 2, Iterations: 4096}}

func sameCredentials(a, b []kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Mechanism != b[i].Mechanism || a[i].Iterations != b[i].Iterations {
			return false
		}
	}
	return true
}

// DescribeUserScramCredentials v0: no users named is every user, in name
// order, with its mechanisms and iteration counts (never salts or keys);
// named ones in request order, an unknown one RESOURCE_NOT_FOUND, one named
// twice DUPLICATE_RESOURCE (once).
func TestDescribeUserScramCredentialsVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{users: map[string]string{"bob": "b", "alice": "a"}})
	servesVersions(t, g.addr, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest(), 0, 0)
	resp := roundTrip(t, g.addr, describeSCRAM(), 0).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if code(t, "every user", resp.ErrorCode, nil); len(resp.Results) != 2 || resp.Results[0].User != "alice" || resp.Results[1].User != "bob" {
		t.Fatalf("every user: %+v", resp.Results)
	}
	for _, r := range resp.Results {
		if r.ErrorCode != 0 || !sameCredentials(r.CredentialInfos, both) {
			t.Errorf("%s: %s %+v", r.User, errName(r.ErrorCode), r.CredentialInfos)
		}
	}
	resp = roundTrip(t, g.addr, describeSCRAM("bob", "nobody", "alice", "alice"), 0).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if len(resp.Results) != 3 {
		t.Fatalf("named: %+v", resp.Results)
	}
	if r := resp.Results[0]; r.User != "bob" || r.ErrorCode != 0 || !sameCredentials(r.CredentialInfos, both) {
		t.Errorf("bob: %+v", r)
	}
	if r := resp.Results[1]; r.User != "nobody" || r.ErrorCode != kerr.ResourceNotFound.Code || r.ErrorMessage == nil || len(r.CredentialInfos) != 0 {
		t.Errorf("an unknown user: %+v", r)
	}
	if r := resp.Results[2]; r.User != "alice" || r.ErrorCode != kerr.DuplicateResource.Code || len(r.CredentialInfos) != 0 {
		t.Errorf("a user named twice: %+v", r)
	}
}

// With an authorizer it needs Describe on the cluster
// (CLUSTER_AUTHORIZATION_FAILED, no users shown).
func TestDescribeUserScramCredentialsAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{users: map[string]string{"alice": "a"}, authorizer: true})
	resp := roundTrip(t, g.addr, describeSCRAM(), 0).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if code(t, "without Describe on the cluster", resp.ErrorCode, kerr.ClusterAuthorizationFailed); len(resp.Results) != 0 {
		t.Errorf("users shown: %+v", resp.Results)
	}
	g.allow(t, binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, acl.ClusterName))
	if resp := roundTrip(t, g.addr, describeSCRAM(), 0).(*kmsg.DescribeUserSCRAMCredentialsResponse); resp.ErrorCode != 0 || len(resp.Results) != 1 {
		t.Errorf("with Describe: %s %+v", errName(resp.ErrorCode), resp.Results)
	}
}
