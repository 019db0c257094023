package protocol_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func createPartitions(validateOnly bool, counts map[string]int32) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis, req.ValidateOnly = 5000, validateOnly
	for _, name := range []string{"cp", "cp-none", "cp-other"} {
		if c, ok := counts[name]; ok {
			req.Topics = append(req.Topics, kmsg.CreatePartitionsRequestTopic{Topic: name, Count: c})
		}
	}
	return req
}

// CreatePartitions v0-3 grows a topic as Kafka does: validate_only
// changes nothing; more partitions are added empty, the records of the
// others stay at their offsets; as many or fewer get INVALID_PARTITIONS
// with Kafka's messages; an unknown topic UNKNOWN_TOPIC_OR_PARTITION; a
// topic named twice INVALID_REQUEST; an assignment of the wrong size or
// naming an unknown broker INVALID_REPLICA_ASSIGNMENT.
func TestCreatePartitionsVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrCreatePartitionsRequest(), 0, 3)
	g.topic(t, "cp", 3, nil)
	g.write(t, "cp", 2, 1000, "a", "b")
	partitions := func() int32 {
		info, err := g.backend.DescribeTopic(ctxFor(t), "cp")
		if err != nil {
			t.Fatal(err)
		}
		return info.Partitions
	}
	want := int32(3)
	for v := int16(0); v <= 3; v++ {
		for _, validate := range []bool{true, false} {
			want++
			resp := roundTrip(t, g.addr, createPartitions(validate, map[string]int32{"cp": want, "cp-none": 2}), v).(*kmsg.CreatePartitionsResponse)
			if len(resp.Topics) != 2 || resp.Topics[0].Topic != "cp" {
				t.Fatalf("v%d: %+v", v, resp.Topics)
			}
			code(t, "more partitions", resp.Topics[0].ErrorCode, nil)
			code(t, "an unknown topic", resp.Topics[1].ErrorCode, kerr.UnknownTopicOrPartition)
			if validate {
				want--
			}
			if got := partitions(); got != want {
				t.Fatalf("v%d validate_only %v: %d partitions, want %d", v, validate, got, want)
			}
		}
		for n, msg := range map[int32]string{want: "already has", 1: "higher than the requested"} {
			resp := roundTrip(t, g.addr, createPartitions(false, map[string]int32{"cp": n}), v).(*kmsg.CreatePartitionsResponse)
			if rt := resp.Topics[0]; rt.ErrorCode != kerr.InvalidPartitions.Code || rt.ErrorMessage == nil || !strings.Contains(*rt.ErrorMessage, msg) {
				t.Errorf("v%d: %d partitions: %s %v", v, n, errName(rt.ErrorCode), rt.ErrorMessage)
			}
		}
		twice := createPartitions(false, map[string]int32{"cp": want + 1})
		twice.Topics = append(twice.Topics, twice.Topics[0])
		for _, rt := range roundTrip(t, g.addr, twice, v).(*kmsg.CreatePartitionsResponse).Topics {
			code(t, "a topic named twice", rt.ErrorCode, kerr.InvalidRequest)
		}
		for _, a := range [][]int32{{0}, {999}} {
			req := createPartitions(false, map[string]int32{"cp": want + 2})
			for _, id := range a {
				req.Topics[0].Assignment = append(req.Topics[0].Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: []int32{id}})
			}
			code(t, fmt.Sprintf("assignment %v", a), roundTrip(t, g.addr, req, v).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode, kerr.InvalidReplicaAssignment)
		}
	}
	if got := partitions(); got != want {
		t.Fatalf("%d partitions, want %d", got, want)
	}
	// The records written before stay where they were; a new partition
	// takes records from offset 0.
	res, err := g.backend.Read(ctxFor(t), "cp", 2, 0, 1<<20)
	if err != nil || len(res.Records) != 2 || string(res.Records[1].Value) != "b" || res.Records[1].Offset != 1 {
		t.Fatalf("partition 2 after growing: %+v %v", res, err)
	}
	if base := g.write(t, "cp", want-1, 2000, "new"); base != 0 {
		t.Fatalf("first record of a new partition at offset %d", base)
	}
	// As a client sees it.
	resp, err := kadm.NewClient(client(t, g.addr)).CreatePartitions(ctxFor(t), 2, "cp")
	if err != nil || resp["cp"].Err != nil {
		t.Fatalf("kadm: %+v %v", resp, err)
	}
	if got := partitions(); got != want+2 {
		t.Fatalf("kadm: %d partitions, want %d", got, want+2)
	}
}

// With an authorizer: Alter on the topic (TOPIC_AUTHORIZATION_FAILED,
// before looking whether it exists).
func TestCreatePartitionsAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{binding(anonymous, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeTopic, "cp")}})
	g.topic(t, "cp", 1, nil)
	g.topic(t, "cp-other", 1, nil)
	resp := roundTrip(t, g.addr, createPartitions(false, map[string]int32{"cp": 2, "cp-none": 2, "cp-other": 2}), 3).(*kmsg.CreatePartitionsResponse)
	code(t, "with Alter", resp.Topics[0].ErrorCode, nil)
	code(t, "an unknown topic without Alter", resp.Topics[1].ErrorCode, kerr.TopicAuthorizationFailed)
	code(t, "without Alter", resp.Topics[2].ErrorCode, kerr.TopicAuthorizationFailed)
}
