package protocol_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func listTxns(t *testing.T, addr string, v int16, edit func(*kmsg.ListTransactionsRequest)) (*kmsg.ListTransactionsResponse, []string) {
	t.Helper()
	req := kmsg.NewPtrListTransactionsRequest()
	if edit != nil {
		edit(req)
	}
	resp := roundTrip(t, addr, req, v).(*kmsg.ListTransactionsResponse)
	var ids []string
	for _, s := range resp.TransactionStates {
		ids = append(ids, s.TransactionalID+"="+s.TransactionState)
	}
	slices.Sort(ids)
	return resp, ids
}

// ListTransactions v0-2: every transactional id with its producer id and
// state; filtered by states (unknown state names listed back), producer
// ids, how long a transaction has been open (v1+), and an id pattern
// matching the whole id (v2+; INVALID_REGULAR_EXPRESSION for a bad one).
func TestListTransactionsVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrListTransactionsRequest(), 0, 2)
	g.topic(t, "lt", 1, nil)
	open := initTxn(t, g.addr, "lt-open")
	open.addPartitions(t, g.addr, "lt", 0)
	done := initTxn(t, g.addr, "lt-done")
	initTxn(t, g.addr, "other-empty")
	done.addPartitions(t, g.addr, "lt", 0)
	done.end(t, g.addr, false)
	all := []string{"lt-done=CompleteAbort", "lt-open=Ongoing", "other-empty=Empty"}
	for v := int16(0); v <= 2; v++ {
		resp, ids := listTxns(t, g.addr, v, nil)
		if code(t, "list", resp.ErrorCode, nil); !slices.Equal(ids, all) {
			t.Errorf("v%d: %v", v, ids)
		}
		for _, s := range resp.TransactionStates {
			if s.TransactionalID == "lt-open" && s.ProducerID != open.pid {
				t.Errorf("v%d: lt-open's producer id %d, want %d", v, s.ProducerID, open.pid)
			}
		}
	}
	resp, ids := listTxns(t, g.addr, 0, func(r *kmsg.ListTransactionsRequest) { r.StateFilters = []string{"Ongoing", "Bogus"} })
	if !slices.Equal(ids, []string{"lt-open=Ongoing"}) || !slices.Equal(resp.UnknownStateFilters, []string{"Bogus"}) {
		t.Errorf("state filter: %v, unknown %v", ids, resp.UnknownStateFilters)
	}
	if _, ids := listTxns(t, g.addr, 0, func(r *kmsg.ListTransactionsRequest) { r.ProducerIDFilters = []int64{done.pid} }); !slices.Equal(ids, []string{"lt-done=CompleteAbort"}) {
		t.Errorf("producer id filter: %v", ids)
	}
	if _, ids := listTxns(t, g.addr, 1, func(r *kmsg.ListTransactionsRequest) { r.DurationFilterMillis = 3_600_000 }); len(ids) != 0 {
		t.Errorf("open for an hour: %v", ids)
	}
	eventually(t, "lt-open listed as open for 1 ms", func() bool {
		_, ids := listTxns(t, g.addr, 1, func(r *kmsg.ListTransactionsRequest) { r.DurationFilterMillis = 1 })
		return slices.Equal(ids, []string{"lt-open=Ongoing"})
	})
	if _, ids := listTxns(t, g.addr, 2, func(r *kmsg.ListTransactionsRequest) { r.TransactionalIDPattern = kmsg.StringPtr("lt-.*") }); !slices.Equal(ids, all[:2]) {
		t.Errorf("pattern lt-.*: %v", ids)
	}
	if _, ids := listTxns(t, g.addr, 2, func(r *kmsg.ListTransactionsRequest) { r.TransactionalIDPattern = kmsg.StringPtr("lt") }); len(ids) != 0 {
		t.Errorf("pattern lt matches whole ids only: %v", ids)
	}
	bad, _ := listTxns(t, g.addr, 2, func(r *kmsg.ListTransactionsRequest) { r.TransactionalIDPattern = kmsg.StringPtr("(") })
	code(t, "a bad pattern", bad.ErrorCode, kerr.InvalidRegularExpression)
}

// With an authorizer only the ids the principal may describe are listed.
func TestListTransactionsAuthorization(t *testing.T) {
	theirs := binding(anonymous, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, "lta-theirs")
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, "lta-mine"),
		binding(anonymous, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, "lta-mine"), theirs,
	}})
	initTxn(t, g.addr, "lta-mine")
	initTxn(t, g.addr, "lta-theirs")
	g.revoke(t, theirs)
	if _, ids := listTxns(t, g.addr, 2, nil); !slices.Equal(ids, []string{"lta-mine=Empty"}) {
		t.Errorf("listed %v", ids)
	}
}
