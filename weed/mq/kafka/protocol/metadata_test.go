package protocol_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
)

func metadataOf(topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// topicNames are the topics a Metadata answer lists, but internal ones.
func topicNames(resp *kmsg.MetadataResponse) []string {
	var out []string
	for _, t := range resp.Topics {
		if t.Topic != nil && !internal(*t.Topic) {
			out = append(out, *t.Topic)
		}
	}
	slices.Sort(out)
	return out
}

// Metadata v0-13: the gateway itself as the one broker and controller, at
// the address the client came to; every partition led by it with epoch 0;
// the topic id (v10+) the topic has; what each version carries.
func TestMetadataVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrMetadataRequest(), 0, 13)
	info := g.topic(t, "md", 2, nil)
	g.topic(t, "md-other", 1, nil)
	host, portStr, _ := net.SplitHostPort(g.addr)
	port, _ := strconv.Atoi(portStr)

	for _, v := range []int16{0, 1, 4, 9, 12, 13} {
		req := metadataOf("md")
		resp := roundTrip(t, g.addr, req, v).(*kmsg.MetadataResponse)
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 0 || resp.Brokers[0].Host != host || resp.Brokers[0].Port != int32(port) {
			t.Fatalf("v%d: brokers %+v, want node 0 at %s", v, resp.Brokers, g.addr)
		}
		if v >= 1 && resp.ControllerID != 0 {
			t.Errorf("v%d: controller %d", v, resp.ControllerID)
		}
		if v >= 2 && (resp.ClusterID == nil || *resp.ClusterID != "in-process") {
			t.Errorf("v%d: cluster id %v", v, resp.ClusterID)
		}
		if len(resp.Topics) != 1 {
			t.Fatalf("v%d: %d topics", v, len(resp.Topics))
		}
		mt := resp.Topics[0]
		code(t, "md", mt.ErrorCode, nil)
		if v >= 10 && mt.TopicID != info.ID {
			t.Errorf("v%d: topic id %x, want %x", v, mt.TopicID, info.ID)
		}
		if v >= 8 && mt.AuthorizedOperations != -2147483648 {
			t.Errorf("v%d: authorized operations %d not asked for", v, mt.AuthorizedOperations)
		}
		if mt.IsInternal || len(mt.Partitions) != 2 {
			t.Fatalf("v%d: internal %v, %d partitions", v, mt.IsInternal, len(mt.Partitions))
		}
		for i, p := range mt.Partitions {
			if p.Partition != int32(i) || p.ErrorCode != 0 || p.Leader != 0 || (v >= 7 && p.LeaderEpoch != 0) ||
				!slices.Equal(p.Replicas, []int32{0}) || !slices.Equal(p.ISR, []int32{0}) {
				t.Errorf("v%d: partition %+v", v, p)
			}
		}
	}
	// Every topic: an empty list at v0, a null one from v1 on (an empty
	// one is no topic then).
	all := kmsg.NewPtrMetadataRequest()
	all.Topics = []kmsg.MetadataRequestTopic{}
	if got := topicNames(roundTrip(t, g.addr, all, 0).(*kmsg.MetadataResponse)); !slices.Equal(got, []string{"md", "md-other"}) {
		t.Errorf("v0, no topics named: %v", got)
	}
	if got := topicNames(roundTrip(t, g.addr, all, 1).(*kmsg.MetadataResponse)); len(got) != 0 {
		t.Errorf("v1, an empty list: %v", got)
	}
	all.Topics = nil
	for _, v := range []int16{1, 13} {
		resp := roundTrip(t, g.addr, all, v).(*kmsg.MetadataResponse)
		if got := topicNames(resp); !slices.Equal(got, []string{"md", "md-other"}) {
			t.Errorf("v%d, null topics: %v", v, got)
		}
		for _, mt := range resp.Topics {
			if mt.Topic == nil || mt.IsInternal != internal(*mt.Topic) {
				t.Errorf("v%d: topic %v internal %v", v, mt.Topic, mt.IsInternal)
			}
		}
	}
	// v13 has a top-level error code: none.
	if resp := roundTrip(t, g.addr, all, 13).(*kmsg.MetadataResponse); resp.ErrorCode != 0 {
		t.Errorf("v13 error %s", errName(resp.ErrorCode))
	}
}

