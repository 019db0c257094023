package protocol

// CreateDelegationToken, versions 0-3 (KIP-48): a token for the
// principal, or (v3, KIP-373) for another owner, which needs CREATE_TOKENS
// on that owner's USER resource. The token is kept in the filer, so it
// logs in (SCRAM with tokenauth=true) and is renewed, expired and
// described on every gateway with the same delegation.token.secret.key.
// As in Kafka: without the secret DELEGATION_TOKEN_AUTH_DISABLED; on a
// PLAINTEXT listener, an SSL one without a client certificate, or a
// connection that logged in with a token itself,
// DELEGATION_TOKEN_REQUEST_NOT_ALLOWED; a renewer that is not a User
// INVALID_PRINCIPAL_TYPE; the lifetime asked shortens the cluster's max
// lifetime, and the token expires after delegation.token.expiry.time.ms
// unless renewed.

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

func init() {
	register(kmsg.CreateDelegationToken, 0, 3, (*Handler).handleCreateDelegationToken)
}

// tokenRequestsAllowed is Kafka's rule for who may ask for, renew, expire
// and describe tokens: a client that proved who it is with SASL or a
// client certificate, and not with a token.
func tokenRequestsAllowed(r *Request) bool {
	switch {
	case r.TokenAuthenticated, r.Listener == "PLAINTEXT":
		return false
	case r.Listener == "SSL" && r.Principal == "User:ANONYMOUS":
		return false
	}
	return true
}

// tokenErr is the Kafka error of a token store's error.
func tokenErr(err error) *kerr.Error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, user.ErrTokensDisabled):
		return kerr.DelegationTokenAuthDisabled
	case errors.Is(err, user.ErrTokenNotFound):
		return kerr.DelegationTokenNotFound
	case errors.Is(err, user.ErrTokenNotOwner):
		return kerr.DelegationTokenOwnerMismatch
	case errors.Is(err, user.ErrTokenExpired):
		return kerr.DelegationTokenExpired
	}
	return kerr.KafkaStorageError
}

// principalParts splits "Type:name" (the name may hold colons).
func principalParts(p string) (typ, name string) {
	typ, name, _ = strings.Cut(p, ":")
	return typ, name
}

func (h *Handler) handleCreateDelegationToken(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.CreateDelegationTokenRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
		owner := r.Principal
		if req.OwnerPrincipalName != nil && *req.OwnerPrincipalName != "" {
			typ := "User"
			if req.OwnerPrincipalType != nil && *req.OwnerPrincipalType != "" {
				typ = *req.OwnerPrincipalType
			}
			owner = typ + ":" + *req.OwnerPrincipalName
		}
		resp.PrincipalType, resp.PrincipalName = principalParts(owner)
		resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = principalParts(r.Principal)
		var renewers []string
		badRenewer := false
		for _, rn := range req.Renewers {
			badRenewer = badRenewer || rn.PrincipalType != "User"
			renewers = append(renewers, rn.PrincipalType+":"+rn.PrincipalName)
		}
		var e *kerr.Error
		switch {
		case !tokenRequestsAllowed(r):
			e = kerr.DelegationTokenRequestNotAllowed
		case owner != r.Principal && !h.allowed(r, kmsg.ACLOperationCreateTokens, kmsg.ACLResourceTypeUser, owner):
			e = kerr.DelegationTokenAuthorizationFailed
		case badRenewer:
			e = kerr.InvalidPrincipalType
		}
		if e == nil {
			t, err := h.cfg.Tokens.Create(ctx, owner, r.Principal, renewers, time.Duration(req.MaxLifetimeMillis)*time.Millisecond)
			if e = tokenErr(err); e == nil {
				resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = t.Issued, t.Expires, t.Max
				resp.TokenID, resp.HMAC = t.ID, h.cfg.Tokens.HMAC(t.ID)
			}
		}
		resp.ErrorCode = errCode(e)
		return resp, nil
	}
}
