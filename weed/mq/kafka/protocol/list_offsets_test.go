package protocol_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// listOffsets asks for one timestamp of each partition of topic, in order.
func listOffsets(topic string, isolation int8, asks ...[2]int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID, req.IsolationLevel = -1, isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, a := range asks {
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Partition, p.Timestamp = int32(a[0]), a[1]
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func listedPartitions(t *testing.T, resp kmsg.Response) []kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	r := resp.(*kmsg.ListOffsetsResponse)
	if len(r.Topics) != 1 {
		t.Fatalf("%d topics answered", len(r.Topics))
	}
	return r.Topics[0].Partitions
}

// ListOffsets v1-11: latest (-1) is the high watermark, earliest (-2) and
// earliest local (-4, v8+) the log start, max timestamp (-3, v7+) the
// record with the largest timestamp, latest tiered (-5, v9+) and earliest
// pending upload (-6, v11) -1, any other timestamp the first record at or
// after it (-1 past the last); answers in request order, with the leader
// epoch (v4+) where an offset was found, -1 where none was; a special
// timestamp before its version UNSUPPORTED_VERSION. v0 is refused, as by
// Kafka 4.
func TestListOffsetsVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrListOffsetsRequest(), 1, 11)
	g.topic(t, "lo", 2, nil)
	var recs []record.Record
	for _, ts := range []int64{1000, 1001, 5000, 1003, 1004} {
		recs = append(recs, record.Record{Value: []byte("v"), Timestamp: ts})
	}
	<-g.backend.Append(context.Background(), "lo", 0, recs, true).Done

	type want struct{ offset, timestamp int64 }
	cases := []struct {
		ts   int64
		from int16
		want want
	}{
		{-1, 1, want{5, -1}},
		{-2, 1, want{0, -1}},
		{1001, 1, want{1, 1001}},
		{1002, 1, want{2, 5000}}, // the first at or after 1002 is the one of 5000
		{5001, 1, want{-1, -1}},
		{-3, 7, want{2, 5000}},
		{-4, 8, want{0, -1}},
		{-5, 9, want{-1, -1}},
		{-6, 11, want{-1, -1}},
	}
	for _, v := range []int16{1, 2, 4, 7, 8, 9, 11} {
		var asks [][2]int64
		var wants []want
		for _, c := range cases {
			if v >= c.from {
				asks = append(asks, [2]int64{0, c.ts})
				wants = append(wants, c.want)
			}
		}
		asks = append(asks, [2]int64{1, -1}, [2]int64{1, -2})
		wants = append(wants, want{0, -1}, want{0, -1})
		resp := roundTrip(t, g.addr, listOffsets("lo", 0, asks...), v)
		if resp.(*kmsg.ListOffsetsResponse).ThrottleMillis != 0 {
			t.Errorf("v%d: throttled", v)
		}
		parts := listedPartitions(t, resp)
		if len(parts) != len(wants) {
			t.Fatalf("v%d: %d partitions answered, %d asked", v, len(parts), len(wants))
		}
		for i, p := range parts {
			if p.Partition != int32(asks[i][0]) || p.ErrorCode != 0 || p.Offset != wants[i].offset || p.Timestamp != wants[i].timestamp {
				t.Errorf("v%d: partition %d timestamp %d: %s offset %d timestamp %d, want offset %d timestamp %d",
					v, asks[i][0], asks[i][1], errName(p.ErrorCode), p.Offset, p.Timestamp, wants[i].offset, wants[i].timestamp)
			}
			if wantEpoch := int32(min(0, p.Offset)); v >= 4 && p.LeaderEpoch != wantEpoch {
				t.Errorf("v%d: offset %d with leader epoch %d, want %d", v, p.Offset, p.LeaderEpoch, wantEpoch)
			}
		}
		for _, c := range cases {
			if v < c.from {
				p := listedPartitions(t, roundTrip(t, g.addr, listOffsets("lo", 0, [2]int64{0, c.ts}), v))[0]
				code(t, fmt.Sprintf("v%d: timestamp %d", v, c.ts), p.ErrorCode, kerr.UnsupportedVersion)
			}
		}
	}
	// The log start moves with DeleteRecords; -3 of an empty partition
	// finds nothing.
	if _, err := g.backend.DeleteRecords(context.Background(), "lo", 0, 3); err != nil {
		t.Fatal(err)
	}
	parts := listedPartitions(t, roundTrip(t, g.addr, listOffsets("lo", 0, [2]int64{0, -2}, [2]int64{0, -4}, [2]int64{1, -3}), 11))
	if parts[0].Offset != 3 || parts[1].Offset != 3 || parts[2].Offset != -1 || parts[2].Timestamp != -1 {
		t.Errorf("after deleting records: earliest %d, earliest local %d; max timestamp of an empty partition: %d at %d",
			parts[0].Offset, parts[1].Offset, parts[2].Offset, parts[2].Timestamp)
	}
}

