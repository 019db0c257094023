package protocol_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
)

func createTopic(name string, partitions int32, rf int16, configs map[string]string) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for k, v := range configs {
		rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: kmsg.StringPtr(v)})
	}
	return rt
}

// createAssigned is a topic with a replica assignment: a list of
// replicas by partition.
func createAssigned(name string, parts int32, rf int16, replicas ...[]int32) kmsg.CreateTopicsRequestTopic {
	tc := createTopic(name, parts, rf, nil)
	for i, r := range replicas {
		tc.ReplicaAssignment = append(tc.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: int32(i), Replicas: r})
	}
	return tc
}

func createTopics(validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis, req.ValidateOnly, req.Topics = 5000, validateOnly, topics
	return req
}

// CreateTopics v2-7: the topic with its partitions (-1: the gateway's
// default, 3) and configs; from v5 the answer has the partition count,
// the replication factor (1 here) and every topic config with its source
// (DYNAMIC_TOPIC_CONFIG for those set), from v7 the topic id. ValidateOnly
// answers the same and creates nothing.
func TestCreateTopicsVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrCreateTopicsRequest(), 2, 7)
	ctx := context.Background()
	for v := int16(2); v <= 7; v++ {
		name := "ct-v" + strconv.Itoa(int(v))
		resp := roundTrip(t, g.addr, createTopics(false, createTopic(name, -1, -1, map[string]string{"retention.ms": "60000"})), v).(*kmsg.CreateTopicsResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].Topic != name {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
		rt := resp.Topics[0]
		code(t, name, rt.ErrorCode, nil)
		info, err := g.backend.DescribeTopic(ctx, name)
		if err != nil || info.Partitions != 3 || info.Configs["retention.ms"] != "60000" {
			t.Fatalf("v%d: created %+v %v", v, info, err)
		}
		if v >= 5 {
			if rt.NumPartitions != 3 || rt.ReplicationFactor != 1 || len(rt.Configs) == 0 {
				t.Errorf("v%d: %d partitions, replication %d, %d configs", v, rt.NumPartitions, rt.ReplicationFactor, len(rt.Configs))
			}
			for _, c := range rt.Configs {
				switch {
				case c.Name == "retention.ms" && (c.Value == nil || *c.Value != "60000" || c.Source != int8(kmsg.ConfigSourceDynamicTopicConfig)):
					t.Errorf("v%d: retention.ms %+v", v, c)
				case c.Name == "cleanup.policy" && (c.Value == nil || *c.Value != "delete" || c.Source != int8(kmsg.ConfigSourceDefaultConfig)):
					t.Errorf("v%d: cleanup.policy %+v", v, c)
				}
			}
		}
		if v >= 7 && rt.TopicID != info.ID {
			t.Errorf("v%d: topic id %x, want %x", v, rt.TopicID, info.ID)
		}
	}
	resp := roundTrip(t, g.addr, createTopics(true, createTopic("ct-validate", 7, 1, nil)), 7).(*kmsg.CreateTopicsResponse)
	if rt := resp.Topics[0]; rt.ErrorCode != 0 || rt.NumPartitions != 7 {
		t.Errorf("validate only: %s %d partitions", errName(rt.ErrorCode), rt.NumPartitions)
	}
	if _, err := g.backend.DescribeTopic(ctx, "ct-validate"); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("validate only created the topic: %v", err)
	}
	// As a client creates topics.
	created, err := kadm.NewClient(client(t, g.addr)).CreateTopic(ctxFor(t), 5, 1, nil, "ct-kadm")
	if err != nil || created.Err != nil || created.NumPartitions != 5 {
		t.Fatalf("kadm: %+v %v", created, err)
	}
}