// Topics by id (v10+): the id's topic by name, UNKNOWN_TOPIC_ID for an id
// no topic has; both in one request, in request order.
func TestMetadataTopicIDs(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	info := g.topic(t, "by-id", 4, nil)
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{{TopicID: [16]byte{1, 2, 3}}, {TopicID: info.ID}}
	for _, v := range []int16{10, 13} {
		resp := roundTrip(t, g.addr, req, v).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 2 {
			t.Fatalf("v%d: %d topics", v, len(resp.Topics))
		}
		code(t, "unknown id", resp.Topics[0].ErrorCode, kerr.UnknownTopicID)
		if resp.Topics[0].TopicID != [16]byte{1, 2, 3} {
			t.Errorf("v%d: unknown id answered as %x", v, resp.Topics[0].TopicID)
		}
		known := resp.Topics[1]
		if known.ErrorCode != 0 || known.Topic == nil || *known.Topic != "by-id" || known.TopicID != info.ID || len(known.Partitions) != 4 {
			t.Errorf("v%d: by id: %s %v %x, %d partitions", v, errName(known.ErrorCode), known.Topic, known.TopicID, len(known.Partitions))
		}
	}
}

// Auto-creation: always before v4 (when the gateway creates topics), from
// v4 only when the request allows it; never without -auto.create; names
// no topic may have get INVALID_TOPIC_EXCEPTION and are not created.
func TestMetadataAutoCreate(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	exists := func(name string) bool {
		_, err := g.backend.DescribeTopic(context.Background(), name)
		return err == nil
	}
	resp := roundTrip(t, g.addr, metadataOf("auto-v3"), 3).(*kmsg.MetadataResponse)
	if code(t, "v3 auto-creation", resp.Topics[0].ErrorCode, nil); !exists("auto-v3") || len(resp.Topics[0].Partitions) != 3 {
		t.Errorf("v3: not created with the default 3 partitions: %+v", resp.Topics[0])
	}
	req := metadataOf("auto-v4-no")
	resp = roundTrip(t, g.addr, req, 4).(*kmsg.MetadataResponse)
	if code(t, "v4 without auto-creation", resp.Topics[0].ErrorCode, kerr.UnknownTopicOrPartition); exists("auto-v4-no") {
		t.Error("v4 created a topic the request did not allow to create")
	}
	req = metadataOf("auto-v12")
	req.AllowAutoTopicCreation = true
	resp = roundTrip(t, g.addr, req, 12).(*kmsg.MetadataResponse)
	if code(t, "v12 auto-creation", resp.Topics[0].ErrorCode, nil); !exists("auto-v12") {
		t.Error("v12 with AllowAutoTopicCreation: not created")
	}
	for _, bad := range []string{"bad/name", "..", "has space", strings.Repeat("x", 250)} {
		req := metadataOf(bad)
		req.AllowAutoTopicCreation = true
		resp := roundTrip(t, g.addr, req, 12).(*kmsg.MetadataResponse)
		if code(t, "bad name "+bad[:min(len(bad), 12)], resp.Topics[0].ErrorCode, kerr.InvalidTopicException); exists(bad) {
			t.Errorf("%q created", bad)
		}
	}

	off := startGateway(t, gatewayOptions{noAutoCreate: true})
	resp = roundTrip(t, off.addr, metadataOf("never"), 1).(*kmsg.MetadataResponse)
	code(t, "v1 without -auto.create", resp.Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)
	if _, err := off.backend.DescribeTopic(context.Background(), "never"); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("created without -auto.create: %v", err)
	}
}

