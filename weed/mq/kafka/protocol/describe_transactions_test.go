package protocol_test

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

// DescribeTransactions v0: each id's state, producer id and epoch,
// timeout, start time (-1 unless a transaction is open) and partitions
// (topics and partitions sorted), in request order; an unknown id
// TRANSACTIONAL_ID_NOT_FOUND.
func TestDescribeTransactionsVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrDescribeTransactionsRequest(), 0, 0)
	g.topic(t, "dt-a", 3, nil)
	g.topic(t, "dt-b", 1, nil)
	before := time.Now().UnixMilli()
	open := initTxn(t, g.addr, "dt-open")
	open.addPartitions(t, g.addr, "dt-b", 0)
	open.addPartitions(t, g.addr, "dt-a", 2, 0)
	done := initTxn(t, g.addr, "dt-done")
	done.addPartitions(t, g.addr, "dt-a", 1)
	done.end(t, g.addr, true)
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"dt-open", "dt-none", "dt-done"}
	resp := roundTrip(t, g.addr, req, 0).(*kmsg.DescribeTransactionsResponse)
	if len(resp.TransactionStates) != 3 {
		t.Fatalf("%d states", len(resp.TransactionStates))
	}
	o, none, d := resp.TransactionStates[0], resp.TransactionStates[1], resp.TransactionStates[2]
	if o.TransactionalID != "dt-open" || o.ErrorCode != 0 || o.State != "Ongoing" || o.ProducerID != open.pid || o.ProducerEpoch != open.epoch ||
		o.TimeoutMillis != 60_000 || o.StartTimestamp < before || o.StartTimestamp > time.Now().UnixMilli() {
		t.Errorf("open: %+v", o)
	}
	if len(o.Topics) != 2 || o.Topics[0].Topic != "dt-a" || !slices.Equal(o.Topics[0].Partitions, []int32{0, 2}) || o.Topics[1].Topic != "dt-b" {
		t.Errorf("open's partitions: %+v", o.Topics)
	}
	if none.TransactionalID != "dt-none" {
		t.Errorf("unknown id answered as %q", none.TransactionalID)
	}
	code(t, "an unknown id", none.ErrorCode, kerr.TransactionalIDNotFound)
	if d.ErrorCode != 0 || d.State != "CompleteCommit" || d.StartTimestamp != -1 || len(d.Topics) != 0 || d.ProducerID != done.pid {
		t.Errorf("done: %+v", d)
	}
}

// With an authorizer: Describe on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, nothing shown).
func TestDescribeTransactionsAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, "dta-mine"),
		binding(anonymous, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, "dta-theirs"),
	}})
	initTxn(t, g.addr, "dta-mine")
	theirs := initTxn(t, g.addr, "dta-theirs")
	g.revoke(t, binding(anonymous, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, "dta-theirs"))
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"dta-mine", "dta-theirs"}
	resp := roundTrip(t, g.addr, req, 0).(*kmsg.DescribeTransactionsResponse)
	code(t, "with Write (which implies Describe)", resp.TransactionStates[0].ErrorCode, nil)
	denied := resp.TransactionStates[1]
	if code(t, "without Describe", denied.ErrorCode, kerr.TransactionalIDAuthorizationFailed); denied.ProducerID == theirs.pid || denied.State != "" {
		t.Errorf("denied, yet shown: %+v", denied)
	}
}
