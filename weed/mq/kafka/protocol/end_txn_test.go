package protocol_test

import (
	"bytes"
	"context"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

func endTxnReq(p transactional, commit bool) *kmsg.EndTxnRequest {
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.id, p.pid, p.epoch, commit
	return req
}

// lastMarker is the transaction marker a partition ends with, if any.
func lastMarker(t *testing.T, g *testGateway, topic string, partition int32) *record.TxnMark {
	t.Helper()
	res, err := g.backend.Read(context.Background(), topic, partition, 0, 1<<20)
	if err != nil || len(res.Records) == 0 {
		t.Fatalf("%s/%d: %v, %d records", topic, partition, err, len(res.Records))
	}
	last := res.Records[len(res.Records)-1]
	if last.Txn == nil || last.Txn.Control == record.NotControl {
		return nil
	}
	if !bytes.Equal(last.Key, record.ControlKey(last.Txn.Control)) {
		t.Errorf("%s/%d: marker key %x", topic, partition, last.Key)
	}
	return last.Txn
}

// EndTxn v0-5: commit and abort write their marker to each partition of
// the transaction (the producer's id and epoch) and answer once done; the
// transaction is CompleteCommit or CompleteAbort then; v5 (transaction
// version 2) bumps the epoch, writes the markers with the new one and
// answers the producer id and it.
func TestEndTxnVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrEndTxnRequest(), 0, 5)
	g.topic(t, "et", 2, nil)
	for v := int16(0); v <= 5; v++ {
		for _, commit := range []bool{true, false} {
			p := initTxn(t, g.addr, "et-v"+strconv.Itoa(int(v)))
			if codes := p.addPartitions(t, g.addr, "et", 0, 1); codes[0] != 0 || codes[1] != 0 {
				t.Fatalf("AddPartitionsToTxn: %v", codes)
			}
			resp := roundTrip(t, g.addr, endTxnReq(p, commit), v).(*kmsg.EndTxnResponse)
			code(t, "EndTxn", resp.ErrorCode, nil)
			markerEpoch := p.epoch
			if v >= 5 {
				markerEpoch++
				if resp.ProducerID != p.pid || resp.ProducerEpoch != markerEpoch {
					t.Errorf("v5: producer %d epoch %d, want %d %d", resp.ProducerID, resp.ProducerEpoch, p.pid, markerEpoch)
				}
			}
			want, state := int8(record.ControlAbort), "CompleteAbort"
			if commit {
				want, state = record.ControlCommit, "CompleteCommit"
			}
			for part := int32(0); part < 2; part++ {
				if m := lastMarker(t, g, "et", part); m == nil || m.Control != want || m.ProducerID != p.pid || m.Epoch != markerEpoch {
					t.Errorf("v%d commit=%v: partition %d ends with %+v", v, commit, part, m)
				}
			}
			if s := describeTxn(t, g.addr, p.id); s.State != state || len(s.Topics) != 0 {
				t.Errorf("v%d: %s %+v, want %s", v, s.State, s.Topics, state)
			}
		}
	}
}

// A retried EndTxn of a transaction that ended the same way succeeds
// again; the other way, or with no transaction open, INVALID_TXN_STATE;
// another producer id INVALID_PRODUCER_ID_MAPPING; an older epoch
// PRODUCER_FENCED (v2+), with producer id and epoch -1 (v5).
func TestEndTxnErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "ete", 1, nil)
	p := initTxn(t, g.addr, "ete")
	code(t, "nothing open", p.end(t, g.addr, true), kerr.InvalidTxnState)
	p.addPartitions(t, g.addr, "ete", 0)
	code(t, "commit", p.end(t, g.addr, true), nil)
	code(t, "commit again", p.end(t, g.addr, true), nil)
	code(t, "abort after the commit", p.end(t, g.addr, false), kerr.InvalidTxnState)
	other := p
	other.pid++
	code(t, "another producer id", other.end(t, g.addr, true), kerr.InvalidProducerIDMapping)
	initTxn(t, g.addr, p.id)
	resp := roundTrip(t, g.addr, endTxnReq(p, true), 5).(*kmsg.EndTxnResponse)
	if code(t, "an older epoch", resp.ErrorCode, kerr.ProducerFenced); resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
		t.Errorf("fenced: producer %d epoch %d", resp.ProducerID, resp.ProducerEpoch)
	}
	// Clients older than KIP-588 (EndTxn v0-1) know it as INVALID_PRODUCER_EPOCH.
	old := roundTrip(t, g.addr, endTxnReq(p, true), 1).(*kmsg.EndTxnResponse)
	code(t, "an older epoch at v1", old.ErrorCode, kerr.InvalidProducerEpoch)
	// Only the marker of the commit: the retry wrote no other.
	res, _ := g.backend.Read(context.Background(), "ete", 0, 0, 1<<20)
	if len(res.Records) != 1 {
		t.Errorf("%d records in the partition, want the one commit marker", len(res.Records))
	}

	s := startGateway(t, gatewayOptions{authorizer: true})
	denied := roundTrip(t, s.addr, endTxnReq(transactional{"ete", 1, 0}, true), 5).(*kmsg.EndTxnResponse)
	if code(t, "without Write on the id", denied.ErrorCode, kerr.TransactionalIDAuthorizationFailed); denied.ProducerID != -1 {
		t.Errorf("denied: producer %d", denied.ProducerID)
	}
}
