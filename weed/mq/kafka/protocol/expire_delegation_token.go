package protocol

// ExpireDelegationToken, versions 0-2 (KIP-48): the token the HMAC names
// expires the period asked from now, never past its max time; a negative
// period removes it at once (its logins end at their next
// re-authentication, as in Kafka). The answer is its new expiry. Errors as
// RenewDelegationToken's.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.ExpireDelegationToken, 0, 2, (*Handler).handleExpireDelegationToken)
}

func (h *Handler) handleExpireDelegationToken(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.ExpireDelegationTokenRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
		resp.ErrorCode, resp.ExpiryTimestamp = changeToken(r, func() (int64, error) {
			return h.cfg.Tokens.Expire(ctx, r.Principal, req.HMAC, time.Duration(req.ExpiryPeriodMillis)*time.Millisecond)
		})
		return resp, nil
	}
}
