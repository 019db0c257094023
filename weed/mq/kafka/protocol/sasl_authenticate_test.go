package protocol_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

// SaslAuthenticate v0-2: a PLAIN login as a user of the store; the
// connection's principal is then User:<name>, which the authorizer
// decides by; v1+ answers the session lifetime, 0 without
// -connections.max.reauth.ms. On a listener without SASL,
// ILLEGAL_SASL_STATE.
func TestSaslAuthenticateVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{sasl: true, users: map[string]string{"alice": "alice-pw"}, authorizer: true, acls: []acl.Binding{
		binding("User:alice", kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "sa-t"),
	}})
	servesVersions(t, g.addr, kmsg.NewPtrSASLAuthenticateRequest(), 0, 2)
	g.topic(t, "sa-t", 1, nil)
	for v := int16(0); v <= 2; v++ {
		c := dial(t, g.saslAddr)
		resp := c.loginPlain("alice", "alice-pw", v)
		if code(t, "alice", resp.ErrorCode, nil); v >= 1 && resp.SessionLifetimeMillis != 0 {
			t.Errorf("v%d: session lifetime %d", v, resp.SessionLifetimeMillis)
		}
		if lo := listedPartitions(t, c.do(listOffsets("sa-t", 0, [2]int64{0, -1}), 5))[0]; lo.ErrorCode != 0 {
			t.Errorf("v%d: alice's ListOffsets: %s", v, errName(lo.ErrorCode))
		}
	}
	if canDescribe(t, g.addr, "sa-t") {
		t.Error("User:ANONYMOUS on the PLAINTEXT listener may describe alice's topic")
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("\x00alice\x00alice-pw")
	code(t, "on the PLAINTEXT listener", roundTrip(t, g.addr, auth, 2).(*kmsg.SASLAuthenticateResponse).ErrorCode, kerr.IllegalSaslState)
}

// A failed login gets SASL_AUTHENTICATION_FAILED with its reason and the
// connection closes; SaslAuthenticate without a handshake is
// ILLEGAL_SASL_STATE.
func TestSaslAuthenticateErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{sasl: true, users: map[string]string{"alice": "alice-pw"}})
	for _, msg := range []string{"\x00alice\x00wrong", "\x00nobody\x00pw", "garbage"} {
		c := dial(t, g.saslAddr)
		c.do(handshake("PLAIN"), 1)
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SASLAuthBytes = []byte(msg)
		r := c.do(auth, 1).(*kmsg.SASLAuthenticateResponse)
		if code(t, "a bad login", r.ErrorCode, kerr.SaslAuthenticationFailed); r.ErrorMessage == nil || *r.ErrorMessage == "" {
			t.Errorf("%q: no reason", msg)
		}
		c.closed("after a failed login")
	}
	c := dial(t, g.saslAddr)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("\x00alice\x00alice-pw")
	code(t, "without a handshake", c.do(auth, 2).(*kmsg.SASLAuthenticateResponse).ErrorCode, kerr.IllegalSaslState)
	c.closed("after ILLEGAL_SASL_STATE")
}

// Real clients log in with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 against
// the same store; a wrong password fails the client's requests.
func TestSaslAuthenticateClients(t *testing.T) {
	g := startGateway(t, gatewayOptions{sasl: true, users: map[string]string{"alice": "alice-pw"}})
	g.topic(t, "sac", 1, nil)
	for name, m := range map[string]kgo.Opt{
		"PLAIN":         kgo.SASL(plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism()),
		"SCRAM-SHA-256": kgo.SASL(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()),
		"SCRAM-SHA-512": kgo.SASL(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha512Mechanism()),
	} {
		cl := client(t, g.saslAddr, m, kgo.DefaultProduceTopic("sac"))
		if err := cl.ProduceSync(ctxFor(t), &kgo.Record{Value: []byte(name)}).FirstErr(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if scramLogin(t, g.saslAddr, "alice", "nope", false) {
		t.Error("a wrong SCRAM password logs in")
	}
	if got := consume(t, g.saslAddr, "sac", 3, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism())); len(got) != 3 {
		t.Errorf("consumed %d", len(got))
	}
}

// With -connections.max.reauth.ms the answer says the session's lifetime
// (KIP-368), and a connection whose session has ended is closed at its
// next request.
func TestSaslAuthenticateSessionLifetime(t *testing.T) {
	g := startGateway(t, gatewayOptions{sasl: true, users: map[string]string{"alice": "alice-pw"}, maxReauth: 300 * time.Millisecond})
	c := dial(t, g.saslAddr)
	start := time.Now()
	resp := c.loginPlain("alice", "alice-pw", 1)
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis <= 0 || resp.SessionLifetimeMillis > 300 {
		t.Fatalf("lifetime %d ms, want up to 300", resp.SessionLifetimeMillis)
	}
	eventually(t, "the connection closed once the session ended", func() bool {
		_, err := c.send(metadataOf(), 4)
		return err != nil
	})
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Errorf("closed after %v, before the session ended", took)
	}
}
