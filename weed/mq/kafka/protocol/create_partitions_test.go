package protocol_test

import (
	"errors"
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

// CreatePartitions v0-3 is refused: a SeaweedMQ topic keeps its
// partitions. More partitions get INVALID_PARTITIONS saying why, as many
// or fewer INVALID_PARTITIONS saying the count only grows, an unknown topic
// UNKNOWN_TOPIC_OR_PARTITION; with ValidateOnly too; the topic keeps its
// partitions.
func TestCreatePartitionsVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrCreatePartitionsRequest(), 0, 3)
	g.topic(t, "cp", 3, nil)
	for v := int16(0); v <= 3; v++ {
		for _, validate := range []bool{false, true} {
			resp := roundTrip(t, g.addr, createPartitions(validate, map[string]int32{"cp": 6, "cp-none": 2}), v).(*kmsg.CreatePartitionsResponse)
			if len(resp.Topics) != 2 || resp.Topics[0].Topic != "cp" {
				t.Fatalf("v%d: %+v", v, resp.Topics)
			}
			grow := resp.Topics[0]
			if code(t, "more partitions", grow.ErrorCode, kerr.InvalidPartitions); grow.ErrorMessage == nil || !strings.Contains(*grow.ErrorMessage, "create a new topic") {
				t.Errorf("v%d: message %v", v, grow.ErrorMessage)
			}
			code(t, "an unknown topic", resp.Topics[1].ErrorCode, kerr.UnknownTopicOrPartition)
		}
		for _, n := range []int32{3, 1} {
			resp := roundTrip(t, g.addr, createPartitions(false, map[string]int32{"cp": n}), v).(*kmsg.CreatePartitionsResponse)
			if rt := resp.Topics[0]; rt.ErrorCode != kerr.InvalidPartitions.Code || rt.ErrorMessage == nil || !strings.Contains(*rt.ErrorMessage, "only grow") {
				t.Errorf("v%d: %d partitions: %s %v", v, n, errName(rt.ErrorCode), rt.ErrorMessage)
			}
		}
	}
	if !exists(g, "cp") {
		t.Fatal("cp gone")
	}
	if info, _ := g.backend.DescribeTopic(ctxFor(t), "cp"); info.Partitions != 3 {
		t.Errorf("cp has %d partitions", info.Partitions)
	}
	// As a client sees it.
	resp, err := kadm.NewClient(client(t, g.addr)).CreatePartitions(ctxFor(t), 2, "cp")
	if err != nil || !errors.Is(resp["cp"].Err, kerr.InvalidPartitions) {
		t.Fatalf("kadm: %+v %v", resp, err)
	}
}

// With an authorizer: Alter on the topic (TOPIC_AUTHORIZATION_FAILED,
// before looking whether it exists).
func TestCreatePartitionsAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{binding(anonymous, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeTopic, "cp")}})
	g.topic(t, "cp", 1, nil)
	g.topic(t, "cp-other", 1, nil)
	resp := roundTrip(t, g.addr, createPartitions(false, map[string]int32{"cp": 2, "cp-none": 2, "cp-other": 2}), 3).(*kmsg.CreatePartitionsResponse)
	code(t, "with Alter", resp.Topics[0].ErrorCode, kerr.InvalidPartitions)
	code(t, "an unknown topic without Alter", resp.Topics[1].ErrorCode, kerr.TopicAuthorizationFailed)
	code(t, "without Alter", resp.Topics[2].ErrorCode, kerr.TopicAuthorizationFailed)
}
