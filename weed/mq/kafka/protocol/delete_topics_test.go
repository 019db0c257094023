package protocol_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func deleteTopicsByName(names ...string) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis, req.TopicNames = 5000, names
	for i := range names {
		req.Topics = append(req.Topics, kmsg.DeleteTopicsRequestTopic{Topic: &names[i]})
	}
	return req
}

func exists(g *testGateway, name string) bool {
	_, err := g.backend.DescribeTopic(context.Background(), name)
	return err == nil
}

// DeleteTopics v1-6: topics by name, answered in request order; an unknown
// one (or a name no topic can have) UNKNOWN_TOPIC_OR_PARTITION. v6 names
// topics by name or by id (answered with both); an unknown id
// UNKNOWN_TOPIC_ID.
func TestDeleteTopicsVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrDeleteTopicsRequest(), 1, 6)
	for v := int16(1); v <= 6; v++ {
		name := "dt-v" + strconv.Itoa(int(v))
		g.topic(t, name, 1, nil)
		resp := roundTrip(t, g.addr, deleteTopicsByName("dt-none", name, "bad/name"), v).(*kmsg.DeleteTopicsResponse)
		if len(resp.Topics) != 3 || resp.Topics[1].Topic == nil || *resp.Topics[1].Topic != name {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
		code(t, "an unknown topic", resp.Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)
		code(t, name, resp.Topics[1].ErrorCode, nil)
		code(t, "a bad name", resp.Topics[2].ErrorCode, kerr.UnknownTopicOrPartition)
		if exists(g, name) {
			t.Errorf("v%d: %s still there", v, name)
		}
	}
	info := g.topic(t, "dt-by-id", 2, nil)
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: info.ID}, {TopicID: [16]byte{8}}}
	resp := roundTrip(t, g.addr, req, 6).(*kmsg.DeleteTopicsResponse)
	if rt := resp.Topics[0]; rt.ErrorCode != 0 || rt.Topic == nil || *rt.Topic != "dt-by-id" || rt.TopicID != info.ID || exists(g, "dt-by-id") {
		t.Errorf("by id: %+v", rt)
	}
	code(t, "an unknown id", resp.Topics[1].ErrorCode, kerr.UnknownTopicID)
	if resp.Topics[1].TopicID != [16]byte{8} {
		t.Errorf("the unknown id answered as %x", resp.Topics[1].TopicID)
	}
}

// With an authorizer: Delete on the topic (TOPIC_AUTHORIZATION_FAILED), by
// name or by id; the topic stays.
func TestDeleteTopicsAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, "dta-mine"),
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "dta-theirs"),
	}})
	g.topic(t, "dta-mine", 1, nil)
	theirs := g.topic(t, "dta-theirs", 1, nil)
	resp := roundTrip(t, g.addr, deleteTopicsByName("dta-mine", "dta-theirs"), 5).(*kmsg.DeleteTopicsResponse)
	code(t, "with Delete", resp.Topics[0].ErrorCode, nil)
	code(t, "without", resp.Topics[1].ErrorCode, kerr.TopicAuthorizationFailed)
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: theirs.ID}}
	code(t, "without, by id", roundTrip(t, g.addr, req, 6).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, kerr.TopicAuthorizationFailed)
	if !exists(g, "dta-theirs") || exists(g, "dta-mine") {
		t.Error("the wrong topic deleted")
	}
}
