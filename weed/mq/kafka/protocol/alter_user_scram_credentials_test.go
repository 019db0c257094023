package protocol_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

// scramLogin reports whether a SCRAM-SHA-256 (or 512) login of user works:
// a client's request is answered.
func scramLogin(t *testing.T, addr, user, password string, sha512 bool) bool {
	t.Helper()
	m := scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
	if sha512 {
		m = scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
	}
	cl := client(t, addr, kgo.SASL(m), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	_, err := kadm.NewClient(cl).ListTopics(ctxFor(t))
	return err == nil
}

func upsertion(name string, mech int8, iterations int32, salt, salted string) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	return kmsg.AlterUserSCRAMCredentialsRequestUpsertion{Name: name, Mechanism: mech, Iterations: iterations, Salt: []byte(salt), SaltedPassword: []byte(salted)}
}

func alterSCRAM(del []kmsg.AlterUserSCRAMCredentialsRequestDeletion, up ...kmsg.AlterUserSCRAMCredentialsRequestUpsertion) *kmsg.AlterUserSCRAMCredentialsRequest {
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions, req.Upsertions = del, up
	return req
}

// AlterUserScramCredentials v0, as a client sends it (salted by the
// client): the new credential logs in at once with its mechanism and is
// described with its iterations; a deleted one no longer logs in.
func TestAlterUserScramCredentialsVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{sasl: true})
	servesVersions(t, g.addr, kmsg.NewPtrAlterUserSCRAMCredentialsRequest(), 0, 0)
	adm := kadm.NewClient(client(t, g.addr))
	ctx := ctxFor(t)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 8192, Password: "carol-pw"},
		{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "carol-512"},
	})
	if err != nil || altered["carol"].Err != nil {
		t.Fatalf("upsert: %+v %v", altered, err)
	}
	if !scramLogin(t, g.saslAddr, "carol", "carol-pw", false) || !scramLogin(t, g.saslAddr, "carol", "carol-512", true) {
		t.Fatal("the new credentials do not log in")
	}
	if scramLogin(t, g.saslAddr, "carol", "carol-512", false) {
		t.Error("SCRAM-SHA-256 logs in with the SHA-512 password")
	}
	described := roundTrip(t, g.addr, describeSCRAM("carol"), 0).(*kmsg.DescribeUserSCRAMCredentialsResponse).Results[0]
	if !sameCredentials(described.CredentialInfos, []kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{{Mechanism: 1, Iterations: 8192}, {Mechanism: 2, Iterations: 4096}}) {
		t.Errorf("described: %+v", described.CredentialInfos)
	}
	altered, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || altered["carol"].Err != nil {
		t.Fatalf("delete: %+v %v", altered, err)
	}
	if scramLogin(t, g.saslAddr, "carol", "carol-pw", false) {
		t.Error("the deleted credential logs in")
	}
	if !scramLogin(t, g.saslAddr, "carol", "carol-512", true) {
		t.Error("the other credential was deleted too")
	}
}

// Errors, per user with a message, as Kafka gives them: iterations
// outside 4096-16384, an empty name, salt or salted password, the
// gateways' own user UNACCEPTABLE_CREDENTIAL; a mechanism other than
// SCRAM-SHA-256/512 UNSUPPORTED_SASL_MECHANISM; a user and mechanism named
// twice DUPLICATE_RESOURCE; deleting a credential that does not exist
// RESOURCE_NOT_FOUND. A user with any error has none of its changes made.
func TestAlterUserScramCredentialsErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{users: map[string]string{"alice": "a"}})
	resp := roundTrip(t, g.addr, alterSCRAM(
		[]kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "nobody", Mechanism: 1}, {Name: "erin", Mechanism: 2}},
		upsertion("few", 1, 100, "salt", "salted"),
		upsertion("many", 1, 16385, "salt", "salted"),
		upsertion("", 1, 4096, "salt", "salted"),
		upsertion("nosalt", 1, 4096, "", "salted"),
		upsertion("nosalted", 2, 4096, "salt", ""),
		upsertion("__gateway", 2, 4096, "salt", "salted"),
		upsertion("md5", 3, 4096, "salt", "salted"),
		upsertion("twice", 1, 4096, "salt", "salted"),
		upsertion("twice", 1, 4096, "salt", "salted"),
		upsertion("dave", 1, 4096, "salt", "salted"),
		upsertion("dave", 2, 1, "salt", "salted"),
		upsertion("erin", 1, 4096, "salt", "salted"),
		upsertion("ok", 2, 4096, "salt", "salted"),
	), 0).(*kmsg.AlterUserSCRAMCredentialsResponse)
	want := map[string]*kerr.Error{"nobody": kerr.ResourceNotFound, "few": kerr.UnacceptableCredential, "many": kerr.UnacceptableCredential,
		"": kerr.UnacceptableCredential, "nosalt": kerr.UnacceptableCredential, "nosalted": kerr.UnacceptableCredential,
		"__gateway": kerr.UnacceptableCredential, "md5": kerr.UnsupportedSaslMechanism, "twice": kerr.DuplicateResource,
		"dave": kerr.UnacceptableCredential, "erin": kerr.ResourceNotFound, "ok": nil}
	if len(resp.Results) != len(want) {
		t.Fatalf("%d results for %d users: %+v", len(resp.Results), len(want), resp.Results)
	}
	for _, r := range resp.Results {
		w, ok := want[r.User]
		if !ok {
			t.Errorf("a result for %q", r.User)
			continue
		}
		code(t, "user "+r.User, r.ErrorCode, w)
		if w != nil && (r.ErrorMessage == nil || *r.ErrorMessage == "") {
			t.Errorf("%q: no message", r.User)
		}
	}
	all := roundTrip(t, g.addr, describeSCRAM(), 0).(*kmsg.DescribeUserSCRAMCredentialsResponse).Results
	var users []string
	for _, r := range all {
		users = append(users, r.User)
	}
	if len(users) != 2 || users[0] != "alice" || users[1] != "ok" {
		t.Errorf("users after the refused changes: %v (dave's and erin's valid changes must not be made)", users)
	}
}

// With an authorizer it needs Alter on the cluster
// (CLUSTER_AUTHORIZATION_FAILED for each user named), and nothing changes.
func TestAlterUserScramCredentialsAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, acl.ClusterName),
	}})
	resp := roundTrip(t, g.addr, alterSCRAM([]kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "x", Mechanism: 1}},
		upsertion("y", 1, 4096, "salt", "salted"), upsertion("x", 2, 4096, "salt", "salted")), 0).(*kmsg.AlterUserSCRAMCredentialsResponse)
	if len(resp.Results) != 2 || resp.Results[0].User != "x" || resp.Results[1].User != "y" {
		t.Fatalf("%+v", resp.Results)
	}
	for _, r := range resp.Results {
		code(t, r.User, r.ErrorCode, kerr.ClusterAuthorizationFailed)
	}
	if users := roundTrip(t, g.addr, describeSCRAM(), 0).(*kmsg.DescribeUserSCRAMCredentialsResponse).Results; len(users) != 0 {
		t.Errorf("users: %+v", users)
	}
}
