package protocol

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/iceberg"
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

// topicConfigs are the topic settings of Kafka 4.4 (LogConfig's names),
// in the order DescribeConfigs lists them: by name, as Kafka does. Each is
// accepted, stored and described; the doc says what it does here, and
// which have no effect on SeaweedFS storage. Retention is by size only
// (retention.bytes, applied by the partitions' leaders): off unless set.
var topicConfigs = []topicConfig{
	{name: "cleanup.policy", def: "delete", typ: kmsg.ConfigTypeList,
		doc:   "delete (the oldest segments go by retention.bytes), compact (the log cleaner keeps the newest record of each key), both, or none (an empty list: every record is kept).",
		check: policies},
	{name: "compression.gzip.level", def: "-1", typ: kmsg.ConfigTypeInt,
		doc: noEffect + "batches the gateway compresses (fetches of records stored one by one) use each codec's default level.", check: gzipLevel},
	{name: "compression.lz4.level", def: "9", typ: kmsg.ConfigTypeInt,
		doc: noEffect + "batches the gateway compresses use each codec's default level.", check: intBetween(1, 17)},
	{name: "compression.type", def: "producer", typ: kmsg.ConfigTypeString,
		doc:   "The codec fetches of records not produced through the partition's leader are compressed with; producer: the codec last produced with.",
		check: oneOf("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")},
	{name: "compression.zstd.level", def: "3", typ: kmsg.ConfigTypeInt,
		doc: noEffect + "batches the gateway compresses use each codec's default level.", check: intBetween(-131072, 22)},
	{name: "confluent.key.schema.validation", def: "false", typ: kmsg.ConfigTypeBoolean,
		doc: "Whether each record's key must carry a schema id (magic byte 0, then 4 bytes) registered in the schema registry under the subject of confluent.key.subject.name.strategy (INVALID_RECORD otherwise).", check: boolean},
	{name: "confluent.key.subject.name.strategy", def: TopicNameStrategy, typ: kmsg.ConfigTypeString,
		doc: "The subject a key's schema id is checked under: TopicNameStrategy (<topic>-key), RecordNameStrategy (the schema's record name) or TopicRecordNameStrategy (<topic>-<record name>).", check: subjectStrategy},
	{name: "confluent.value.schema.validation", def: "false", typ: kmsg.ConfigTypeBoolean,
		doc: "Whether each record's value must carry a schema id (magic byte 0, then 4 bytes) registered in the schema registry under the subject of confluent.value.subject.name.strategy (INVALID_RECORD otherwise); null values pass.", check: boolean},
	{name: "confluent.value.subject.name.strategy", def: TopicNameStrategy, typ: kmsg.ConfigTypeString,
		doc: "The subject a value's schema id is checked under: TopicNameStrategy (<topic>-value), RecordNameStrategy or TopicRecordNameStrategy.", check: subjectStrategy},
	{name: "delete.retention.ms", def: "86400000", typ: kmsg.ConfigTypeLong,
		doc: "How long a compacted topic keeps tombstones (null values) once they are in a closed segment.", check: intAtLeast(0)},
	{name: "errors.deadletterqueue.group.enable", def: "false", typ: kmsg.ConfigTypeBoolean,
		doc: noEffect + "share groups have no dead-letter queue here.", check: boolean},
	{name: "file.delete.delay.ms", def: "60000", typ: kmsg.ConfigTypeLong,
		doc: noEffect + "SeaweedFS removes a deleted segment's file at once.", check: intAtLeast(0)},
	{name: "flush.messages", def: "9223372036854775807", typ: kmsg.ConfigTypeLong,
		doc: noEffect + "an acknowledged batch is in the write-ahead log on the volume servers already.", check: intAtLeast(1)},
	{name: "flush.ms", def: "9223372036854775807", typ: kmsg.ConfigTypeLong,
		doc: noEffect + "an acknowledged batch is in the write-ahead log on the volume servers already.", check: intAtLeast(0)},
	{name: "follower.replication.throttled.replicas", def: "", typ: kmsg.ConfigTypeList,
		doc: noEffect + "replication is SeaweedFS's.", check: throttledReplicas},
	{name: iceberg.ConfigInvalidAction, def: iceberg.ActionDLQ, typ: kmsg.ConfigTypeString,
		doc: "What becomes of a record value_schema_id_prefix cannot make a row of (no schema id, an unknown one, a schema whose types are no columns or do not fit the table's): dlq_table (the table kafka.<topic>_dlq, with the reason) or drop.", check: iceberg.CheckInvalidAction},
	{name: iceberg.ConfigMode, def: iceberg.ModeDisabled, typ: kmsg.ConfigTypeString,
		doc: "Whether the topic is kept as the Iceberg table kafka.<topic> too: disabled; key_value (each record's partition, offset, timestamp, key, value and headers); value_schema_id_prefix (the value decoded by the Avro schema its Confluent prefix names, its fields as columns, the record's metadata in the struct kafka); value_schema_latest (plain Avro values decoded by the latest schema of <topic>-value).", check: iceberg.CheckMode},
	{name: iceberg.ConfigPartitionSpec, def: iceberg.DefaultPartitionSpec, typ: kmsg.ConfigTypeString,
		doc: "How the topic's Iceberg table is partitioned, when it is created: a list of columns and transforms of them (identity, hour, day, month, year, bucket(n, col), truncate(n, col)), () for none.", check: iceberg.CheckPartitionSpec},
	{name: iceberg.ConfigTargetLag, def: "60000", typ: kmsg.ConfigTypeLong,
		doc: "The longest a record waits before the partition's leader commits it to the topic's Iceberg table.", check: intAtLeast(1)},
	{name: "index.interval.bytes", def: "4096", typ: kmsg.ConfigTypeInt,
		doc: noEffect + "SeaweedMQ's segments have no offset index.", check: intAtLeast(0)},
	{name: "leader.replication.throttled.replicas", def: "", typ: kmsg.ConfigTypeList,
		doc: noEffect + "replication is SeaweedFS's.", check: throttledReplicas},
	{name: "local.retention.bytes", def: "-2", typ: kmsg.ConfigTypeLong,
		doc: noEffect + "there is no tiered storage.", check: intAtLeast(-2)},
	{name: "local.retention.ms", def: "-2", typ: kmsg.ConfigTypeLong,
		doc: noEffect + "there is no tiered storage.", check: intAtLeast(-2)},
	{name: "max.compaction.lag.ms", def: "9223372036854775807", typ: kmsg.ConfigTypeLong,
		doc: "The longest a record stays in a closed segment not cleaned, whatever the dirty ratio.", check: intAtLeast(1)},
	{name: "max.decompressed.message.bytes", def: "2147483639", typ: kmsg.ConfigTypeInt,
		doc: "The most a produced partition's batches may take decompressed and decoded, records and headers counted as they are held (within the gateway's own bound).", check: intBetween(1, 2147483639)},
	{name: "max.message.bytes", def: strconv.Itoa(DefaultMaxMessageBytes), typ: kmsg.ConfigTypeInt,
		doc: "The largest record batch a producer may send.", check: intAtLeast(0)},
	{name: "message.timestamp.after.max.ms", def: "3600000", typ: kmsg.ConfigTypeLong,
		doc: "How far past the gateway's clock a record's timestamp may be; a batch with a later one is refused (INVALID_TIMESTAMP).", check: intAtLeast(0)},
	{name: "message.timestamp.before.max.ms", def: "9223372036854775807", typ: kmsg.ConfigTypeLong,
		doc: "How far before the gateway's clock a record's timestamp may be; a batch with an earlier one is refused (INVALID_TIMESTAMP).", check: intAtLeast(0)},
	{name: "message.timestamp.type", def: "CreateTime", typ: kmsg.ConfigTypeString,
		doc: "Whose time records carry: CreateTime, the producer's; LogAppendTime, the time the log appended them.", check: oneOf("CreateTime", "LogAppendTime")},
	{name: "min.cleanable.dirty.ratio", def: "0.5", typ: kmsg.ConfigTypeDouble,
		doc: "The share of a compacted partition's closed segments not cleaned yet from which the log cleaner cleans it.", check: ratio},
	{name: "min.compaction.lag.ms", def: "0", typ: kmsg.ConfigTypeLong,
		doc: "The shortest a record stays uncompacted after it was stored.", check: intAtLeast(0)},
	{name: "min.insync.replicas", def: "1", typ: kmsg.ConfigTypeInt,
		doc: "The fewest copies SeaweedFS keeps of what is produced while the cluster cannot place the topic's replication factor (a volume server lost); fewer, and produce waits.", check: intAtLeast(1)},
	{name: "preallocate", def: "false", typ: kmsg.ConfigTypeBoolean,
		doc: noEffect + "SeaweedFS allocates its volumes.", check: boolean},
	{name: "remote.copy.lag.bytes", def: "-1", typ: kmsg.ConfigTypeLong,
		doc: noEffect + "there is no tiered storage.", check: intAtLeast(-1)},
	{name: "remote.copy.lag.ms", def: "0", typ: kmsg.ConfigTypeLong,
		doc: noEffect + "there is no tiered storage.", check: intAtLeast(-1)},
	{name: "remote.log.copy.disable", def: "false", typ: kmsg.ConfigTypeBoolean,
		doc: noEffect + "there is no tiered storage.", check: boolean},
	{name: "remote.log.delete.on.disable", def: "false", typ: kmsg.ConfigTypeBoolean,
		doc: noEffect + "there is no tiered storage.", check: boolean},
	{name: "remote.storage.enable", def: "false", typ: kmsg.ConfigTypeBoolean,
		doc: noEffect + "there is no tiered storage, SeaweedFS holds every record (true is kept, so that a topic mirrored from a cluster with tiered storage keeps its settings).", check: boolean},
	{name: "retention.bytes", def: "-1", typ: kmsg.ConfigTypeLong,
		doc:   "The most bytes a partition keeps, with the delete policy: every log.retention.check.interval.ms its leader removes its oldest log segments, whole, while the others hold at least this many (the newest is always kept), and its log start moves up; negative keeps them all.",
		check: intAtLeast(math.MinInt64)},
	{name: "retention.ms", def: "-1", typ: kmsg.ConfigTypeLong,
		doc: "Kept, and written into SeaweedMQ's configuration of the topic as its retention, but not applied: records are not removed by age (neither the gateway nor SeaweedMQ's brokers remove them).", check: intAtLeast(-1)},
	{name: "segment.bytes", def: "1073741824", typ: kmsg.ConfigTypeInt,
		doc: "A segment holds at most this many bytes: a partition's tail is written as several segments past it (the gateway writes one at most every 5 s or 8 MiB whatever this says).", check: intAtLeast(1 << 20)},
	{name: "segment.index.bytes", def: "10485760", typ: kmsg.ConfigTypeInt,
		doc: noEffect + "SeaweedMQ's segments have no offset index.", check: intAtLeast(4)},
	{name: "segment.jitter.ms", def: "0", typ: kmsg.ConfigTypeLong,
		doc: "A share of segment.ms, drawn per segment, that it rolls earlier by.", check: intAtLeast(0)},
	{name: "segment.ms", def: "604800000", typ: kmsg.ConfigTypeLong,
		doc: "A segment rolls once its first record waited this long (the gateway writes one at most every 5 s whatever this says); the newest segment is never cleaned or removed.", check: intAtLeast(1)},
	{name: "unclean.leader.election.enable", def: "false", typ: kmsg.ConfigTypeBoolean,
		doc: noEffect + "a partition's one leader reads everything acknowledged from SeaweedFS.", check: boolean},
}