// Errors per topic, with a message: an existing topic TOPIC_ALREADY_EXISTS,
// a name twice in the request INVALID_REQUEST, a bad name
// INVALID_TOPIC_EXCEPTION, a partition count outside 1-2520
// INVALID_PARTITIONS, a replication factor other than 1 or -1
// INVALID_REPLICATION_FACTOR, a replica assignment naming an unknown
// broker, one twice, partitions other than 0 to n-1 or unequal replica
// counts INVALID_REPLICA_ASSIGNMENT (one with a partition count
// INVALID_REQUEST), a config SeaweedMQ cannot honour (or does not know)
// INVALID_CONFIG; nothing is created for them, the valid topics of the
// same request are (one of a replica assignment naming this gateway with
// as many partitions as the assignment).
func TestCreateTopicsErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "cte-exists", 1, nil)
	md := kmsg.NewPtrMetadataRequest()
	self := roundTrip(t, g.addr, md, 12).(*kmsg.MetadataResponse).Brokers[0].NodeID
	nullConfig := createTopic("cte-null-config", 1, 1, nil)
	nullConfig.Configs = append(nullConfig.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: "retention.ms"})
	misnumbered := createAssigned("cte-assigned-p", -1, -1, []int32{self}, []int32{self})
	misnumbered.ReplicaAssignment[1].Partition = 5
	cases := []struct {
		topic kmsg.CreateTopicsRequestTopic
		want  *kerr.Error
	}{
		{createTopic("cte-ok", 2, 1, nil), nil},
		{createTopic("cte-exists", 1, 1, nil), kerr.TopicAlreadyExists},
		{createTopic("cte-twice", 1, 1, nil), kerr.InvalidRequest},
		{createTopic("cte-twice", 1, 1, nil), kerr.InvalidRequest},
		{createTopic("bad/name", 1, 1, nil), kerr.InvalidTopicException},
		{createTopic(strings.Repeat("n", 250), 1, 1, nil), kerr.InvalidTopicException},
		{createTopic("cte-zero", 0, 1, nil), kerr.InvalidPartitions},
		{createTopic("cte-many", 2521, 1, nil), kerr.InvalidPartitions},
		{createTopic("cte-rf3", 1, 3, nil), kerr.InvalidReplicationFactor},
		{createAssigned("cte-assigned", -1, -1, []int32{self}, []int32{self}, []int32{self}), nil},
		{createAssigned("cte-assigned-unknown", -1, -1, []int32{self}, []int32{self + 99}), kerr.InvalidReplicaAssignment},
		{createAssigned("cte-assigned-twice", -1, -1, []int32{self, self}), kerr.InvalidReplicaAssignment},
		{createAssigned("cte-assigned-none", -1, -1, []int32{}), kerr.InvalidReplicaAssignment},
		{misnumbered, kerr.InvalidReplicaAssignment},
		{createAssigned("cte-assigned-count", 2, -1, []int32{self}), kerr.InvalidRequest},
		{createTopic("cte-compact", 1, 1, map[string]string{"cleanup.policy": "compact", "delete.retention.ms": "1000", "min.compaction.lag.ms": "0", "min.cleanable.dirty.ratio": "0.1"}), nil},
		{createTopic("cte-compact-delete", 1, 1, map[string]string{"cleanup.policy": "compact,delete"}), nil},
		{createTopic("cte-bad-policy", 1, 1, map[string]string{"cleanup.policy": "keep"}), kerr.InvalidConfig},
		{createTopic("cte-unknown-config", 1, 1, map[string]string{"no.such.config": "1"}), kerr.InvalidConfig},
		{createTopic("cte-bad-retention", 1, 1, map[string]string{"retention.ms": "soon"}), kerr.InvalidConfig},
		{nullConfig, kerr.InvalidConfig},
	}
	var topics []kmsg.CreateTopicsRequestTopic
	for _, c := range cases {
		topics = append(topics, c.topic)
	}
	resp := roundTrip(t, g.addr, createTopics(false, topics...), 6).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != len(cases) {
		t.Fatalf("%d answers for %d topics", len(resp.Topics), len(cases))
	}
	for i, c := range cases {
		rt := resp.Topics[i]
		code(t, c.topic.Topic[:min(len(c.topic.Topic), 20)], rt.ErrorCode, c.want)
		if c.want != nil && (rt.ErrorMessage == nil || *rt.ErrorMessage == "" || rt.NumPartitions != -1) {
			t.Errorf("%s: message %v, partitions %d", rt.Topic, rt.ErrorMessage, rt.NumPartitions)
		}
		_, err := g.backend.DescribeTopic(context.Background(), c.topic.Topic)
		if c.want != nil && c.want != kerr.TopicAlreadyExists && err == nil {
			t.Errorf("%s created", c.topic.Topic)
		}
	}
	if info, err := g.backend.DescribeTopic(context.Background(), "cte-ok"); err != nil || info.Partitions != 2 {
		t.Errorf("the valid topic: %+v %v", info, err)
	}
	if info, err := g.backend.DescribeTopic(context.Background(), "cte-assigned"); err != nil || info.Partitions != 3 {
		t.Errorf("the topic of a replica assignment: %+v %v", info, err)
	}
}

