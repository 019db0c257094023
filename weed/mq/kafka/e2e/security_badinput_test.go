package e2e

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"
)

// On a SASL listener, only ApiVersions and the SASL requests are served
// before the login; every misstep of a login is a clear error and a closed
// connection.
func TestSASLBadInput(t *testing.T) {
	addr := gw.secure["SASL_PLAINTEXT"]
	handshake := func(c *rawConn, mech string, version int16) *kmsg.SASLHandshakeResponse {
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.SetVersion(version)
		req.Mechanism = mech
		return c.request(req).(*kmsg.SASLHandshakeResponse)
	}
	authenticate := func(c *rawConn, msg []byte) *kmsg.SASLAuthenticateResponse {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(2)
		req.SASLAuthBytes = msg
		return c.request(req).(*kmsg.SASLAuthenticateResponse)
	}
	metadata := func() kmsg.Request {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(12)
		return req
	}
	expect := func(what string, got int16, want *kerr.Error) {
		t.Helper()
		expectCode(t, what, got, want)
	}
	// scramFirst begins a SCRAM login as the administrator and returns
	// its client-first message and the client-final one that answers the
	// gateway's server-first.
	scramFirst := func(c *rawConn, fn scram.HashGeneratorFcn, mech string) (first, final string) {
		t.Helper()
		handshake(c, mech, 1)
		cl, _ := fn.NewClient(adminUser, adminPassword, "")
		conv := cl.NewConversation()
		first, _ = conv.Step("")
		resp := authenticate(c, []byte(first))
		expect("client-first", resp.ErrorCode, nil)
		final, err := conv.Step(string(resp.SASLAuthBytes))
		if err != nil {
			t.Fatal(err)
		}
		return first, final
	}

	t.Run("request before the login", func(t *testing.T) {
		c := dialRawAt(t, addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "e2e", "1"
		if resp := c.request(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
			t.Fatalf("ApiVersions before the login: %+v", resp)
		}
		m := metadata()
		c.send(frame(m.Key(), m.GetVersion(), 2, m.IsFlexible(), m.AppendTo(nil)))
		c.expectClosed("Metadata before the login")
	})
	t.Run("authenticate before the handshake", func(t *testing.T) {
		c := dialRawAt(t, addr)
		expect("SaslAuthenticate first", authenticate(c, []byte("\x00admin\x00admin-secret")).ErrorCode, kerr.IllegalSaslState)
		c.expectClosed("after ILLEGAL_SASL_STATE")
	})
	t.Run("unknown mechanism", func(t *testing.T) {
		c := dialRawAt(t, addr)
		resp := handshake(c, "GSSAPI", 1)
		expect("GSSAPI", resp.ErrorCode, kerr.UnsupportedSaslMechanism)
		if got := strings.Join(resp.SupportedMechanisms, ","); got != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER" {
			t.Fatalf("mechanisms %q", got)
		}
		c.expectClosed("after UNSUPPORTED_SASL_MECHANISM")
	})
	t.Run("wrong password", func(t *testing.T) {
		c := dialRawAt(t, addr)
		expect("handshake", handshake(c, "PLAIN", 1).ErrorCode, nil)
		resp := authenticate(c, []byte("\x00admin\x00wrong"))
		expect("wrong password", resp.ErrorCode, kerr.SaslAuthenticationFailed)
		if resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "invalid username or password") {
			t.Fatalf("message %v", resp.ErrorMessage)
		}
		c.expectClosed("after SASL_AUTHENTICATION_FAILED")
	})
	t.Run("malformed PLAIN", func(t *testing.T) {
		c := dialRawAt(t, addr)
		handshake(c, "PLAIN", 1)
		expect("PLAIN without NULs", authenticate(c, []byte("admin admin-secret")).ErrorCode, kerr.SaslAuthenticationFailed)
		c.expectClosed("after a malformed PLAIN message")
	})
	t.Run("malformed SaslAuthenticate frame", func(t *testing.T) {
		c := dialRawAt(t, addr)
		handshake(c, "PLAIN", 1)
		c.send(frame(int16(kmsg.SASLAuthenticate), 2, 3, true, []byte{0x7f})) // a length past the frame
		c.expectClosed("a truncated SaslAuthenticate")
	})
	t.Run("oversized frame before the login", func(t *testing.T) {
		c := dialRawAt(t, addr)
		var size [4]byte
		binary.BigEndian.PutUint32(size[:], 1<<20)
		c.send(size[:])
		c.expectClosed("a 1 MiB frame before the login")
	})
	t.Run("oversized SASL message", func(t *testing.T) {
		c := dialRawAt(t, addr)
		handshake(c, "OAUTHBEARER", 1)
		c.sendUntilClosed(frame(int16(kmsg.SASLAuthenticate), 2, 3, true, (&kmsg.SASLAuthenticateRequest{Version: 2, SASLAuthBytes: make([]byte, 600<<10)}).AppendTo(nil)))
		c.expectClosed("a 600 KiB SaslAuthenticate")
	})
	t.Run("SCRAM out of order", func(t *testing.T) {
		c := dialRawAt(t, addr)
		handshake(c, "SCRAM-SHA-256", 1)
		expect("client-final first", authenticate(c, []byte("c=biws,r=abc,p=AAAA")).ErrorCode, kerr.SaslAuthenticationFailed)
		c.expectClosed("after a SCRAM step out of order")
	})
	t.Run("SCRAM wrong nonce", func(t *testing.T) {
		c := dialRawAt(t, addr)
		_, final := scramFirst(c, scram.SHA512, "SCRAM-SHA-512")
		tampered := strings.Replace(final, ",r=", ",r=x", 1)
		expect("a wrong nonce", authenticate(c, []byte(tampered)).ErrorCode, kerr.SaslAuthenticationFailed)
		c.expectClosed("after a wrong nonce")
	})
	t.Run("SCRAM replayed", func(t *testing.T) {
		// A whole login, recorded, then its client-final replayed in a
		// new login: the server's nonce differs, so the proof fails.
		c := dialRawAt(t, addr)
		first, final := scramFirst(c, scram.SHA256, "SCRAM-SHA-256")
		expect("the login", authenticate(c, []byte(final)).ErrorCode, nil)
		if md := c.request(metadata()).(*kmsg.MetadataResponse); len(md.Brokers) == 0 {
			t.Fatal("no brokers after the login")
		}
		again := dialRawAt(t, addr)
		handshake(again, "SCRAM-SHA-256", 1)
		expect("client-first replayed", authenticate(again, []byte(first)).ErrorCode, nil)
		expect("client-final replayed", authenticate(again, []byte(final)).ErrorCode, kerr.SaslAuthenticationFailed)
		again.expectClosed("after a replayed login")
	})
	t.Run("handshake v0 and bare frames", func(t *testing.T) {
		c := dialRawAt(t, addr)
		expect("handshake v0", handshake(c, "PLAIN", 0).ErrorCode, nil)
		msg := []byte("\x00admin\x00admin-secret")
		var b []byte
		b = binary.BigEndian.AppendUint32(b, uint32(len(msg)))
		c.send(append(b, msg...))
		answer, err := c.readFrame()
		if err != nil || len(answer) != 0 {
			t.Fatalf("bare answer %q, %v; want an empty frame", answer, err)
		}
		if md := c.request(metadata()).(*kmsg.MetadataResponse); len(md.Brokers) == 0 {
			t.Fatal("no brokers after a v0 login")
		}
	})
	t.Run("SASL on a PLAINTEXT listener", func(t *testing.T) {
		c := dialRaw(t)
		expect("handshake on PLAINTEXT", handshake(c, "PLAIN", 1).ErrorCode, kerr.IllegalSaslState)
		if md := c.request(metadata()).(*kmsg.MetadataResponse); len(md.Brokers) == 0 {
			t.Fatal("the PLAINTEXT connection stopped serving")
		}
	})
	t.Run("session ends without re-authentication", func(t *testing.T) {
		c := dialRawAt(t, addr)
		handshake(c, "OAUTHBEARER", 1)
		resp := authenticate(c, []byte("n,,\x01auth=Bearer "+creds.token(t, "svc", 2*time.Second)+"\x01\x01"))
		expect("OAUTHBEARER", resp.ErrorCode, nil)
		if resp.SessionLifetimeMillis <= 0 || resp.SessionLifetimeMillis > 2000 {
			t.Fatalf("session lifetime %d ms, want the token's (at most 2 s)", resp.SessionLifetimeMillis)
		}
		time.Sleep(3 * time.Second)
		m := metadata()
		c.send(frame(m.Key(), m.GetVersion(), 9, m.IsFlexible(), m.AppendTo(nil)))
		c.expectClosed("a request after the session ended")
	})
}
