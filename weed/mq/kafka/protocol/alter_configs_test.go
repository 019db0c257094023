package protocol_test

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func alterConfigs(validateOnly bool, typ kmsg.ConfigResourceType, name string, configs map[string]string) *kmsg.AlterConfigsRequest {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	r := kmsg.AlterConfigsRequestResource{ResourceType: typ, ResourceName: name}
	for k, v := range configs {
		r.Configs = append(r.Configs, kmsg.AlterConfigsRequestResourceConfig{Name: k, Value: kmsg.StringPtr(v)})
	}
	req.Resources = append(req.Resources, r)
	return req
}

// nullAlter is an AlterConfigs of one setting with a null value.
func nullAlter(typ kmsg.ConfigResourceType, name, setting string) *kmsg.AlterConfigsRequest {
	req := alterConfigs(false, typ, name, nil)
	req.Resources[0].Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: setting}}
	return req
}

type configOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

func incrementalAlter(validateOnly bool, typ kmsg.ConfigResourceType, name string, ops ...configOp) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	r := kmsg.IncrementalAlterConfigsRequestResource{ResourceType: typ, ResourceName: name}
	for _, o := range ops {
		r.Configs = append(r.Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: o.name, Op: o.op, Value: o.value})
	}
	req.Resources = append(req.Resources, r)
	return req
}

func (g *testGateway) configs(t *testing.T, topic string) map[string]string {
	t.Helper()
	info, err := g.backend.DescribeTopic(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return info.Configs
}

func alterCode(resp kmsg.Response) (int16, string) {
	var c int16
	var msg *string
	switch r := resp.(type) {
	case *kmsg.AlterConfigsResponse:
		c, msg = r.Resources[0].ErrorCode, r.Resources[0].ErrorMessage
	case *kmsg.IncrementalAlterConfigsResponse:
		c, msg = r.Resources[0].ErrorCode, r.Resources[0].ErrorMessage
	}
	if msg == nil {
		return c, ""
	}
	return c, *msg
}

// AlterConfigs v0-2 replaces all of a topic's settings with those given;
// ValidateOnly checks them and saves nothing. DescribeConfigs and the
// topic's produce limit see the change.
func TestAlterConfigsVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrAlterConfigsRequest(), 0, 2)
	g.topic(t, "ac", 1, map[string]string{"retention.ms": "1000", "segment.ms": "5000"})
	for v := int16(0); v <= 2; v++ {
		want := map[string]string{"max.message.bytes": "3000" + strconv.Itoa(int(v))}
		resp := roundTrip(t, g.addr, alterConfigs(false, kmsg.ConfigResourceTypeTopic, "ac", want), v).(*kmsg.AlterConfigsResponse)
		if len(resp.Resources) != 1 || resp.Resources[0].ResourceName != "ac" || resp.Resources[0].ResourceType != kmsg.ConfigResourceTypeTopic {
			t.Fatalf("v%d: %+v", v, resp.Resources)
		}
		code(t, "AlterConfigs", resp.Resources[0].ErrorCode, nil)
		if got := g.configs(t, "ac"); !maps.Equal(got, want) {
			t.Errorf("v%d: settings %v, want %v (the others removed)", v, got, want)
		}
	}
	c, _ := alterCode(roundTrip(t, g.addr, alterConfigs(true, kmsg.ConfigResourceTypeTopic, "ac", map[string]string{"retention.ms": "5"}), 2))
	if code(t, "validate only", c, nil); g.configs(t, "ac")["retention.ms"] != "" {
		t.Errorf("validate only saved: %v", g.configs(t, "ac"))
	}
	described := roundTrip(t, g.addr, describeConfigs(false, false, configResource(kmsg.ConfigResourceTypeTopic, "ac", "max.message.bytes")), 4).(*kmsg.DescribeConfigsResponse)
	if cs := described.Resources[0].Configs; len(cs) != 1 || *cs[0].Value != "30002" || cs[0].Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("described: %+v", cs)
	}
	// As a client alters them.
	resp, err := kadm.NewClient(client(t, g.addr)).AlterTopicConfigsState(ctxFor(t), []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("7000")}}, "ac")
	if err != nil || resp[0].Err != nil || g.configs(t, "ac")["retention.ms"] != "7000" {
		t.Fatalf("kadm: %+v %v", resp, err)
	}
}

