package protocol

// RenewDelegationToken, versions 0-2 (KIP-48): the token the HMAC names
// lasts the period asked from now (-1: delegation.token.expiry.time.ms),
// never past its max time; the answer is its new expiry. Only its owner,
// its requester and its renewers may renew it
// (DELEGATION_TOKEN_OWNER_MISMATCH); an unknown HMAC is
// DELEGATION_TOKEN_NOT_FOUND, a token past its expiry or max
// DELEGATION_TOKEN_EXPIRED; who may not ask for tokens at all, and a
// gateway without the secret, are answered as CreateDelegationToken
// answers them.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.RenewDelegationToken, 0, 2, (*Handler).handleRenewDelegationToken)
}

// errorTimestamp is the expiry of an answer with an error, as Kafka's.
const errorTimestamp = -1

func (h *Handler) handleRenewDelegationToken(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.RenewDelegationTokenRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
		resp.ErrorCode, resp.ExpiryTimestamp = changeToken(r, func() (int64, error) {
			return h.cfg.Tokens.Renew(ctx, r.Principal, req.HMAC, time.Duration(req.RenewTimeMillis)*time.Millisecond)
		})
		return resp, nil
	}
}

// changeToken answers a renewal or an expiry: the error code and
// errorTimestamp, or no error and the token's new expiry.
func changeToken(r *Request, change func() (int64, error)) (int16, int64) {
	if !tokenRequestsAllowed(r) {
		return kerr.DelegationTokenRequestNotAllowed.Code, errorTimestamp
	}
	expiry, err := change()
	if e := tokenErr(err); e != nil {
		return e.Code, errorTimestamp
	}
	return 0, expiry
}
