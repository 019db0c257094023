package protocol

// DescribeDelegationToken, versions 0-3 (KIP-48): the tokens of the owners
// named (null: every token; an empty list: none), with their HMACs. As in
// Kafka, a principal sees the tokens it owns, asked for or may renew, and
// others only with DESCRIBE on the token (DELEGATION_TOKEN resource, by
// id) or DESCRIBE_TOKENS on the owner (USER resource); a token is listed
// until the sweep removes it after its expiry. Who may not ask for tokens
// at all, and a gateway without the secret, get the error of
// CreateDelegationToken and no tokens.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.DescribeDelegationToken, 0, 3, (*Handler).handleDescribeDelegationToken)
}

func (h *Handler) handleDescribeDelegationToken(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DescribeDelegationTokenRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeDelegationTokenResponse)
		switch {
		case !tokenRequestsAllowed(r):
			resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
			return resp, nil
		case !h.cfg.Tokens.Enabled():
			resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
			return resp, nil
		case req.Owners != nil && len(req.Owners) == 0:
			return resp, nil
		}
		all, err := h.cfg.Tokens.List(ctx)
		if e := tokenErr(err); e != nil {
			resp.ErrorCode = e.Code
			return resp, nil
		}
		var owners []string
		for _, o := range req.Owners {
			owners = append(owners, o.PrincipalType+":"+o.PrincipalName)
		}
		for _, t := range all {
			switch {
			case owners != nil && !slices.ContainsFunc(owners, t.OwnerOrRenewer):
				continue
			case t.OwnerOrRenewer(r.Principal),
				h.allowed(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeDelegationToken, t.ID),
				h.allowed(r, kmsg.ACLOperationDescribeTokens, kmsg.ACLResourceTypeUser, t.Owner):
			default:
				continue
			}
			d := kmsg.NewDescribeDelegationTokenResponseTokenDetail()
			d.PrincipalType, d.PrincipalName = principalParts(t.Owner)
			d.TokenRequesterPrincipalType, d.TokenRequesterPrincipalName = principalParts(t.Requester)
			d.IssueTimestamp, d.ExpiryTimestamp, d.MaxTimestamp = t.Issued, t.Expires, t.Max
			d.TokenID, d.HMAC = t.ID, h.cfg.Tokens.HMAC(t.ID)
			for _, rn := range t.Renewers {
				dr := kmsg.NewDescribeDelegationTokenResponseTokenDetailRenewer()
				dr.PrincipalType, dr.PrincipalName = principalParts(rn)
				d.Renewers = append(d.Renewers, dr)
			}
			resp.TokenDetails = append(resp.TokenDetails, d)
		}
		return resp, nil
	}
}
