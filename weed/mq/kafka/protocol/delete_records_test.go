package protocol_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func deleteRecords(topic string, offsets ...[2]int64) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	for _, o := range offsets {
		rt.Partitions = append(rt.Partitions, kmsg.DeleteRecordsRequestTopicPartition{Partition: int32(o[0]), Offset: o[1]})
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func deleted(t *testing.T, resp kmsg.Response) []kmsg.DeleteRecordsResponseTopicPartition {
	t.Helper()
	r := resp.(*kmsg.DeleteRecordsResponse)
	if len(r.Topics) != 1 {
		t.Fatalf("%d topics answered", len(r.Topics))
	}
	return r.Topics[0].Partitions
}

// DeleteRecords v0-2: the log start offset moves up to the offset given
// (-1: the high watermark) and is answered as the low watermark; an offset
// below it leaves it; ListOffsets earliest follows it.
func TestDeleteRecordsVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrDeleteRecordsRequest(), 0, 2)
	g.topic(t, "dr", 3, nil)
	for p := int32(0); p < 3; p++ {
		g.write(t, "dr", p, 0, "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")
	}
	for v := int16(0); v <= 2; v++ {
		parts := deleted(t, roundTrip(t, g.addr, deleteRecords("dr", [2]int64{0, int64(2 + v)}, [2]int64{1, -1}, [2]int64{2, 0}), v))
		for i, want := range []int64{int64(2 + v), 10, 0} {
			if parts[i].Partition != int32(i) || parts[i].ErrorCode != 0 || parts[i].LowWatermark != want {
				t.Errorf("v%d: partition %d: %s low watermark %d, want %d", v, i, errName(parts[i].ErrorCode), parts[i].LowWatermark, want)
			}
		}
	}
	parts := deleted(t, roundTrip(t, g.addr, deleteRecords("dr", [2]int64{0, 1}), 2))
	if parts[0].ErrorCode != 0 || parts[0].LowWatermark != 4 {
		t.Errorf("an offset below the log start: %s low watermark %d, want it kept at 4", errName(parts[0].ErrorCode), parts[0].LowWatermark)
	}
	earliest := listedPartitions(t, roundTrip(t, g.addr, listOffsets("dr", 0, [2]int64{0, -2}, [2]int64{1, -2}), 5))
	if earliest[0].Offset != 4 || earliest[1].Offset != 10 {
		t.Errorf("earliest offsets %d and %d, want 4 and 10", earliest[0].Offset, earliest[1].Offset)
	}
	// As a client deletes records.
	o := kadm.Offsets{}
	o.Add(kadm.Offset{Topic: "dr", Partition: 2, At: 7})
	resp, err := kadm.NewClient(client(t, g.addr)).DeleteRecords(ctxFor(t), o)
	if r, ok := resp.Lookup("dr", 2); err != nil || !ok || r.Err != nil || r.LowWatermark != 7 {
		t.Fatalf("kadm: %+v %v", r, err)
	}
}

// Errors per partition: an offset past the high watermark
// OFFSET_OUT_OF_RANGE (the log start unchanged); an unknown topic or
// partition (or a name no topic can have) UNKNOWN_TOPIC_OR_PARTITION; with
// an authorizer Delete on the topic (TOPIC_AUTHORIZATION_FAILED).
func TestDeleteRecordsErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, "dre"),
		binding(anonymous, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, "dre-none"),
		binding(anonymous, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, "bad/name"),
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "dre-described"),
	}})
	g.topic(t, "dre", 2, nil)
	g.topic(t, "dre-described", 1, nil)
	g.write(t, "dre", 0, 0, "a", "b", "c")
	parts := deleted(t, roundTrip(t, g.addr, deleteRecords("dre", [2]int64{0, 4}, [2]int64{2, 0}, [2]int64{1, 0}), 2))
	code(t, "past the high watermark", parts[0].ErrorCode, kerr.OffsetOutOfRange)
	code(t, "partition 2 of 2", parts[1].ErrorCode, kerr.UnknownTopicOrPartition)
	code(t, "partition 1", parts[2].ErrorCode, nil)
	if parts[0].LowWatermark != -1 {
		t.Errorf("out of range: low watermark %d", parts[0].LowWatermark)
	}
	if earliest := listedPartitions(t, roundTrip(t, g.addr, listOffsets("dre", 0, [2]int64{0, -2}), 5)); len(earliest) != 1 || earliest[0].ErrorCode != 0 || earliest[0].Offset != 0 {
		t.Errorf("the log start after a refused deletion: %+v", earliest)
	}
	for topic, want := range map[string]*kerr.Error{"dre-none": kerr.UnknownTopicOrPartition, "bad/name": kerr.UnknownTopicOrPartition, "dre-described": kerr.TopicAuthorizationFailed} {
		code(t, topic, deleted(t, roundTrip(t, g.addr, deleteRecords(topic, [2]int64{0, 0}), 1))[0].ErrorCode, want)
	}
}