// noEffect begins the doc of a setting that is kept but changes nothing.
const noEffect = "Accepted and kept, no effect here: "

func topicConfigNamed(name string) *topicConfig {
	for i := range topicConfigs {
		if topicConfigs[i].name == name {
			return &topicConfigs[i]
		}
	}
	return nil
}

// validateTopicConfigs checks settings given at creation (or alteration):
// each as its own, then those that bound each other, with the defaults of
// those not set.
func validateTopicConfigs(configs map[string]string) error {
	if err := validateEachTopicConfig(configs); err != nil {
		return err
	}
	setting := func(name string) int64 {
		v, ok := configs[name]
		if !ok {
			v = topicConfigNamed(name).def
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	if lo, hi := setting("min.compaction.lag.ms"), setting("max.compaction.lag.ms"); lo > hi {
		return fmt.Errorf("min.compaction.lag.ms %d is above max.compaction.lag.ms %d", lo, hi)
	}
	return nil
}

func validateEachTopicConfig(configs map[string]string) error {
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

// policies checks a cleanup.policy: delete, compact, both, or none (an
// empty list: Kafka 4.4 keeps every record).
func policies(v string) error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	for p := range strings.SplitSeq(v, ",") {
		if p := strings.TrimSpace(p); p != "delete" && p != "compact" {
			return fmt.Errorf("value %q is not a cleanup policy (delete, compact)", p)
		}
	}
	return nil
}

// ratio checks a number from 0 to 1.
func ratio(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 1 {
		return fmt.Errorf("%q is not a number from 0 to 1", v)
	}
	return nil
}

// boolean checks a Kafka boolean (case is ignored, as Kafka's parser does).
func boolean(v string) error {
	if l := strings.ToLower(strings.TrimSpace(v)); l != "true" && l != "false" {
		return fmt.Errorf("%q is not a boolean (true, false)", v)
	}
	return nil
}

// gzipLevel checks compression.gzip.level: -1 (the codec's default) or 1
// to 9.
func gzipLevel(v string) error {
	if v == "-1" {
		return nil
	}
	return intBetween(1, 9)(v)
}

// throttledReplicas checks a throttled replica list: empty, "*", or
// partition:broker pairs.
func throttledReplicas(v string) error {
	if v = strings.TrimSpace(v); v == "" || v == "*" {
		return nil
	}
	for pair := range strings.SplitSeq(v, ",") {
		p, b, ok := strings.Cut(strings.TrimSpace(pair), ":")
		if _, err := strconv.ParseUint(p, 10, 31); !ok || err != nil {
			return fmt.Errorf("%q is not [partitionId]:[brokerId],... or *", v)
		}
		if _, err := strconv.ParseUint(b, 10, 31); err != nil {
			return fmt.Errorf("%q is not [partitionId]:[brokerId],... or *", v)
		}
	}
	return nil
}

func intBetween(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", v)
		}
		if n < lo || n > hi {
			return fmt.Errorf("%d is not from %d to %d", n, lo, hi)
		}
		return nil
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