// With an authorizer: all topics lists only those the principal may
// describe; a named topic it may not describe gets
// TOPIC_AUTHORIZATION_FAILED whether it exists or not; the authorized
// operations (v8+) are the principal's.
func TestMetadataAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "seen"),
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "missing"),
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, "kafka-cluster"),
	}})
	g.topic(t, "seen", 1, nil)
	g.topic(t, "hidden", 1, nil)
	if got := topicNames(roundTrip(t, g.addr, kmsg.NewPtrMetadataRequest(), 7).(*kmsg.MetadataResponse)); !slices.Equal(got, []string{"seen"}) {
		t.Errorf("all topics: %v, want only seen", got)
	}
	req := metadataOf("seen", "hidden", "nowhere")
	req.IncludeClusterAuthorizedOperations, req.IncludeTopicAuthorizedOperations = true, true
	resp := roundTrip(t, g.addr, req, 10).(*kmsg.MetadataResponse)
	code(t, "seen", resp.Topics[0].ErrorCode, nil)
	code(t, "hidden", resp.Topics[1].ErrorCode, kerr.TopicAuthorizationFailed)
	code(t, "nowhere", resp.Topics[2].ErrorCode, kerr.TopicAuthorizationFailed)
	if len(resp.Topics[1].Partitions) != 0 {
		t.Errorf("hidden: %d partitions shown", len(resp.Topics[1].Partitions))
	}
	if ops, want := resp.Topics[0].AuthorizedOperations, int32(1<<kmsg.ACLOperationRead|1<<kmsg.ACLOperationDescribe); ops != want {
		t.Errorf("seen: authorized operations %b, want %b (Read and the Describe it implies)", ops, want)
	}
	if ops := resp.AuthorizedOperations; ops != 1<<kmsg.ACLOperationDescribe {
		t.Errorf("cluster: authorized operations %b, want Describe", ops)
	}
	// Auto-creation needs Create: without it nothing is created.
	req = metadataOf("missing")
	req.AllowAutoTopicCreation = true
	resp = roundTrip(t, g.addr, req, 12).(*kmsg.MetadataResponse)
	code(t, "auto-creation without Create", resp.Topics[0].ErrorCode, kerr.TopicAuthorizationFailed)
	if _, err := g.backend.DescribeTopic(context.Background(), "missing"); err == nil {
		t.Error("auto-created without Create")
	}
	g.allow(t, binding(anonymous, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, "missing"))
	resp = roundTrip(t, g.addr, req, 12).(*kmsg.MetadataResponse)
	code(t, "auto-creation with Create", resp.Topics[0].ErrorCode, nil)
	if len(resp.Topics[0].Partitions) != 3 {
		t.Errorf("auto-created with %d partitions", len(resp.Topics[0].Partitions))
	}
}

// In a cluster of gateways: every live gateway is a broker; a partition's
// leader is the gateway that owns it, with the epoch since which it does
// (v7+), and is its only replica and in-sync replica; a partition no
// gateway is known for is LEADER_NOT_AVAILABLE (leader and epoch -1); the
// controller is the cluster's.
func TestMetadataLeaders(t *testing.T) {
	fc := newFakeCluster(1, map[string]fakeOwner{
		membership.PartitionKey("ml", 0): {1, 4},
		membership.PartitionKey("ml", 1): {0, 2},
	})
	g := startGateway(t, gatewayOptions{cluster: fc})
	g.topic(t, "ml", 3, nil)
	for _, v := range []int16{5, 12} {
		resp := roundTrip(t, g.addr, metadataOf("ml"), v).(*kmsg.MetadataResponse)
		if resp.ControllerID != 1 || len(resp.Brokers) != 2 || resp.Brokers[0].NodeID != 0 || resp.Brokers[0].Host+":"+strconv.Itoa(int(resp.Brokers[0].Port)) != g.addr ||
			resp.Brokers[1].NodeID != 1 || resp.Brokers[1].Host != "10.0.0.1" || resp.Brokers[1].Port != 19092 {
			t.Fatalf("v%d: controller %d, brokers %+v", v, resp.ControllerID, resp.Brokers)
		}
		ps := resp.Topics[0].Partitions
		if len(ps) != 3 {
			t.Fatalf("v%d: %d partitions", v, len(ps))
		}
		for i, want := range []struct{ leader, epoch int32 }{{1, 4}, {0, 2}} {
			p := ps[i]
			if p.ErrorCode != 0 || p.Leader != want.leader || (v >= 7 && p.LeaderEpoch != want.epoch) ||
				!slices.Equal(p.Replicas, []int32{want.leader}) || !slices.Equal(p.ISR, []int32{want.leader}) {
				t.Errorf("v%d: partition %d: %+v", v, i, p)
			}
		}
		if p := ps[2]; p.ErrorCode != kerr.LeaderNotAvailable.Code || p.Leader != -1 || (v >= 7 && p.LeaderEpoch != -1) {
			t.Errorf("v%d: a partition without a known leader: %s leader %d epoch %d", v, errName(p.ErrorCode), p.Leader, p.LeaderEpoch)
		}
	}
}
