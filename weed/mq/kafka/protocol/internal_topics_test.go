package protocol_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

var internalTopicNames = []string{"__consumer_offsets", "__transaction_state"}

// internalMetadata returns the internal topic's Metadata at v13, with its id.
func internalMetadata(t *testing.T, addr, name string) kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(name)
	req.Topics = append(req.Topics, rt)
	resp := roundTrip(t, addr, req, 13).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 {
		t.Fatalf("Metadata of %s: %d topics", name, len(resp.Topics))
	}
	return resp.Topics[0]
}

// plainBatch is a record batch of one record holding value.
func plainBatch(value string) []byte {
	var b record.Builder
	b.Reset(0)
	b.Add(&record.Record{Value: []byte(value), Timestamp: 1_700_000_000_000})
	return b.AppendTo(nil)
}

// The internal topics are listed as Kafka lists them: by kadm with
// internal topics (not without), by Metadata for every topic and when
// named (v0 and v13), internal, 50 partitions each with the gateway as
// leader, one topic id whichever gateway is asked; Metadata by that id
// finds them. No topic of the backend is made for them.
func TestInternalTopicsListed(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "it-plain", 2, nil)
	adm := kadm.NewClient(client(t, g.addr))
	ctx := ctxFor(t)

	listed, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range internalTopicNames {
		d, ok := listed[name]
		if !ok {
			t.Fatalf("ListTopicsWithInternal does not list %s: %v", name, listed.Names())
		}
		if d.Err != nil || !d.IsInternal || len(d.Partitions) != 50 {
			t.Fatalf("%s: err %v, internal %v, %d partitions", name, d.Err, d.IsInternal, len(d.Partitions))
		}
		for p, pd := range d.Partitions {
			if pd.Leader != 0 || pd.Err != nil || len(pd.Replicas) != 1 || pd.Replicas[0] != 0 {
				t.Errorf("%s/%d: leader %d, err %v, replicas %v", name, p, pd.Leader, pd.Err, pd.Replicas)
			}
		}
	}
	if d := listed["it-plain"]; d.IsInternal || len(d.Partitions) != 2 {
		t.Errorf("it-plain: internal %v, %d partitions", d.IsInternal, len(d.Partitions))
	}
	plain, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Has("__consumer_offsets") || plain.Has("__transaction_state") || !plain.Has("it-plain") {
		t.Errorf("ListTopics without internal topics: %v", plain.Names())
	}

	other := startGateway(t, gatewayOptions{})
	for _, name := range internalTopicNames {
		for _, v := range []int16{0, 13} {
			resp := roundTrip(t, g.addr, metadataOf(name), v).(*kmsg.MetadataResponse)
			if len(resp.Topics) != 1 {
				t.Fatalf("v%d %s: %d topics", v, name, len(resp.Topics))
			}
			mt := resp.Topics[0]
			code(t, name, mt.ErrorCode, nil)
			if (v >= 1 && !mt.IsInternal) || len(mt.Partitions) != 50 {
				t.Errorf("v%d %s: internal %v, %d partitions", v, name, mt.IsInternal, len(mt.Partitions))
			}
		}
		mt := internalMetadata(t, g.addr, name)
		if mt.TopicID == ([16]byte{}) || internalMetadata(t, other.addr, name).TopicID != mt.TopicID {
			t.Errorf("%s: topic id %x here, %x on another gateway", name, mt.TopicID, internalMetadata(t, other.addr, name).TopicID)
		}
		byID := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = mt.TopicID
		byID.Topics = append(byID.Topics, rt)
		resp := roundTrip(t, g.addr, byID, 12).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != name || !resp.Topics[0].IsInternal {
			t.Errorf("Metadata by the id of %s: %+v", name, resp.Topics)
		}
		if _, err := g.backend.DescribeTopic(context.Background(), name); !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Errorf("%s is in the backend: %v", name, err)
		}
	}
}

// Produce to an internal topic gets INVALID_TOPIC_EXCEPTION, as Kafka
// answers clients, before the batch is looked at (v3 by name, v13 by id,
// and from franz-go); a partition beyond the 50 is unknown. Nothing is
// written anywhere.
func TestInternalTopicsProduce(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	id := internalMetadata(t, g.addr, "__consumer_offsets").TopicID
	for _, v := range []int16{3, 13} {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "__consumer_offsets"
		if v >= 13 {
			rt.Topic, rt.TopicID = "", id
		}
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{
			{Partition: 0, Records: plainBatch("v")},
			{Partition: 7, Records: []byte("not a batch")},
			{Partition: 50, Records: plainBatch("v")},
		}
		req.Topics = append(req.Topics, rt)
		resp := roundTrip(t, g.addr, req, v).(*kmsg.ProduceResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
		ps := resp.Topics[0].Partitions
		code(t, "partition 0", ps[0].ErrorCode, kerr.InvalidTopicException)
		code(t, "partition 7", ps[1].ErrorCode, kerr.InvalidTopicException)
		code(t, "partition 50", ps[2].ErrorCode, kerr.UnknownTopicOrPartition)
		if ps[0].BaseOffset != -1 {
			t.Errorf("v%d: base offset %d", v, ps[0].BaseOffset)
		}
	}
	cl := client(t, g.addr, kgo.RecordRetries(1))
	for _, name := range internalTopicNames {
		err := cl.ProduceSync(ctxFor(t), &kgo.Record{Topic: name, Value: []byte("v")}).FirstErr()
		if !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("franz-go producing to %s: %v, want INVALID_TOPIC_EXCEPTION", name, err)
		}
	}
	if _, err := g.backend.DescribeTopic(context.Background(), "__consumer_offsets"); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("__consumer_offsets is in the backend: %v", err)
	}
}