// read_committed (v2+): latest is the last stable offset, before the
// earliest open transaction; it moves on when the transaction ends.
func TestListOffsetsReadCommitted(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "lo-rc", 1, nil)
	g.write(t, "lo-rc", 0, 0, "a", "b")
	mark := &record.TxnMark{ProducerID: 9, Epoch: 0, Control: record.NotControl}
	<-g.backend.Append(context.Background(), "lo-rc", 0, []record.Record{{Value: []byte("t"), Txn: mark}, {Value: []byte("u"), Txn: mark}}, true).Done
	latest := func(isolation int8) int64 {
		return listedPartitions(t, roundTrip(t, g.addr, listOffsets("lo-rc", isolation, [2]int64{0, -1}), 5))[0].Offset
	}
	if c, u := latest(1), latest(0); c != 2 || u != 4 {
		t.Fatalf("open transaction from offset 2: read_committed latest %d (want 2), read_uncommitted %d (want 4)", c, u)
	}
	if err := g.backend.WriteMarker(context.Background(), "lo-rc", 0, storage.Marker{ProducerID: 9, Commit: true}); err != nil {
		t.Fatal(err)
	}
	if c := latest(1); c != 5 {
		t.Fatalf("committed: read_committed latest %d, want 5 (after the marker)", c)
	}
}

// Errors per partition: an unknown topic (or a name no topic can have) or
// partition is UNKNOWN_TOPIC_OR_PARTITION, a negative timestamp that names
// nothing UNSUPPORTED_VERSION (as Kafka); with an authorizer, a topic the principal may
// not describe is TOPIC_AUTHORIZATION_FAILED whether or not it exists.
func TestListOffsetsErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "lo-e"),
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "absent"),
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "bad/name"),
	}})
	g.topic(t, "lo-e", 2, nil)
	g.topic(t, "lo-hidden", 1, nil)
	parts := listedPartitions(t, roundTrip(t, g.addr, listOffsets("lo-e", 0, [2]int64{0, -7}, [2]int64{2, -1}, [2]int64{-1, -1}, [2]int64{1, -1}), 9))
	code(t, "timestamp -7", parts[0].ErrorCode, kerr.UnsupportedVersion)
	code(t, "partition 2 of 2", parts[1].ErrorCode, kerr.UnknownTopicOrPartition)
	code(t, "partition -1", parts[2].ErrorCode, kerr.UnknownTopicOrPartition)
	code(t, "partition 1", parts[3].ErrorCode, nil)
	for _, p := range parts[:3] {
		if p.Offset != -1 {
			t.Errorf("partition %d in error: offset %d", p.Partition, p.Offset)
		}
	}
	for topic, want := range map[string]*kerr.Error{"absent": kerr.UnknownTopicOrPartition, "bad/name": kerr.UnknownTopicOrPartition,
		"lo-hidden": kerr.TopicAuthorizationFailed, "absent-hidden": kerr.TopicAuthorizationFailed} {
		parts := listedPartitions(t, roundTrip(t, g.addr, listOffsets(topic, 0, [2]int64{0, -1}), 7))
		code(t, topic, parts[0].ErrorCode, want)
	}
}
