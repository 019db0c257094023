package protocol

// ListTransactions, versions 0-2: every transactional id with its producer
// id and state, filtered by state, producer id, how long it has been open
// (v1+) and an id pattern (v2+, a Java regular expression; RE2 here, which
// agrees on common patterns). Unknown state names are listed back.

import (
	"context"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/txn"
)

func init() { register(kmsg.ListTransactions, 0, 2, (*Handler).handleListTransactions) }

var txnStates = []string{string(txn.Empty), string(txn.Ongoing), string(txn.PrepareCommit), string(txn.PrepareAbort),
	string(txn.CompleteCommit), string(txn.CompleteAbort), "Dead", "PrepareEpochFence"}

func (h *Handler) handleListTransactions(_ context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var pattern *regexp.Regexp
	if req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		var err error
		if pattern, err = regexp.Compile("^(?:" + *req.TransactionalIDPattern + ")$"); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return now(resp)
		}
	}
	for _, s := range req.StateFilters {
		if !slices.Contains(txnStates, s) {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	all, e := h.txns.List()
	if e != nil {
		resp.ErrorCode = e.Code
		return now(resp)
	}
	nowMs := clock.Now().UnixMilli()
	for _, d := range all {
		switch {
		case len(req.StateFilters) > 0 && !slices.Contains(req.StateFilters, string(d.State)),
			len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, d.ProducerID),
			req.DurationFilterMillis > 0 && (d.StartMs < 0 || nowMs-d.StartMs < req.DurationFilterMillis),
			pattern != nil && !pattern.MatchString(d.ID),
			!h.allowedTxn(r, kmsg.ACLOperationDescribe, d.ID): // listed only to who may describe it
			continue
		}
		s := kmsg.NewListTransactionsResponseTransactionState()
		s.TransactionalID, s.ProducerID, s.TransactionState = d.ID, d.ProducerID, string(d.State)
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	return now(resp)
}
