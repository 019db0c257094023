package protocol_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

// The topic settings a topic lists, in order: Kafka 4.4's (LogConfig's
// names, by name), and Confluent Server's schema validation.
var topicConfigNames = []string{"cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
	"compression.zstd.level", "confluent.key.schema.validation", "confluent.key.subject.name.strategy",
	"confluent.value.schema.validation", "confluent.value.subject.name.strategy", "delete.retention.ms", "errors.deadletterqueue.group.enable", "file.delete.delay.ms",
	"flush.messages", "flush.ms", "follower.replication.throttled.replicas", "iceberg.invalid.record.action", "iceberg.mode", "iceberg.partition.spec", "iceberg.target.lag.ms", "index.interval.bytes",
	"leader.replication.throttled.replicas", "local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms",
	"max.decompressed.message.bytes", "max.message.bytes", "message.timestamp.after.max.ms",
	"message.timestamp.before.max.ms", "message.timestamp.type", "min.cleanable.dirty.ratio", "min.compaction.lag.ms",
	"min.insync.replicas", "preallocate", "remote.copy.lag.bytes", "remote.copy.lag.ms", "remote.log.copy.disable",
	"remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes", "retention.ms", "segment.bytes",
	"segment.index.bytes", "segment.jitter.ms", "segment.ms", "unclean.leader.election.enable"}

func describeConfigs(synonyms, docs bool, resources ...kmsg.DescribeConfigsRequestResource) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation, req.Resources = synonyms, docs, resources
	return req
}

func configResource(typ kmsg.ConfigResourceType, name string, names ...string) kmsg.DescribeConfigsRequestResource {
	return kmsg.DescribeConfigsRequestResource{ResourceType: typ, ResourceName: name, ConfigNames: names}
}

func configsOf(r kmsg.DescribeConfigsResponseResource) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range r.Configs {
		out[c.Name] = c
	}
	return out
}

// DescribeConfigs v1-4 of a topic: every setting in order, set ones as
// DYNAMIC_TOPIC_CONFIG, the others at their defaults (DEFAULT_CONFIG);
// synonyms when asked for; type and documentation (v3+) when
// asked for; only the names asked for when some are (all for an empty
// list).
func TestDescribeConfigsTopic(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrDescribeConfigsRequest(), 1, 4)
	g.topic(t, "dc", 1, map[string]string{"retention.ms": "3600000", "max.message.bytes": "2048"})
	for v := int16(1); v <= 4; v++ {
		resp := roundTrip(t, g.addr, describeConfigs(true, true, configResource(kmsg.ConfigResourceTypeTopic, "dc")), v).(*kmsg.DescribeConfigsResponse)
		if len(resp.Resources) != 1 || resp.Resources[0].ResourceName != "dc" || resp.Resources[0].ResourceType != kmsg.ConfigResourceTypeTopic {
			t.Fatalf("v%d: %+v", v, resp.Resources)
		}
		r := resp.Resources[0]
		code(t, "dc", r.ErrorCode, nil)
		var names []string
		for _, c := range r.Configs {
			names = append(names, c.Name)
		}
		if !slices.Equal(names, topicConfigNames) {
			t.Errorf("v%d: configs %v", v, names)
		}
		cs := configsOf(r)
		ret, def := cs["retention.ms"], cs["cleanup.policy"]
		if ret.Value == nil || *ret.Value != "3600000" || ret.Source != kmsg.ConfigSourceDynamicTopicConfig || ret.ReadOnly {
			t.Errorf("v%d: retention.ms %+v", v, ret)
		}
		if def.Value == nil || *def.Value != "delete" || def.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("v%d: cleanup.policy %+v", v, def)
		}
		if len(ret.ConfigSynonyms) != 1 || ret.ConfigSynonyms[0].Name != "retention.ms" || ret.ConfigSynonyms[0].Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("v%d: synonyms %+v", v, ret.ConfigSynonyms)
		}
		if v >= 3 && (ret.ConfigType != kmsg.ConfigTypeLong || ret.Documentation == nil || *ret.Documentation == "" || def.ConfigType != kmsg.ConfigTypeList) {
			t.Errorf("v%d: type %v, documentation %v", v, ret.ConfigType, ret.Documentation)
		}
	}
	resp := roundTrip(t, g.addr, describeConfigs(false, false, configResource(kmsg.ConfigResourceTypeTopic, "dc", "max.message.bytes", "segment.ms", "no.such")), 4).(*kmsg.DescribeConfigsResponse)
	cs := resp.Resources[0].Configs
	if len(cs) != 2 || cs[0].Name != "max.message.bytes" || *cs[0].Value != "2048" || cs[1].Name != "segment.ms" || len(cs[0].ConfigSynonyms) != 0 || cs[0].Documentation != nil {
		t.Errorf("named configs: %+v", cs)
	}
	// An empty list of names, not null, asks for every one, as Kafka
	// takes it.
	empty := configResource(kmsg.ConfigResourceTypeTopic, "dc")
	empty.ConfigNames = []string{}
	resp = roundTrip(t, g.addr, describeConfigs(false, false, empty), 4).(*kmsg.DescribeConfigsResponse)
	if n := len(resp.Resources[0].Configs); n != len(topicConfigNames) {
		t.Errorf("an empty list of names: %d configs", n)
	}
}

