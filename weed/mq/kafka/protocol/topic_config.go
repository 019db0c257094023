package protocol

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicConfig is a topic setting a Kafka client may read or set.
type topicConfig struct {
	name string
	def  string // the value a topic has unless set
	typ  kmsg.ConfigType
	doc  string
	// check validates a value; nil accepts any value of the type.
	check func(string) error
}

// topicConfigs are the topic settings this gateway knows, in the order
// DescribeConfigs lists them. Retention is SeaweedMQ's: off unless set.
var topicConfigs = []topicConfig{
	{name: "cleanup.policy", def: "delete", typ: kmsg.ConfigTypeList,
		doc: "Only delete: SeaweedMQ does not compact partitions.", check: oneOf("delete")},
	{name: "compression.type", def: "producer", typ: kmsg.ConfigTypeString,
		doc:   "Records are stored uncompressed; fetches return them uncompressed.",
		check: oneOf("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")},
	{name: "max.message.bytes", def: strconv.Itoa(DefaultMaxMessageBytes), typ: kmsg.ConfigTypeInt,
		doc: "The largest record batch a producer may send.", check: intAtLeast(0)},
	{name: "message.timestamp.type", def: "CreateTime", typ: kmsg.ConfigTypeString,
		doc: "Record timestamps are the producer's.", check: oneOf("CreateTime")},
	{name: "retention.ms", def: "-1", typ: kmsg.ConfigTypeLong,
		doc: "How long SeaweedMQ keeps records; -1 keeps them.", check: intAtLeast(-1)},
	{name: "retention.bytes", def: "-1", typ: kmsg.ConfigTypeLong,
		doc: "Size-based retention is not applied by SeaweedMQ.", check: oneOf("-1")},
	{name: "segment.bytes", def: "1073741824", typ: kmsg.ConfigTypeInt,
		doc: "Accepted for compatibility; SeaweedMQ sizes its own log segments.", check: intAtLeast(14)},
	{name: "segment.ms", def: "604800000", typ: kmsg.ConfigTypeLong,
		doc: "Accepted for compatibility; SeaweedMQ sizes its own log segments.", check: intAtLeast(1)},
	{name: "min.insync.replicas", def: "1", typ: kmsg.ConfigTypeInt,
		doc: "Accepted for compatibility; replication is SeaweedFS's.", check: intAtLeast(1)},
	{name: "unclean.leader.election.enable", def: "false", typ: kmsg.ConfigTypeBoolean,
		doc: "Accepted for compatibility.", check: oneOf("true", "false")},
}

func topicConfigNamed(name string) *topicConfig {
	for i := range topicConfigs {
		if topicConfigs[i].name == name {
			return &topicConfigs[i]
		}
	}
	return nil
}

// validateTopicConfigs checks settings given at creation (or alteration).
func validateTopicConfigs(configs map[string]string) error {
	for k, v := range configs {
		c := topicConfigNamed(k)
		if c == nil {
			return fmt.Errorf("unknown topic config %q", k)
		}
		if c.check != nil {
			if err := c.check(v); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	}
	return nil
}

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		for _, ok := range values {
			if v == ok {
				return nil
			}
		}
		return fmt.Errorf("value %q is not supported here (supported: %v)", v, values)
	}
}

func intAtLeast(min int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", v)
		}
		if n < min {
			return fmt.Errorf("%d is below the minimum %d", n, min)
		}
		return nil
	}
}