// IncrementalAlterConfigs v0-1: SET a value, DELETE back to the default,
// APPEND to and SUBTRACT from a list (cleanup.policy) without duplicates;
// every operation of a resource or none.
func TestIncrementalAlterConfigsVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrIncrementalAlterConfigsRequest(), 0, 1)
	g.topic(t, "iac", 1, map[string]string{"retention.ms": "1000", "segment.ms": "5000"})
	for v := int16(0); v <= 1; v++ {
		resp := roundTrip(t, g.addr, incrementalAlter(false, kmsg.ConfigResourceTypeTopic, "iac",
			configOp{"max.message.bytes", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("4096")},
			configOp{"segment.ms", kmsg.IncrementalAlterConfigOpDelete, nil},
			configOp{"cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("delete")},
		), v).(*kmsg.IncrementalAlterConfigsResponse)
		code(t, "IncrementalAlterConfigs", resp.Resources[0].ErrorCode, nil)
		want := map[string]string{"retention.ms": "1000", "max.message.bytes": "4096", "cleanup.policy": "delete"}
		if got := g.configs(t, "iac"); !maps.Equal(got, want) {
			t.Errorf("v%d: %v, want %v", v, got, want)
		}
		// One setting twice in a request is refused whole, as Kafka.
		resp = roundTrip(t, g.addr, incrementalAlter(false, kmsg.ConfigResourceTypeTopic, "iac",
			configOp{"cleanup.policy", kmsg.IncrementalAlterConfigOpSubtract, kmsg.StringPtr("delete")},
			configOp{"cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("compact")},
			configOp{"segment.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("5000")},
		), v).(*kmsg.IncrementalAlterConfigsResponse)
		code(t, "subtract and append", resp.Resources[0].ErrorCode, kerr.InvalidRequest)
		if got := g.configs(t, "iac"); !maps.Equal(got, want) {
			t.Errorf("v%d: a refused request changed the settings to %v", v, got)
		}
		resp = roundTrip(t, g.addr, incrementalAlter(false, kmsg.ConfigResourceTypeTopic, "iac",
			configOp{"cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("delete")},
			configOp{"segment.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("5000")},
		), v).(*kmsg.IncrementalAlterConfigsResponse)
		code(t, "append what is there", resp.Resources[0].ErrorCode, nil)
		if got := g.configs(t, "iac"); got["cleanup.policy"] != "delete" || got["segment.ms"] != "5000" {
			t.Errorf("v%d: %v", v, got)
		}
	}
	// A topic becomes compacted, then compacted only.
	for _, step := range []struct {
		op   configOp
		want string
	}{
		{configOp{"cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("compact")}, "delete,compact"},
		{configOp{"cleanup.policy", kmsg.IncrementalAlterConfigOpSubtract, kmsg.StringPtr("delete")}, "compact"},
	} {
		resp := roundTrip(t, g.addr, incrementalAlter(false, kmsg.ConfigResourceTypeTopic, "iac", step.op), 1).(*kmsg.IncrementalAlterConfigsResponse)
		code(t, "cleanup.policy "+step.want, resp.Resources[0].ErrorCode, nil)
		if got := g.configs(t, "iac")["cleanup.policy"]; got != step.want {
			t.Errorf("cleanup.policy %q, want %q", got, step.want)
		}
	}
	before := g.configs(t, "iac")
	resp := roundTrip(t, g.addr, incrementalAlter(false, kmsg.ConfigResourceTypeTopic, "iac",
		configOp{"retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("2")},
		configOp{"message.timestamp.type", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("WallClockTime")},
	), 1)
	if c, msg := alterCode(resp); c != kerr.InvalidConfig.Code || !strings.Contains(msg, "message.timestamp.type") {
		t.Errorf("one bad operation: %s %q", errName(c), msg)
	}
	if got := g.configs(t, "iac"); !maps.Equal(got, before) {
		t.Errorf("a refused request changed %v to %v", before, got)
	}
}

// Every setting of Kafka 4.4 is taken, kept and described as set, those
// with no effect here too (flush.ms, once refused, made librdkafka's
// admin checks fail); throttled replica lists take Kafka's forms.
func TestAlterConfigsKafkaSettings(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "aks", 1, nil)
	set := map[string]string{
		"flush.ms": "1000", "flush.messages": "10", "index.interval.bytes": "8192", "segment.index.bytes": "4096",
		"segment.jitter.ms": "5", "preallocate": "true", "unclean.leader.election.enable": "true",
		"follower.replication.throttled.replicas": "0:1,1:2", "leader.replication.throttled.replicas": "*",
		"local.retention.ms": "-2", "local.retention.bytes": "1000", "remote.storage.enable": "false",
		"remote.log.copy.disable": "true", "remote.log.delete.on.disable": "false", "remote.copy.lag.ms": "-1",
		"remote.copy.lag.bytes": "5", "file.delete.delay.ms": "0", "compression.gzip.level": "9",
		"compression.lz4.level": "17", "compression.zstd.level": "-5", "errors.deadletterqueue.group.enable": "true",
		"max.decompressed.message.bytes": "1048576", "message.timestamp.after.max.ms": "60000",
		"message.timestamp.before.max.ms": "86400000",
	}
	var ops []configOp
	for k, v := range set {
		ops = append(ops, configOp{k, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(v)})
	}
	c, msg := alterCode(roundTrip(t, g.addr, incrementalAlter(false, kmsg.ConfigResourceTypeTopic, "aks", ops...), 1))
	code(t, "every Kafka setting "+msg, c, nil)
	if got := g.configs(t, "aks"); !maps.Equal(got, set) {
		t.Errorf("kept %v", got)
	}
	resp := roundTrip(t, g.addr, describeConfigs(false, true, configResource(kmsg.ConfigResourceTypeTopic, "aks")), 4).(*kmsg.DescribeConfigsResponse)
	for name, c := range configsOf(resp.Resources[0]) {
		want, isSet := set[name]
		switch {
		case isSet && (c.Value == nil || *c.Value != want || c.Source != kmsg.ConfigSourceDynamicTopicConfig):
			t.Errorf("%s: %v from %v, want %s set", name, c.Value, c.Source, want)
		case !isSet && c.Source != kmsg.ConfigSourceDefaultConfig:
			t.Errorf("%s: from %v, want its default", name, c.Source)
		case c.Documentation == nil || *c.Documentation == "":
			t.Errorf("%s: no documentation", name)
		}
	}
}

// Errors, with a message: what the gateway cannot honour (log-append
// time), a cleanup policy Kafka does not know, a
// dirty ratio outside 0..1, or a value not of the setting's
// type INVALID_CONFIG, an unknown setting INVALID_CONFIG, APPEND to a
// setting that is not a list INVALID_CONFIG, SET without a value, a
// setting named twice and a null value INVALID_REQUEST, compaction lags
// the wrong way round INVALID_CONFIG; broker settings INVALID_REQUEST; an
// unknown topic UNKNOWN_TOPIC_OR_PARTITION, a bad name
// INVALID_TOPIC_EXCEPTION; nothing saved.
func TestAlterConfigsErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "ace", 1, map[string]string{"retention.ms": "1000"})
	topic := kmsg.ConfigResourceTypeTopic
	for _, tc := range []struct {
		name string
		req  kmsg.Request
		v    int16
		want *kerr.Error
	}{
		{"an unknown cleanup policy", alterConfigs(false, topic, "ace", map[string]string{"cleanup.policy": "compact,shred"}), 2, kerr.InvalidConfig},
		{"a dirty ratio above 1", alterConfigs(false, topic, "ace", map[string]string{"min.cleanable.dirty.ratio": "1.5"}), 2, kerr.InvalidConfig},
		{"an unknown timestamp type", alterConfigs(false, topic, "ace", map[string]string{"message.timestamp.type": "WallClockTime"}), 0, kerr.InvalidConfig},
		{"not a number", alterConfigs(false, topic, "ace", map[string]string{"retention.ms": "soon"}), 2, kerr.InvalidConfig},
		{"flush.messages 0", alterConfigs(false, topic, "ace", map[string]string{"flush.messages": "0"}), 2, kerr.InvalidConfig},
		{"a gzip level of 10", incrementalAlter(false, topic, "ace", configOp{"compression.gzip.level", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("10")}), 1, kerr.InvalidConfig},
		{"a throttled replica list", incrementalAlter(false, topic, "ace", configOp{"leader.replication.throttled.replicas", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("0:x")}), 1, kerr.InvalidConfig},
		{"segments below 1 MiB", incrementalAlter(false, topic, "ace", configOp{"segment.bytes", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("1024")}), 1, kerr.InvalidConfig},
		{"not a boolean", incrementalAlter(false, topic, "ace", configOp{"preallocate", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("maybe")}), 1, kerr.InvalidConfig},
		{"an unknown setting", alterConfigs(false, topic, "ace", map[string]string{"no.such.setting": "1"}), 2, kerr.InvalidConfig},
		{"validate only, invalid", alterConfigs(true, topic, "ace", map[string]string{"cleanup.policy": "none"}), 2, kerr.InvalidConfig},
		{"append to a number", incrementalAlter(false, topic, "ace", configOp{"retention.ms", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("1")}), 1, kerr.InvalidConfig},
		{"append an unknown policy", incrementalAlter(false, topic, "ace", configOp{"cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("archive")}), 1, kerr.InvalidConfig},
		{"set without a value", incrementalAlter(false, topic, "ace", configOp{"retention.ms", kmsg.IncrementalAlterConfigOpSet, nil}), 1, kerr.InvalidRequest},
		{"a setting named twice", incrementalAlter(false, topic, "ace", configOp{"retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("1")},
			configOp{"retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("2")}), 1, kerr.InvalidRequest},
		{"a null value, legacy", nullAlter(topic, "ace", "retention.ms"), 2, kerr.InvalidRequest},
		{"min.compaction.lag.ms above max.compaction.lag.ms", alterConfigs(false, topic, "ace", map[string]string{"min.compaction.lag.ms": "5000", "max.compaction.lag.ms": "1000"}), 2, kerr.InvalidConfig},
		{"an unknown setting, incrementally", incrementalAlter(false, topic, "ace", configOp{"nope", kmsg.IncrementalAlterConfigOpDelete, nil}), 0, kerr.InvalidConfig},
		{"the broker", alterConfigs(false, kmsg.ConfigResourceTypeBroker, "0", map[string]string{"num.partitions": "9"}), 2, kerr.InvalidRequest},
		{"the broker, incrementally", incrementalAlter(false, kmsg.ConfigResourceTypeBroker, "0", configOp{"num.partitions", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("9")}), 1, kerr.InvalidRequest},
		{"an unknown topic", alterConfigs(false, topic, "ace-none", map[string]string{"retention.ms": "1"}), 2, kerr.UnknownTopicOrPartition},
		{"a bad topic name", incrementalAlter(false, topic, "bad/name", configOp{"retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("1")}), 1, kerr.InvalidTopicException},
	} {
		c, msg := alterCode(roundTrip(t, g.addr, tc.req, tc.v))
		code(t, tc.name, c, tc.want)
		if tc.want != kerr.UnknownTopicOrPartition && msg == "" {
			t.Errorf("%s: no message", tc.name)
		}
	}
	if got := g.configs(t, "ace"); !maps.Equal(got, map[string]string{"retention.ms": "1000"}) {
		t.Errorf("refused changes saved: %v", got)
	}
}

// With an authorizer: AlterConfigs on the topic (TOPIC_AUTHORIZATION_FAILED)
// or, for the broker, on the cluster (CLUSTER_AUTHORIZATION_FAILED).
func TestAlterConfigsAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationAlterConfigs, kmsg.ACLResourceTypeTopic, "aca"),
		binding(anonymous, kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeTopic, "aca-read"),
	}})
	g.topic(t, "aca", 1, nil)
	g.topic(t, "aca-read", 1, nil)
	set := map[string]string{"retention.ms": "1"}
	c, _ := alterCode(roundTrip(t, g.addr, alterConfigs(false, kmsg.ConfigResourceTypeTopic, "aca", set), 2))
	code(t, "with AlterConfigs", c, nil)
	c, _ = alterCode(roundTrip(t, g.addr, alterConfigs(false, kmsg.ConfigResourceTypeTopic, "aca-read", set), 2))
	code(t, "with DescribeConfigs only", c, kerr.TopicAuthorizationFailed)
	c, _ = alterCode(roundTrip(t, g.addr, incrementalAlter(false, kmsg.ConfigResourceTypeTopic, "aca-read", configOp{"retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("1")}), 1))
	code(t, "incrementally, with DescribeConfigs only", c, kerr.TopicAuthorizationFailed)
	c, _ = alterCode(roundTrip(t, g.addr, alterConfigs(false, kmsg.ConfigResourceTypeBroker, "0", map[string]string{"num.partitions": "9"}), 2))
	code(t, "the broker", c, kerr.ClusterAuthorizationFailed)
	if len(g.configs(t, "aca-read")) != 0 {
		t.Error("a refused change saved")
	}
}

// What MirrorMaker 2 sends of a Kafka 4.4 topic is taken: at creation the
// settings set on Kafka (a size limit, no cleanup policy, tiered
// storage), then, every sync, an IncrementalAlterConfigs that sets those
// and deletes every other setting Kafka describes but those MirrorMaker
// leaves out. DescribeConfigs then lists them as set, and says in the
// documentation what tiered storage does here.
func TestAlterConfigsAsMirrorMaker(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	set := map[string]string{"retention.bytes": "1073741824", "cleanup.policy": "", "remote.storage.enable": "true",
		"local.retention.ms": "3600000", "max.message.bytes": "2097152", "retention.ms": "1209600000"}
	resp := roundTrip(t, g.addr, createTopics(false, createTopic("mm2", 3, 1, set)), 7).(*kmsg.CreateTopicsResponse)
	code(t, "create as MirrorMaker does", resp.Topics[0].ErrorCode, nil)
	if got := g.configs(t, "mm2"); !maps.Equal(got, set) {
		t.Errorf("created with %v, want %v", got, set)
	}

	excluded := map[string]bool{"follower.replication.throttled.replicas": true, "leader.replication.throttled.replicas": true,
		"message.timestamp.type": true, "unclean.leader.election.enable": true, "min.insync.replicas": true}
	set["retention.bytes"] = "536870912"
	var ops []configOp
	for _, name := range topicConfigNames {
		switch v, ok := set[name]; {
		case ok:
			ops = append(ops, configOp{name, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(v)})
		case !excluded[name] && !strings.HasPrefix(name, "confluent.") && !strings.HasPrefix(name, "iceberg."):
			ops = append(ops, configOp{name, kmsg.IncrementalAlterConfigOpDelete, nil})
		}
	}
	c, msg := alterCode(roundTrip(t, g.addr, incrementalAlter(false, kmsg.ConfigResourceTypeTopic, "mm2", ops...), 1))
	code(t, "MirrorMaker's sync "+msg, c, nil)
	if got := g.configs(t, "mm2"); !maps.Equal(got, set) {
		t.Errorf("synced to %v, want %v", got, set)
	}

	described := roundTrip(t, g.addr, describeConfigs(false, true, configResource(kmsg.ConfigResourceTypeTopic, "mm2")), 4).(*kmsg.DescribeConfigsResponse)
	configs := configsOf(described.Resources[0])
	for name, v := range set {
		if c := configs[name]; c.Value == nil || *c.Value != v || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("%s: %v (%v), want %q set", name, c.Value, c.Source, v)
		}
	}
	if doc := configs["remote.storage.enable"].Documentation; doc == nil || !strings.Contains(*doc, "no effect") {
		t.Errorf("remote.storage.enable's documentation: %v", doc)
	}
}
