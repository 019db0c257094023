package protocol

// SaslAuthenticate, versions 0-2: one message of a login begun by a v1
// SaslHandshake. v1+ answers the session's lifetime (KIP-368): the
// smaller of -connections.max.reauth.ms and an OAUTHBEARER token's expiry;
// a client re-authenticates before it ends, and a connection whose session
// has ended is closed at its next request. A failed login is answered
// with SASL_AUTHENTICATION_FAILED and its reason, and the connection
// closes.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.SASLAuthenticate, 0, 2, (*Handler).handleSaslAuthenticate) }

func (h *Handler) handleSaslAuthenticate(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if r.Session == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return now(resp)
	}
	answer, lifetime, err, msg := r.Session.Authenticate(ctx, req.SASLAuthBytes)
	resp.SASLAuthBytes = answer
	resp.SessionLifetimeMillis = lifetime
	if err != nil {
		resp.ErrorCode = err.Code
		resp.ErrorMessage = &msg
	}
	return now(resp)
}
