package protocol

// SaslHandshake, versions 0-1: picks the mechanism of a login on a SASL
// listener; the connection's Session keeps it. After a v0 handshake the
// login's messages come as bare frames without Kafka headers (the
// connection reads them); after v1 in SaslAuthenticate requests. Sent on a
// listener without SASL, or again in the middle of a login, it gets
// ILLEGAL_SASL_STATE, as from Kafka. A handshake on an authenticated
// connection begins a re-authentication (KIP-368), with the mechanism of
// the first login.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.SASLHandshake, 0, 1, (*Handler).handleSaslHandshake) }

// Session is a connection's login state, kept by the connection: the SASL
// requests go to it, on the connection's reader, so that the requests
// after them are read knowing their outcome.
type Session interface {
	// Handshake starts a login with mechanism; it returns the enabled
	// mechanisms, and UNSUPPORTED_SASL_MECHANISM or ILLEGAL_SASL_STATE.
	Handshake(mechanism string, version int16) ([]string, *kerr.Error)
	// Authenticate takes one message of the login; it returns the answer,
	// the session lifetime once the login is done (0: unbounded), and
	// SASL_AUTHENTICATION_FAILED (the connection closes after the answer)
	// or ILLEGAL_SASL_STATE with a message.
	Authenticate(ctx context.Context, msg []byte) (answer []byte, lifetimeMillis int64, err *kerr.Error, message string)
}

func (h *Handler) handleSaslHandshake(_ context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	if r.Session == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return now(resp)
	}
	mechs, err := r.Session.Handshake(req.Mechanism, r.Version)
	resp.SupportedMechanisms = mechs
	if err != nil {
		resp.ErrorCode = err.Code
	}
	return now(resp)
}
