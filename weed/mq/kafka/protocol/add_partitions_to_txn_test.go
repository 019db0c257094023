package protocol_test

import (
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func addPartitionsV3(p transactional, topics map[string][]int32) *kmsg.AddPartitionsToTxnRequest {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = p.id, p.pid, p.epoch
	for _, name := range []string{"apt", "apt-b", "apt-none", "bad/name", "apt-hidden"} {
		if ps, ok := topics[name]; ok {
			req.Topics = append(req.Topics, kmsg.AddPartitionsToTxnRequestTopic{Topic: name, Partitions: ps})
		}
	}
	return req
}

func addedCodes(resp *kmsg.AddPartitionsToTxnResponse) map[string]int16 {
	out := map[string]int16{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			out[rt.Topic+"/"+strconv.Itoa(int(p.Partition))] = p.ErrorCode
		}
	}
	for _, tx := range resp.Transactions {
		for _, rt := range tx.Topics {
			for _, p := range rt.Partitions {
				out[tx.TransactionalID+":"+rt.Topic+"/"+strconv.Itoa(int(p.Partition))] = p.ErrorCode
			}
		}
	}
	return out
}

// AddPartitionsToTxn v0-3 (producers): the partitions join the producer's
// transaction, which becomes Ongoing; adding them again is no error.
func TestAddPartitionsToTxnVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrAddPartitionsToTxnRequest(), 0, 5)
	g.topic(t, "apt", 3, nil)
	g.topic(t, "apt-b", 1, nil)
	for v := int16(0); v <= 3; v++ {
		p := initTxn(t, g.addr, "apt-v"+strconv.Itoa(int(v)))
		resp := roundTrip(t, g.addr, addPartitionsV3(p, map[string][]int32{"apt": {2, 0}, "apt-b": {0}}), v).(*kmsg.AddPartitionsToTxnResponse)
		if len(resp.Topics) != 2 || resp.Topics[0].Topic != "apt" || resp.Topics[0].Partitions[0].Partition != 2 {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
		for k, c := range addedCodes(resp) {
			code(t, k, c, nil)
		}
		s := describeTxn(t, g.addr, p.id)
		if s.State != "Ongoing" || len(s.Topics) != 2 || !slices.Equal(s.Topics[0].Partitions, []int32{0, 2}) || s.Topics[1].Topic != "apt-b" {
			t.Errorf("v%d: %s %+v", v, s.State, s.Topics)
		}
		again := roundTrip(t, g.addr, addPartitionsV3(p, map[string][]int32{"apt": {0}}), v).(*kmsg.AddPartitionsToTxnResponse)
		code(t, "added again", again.Topics[0].Partitions[0].ErrorCode, nil)
	}
}

// Errors: a partition of an unknown topic (or one the topic lacks) gets
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, none
// added; another producer id INVALID_PRODUCER_ID_MAPPING (so does an id no
// producer initialized); an older epoch PRODUCER_FENCED (v2+).
func TestAddPartitionsToTxnErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "apt", 2, nil)
	p := initTxn(t, g.addr, "apt-err")
	resp := roundTrip(t, g.addr, addPartitionsV3(p, map[string][]int32{"apt": {0, 5}, "apt-none": {0}, "bad/name": {0}}), 3).(*kmsg.AddPartitionsToTxnResponse)
	codes := addedCodes(resp)
	code(t, "apt/0", codes["apt/0"], kerr.OperationNotAttempted)
	code(t, "partition 5 of 2", codes["apt/5"], kerr.UnknownTopicOrPartition)
	code(t, "an unknown topic", codes["apt-none/0"], kerr.UnknownTopicOrPartition)
	code(t, "a bad name", codes["bad/name/0"], kerr.UnknownTopicOrPartition)
	if s := describeTxn(t, g.addr, p.id); s.State != "Empty" || len(s.Topics) != 0 {
		t.Errorf("after a refused request: %s %+v", s.State, s.Topics)
	}
	other := p
	other.pid++
	code(t, "another producer id", other.addPartitions(t, g.addr, "apt", 0)[0], kerr.InvalidProducerIDMapping)
	stranger := transactional{"apt-never", p.pid, 0}
	code(t, "an uninitialized id", stranger.addPartitions(t, g.addr, "apt", 0)[0], kerr.InvalidProducerIDMapping)
	initTxn(t, g.addr, p.id)
	code(t, "an older epoch", p.addPartitions(t, g.addr, "apt", 0)[0], kerr.ProducerFenced)
}

