package protocol

import (
	"fmt"
	"strconv"
	"strings"

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
		doc:   "delete (retention.ms), compact (the log cleaner keeps the newest record of each key) or both.",
		check: policies},
	{name: "compression.type", def: "producer", typ: kmsg.ConfigTypeString,
		doc:   "The codec fetches of records not produced through the partition's leader are compressed with; producer: the codec last produced with.",
		check: oneOf("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")},
	{name: "delete.retention.ms", def: "86400000", typ: kmsg.ConfigTypeLong,
		doc: "How long a compacted topic keeps tombstones (null values) once they are in a closed segment.", check: intAtLeast(0)},
	{name: "max.compaction.lag.ms", def: "9223372036854775807", typ: kmsg.ConfigTypeLong,
		doc: "The longest a record stays in a closed segment not cleaned, whatever the dirty ratio.", check: intAtLeast(1)},
	{name: "max.message.bytes", def: strconv.Itoa(DefaultMaxMessageBytes), typ: kmsg.ConfigTypeInt,
		doc: "The largest record batch a producer may send.", check: intAtLeast(0)},
	{name: "message.timestamp.type", def: "CreateTime", typ: kmsg.ConfigTypeString,
		doc: "Record timestamps are the producer's.", check: oneOf("CreateTime")},
	{name: "min.cleanable.dirty.ratio", def: "0.5", typ: kmsg.ConfigTypeDouble,
		doc: "The share of a compacted partition's closed segments not cleaned yet from which the log cleaner cleans it.", check: ratio},
	{name: "min.compaction.lag.ms", def: "0", typ: kmsg.ConfigTypeLong,
		doc: "The shortest a record stays uncompacted after it was stored.", check: intAtLeast(0)},
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

// policies checks a cleanup.policy: delete, compact, or both.
func policies(v string) error {
	if v == "" {
		return fmt.Errorf("empty cleanup.policy")
	}
	for p := range strings.SplitSeq(v, ",") {
		if p := strings.TrimSpace(p); p != "delete" && p != "compact" {
			return fmt.Errorf("value %q is not a cleanup policy (delete, compact)", p)
		}
	}
	return nil
}

// Compacted tells whether a topic's settings make it a compacted topic.
func Compacted(configs map[string]string) bool {
	for p := range strings.SplitSeq(configs["cleanup.policy"], ",") {
		if strings.TrimSpace(p) == "compact" {
			return true
		}
	}
	return false
}

// ratio checks a number from 0 to 1.
func ratio(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 1 {
		return fmt.Errorf("%q is not a number from 0 to 1", v)
	}
	return nil
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