// With an authorizer: Create on the cluster or on the topic, else
// TOPIC_AUTHORIZATION_FAILED.
func TestCreateTopicsAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, "cta-mine"),
	}})
	resp := roundTrip(t, g.addr, createTopics(false, createTopic("cta-mine", 1, 1, nil), createTopic("cta-theirs", 1, 1, nil)), 7).(*kmsg.CreateTopicsResponse)
	code(t, "with Create on the topic", resp.Topics[0].ErrorCode, nil)
	code(t, "without", resp.Topics[1].ErrorCode, kerr.TopicAuthorizationFailed)
	g.allow(t, binding(anonymous, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeCluster, acl.ClusterName))
	resp = roundTrip(t, g.addr, createTopics(false, createTopic("cta-theirs", 1, 1, nil)), 7).(*kmsg.CreateTopicsResponse)
	code(t, "with Create on the cluster", resp.Topics[0].ErrorCode, nil)
}

// The replication factor is the copies the storage keeps: CreateTopics
// answers it, a factor the storage cannot keep (here: more than 3 copies)
// or below 1 (but -1) is INVALID_REPLICATION_FACTOR, and a replica
// assignment's lists set it. Metadata and DescribeTopicPartitions list
// the leader and the live gateways after it as its replicas, as many as
// the factor asks or there are, all in sync.
func TestReplicationFactor(t *testing.T) {
	fc := newFakeCluster(0, map[string]fakeOwner{
		membership.PartitionKey("rf-2", 0): {0, 0},
		membership.PartitionKey("rf-3", 0): {1, 0},
		membership.PartitionKey("rf-1", 0): {1, 0},
	})
	g := startGateway(t, gatewayOptions{cluster: fc})
	g.backend.MaxReplicationFactor = 3
	self := fc.Members()[0].NodeID
	resp := roundTrip(t, g.addr, createTopics(false,
		createTopic("rf-2", 1, 2, nil), createTopic("rf-3", 1, 3, nil), createTopic("rf-1", 1, -1, nil),
		createTopic("rf-4", 1, 4, nil), createTopic("rf-0", 1, 0, nil), createTopic("rf-minus-2", 1, -2, nil),
		createAssigned("rf-assigned", -1, -1, []int32{self, 1})), 7).(*kmsg.CreateTopicsResponse)
	want := map[string]struct {
		rf  int16
		err *kerr.Error
	}{"rf-2": {2, nil}, "rf-3": {3, nil}, "rf-1": {1, nil}, "rf-assigned": {2, nil},
		"rf-4": {-1, kerr.InvalidReplicationFactor}, "rf-0": {-1, kerr.InvalidReplicationFactor}, "rf-minus-2": {-1, kerr.InvalidReplicationFactor}}
	for _, st := range resp.Topics {
		w := want[st.Topic]
		if err := kerr.ErrorForCode(st.ErrorCode); !errors.Is(err, w.err) && (err != nil || w.err != nil) || st.ReplicationFactor != w.rf {
			t.Errorf("%s: %v, factor %d; want %v, %d", st.Topic, err, st.ReplicationFactor, w.err, w.rf)
		}
	}

	md := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{"rf-2", "rf-3", "rf-1"} {
		md.Topics = append(md.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(name)})
	}
	mresp := roundTrip(t, g.addr, md, 12).(*kmsg.MetadataResponse)
	wantReplicas := map[string][]int32{"rf-2": {self, 1}, "rf-3": {1, self}, "rf-1": {1}}
	for _, mt := range mresp.Topics {
		p := mt.Partitions[0]
		if w := wantReplicas[*mt.Topic]; !slices.Equal(p.Replicas, w) || !slices.Equal(p.ISR, w) {
			t.Errorf("Metadata %s: replicas %v, isr %v; want %v", *mt.Topic, p.Replicas, p.ISR, w)
		}
	}
	dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dtp.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "rf-2"}}
	dresp := roundTrip(t, g.addr, dtp, 0).(*kmsg.DescribeTopicPartitionsResponse)
	if p := dresp.Topics[0].Partitions[0]; !slices.Equal(p.Replicas, []int32{self, 1}) || !slices.Equal(p.ISR, p.Replicas) {
		t.Errorf("DescribeTopicPartitions rf-2: replicas %v, isr %v", p.Replicas, p.ISR)
	}
}