// The broker resource (this gateway, by node id 0) lists its read-only
// settings as STATIC_BROKER_CONFIG, and "" (the cluster-wide dynamic
// defaults) none while none is set; another node id is
// INVALID_REQUEST, an unknown topic UNKNOWN_TOPIC_OR_PARTITION, a bad
// topic name INVALID_TOPIC_EXCEPTION, another resource type
// INVALID_REQUEST; each resource its own answer, in request order.
func TestDescribeConfigsBrokerAndErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	resp := roundTrip(t, g.addr, describeConfigs(false, false,
		configResource(kmsg.ConfigResourceTypeBroker, "0"),
		configResource(kmsg.ConfigResourceTypeBroker, ""),
		configResource(kmsg.ConfigResourceTypeBroker, "7"),
		configResource(kmsg.ConfigResourceTypeTopic, "dc-none"),
		configResource(kmsg.ConfigResourceTypeTopic, "bad/name"),
		configResource(kmsg.ConfigResourceTypeBrokerLogger, "0"),
	), 4).(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != 6 {
		t.Fatalf("%d resources answered", len(resp.Resources))
	}
	if r := resp.Resources[1]; r.ErrorCode != 0 || len(r.Configs) != 0 {
		t.Errorf("the cluster-wide defaults, none set: %s %d configs", errName(r.ErrorCode), len(r.Configs))
	}
	for _, r := range resp.Resources[:1] {
		cs := configsOf(r)
		if r.ErrorCode != 0 || *cs["broker.id"].Value != "0" || *cs["num.partitions"].Value != "3" || *cs["auto.create.topics.enable"].Value != "true" ||
			*cs["default.replication.factor"].Value != "1" || !cs["broker.id"].ReadOnly || cs["broker.id"].Source != kmsg.ConfigSourceStaticBrokerConfig {
			t.Errorf("broker %q: %s %+v", r.ResourceName, errName(r.ErrorCode), cs)
		}
	}
	code(t, "another node", resp.Resources[2].ErrorCode, kerr.InvalidRequest)
	code(t, "an unknown topic", resp.Resources[3].ErrorCode, kerr.UnknownTopicOrPartition)
	code(t, "a bad topic name", resp.Resources[4].ErrorCode, kerr.InvalidTopicException)
	code(t, "a broker logger", resp.Resources[5].ErrorCode, kerr.InvalidRequest)
}

// With an authorizer: DescribeConfigs on the topic (AlterConfigs implies
// it) or TOPIC_AUTHORIZATION_FAILED; on the cluster for the broker, or
// CLUSTER_AUTHORIZATION_FAILED.
func TestDescribeConfigsAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeTopic, "dca-a"),
		binding(anonymous, kmsg.ACLOperationAlterConfigs, kmsg.ACLResourceTypeTopic, "dca-b"),
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "dca-c"),
	}})
	for _, name := range []string{"dca-a", "dca-b", "dca-c"} {
		g.topic(t, name, 1, nil)
	}
	req := describeConfigs(false, false, configResource(kmsg.ConfigResourceTypeTopic, "dca-a"), configResource(kmsg.ConfigResourceTypeTopic, "dca-b"),
		configResource(kmsg.ConfigResourceTypeTopic, "dca-c"), configResource(kmsg.ConfigResourceTypeBroker, "0"))
	resp := roundTrip(t, g.addr, req, 4).(*kmsg.DescribeConfigsResponse)
	code(t, "DescribeConfigs", resp.Resources[0].ErrorCode, nil)
	code(t, "AlterConfigs", resp.Resources[1].ErrorCode, nil)
	code(t, "Describe only", resp.Resources[2].ErrorCode, kerr.TopicAuthorizationFailed)
	code(t, "the broker", resp.Resources[3].ErrorCode, kerr.ClusterAuthorizationFailed)
	if len(resp.Resources[2].Configs) != 0 || len(resp.Resources[3].Configs) != 0 {
		t.Error("configs shown to who may not describe them")
	}
	g.allow(t, binding(anonymous, kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeCluster, acl.ClusterName))
	code(t, "the broker with DescribeConfigs", roundTrip(t, g.addr, describeConfigs(false, false, configResource(kmsg.ConfigResourceTypeBroker, "0")), 4).(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode, nil)
}
