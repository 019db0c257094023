package protocol

// DescribeTransactions, version 0: each transactional id's state, producer
// id and epoch, timeout, start time and partitions. An unknown id gets
// TRANSACTIONAL_ID_NOT_FOUND.

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeTransactions, 0, 0, (*Handler).handleDescribeTransactions) }

func (h *Handler) handleDescribeTransactions(_ context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		s := kmsg.NewDescribeTransactionsResponseTransactionState()
		s.TransactionalID = id
		d, ok, e := h.txns.Describe(id)
		switch {
		case !h.allowedTxn(r, kmsg.ACLOperationDescribe, id):
			s.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		case e != nil:
			s.ErrorCode = e.Code
		case !ok:
			s.ErrorCode = kerr.TransactionalIDNotFound.Code
		default:
			s.State, s.TimeoutMillis, s.StartTimestamp = string(d.State), d.TimeoutMs, d.StartMs
			s.ProducerID, s.ProducerEpoch = d.ProducerID, d.Epoch
			for _, topic := range slices.Sorted(maps.Keys(d.Partitions)) {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic, t.Partitions = topic, slices.Sorted(slices.Values(d.Partitions[topic]))
				s.Topics = append(s.Topics, t)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	return now(resp)
}
