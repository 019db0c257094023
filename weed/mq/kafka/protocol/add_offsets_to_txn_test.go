package protocol_test

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func addOffsetsReq(p transactional, groupID string) *kmsg.AddOffsetsToTxnRequest {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = p.id, p.pid, p.epoch, groupID
	return req
}

// AddOffsetsToTxn v0-4: the group joins the producer's transaction, which
// becomes Ongoing, so that its TxnOffsetCommit offsets commit with it.
func TestAddOffsetsToTxnVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrAddOffsetsToTxnRequest(), 0, 4)
	for v := int16(0); v <= 4; v++ {
		p := initTxn(t, g.addr, "aot-v"+strconv.Itoa(int(v)))
		resp := roundTrip(t, g.addr, addOffsetsReq(p, "aot-g"), v).(*kmsg.AddOffsetsToTxnResponse)
		code(t, "AddOffsetsToTxn", resp.ErrorCode, nil)
		if resp.ThrottleMillis != 0 {
			t.Errorf("v%d: throttled", v)
		}
		if s := describeTxn(t, g.addr, p.id); s.State != "Ongoing" {
			t.Errorf("v%d: state %s", v, s.State)
		}
		code(t, "added again", roundTrip(t, g.addr, addOffsetsReq(p, "aot-g"), v).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, nil)
	}
}

// Errors: an empty group id INVALID_GROUP_ID; another producer id (or an
// id never initialized) INVALID_PRODUCER_ID_MAPPING; an older epoch
// PRODUCER_FENCED (v2+); with an authorizer Write on the transactional id
// and Read on the group.
func TestAddOffsetsToTxnErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	p := initTxn(t, g.addr, "aot-err")
	code(t, "no group id", roundTrip(t, g.addr, addOffsetsReq(p, ""), 3).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, kerr.InvalidGroupID)
	other := p
	other.pid++
	code(t, "another producer id", roundTrip(t, g.addr, addOffsetsReq(other, "g"), 3).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, kerr.InvalidProducerIDMapping)
	code(t, "an id never initialized", roundTrip(t, g.addr, addOffsetsReq(transactional{"aot-never", 1, 0}, "g"), 3).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, kerr.InvalidProducerIDMapping)
	initTxn(t, g.addr, p.id)
	code(t, "an older epoch", roundTrip(t, g.addr, addOffsetsReq(p, "g"), 4).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, kerr.ProducerFenced)

	s := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, "aot-mine"),
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "aot-g"),
	}})
	mine := initTxn(t, s.addr, "aot-mine")
	code(t, "with Write and Read", roundTrip(t, s.addr, addOffsetsReq(mine, "aot-g"), 3).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, nil)
	code(t, "without Read on the group", roundTrip(t, s.addr, addOffsetsReq(mine, "aot-other"), 3).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, kerr.GroupAuthorizationFailed)
	theirs := transactional{"aot-theirs", mine.pid, mine.epoch}
	code(t, "without Write on the id", roundTrip(t, s.addr, addOffsetsReq(theirs, "aot-g"), 3).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, kerr.TransactionalIDAuthorizationFailed)
}
