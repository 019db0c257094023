package protocol

// AddOffsetsToTxn, versions 0-4: the producer's transaction will commit
// offsets for a group (sent with TxnOffsetCommit).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.AddOffsetsToTxn, 0, 4, (*Handler).handleAddOffsetsToTxn) }

func (h *Handler) handleAddOffsetsToTxn(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.AddOffsetsToTxnRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		switch {
		case !h.allowedTxn(r, kmsg.ACLOperationWrite, req.TransactionalID):
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return resp, nil
		case !h.allowedGroup(r, kmsg.ACLOperationRead, req.Group):
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		case req.Group == "":
			resp.ErrorCode = kerr.InvalidGroupID.Code
			return resp, nil
		}
		if e := h.txns.AddGroup(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group); e != nil {
			resp.ErrorCode = fenced(e, r.Version, 2).Code
		}
		return resp, nil
	}
}
