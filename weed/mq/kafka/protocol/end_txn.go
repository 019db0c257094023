package protocol

// EndTxn, versions 0-5: commits or aborts the producer's transaction. The
// decision is saved, a marker is written to each of its partitions, its
// offsets are committed to their groups, then the end is saved; the answer
// comes after all of it. A retried EndTxn of a transaction that ended the
// same way succeeds again. v5 is transaction.version 2 (KIP-890): the
// producer epoch is bumped at every end, the markers carry the new one,
// and the answer names the producer id and epoch the producer goes on
// with (a new id once the epochs are used up).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.EndTxn, 0, 5, (*Handler).handleEndTxn) }

func (h *Handler) handleEndTxn(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.EndTxnRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch
		if !h.allowedTxn(r, kmsg.ACLOperationWrite, req.TransactionalID) {
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.ProducerID, resp.ProducerEpoch = -1, -1
			return resp, nil
		}
		if r.Version >= 5 {
			pid, epoch, e := h.txns.EndTxnV2(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
			if e != nil {
				resp.ErrorCode = e.Code
			}
			resp.ProducerID, resp.ProducerEpoch = pid, epoch
			return resp, nil
		}
		if e := h.txns.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit); e != nil {
			resp.ErrorCode = fenced(e, r.Version, 2).Code
			resp.ProducerID, resp.ProducerEpoch = -1, -1
		}
		return resp, nil
	}
}
