package protocol_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handshake(mechanism string) *kmsg.SASLHandshakeRequest {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Mechanism = mechanism
	return req
}

var enabledMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// SaslHandshake v0-1 on a SASL listener: the mechanism is taken and the
// enabled ones are listed; before the login only ApiVersions and the SASL
// requests are served (anything else closes the connection). On a
// listener without SASL the handshake gets ILLEGAL_SASL_STATE and the
// connection goes on.
func TestSaslHandshakeVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{sasl: true, users: map[string]string{"alice": "alice-pw"}})
	servesVersions(t, g.addr, kmsg.NewPtrSASLHandshakeRequest(), 0, 1)
	for _, v := range []int16{0, 1} {
		c := dial(t, g.saslAddr)
		areq := kmsg.NewPtrApiVersionsRequest()
		areq.ClientSoftwareName, areq.ClientSoftwareVersion = "protocol-test", "1"
		if av := c.do(areq, 3).(*kmsg.ApiVersionsResponse); av.ErrorCode != 0 {
			t.Fatalf("ApiVersions before the login: %s", errName(av.ErrorCode))
		}
		resp := c.do(handshake("PLAIN"), v).(*kmsg.SASLHandshakeResponse)
		if code(t, "PLAIN", resp.ErrorCode, nil); !slices.Equal(resp.SupportedMechanisms, enabledMechanisms) {
			t.Errorf("v%d: mechanisms %v", v, resp.SupportedMechanisms)
		}
	}
	// Nothing but ApiVersions and SASL before the login.
	early := dial(t, g.saslAddr)
	if err := early.sendFrame(metadataOf(), 1, -1); err != nil {
		t.Fatal(err)
	}
	early.closed("Metadata before the login")

	plain := dial(t, g.addr)
	for _, v := range []int16{0, 1} {
		code(t, "a handshake without SASL", plain.do(handshake("PLAIN"), v).(*kmsg.SASLHandshakeResponse).ErrorCode, kerr.IllegalSaslState)
	}
	if md := plain.do(metadataOf(), 1).(*kmsg.MetadataResponse); len(md.Brokers) != 1 {
		t.Error("the connection did not go on after ILLEGAL_SASL_STATE")
	}
}

// A mechanism not enabled gets UNSUPPORTED_SASL_MECHANISM with the enabled
// ones, and a second handshake in the middle of a login
// ILLEGAL_SASL_STATE; both close the connection after the answer.
func TestSaslHandshakeErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{sasl: true, users: map[string]string{"alice": "alice-pw"}})
	c := dial(t, g.saslAddr)
	resp := c.do(handshake("GSSAPI"), 1).(*kmsg.SASLHandshakeResponse)
	if code(t, "GSSAPI", resp.ErrorCode, kerr.UnsupportedSaslMechanism); !slices.Equal(resp.SupportedMechanisms, enabledMechanisms) {
		t.Errorf("mechanisms %v", resp.SupportedMechanisms)
	}
	c.closed("after UNSUPPORTED_SASL_MECHANISM")
	c = dial(t, g.saslAddr)
	c.do(handshake("PLAIN"), 1)
	code(t, "a second handshake", c.do(handshake("PLAIN"), 1).(*kmsg.SASLHandshakeResponse).ErrorCode, kerr.IllegalSaslState)
	c.closed("after ILLEGAL_SASL_STATE")
}

// After a v0 handshake the login's messages are bare frames (no Kafka
// header): a good PLAIN message gets an empty bare answer and the
// connection is logged in; a bad one closes the connection without an
// answer (v0 has no error field).
func TestSaslHandshakeV0BareFrames(t *testing.T) {
	g := startGateway(t, gatewayOptions{sasl: true, users: map[string]string{"alice": "alice-pw"}})
	c := dial(t, g.saslAddr)
	c.do(handshake("PLAIN"), 0)
	answer, err := c.bare([]byte("\x00alice\x00alice-pw"))
	if err != nil || len(answer) != 0 {
		t.Fatalf("the bare login: %q %v", answer, err)
	}
	if md := c.do(metadataOf(), 4).(*kmsg.MetadataResponse); len(md.Brokers) != 1 {
		t.Fatal("not logged in after the bare login")
	}
	bad := dial(t, g.saslAddr)
	bad.do(handshake("PLAIN"), 0)
	if answer, err := bad.bare([]byte("\x00alice\x00wrong")); err == nil {
		t.Fatalf("a wrong password answered %q", answer)
	}
}

// Re-authentication (KIP-368): a handshake on a logged-in connection
// begins a new login with the first login's mechanism, as the same
// principal; another mechanism is UNSUPPORTED_SASL_MECHANISM, another user
// SASL_AUTHENTICATION_FAILED, and the connection closes.
func TestSaslHandshakeReauthentication(t *testing.T) {
	g := startGateway(t, gatewayOptions{sasl: true, users: map[string]string{"alice": "alice-pw", "bob": "bob-pw"}})
	c := dial(t, g.saslAddr)
	code(t, "login", c.loginPlain("alice", "alice-pw", 2).ErrorCode, nil)
	code(t, "re-authentication", c.loginPlain("alice", "alice-pw", 2).ErrorCode, nil)
	if md := c.do(metadataOf(), 4).(*kmsg.MetadataResponse); len(md.Brokers) != 1 {
		t.Fatal("not logged in after re-authenticating")
	}
	code(t, "re-authentication as bob", c.loginPlain("bob", "bob-pw", 2).ErrorCode, kerr.SaslAuthenticationFailed)
	c.closed("after re-authenticating as another user")
	c = dial(t, g.saslAddr)
	c.loginPlain("alice", "alice-pw", 2)
	code(t, "re-authentication with SCRAM", c.do(handshake("SCRAM-SHA-256"), 1).(*kmsg.SASLHandshakeResponse).ErrorCode, kerr.UnsupportedSaslMechanism)
	c.closed("after re-authenticating with another mechanism")
}