// v4-5 (between gateways, as between Kafka's brokers): several
// transactions in one request; VerifyOnly checks without adding:
// INVALID_TXN_STATE for a partition not in the open transaction; needs
// ClusterAction on the cluster with an authorizer.
func TestAddPartitionsToTxnVerifyOnly(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "apt", 2, nil)
	a := initTxn(t, g.addr, "apt-a")
	b := initTxn(t, g.addr, "apt-b")
	a.addPartitions(t, g.addr, "apt", 0)
	tx := func(p transactional, verify bool, parts ...int32) kmsg.AddPartitionsToTxnRequestTransaction {
		return kmsg.AddPartitionsToTxnRequestTransaction{TransactionalID: p.id, ProducerID: p.pid, ProducerEpoch: p.epoch, VerifyOnly: verify,
			Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "apt", Partitions: parts}}}
	}
	for _, v := range []int16{4, 5} {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		wrongEpoch := a
		wrongEpoch.epoch++
		wrongID := a
		wrongID.pid = b.pid
		req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{tx(a, true, 0, 1), tx(wrongEpoch, true, 0), tx(wrongID, true, 0), tx(b, false, 1)}
		resp := roundTrip(t, g.addr, req, v).(*kmsg.AddPartitionsToTxnResponse)
		code(t, "the request", resp.ErrorCode, nil)
		if len(resp.Transactions) != 4 {
			t.Fatalf("v%d: %d transactions answered", v, len(resp.Transactions))
		}
		got := map[int]map[string]int16{}
		for i := range resp.Transactions {
			got[i] = addedCodes(&kmsg.AddPartitionsToTxnResponse{Transactions: resp.Transactions[i : i+1]})
		}
		code(t, "verify a partition in the transaction", got[0]["apt-a:apt/0"], nil)
		code(t, "verify a partition not in it", got[0]["apt-a:apt/1"], kerr.InvalidTxnState)
		code(t, "verify with another epoch", got[1]["apt-a:apt/0"], kerr.ProducerFenced)
		code(t, "verify with another producer id", got[2]["apt-a:apt/0"], kerr.InvalidProducerIDMapping)
		code(t, "add (not verify)", got[3]["apt-b:apt/1"], nil)
	}
	if s := describeTxn(t, g.addr, "apt-a"); len(s.Topics) != 1 || !slices.Equal(s.Topics[0].Partitions, []int32{0}) {
		t.Errorf("verifying added partitions: %+v", s.Topics)
	}
	if s := describeTxn(t, g.addr, "apt-b"); s.State != "Ongoing" || len(s.Topics) != 1 || !slices.Equal(s.Topics[0].Partitions, []int32{1}) {
		t.Errorf("the v4 addition: %s %+v", s.State, s.Topics)
	}
}

// With an authorizer: Write on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition), Write on each
// topic (TOPIC_AUTHORIZATION_FAILED, the others OPERATION_NOT_ATTEMPTED);
// v4+ needs ClusterAction (CLUSTER_AUTHORIZATION_FAILED).
func TestAddPartitionsToTxnAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, "apt-mine"),
		binding(anonymous, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "apt"),
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "apt-hidden"),
	}})
	g.topic(t, "apt", 1, nil)
	g.topic(t, "apt-hidden", 1, nil)
	p := initTxn(t, g.addr, "apt-mine")
	codes := addedCodes(roundTrip(t, g.addr, addPartitionsV3(p, map[string][]int32{"apt": {0}, "apt-hidden": {0}}), 3).(*kmsg.AddPartitionsToTxnResponse))
	code(t, "a topic without Write", codes["apt-hidden/0"], kerr.TopicAuthorizationFailed)
	code(t, "its neighbour", codes["apt/0"], kerr.OperationNotAttempted)
	code(t, "alone", p.addPartitions(t, g.addr, "apt", 0)[0], nil)
	theirs := transactional{"apt-theirs", p.pid, p.epoch}
	code(t, "a transactional id without Write", theirs.addPartitions(t, g.addr, "apt", 0)[0], kerr.TransactionalIDAuthorizationFailed)
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: p.id, ProducerID: p.pid, ProducerEpoch: p.epoch, VerifyOnly: true,
		Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "apt", Partitions: []int32{0}}}}}
	code(t, "v4 without ClusterAction", roundTrip(t, g.addr, req, 4).(*kmsg.AddPartitionsToTxnResponse).ErrorCode, kerr.ClusterAuthorizationFailed)
}