// CreateTopics of an internal topic gets TOPIC_ALREADY_EXISTS (also
// validate-only), as Kafka; DeleteTopics gets TOPIC_DELETION_DISABLED with
// a reason (v6, by name and by id), INVALID_REQUEST before v3; the topics
// stay listed.
func TestInternalTopicsCreateDelete(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	for _, v := range []int16{2, 7} {
		for _, validate := range []bool{false, true} {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.ValidateOnly = validate
			for _, name := range internalTopicNames {
				rt := kmsg.NewCreateTopicsRequestTopic()
				rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 50, -1
				req.Topics = append(req.Topics, rt)
			}
			resp := roundTrip(t, g.addr, req, v).(*kmsg.CreateTopicsResponse)
			if len(resp.Topics) != 2 {
				t.Fatalf("v%d: %d topics answered", v, len(resp.Topics))
			}
			for _, st := range resp.Topics {
				code(t, "create "+st.Topic, st.ErrorCode, kerr.TopicAlreadyExists)
			}
		}
	}

	id := internalMetadata(t, g.addr, "__transaction_state").TopicID
	for _, v := range []int16{1, 2, 3, 5, 6} {
		req := kmsg.NewPtrDeleteTopicsRequest()
		if v < 6 {
			req.TopicNames = internalTopicNames
		} else {
			req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("__consumer_offsets")}, {TopicID: id}}
		}
		resp := roundTrip(t, g.addr, req, v).(*kmsg.DeleteTopicsResponse)
		if len(resp.Topics) != 2 {
			t.Fatalf("v%d: %d topics answered", v, len(resp.Topics))
		}
		want := kerr.TopicDeletionDisabled
		if v < 3 {
			want = kerr.InvalidRequest
		}
		for i, st := range resp.Topics {
			if st.Topic == nil || *st.Topic != internalTopicNames[i] {
				t.Errorf("v%d: answer %d is for %v", v, i, st.Topic)
			}
			code(t, "delete", st.ErrorCode, want)
			if v >= 5 && (st.ErrorMessage == nil || !strings.Contains(*st.ErrorMessage, "internal topic")) {
				t.Errorf("v%d: message %v", v, st.ErrorMessage)
			}
		}
	}
	listed, err := kadm.NewClient(client(t, g.addr)).ListTopicsWithInternal(ctxFor(t))
	if err != nil || !listed.Has("__consumer_offsets") || !listed.Has("__transaction_state") {
		t.Errorf("after DeleteTopics: %v %v", listed.Names(), err)
	}
}

// Reading an internal topic finds an empty partition: Fetch (v4 by name,
// v18 by id) has no error, high watermark, last stable offset and (v5+)
// log start 0 and no records; ListOffsets earliest and latest are 0. Kafka's
// other refusals: DeleteRecords INVALID_TOPIC_EXCEPTION, AddPartitionsToTxn
// TOPIC_AUTHORIZATION_FAILED; AlterConfigs INVALID_REQUEST; DescribeConfigs
// shows cleanup.policy=compact.
func TestInternalTopicsReadAndAdmin(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	id := internalMetadata(t, g.addr, "__consumer_offsets").TopicID
	for _, v := range []int16{4, 18} {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 20, 1, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "__consumer_offsets"
		if v >= 13 {
			ft.Topic, ft.TopicID = "", id
		}
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = 3, 0, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp := roundTrip(t, g.addr, req, v).(*kmsg.FetchResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("Fetch v%d: %+v", v, resp.Topics)
		}
		p := resp.Topics[0].Partitions[0]
		code(t, "fetch", p.ErrorCode, nil)
		if p.HighWatermark != 0 || p.LastStableOffset != 0 || (v >= 5 && p.LogStartOffset != 0) || len(p.RecordBatches) != 0 {
			t.Errorf("Fetch v%d: hw %d, lso %d, log start %d, %d bytes", v, p.HighWatermark, p.LastStableOffset, p.LogStartOffset, len(p.RecordBatches))
		}
	}
	adm := kadm.NewClient(client(t, g.addr))
	ctx := ctxFor(t)
	for _, list := range []func(context.Context, ...string) (kadm.ListedOffsets, error){adm.ListStartOffsets, adm.ListEndOffsets} {
		offs, err := list(ctx, "__consumer_offsets")
		if err != nil {
			t.Fatal(err)
		}
		o, ok := offs.Lookup("__consumer_offsets", 49)
		if !ok || o.Err != nil || o.Offset != 0 {
			t.Errorf("ListOffsets of partition 49: %+v", o)
		}
	}

	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.TimeoutMillis = 5000
	dr.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "__consumer_offsets", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: -1}}}}
	drResp := roundTrip(t, g.addr, dr, 2).(*kmsg.DeleteRecordsResponse)
	code(t, "DeleteRecords", drResp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidTopicException)

	txn := initTxn(t, g.addr, "it-txn")
	codes := txn.addPartitions(t, g.addr, "__consumer_offsets", 0)
	code(t, "AddPartitionsToTxn", codes[0], kerr.TopicAuthorizationFailed)

	configs, err := adm.DescribeTopicConfigs(ctx, internalTopicNames...)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range configs {
		policy := "unset"
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" {
				policy = c.MaybeValue()
			}
		}
		if rc.Err != nil || policy != "compact" {
			t.Errorf("%s: cleanup.policy %s, %v", rc.Name, policy, rc.Err)
		}
	}
	for _, validate := range []bool{false, true} {
		alter := adm.AlterTopicConfigs
		if validate {
			alter = adm.ValidateAlterTopicConfigs
		}
		res, err := alter(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}, "__consumer_offsets")
		if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.InvalidRequest) {
			t.Errorf("AlterConfigs (validate only %v): %+v %v", validate, res, err)
		}
	}
}
