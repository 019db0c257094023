package protocol_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// synonymsOf lists a described config's synonyms as source:value.
func synonymsOf(c kmsg.DescribeConfigsResponseResourceConfig) []string {
	var out []string
	for _, s := range c.ConfigSynonyms {
		v := "null"
		if s.Value != nil {
			v = *s.Value
		}
		out = append(out, s.Source.String()+":"+s.Name+"="+v)
	}
	return out
}

// Dynamic broker configs, as librdkafka's 0081 and kafka-configs.sh
// --entity-type brokers set them: this gateway's own (its node id) and
// the cluster-wide defaults (""), set, appended to, subtracted from and
// deleted; DescribeConfigs shows each with its source and synonyms; what
// Kafka refuses is refused with its code and message.
func TestDynamicBrokerConfigs(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	broker := kmsg.ConfigResourceTypeBroker
	set := func(name, v string) configOp {
		return configOp{name, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(v)}
	}
	c, msg := alterCode(roundTrip(t, g.addr, incrementalAlter(false, broker, "0", set("background.threads", "9"),
		configOp{"log.cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("compact")},
		set("sasl.kerberos.min.time.before.relogin", "58000")), 1))
	code(t, "SET and APPEND on the broker: "+msg, c, nil)
	describe := func(name string, configs ...string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
		t.Helper()
		resp := roundTrip(t, g.addr, describeConfigs(true, false, configResource(broker, name, configs...)), 4).(*kmsg.DescribeConfigsResponse)
		if e := resp.Resources[0].ErrorCode; e != 0 {
			t.Fatalf("describe broker %q: %s", name, errName(e))
		}
		return configsOf(resp.Resources[0])
	}
	cs := describe("0", "background.threads", "log.cleanup.policy", "num.io.threads", "broker.id")
	bt := cs["background.threads"]
	if *bt.Value != "9" || bt.Source != kmsg.ConfigSourceDynamicBrokerConfig || bt.ReadOnly ||
		!slices.Equal(synonymsOf(bt), []string{"DYNAMIC_BROKER_CONFIG:background.threads=9", "DEFAULT_CONFIG:background.threads=10"}) {
		t.Errorf("background.threads: %v %v %v", *bt.Value, bt.Source, synonymsOf(bt))
	}
	if v := cs["log.cleanup.policy"].Value; v == nil || *v != "delete,compact" {
		t.Errorf("log.cleanup.policy after APPEND compact: %v", v)
	}
	if io := cs["num.io.threads"]; io.Source != kmsg.ConfigSourceDefaultConfig || *io.Value != "8" {
		t.Errorf("num.io.threads: %v %v", io.Source, io.Value)
	}
	if !cs["broker.id"].ReadOnly {
		t.Error("broker.id is not read-only")
	}
	c, msg = alterCode(roundTrip(t, g.addr, incrementalAlter(false, broker, "0", configOp{"background.threads", kmsg.IncrementalAlterConfigOpDelete, nil},
		configOp{"log.cleanup.policy", kmsg.IncrementalAlterConfigOpSubtract, kmsg.StringPtr("compact")},
		configOp{"never.set", kmsg.IncrementalAlterConfigOpDelete, nil}), 1))
	code(t, "DELETE and SUBTRACT: "+msg, c, nil)
	cs = describe("0", "background.threads", "log.cleanup.policy")
	if bt := cs["background.threads"]; bt.Source != kmsg.ConfigSourceDefaultConfig || *bt.Value != "10" {
		t.Errorf("background.threads deleted: %v %v", bt.Source, *bt.Value)
	}
	if v := cs["log.cleanup.policy"]; *v.Value != "delete" || v.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("log.cleanup.policy after SUBTRACT: %v %v", *v.Value, v.Source)
	}

	for _, tc := range []struct {
		name string
		req  kmsg.Request
		v    int16
		want *kerr.Error
		msg  string
	}{
		{"a static config", alterConfigs(false, broker, "0", map[string]string{"broker.id": "3"}), 2, kerr.InvalidRequest,
			"Cannot update these configs dynamically: Set(broker.id)"},
		{"a per-broker config cluster-wide", incrementalAlter(false, broker, "", set("sasl.kerberos.min.time.before.relogin", "1")), 1, kerr.InvalidRequest,
			"Cannot update these configs at default cluster level, broker id must be specified: Set(sasl.kerberos.min.time.before.relogin)"},
		{"a wrong type", incrementalAlter(false, broker, "0", set("background.threads", "abc")), 1, kerr.InvalidRequest,
			"Invalid value abc for configuration background.threads: Not a number of type INT"},
		{"APPEND to a number", incrementalAlter(false, broker, "0", configOp{"background.threads", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("1")}), 1, kerr.InvalidConfig,
			"Config value append is not allowed for config key: background.threads"},
		{"APPEND to an unknown config", incrementalAlter(false, broker, "0", configOp{"no.such", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("1")}), 1, kerr.UnknownServerError, ""},
		{"another broker", incrementalAlter(false, broker, "7", set("background.threads", "9")), 1, kerr.InvalidRequest,
			"Unexpected broker id, expected 0, but received 7"},
	} {
		c, msg := alterCode(roundTrip(t, g.addr, tc.req, tc.v))
		code(t, tc.name, c, tc.want)
		if msg != tc.msg {
			t.Errorf("%s: message %q, want %q", tc.name, msg, tc.msg)
		}
	}

	// The cluster-wide default of a topic config: topics that set none
	// inherit it (DescribeConfigs says from where), one that sets it
	// keeps its own.
	g.topic(t, "dbc-inherits", 1, nil)
	g.topic(t, "dbc-own", 1, map[string]string{"segment.bytes": "1048576"})
	c, msg = alterCode(roundTrip(t, g.addr, alterConfigs(false, broker, "", map[string]string{"log.segment.bytes": "2097152", "log.cleanup.policy": "compact"}), 2))
	code(t, "cluster-wide defaults: "+msg, c, nil)
	if cs := describe(""); len(cs) != 2 || cs["log.segment.bytes"].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || *cs["log.segment.bytes"].Value != "2097152" {
		t.Errorf("the cluster-wide defaults: %+v", cs)
	}
	resp := roundTrip(t, g.addr, describeConfigs(true, false, configResource(kmsg.ConfigResourceTypeTopic, "dbc-inherits", "segment.bytes", "cleanup.policy"),
		configResource(kmsg.ConfigResourceTypeTopic, "dbc-own", "segment.bytes")), 4).(*kmsg.DescribeConfigsResponse)
	inh, own := configsOf(resp.Resources[0]), configsOf(resp.Resources[1])
	if sb := inh["segment.bytes"]; *sb.Value != "2097152" || sb.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig ||
		!slices.Equal(synonymsOf(sb), []string{"DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=2097152"}) {
		t.Errorf("inherited segment.bytes: %v %v %v", *sb.Value, sb.Source, synonymsOf(sb))
	}
	if sb := own["segment.bytes"]; *sb.Value != "1048576" || sb.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("the topic's own segment.bytes: %v %v", *sb.Value, sb.Source)
	}
	// This gateway's own config over the cluster-wide one.
	c, _ = alterCode(roundTrip(t, g.addr, incrementalAlter(false, broker, "0", set("log.segment.bytes", "3145728"),
		configOp{"log.cleanup.policy", kmsg.IncrementalAlterConfigOpDelete, nil}), 1))
	code(t, "the broker's own log.segment.bytes", c, nil)
	resp = roundTrip(t, g.addr, describeConfigs(false, false, configResource(kmsg.ConfigResourceTypeTopic, "dbc-inherits", "segment.bytes")), 4).(*kmsg.DescribeConfigsResponse)
	if sb := configsOf(resp.Resources[0])["segment.bytes"]; *sb.Value != "3145728" || sb.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("segment.bytes from the broker's own config: %v %v", *sb.Value, sb.Source)
	}
	// What the topic inherits is what the backend's topic has in force
	// (the produce path, the cleaner and the segments' rolling read it
	// there): the cluster-wide log.cleanup.policy=compact makes it a
	// compacted topic, now that the broker's own policy is gone.
	if got := g.configs(t, "dbc-inherits")["cleanup.policy"]; got != "compact" {
		t.Errorf("the backend's topic has cleanup.policy %q", got)
	}
	var rb record.Builder
	rb.Reset(0)
	rb.Add(&record.Record{Value: []byte("keyless"), Timestamp: 1})
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "dbc-inherits"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = rb.AppendTo(nil)
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	presp := roundTrip(t, g.addr, produce, 9).(*kmsg.ProduceResponse)
	code(t, "a keyless record to a topic compacted by the cluster's default", presp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidRecord)
	// Altering the topic keeps its own settings only: the inherited ones
	// are not written into it.
	c, _ = alterCode(roundTrip(t, g.addr, incrementalAlter(false, kmsg.ConfigResourceTypeTopic, "dbc-inherits", set("retention.ms", "60000")), 1))
	code(t, "a topic change", c, nil)
	info, err := g.backend.DescribeTopic(t.Context(), "dbc-inherits")
	if err != nil {
		t.Fatal(err)
	}
	if own := info.Own(); len(own) != 1 || own["retention.ms"] != "60000" {
		t.Errorf("the topic's own settings after a change: %v", own)
	}
}
