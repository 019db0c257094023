package protocol_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

func initProducerID(txnID *string, timeoutMs int32) *kmsg.InitProducerIDRequest {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = txnID, timeoutMs
	return req
}

// InitProducerId v0-5. An idempotent producer gets a producer id no
// producer had, epoch 0, and a new one each time it asks; a transactional
// one its id's producer id with the next epoch; from v3 a producer naming
// its current id and epoch gets the next epoch (KIP-360), one naming an
// older epoch PRODUCER_FENCED.
func TestInitProducerIDVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrInitProducerIDRequest(), 0, 5)
	seen := map[int64]bool{}
	for v := int16(0); v <= 5; v++ {
		resp := roundTrip(t, g.addr, initProducerID(nil, 0), v).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch != 0 || seen[resp.ProducerID] {
			t.Errorf("v%d idempotent: %s id %d epoch %d (ids before: %v)", v, errName(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch, seen)
		}
		seen[resp.ProducerID] = true
	}
	id := "ipi-txn"
	var pid int64
	for v := int16(0); v <= 5; v++ {
		resp := roundTrip(t, g.addr, initProducerID(&id, 60_000), v).(*kmsg.InitProducerIDResponse)
		if v == 0 {
			pid = resp.ProducerID
		}
		if resp.ErrorCode != 0 || resp.ProducerID != pid || resp.ProducerEpoch != int16(v) || seen[pid] {
			t.Errorf("v%d transactional: %s id %d (want %d) epoch %d (want %d)", v, errName(resp.ErrorCode), resp.ProducerID, pid, resp.ProducerEpoch, v)
		}
	}
	// KIP-360: the producer of epoch 5 asks again naming itself.
	req := initProducerID(&id, 60_000)
	req.ProducerID, req.ProducerEpoch = pid, 5
	if resp := roundTrip(t, g.addr, req, 4).(*kmsg.InitProducerIDResponse); resp.ErrorCode != 0 || resp.ProducerID != pid || resp.ProducerEpoch != 6 {
		t.Errorf("re-initializing with the current epoch: %s id %d epoch %d", errName(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch)
	}
	req.ProducerEpoch = 5 // now stale
	resp := roundTrip(t, g.addr, req, 5).(*kmsg.InitProducerIDResponse)
	if code(t, "re-initializing with an older epoch", resp.ErrorCode, kerr.ProducerFenced); resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
		t.Errorf("fenced: id %d epoch %d, want -1 -1", resp.ProducerID, resp.ProducerEpoch)
	}
}

// The transaction timeout must be within (0, 15 minutes]
// (INVALID_TRANSACTION_TIMEOUT); an open transaction of the id is aborted
// when a new producer of it is initialized: its partitions get an abort
// marker and the id is Empty again.
func TestInitProducerIDTimeoutAndAbort(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	id := "ipi-abort"
	for _, ms := range []int32{0, -1, 15*60_000 + 1} {
		resp := roundTrip(t, g.addr, initProducerID(&id, ms), 4).(*kmsg.InitProducerIDResponse)
		code(t, fmt.Sprintf("a timeout of %d ms", ms), resp.ErrorCode, kerr.InvalidTransactionTimeout)
	}
	if resp := roundTrip(t, g.addr, initProducerID(&id, 15*60_000), 4).(*kmsg.InitProducerIDResponse); resp.ErrorCode != 0 {
		t.Fatalf("15 minutes: %s", errName(resp.ErrorCode))
	}
	g.topic(t, "ipi-t", 1, nil)
	p := initTxn(t, g.addr, id)
	if codes := p.addPartitions(t, g.addr, "ipi-t", 0); codes[0] != 0 {
		t.Fatalf("AddPartitionsToTxn: %s", errName(codes[0]))
	}
	if s := describeTxn(t, g.addr, id); s.State != "Ongoing" {
		t.Fatalf("state %s", s.State)
	}
	next := initTxn(t, g.addr, id)
	if next.pid != p.pid || next.epoch <= p.epoch {
		t.Errorf("after the abort: id %d epoch %d, before %d %d", next.pid, next.epoch, p.pid, p.epoch)
	}
	if s := describeTxn(t, g.addr, id); s.State != "Empty" || len(s.Topics) != 0 {
		t.Errorf("after a new producer: %s with %v", s.State, s.Topics)
	}
	res, err := g.backend.Read(context.Background(), "ipi-t", 0, 0, 1<<20)
	if err != nil || len(res.Records) != 1 || res.Records[0].Txn == nil || res.Records[0].Txn.Control != record.ControlAbort ||
		!bytes.Equal(res.Records[0].Key, record.ControlKey(record.ControlAbort)) {
		t.Errorf("the partition after the abort: %+v %v", res.Records, err)
	}
}

// With an authorizer: a transactional producer needs Write on its id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent one
// IdempotentWrite on the cluster or Write on some topic (KIP-679),
// CLUSTER_AUTHORIZATION_FAILED without.
func TestInitProducerIDAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, "ipa-mine"),
	}})
	mine, theirs := "ipa-mine", "ipa-theirs"
	code(t, "a transactional id with Write", roundTrip(t, g.addr, initProducerID(&mine, 60_000), 4).(*kmsg.InitProducerIDResponse).ErrorCode, nil)
	resp := roundTrip(t, g.addr, initProducerID(&theirs, 60_000), 4).(*kmsg.InitProducerIDResponse)
	if code(t, "a transactional id without Write", resp.ErrorCode, kerr.TransactionalIDAuthorizationFailed); resp.ProducerID != -1 {
		t.Errorf("denied: producer id %d", resp.ProducerID)
	}
	code(t, "idempotent, without", roundTrip(t, g.addr, initProducerID(nil, 0), 4).(*kmsg.InitProducerIDResponse).ErrorCode, kerr.ClusterAuthorizationFailed)
	g.allow(t, binding(anonymous, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "some-topic"))
	code(t, "idempotent, with Write on a topic", roundTrip(t, g.addr, initProducerID(nil, 0), 4).(*kmsg.InitProducerIDResponse).ErrorCode, nil)

	h := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationIdempotentWrite, kmsg.ACLResourceTypeCluster, acl.ClusterName),
	}})
	code(t, "idempotent, with IdempotentWrite", roundTrip(t, h.addr, initProducerID(nil, 0), 2).(*kmsg.InitProducerIDResponse).ErrorCode, nil)
}
