package e2e

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// Delegation tokens (KIP-48) on a real cluster: a user logged in with
// SCRAM over SASL_SSL asks for a token; a client logs in with it (SCRAM,
// tokenauth=true) as that user, on this gateway and on another one of the
// cluster, and writes where only that user may; the owner describes and
// renews it; once expired it logs in nowhere. A PLAINTEXT client may not
// ask for tokens.
func TestDelegationTokens(t *testing.T) {
	admin := secureModes[0] // SASL_SSL, SCRAM-SHA-512, the -sasl.users administrator
	owner, err := kgo.NewClient(admin.franzOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()

	plain, err := kgo.NewClient(kgo.SeedBrokers(gw.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if resp, err := kmsg.NewPtrCreateDelegationTokenRequest().RequestWith(ctxT(t), plain); err != nil ||
		resp.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("a PLAINTEXT client asks for a token: %v %+v", err, resp)
	}

	req := kmsg.NewPtrCreateDelegationTokenRequest()
	req.MaxLifetimeMillis = -1
	created, err := req.RequestWith(ctxT(t), owner)
	if err != nil || created.ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, created)
	}
	if created.PrincipalName != adminUser || created.ExpiryTimestamp-created.IssueTimestamp != user.DefaultTokenRenewTime.Milliseconds() ||
		created.MaxTimestamp-created.IssueTimestamp != user.DefaultTokenMaxLifetime.Milliseconds() {
		t.Fatalf("created for %s, expires after %d ms, max after %d ms", created.PrincipalName,
			created.ExpiryTimestamp-created.IssueTimestamp, created.MaxTimestamp-created.IssueTimestamp)
	}

	// The token writes as the administrator: only it may write the topic.
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	acls := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:"+adminUser, "*", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow
	acls.Creations = append(acls.Creations, c)
	if resp, err := acls.RequestWith(ctxT(t), owner); err != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("ACL: %v %+v", err, resp)
	}
	tokenLogin := func(addr string, opts ...kgo.Opt) *kgo.Client {
		auth := scram.Auth{User: created.TokenID, Pass: user.Password(created.HMAC), IsToken: true}
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTLSConfig(creds.tlsConfig(false)),
			kgo.SASL(auth.AsSha512Mechanism())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	byToken := tokenLogin(gw.secure["SASL_SSL"], kgo.DefaultProduceTopic(topic))
	eventually(t, 30*time.Second, "a write with the token, where only its owner may write", func() error {
		return byToken.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("by token")}).FirstErr()
	})
	if resp, err := kmsg.NewPtrDescribeDelegationTokenRequest().RequestWith(ctxT(t), byToken); err != nil ||
		resp.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("a token-authenticated client describes tokens: %v %+v", err, resp)
	}

	// On another gateway of the cluster.
	other, err := startNamedGateway("tokens-gateway", cluster.master, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.stop()
	if err := tokenLogin(other.secure["SASL_SSL"]).Ping(ctxT(t)); err != nil {
		t.Fatalf("the token on another gateway: %v", err)
	}

	// Described and renewed by its owner.
	desc, err := kmsg.NewPtrDescribeDelegationTokenRequest().RequestWith(ctxT(t), owner)
	if err != nil || desc.ErrorCode != 0 {
		t.Fatalf("describe: %v %+v", err, desc)
	}
	found := false
	for _, d := range desc.TokenDetails {
		found = found || (d.TokenID == created.TokenID && d.PrincipalName == adminUser && string(d.HMAC) == string(created.HMAC))
	}
	if !found {
		t.Fatalf("the token is not described: %+v", desc.TokenDetails)
	}
	renew := kmsg.NewPtrRenewDelegationTokenRequest()
	renew.HMAC, renew.RenewTimeMillis = created.HMAC, 3_600_000
	if r, err := renew.RequestWith(ctxT(t), owner); err != nil || r.ErrorCode != 0 || r.ExpiryTimestamp >= created.ExpiryTimestamp {
		t.Fatalf("renewed for an hour: %v %+v (was %d)", err, r, created.ExpiryTimestamp)
	}

	// Expired: it logs in nowhere.
	expire := kmsg.NewPtrExpireDelegationTokenRequest()
	expire.HMAC, expire.ExpiryPeriodMillis = created.HMAC, -1
	if r, err := expire.RequestWith(ctxT(t), owner); err != nil || r.ErrorCode != 0 {
		t.Fatalf("expire: %v %+v", err, r)
	}
	for _, addr := range []string{gw.secure["SASL_SSL"], other.secure["SASL_SSL"]} {
		if err := tokenLogin(addr).Ping(ctxT(t)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("an expired token on %s: %v", addr, err)
		}
	}
}
