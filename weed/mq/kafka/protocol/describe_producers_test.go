package protocol_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func describeProducers(topic string, partitions ...int32) *kmsg.DescribeProducersRequest {
	req := kmsg.NewPtrDescribeProducersRequest()
	req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: topic, Partitions: partitions}}
	return req
}

// DescribeProducers v0: a partition's idempotent and transactional
// producers, as franz-go's producers leave them: id, epoch, last sequence
// number, last timestamp, the first offset of an open transaction (-1 if
// none); the coordinator epoch is not kept (-1).
func TestDescribeProducersVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrDescribeProducersRequest(), 0, 0)
	g.topic(t, "dp", 2, nil)
	ctx := ctxFor(t)
	idem := client(t, g.addr, kgo.DefaultProduceTopic("dp"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 3; i++ { // three batches: sequences 0, 1, 2
		if err := idem.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("i")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	txnl := client(t, g.addr, kgo.DefaultProduceTopic("dp"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("dp-txn"))
	if err := txnl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txnl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("t")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	resp := roundTrip(t, g.addr, describeProducers("dp", 0, 1), 0).(*kmsg.DescribeProducersResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != "dp" || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("%+v", resp.Topics)
	}
	p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
	code(t, "partition 0", p0.ErrorCode, nil)
	code(t, "partition 1", p1.ErrorCode, nil)
	if len(p1.ActiveProducers) != 0 {
		t.Errorf("partition 1 has producers %+v", p1.ActiveProducers)
	}
	if len(p0.ActiveProducers) != 2 {
		t.Fatalf("partition 0: producers %+v", p0.ActiveProducers)
	}
	byID := map[int64]kmsg.DescribeProducersResponseTopicPartitionActiveProducer{}
	for _, ap := range p0.ActiveProducers {
		byID[ap.ProducerID] = ap
		if ap.CoordinatorEpoch != -1 || ap.LastTimestamp <= 0 {
			t.Errorf("producer %+v", ap)
		}
	}
	txnState := describeTxn(t, g.addr, "dp-txn")
	tp, ok := byID[txnState.ProducerID]
	if !ok || tp.ProducerEpoch != int32(txnState.ProducerEpoch) || tp.LastSequence != 0 || tp.CurrentTxnStartOffset != 3 {
		t.Errorf("the transactional producer (%d, epoch %d): %+v", txnState.ProducerID, txnState.ProducerEpoch, tp)
	}
	delete(byID, txnState.ProducerID)
	for _, ip := range byID {
		if ip.ProducerEpoch != 0 || ip.LastSequence != 2 || ip.CurrentTxnStartOffset != -1 {
			t.Errorf("the idempotent producer: %+v", ip)
		}
	}
	if err := txnl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	after := roundTrip(t, g.addr, describeProducers("dp", 0), 0).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
	for _, ap := range after.ActiveProducers {
		if ap.CurrentTxnStartOffset != -1 {
			t.Errorf("after the commit: %+v", ap)
		}
	}
}

// Errors per partition: an unknown topic or partition (or a name no topic
// can have) UNKNOWN_TOPIC_OR_PARTITION; with an authorizer Read on the
// topic (TOPIC_AUTHORIZATION_FAILED).
func TestDescribeProducersErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "dpe", 1, nil)
	for _, tc := range []struct {
		topic string
		part  int32
	}{{"dpe", 3}, {"dpe-none", 0}, {"bad/name", 0}} {
		p := roundTrip(t, g.addr, describeProducers(tc.topic, tc.part), 0).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
		code(t, tc.topic, p.ErrorCode, kerr.UnknownTopicOrPartition)
	}
	s := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "dpa"),
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "dpa-described"),
	}})
	s.topic(t, "dpa", 1, nil)
	s.topic(t, "dpa-described", 1, nil)
	code(t, "with Read", roundTrip(t, s.addr, describeProducers("dpa", 0), 0).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode, nil)
	code(t, "with Describe only", roundTrip(t, s.addr, describeProducers("dpa-described", 0), 0).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
}
