package protocol

// Kafka's internal topics, __consumer_offsets and __transaction_state, as
// clients see them: listed by Metadata and DescribeTopicPartitions with
// IsInternal set, 50 partitions each (Kafka's offsets.topic.num.partitions
// and transaction.state.log.num.partitions), the settings Kafka's
// coordinators give them (DescribeConfigs), and a topic id derived from the
// name, the same on every gateway and after restarts. No SeaweedMQ topic is
// behind them: the gateways keep committed offsets, groups and transactions
// in the filer (packages offset, group, txn), so internalBackend answers for
// them and never passes them on to the backend.
//
// What each operation gets, and where it differs from Kafka:
//   - Produce (and any append): INVALID_TOPIC_EXCEPTION, as Kafka answers a
//     client other than its own admin client; here no client may append.
//   - Fetch, ListOffsets, OffsetForLeaderEpoch: an empty partition, log start
//     and high watermark 0, so a consumer of __consumer_offsets waits for
//     records that never come rather than erring (Kafka serves its log).
//   - CreateTopics: TOPIC_ALREADY_EXISTS, as Kafka, whose coordinators create
//     them on first use (here they always exist).
//   - DeleteTopics: TOPIC_DELETION_DISABLED (INVALID_REQUEST before v3, as
//     Kafka answers when deletion is off). Kafka deletes them for an
//     authorized client and recreates them empty, losing every committed
//     offset; here the offsets are not in them to lose.
//   - DeleteRecords: INVALID_TOPIC_EXCEPTION, as Kafka.
//   - AlterConfigs, IncrementalAlterConfigs: INVALID_REQUEST, their settings
//     are fixed (Kafka lets them change).
//   - AddPartitionsToTxn: TOPIC_AUTHORIZATION_FAILED, as Kafka answers a
//     client (only brokers add offsets partitions to a transaction).
//   - CreatePartitions: INVALID_PARTITIONS, as for every topic here.

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// The internal topics' names, as Kafka spells them.
const (
	consumerOffsetsTopic  = "__consumer_offsets"
	transactionStateTopic = "__transaction_state"
)

// internalPartitions is Kafka's default partition count of both internal
// topics (offsets.topic.num.partitions, transaction.state.log.num.partitions).
const internalPartitions = 50

// internalTopicInfos are the internal topics with the settings Kafka's group
// and transaction coordinators create them with (segments of 100 MiB).
var internalTopicInfos = []storage.TopicInfo{
	{Name: consumerOffsetsTopic, ID: internalTopicID(consumerOffsetsTopic), Partitions: internalPartitions,
		Configs: map[string]string{"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}},
	{Name: transactionStateTopic, ID: internalTopicID(transactionStateTopic), Partitions: internalPartitions,
		Configs: map[string]string{"cleanup.policy": "compact", "compression.type": "uncompressed", "segment.bytes": "104857600",
			"unclean.leader.election.enable": "false"}},
}

// internalTopicID derives an internal topic's id from its name alone, so
// that every gateway gives the same one, always.
func internalTopicID(name string) [16]byte {
	sum := sha256.Sum256([]byte("kafka-gateway internal topic/" + name))
	var id [16]byte
	copy(id[:], sum[:16])
	id[6] = id[6]&0x0f | 0x80 // UUID version 8 (name-based, custom hash)
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return id
}

// internalTopic reports whether name is one of Kafka's internal topics.
func internalTopic(name string) bool {
	return name == consumerOffsetsTopic || name == transactionStateTopic
}

// internalTopicInfo returns the internal topic named name, with a copy of
// its settings that the caller may change.
func internalTopicInfo(name string) (storage.TopicInfo, bool) {
	for _, t := range internalTopicInfos {
		if t.Name == name {
			t.Configs = maps.Clone(t.Configs)
			return t, true
		}
	}
	return storage.TopicInfo{}, false
}

// internalPartition checks a partition of an internal topic.
func internalPartition(partition int32) error {
	if partition < 0 || partition >= internalPartitions {
		return kerr.UnknownTopicOrPartition
	}
	return nil
}

// never is a channel that is never closed: an internal topic's partitions
// never get records.
var never = make(chan struct{})

// internalBackend is the handler's backend with the internal topics added.
type internalBackend struct{ storage.Backend }

func (b internalBackend) ListTopics(ctx context.Context) ([]storage.TopicInfo, error) {
	topics, err := b.Backend.ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]storage.TopicInfo, 0, len(topics)+len(internalTopicInfos))
	for _, t := range topics {
		if !internalTopic(t.Name) { // a SeaweedMQ topic of that name is not Kafka's
			out = append(out, t)
		}
	}
	for _, t := range internalTopicInfos {
		t, _ = internalTopicInfo(t.Name)
		out = append(out, t)
	}
	return out, nil
}

func (b internalBackend) DescribeTopic(ctx context.Context, name string) (storage.TopicInfo, error) {
	if t, ok := internalTopicInfo(name); ok {
		return t, nil
	}
	return b.Backend.DescribeTopic(ctx, name)
}

func (b internalBackend) TopicByID(ctx context.Context, id [16]byte) (storage.TopicInfo, error) {
	for _, t := range internalTopicInfos {
		if t.ID == id {
			t, _ = internalTopicInfo(t.Name)
			return t, nil
		}
	}
	return b.Backend.TopicByID(ctx, id)
}

func (b internalBackend) CreateTopic(ctx context.Context, spec storage.TopicSpec) (storage.TopicInfo, error) {
	if internalTopic(spec.Name) {
		return storage.TopicInfo{}, kerr.TopicAlreadyExists
	}
	return b.Backend.CreateTopic(ctx, spec)
}

func (b internalBackend) DeleteTopic(ctx context.Context, name string) error {
	if internalTopic(name) {
		return internalNotDeleted(name)
	}
	return b.Backend.DeleteTopic(ctx, name)
}

// internalNotDeleted is why an internal topic is not deleted.
func internalNotDeleted(name string) error {
	return fmt.Errorf("%w: internal topic %s is not deleted: the gateways keep groups, offsets and transactions in the filer, not in it",
		kerr.TopicDeletionDisabled, name)
}

func (b internalBackend) AlterTopicConfigs(ctx context.Context, name string, change func(map[string]string) error) error {
	if internalTopic(name) {
		return fmt.Errorf("%w: %s", kerr.InvalidRequest, internalFixed(name))
	}
	return b.Backend.AlterTopicConfigs(ctx, name, change)
}

// internalFixed says why an internal topic's settings do not change.
func internalFixed(name string) string {
	return "the settings of internal topic " + name + " are fixed"
}

func (b internalBackend) DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (int64, error) {
	if internalTopic(topic) {
		return -1, fmt.Errorf("%w: cannot delete records of internal topic %s", kerr.InvalidTopicException, topic)
	}
	return b.Backend.DeleteRecords(ctx, topic, partition, before)
}

func (b internalBackend) PartitionSize(ctx context.Context, topic string, partition int32) (int64, error) {
	if internalTopic(topic) {
		return 0, internalPartition(partition)
	}
	return b.Backend.PartitionSize(ctx, topic, partition)
}

func (b internalBackend) Append(ctx context.Context, topic string, partition int32, records []record.Record, durable bool) *storage.Appended {
	if internalTopic(topic) {
		return storage.FailedAppend(kerr.InvalidTopicException)
	}
	return b.Backend.Append(ctx, topic, partition, records, durable)
}

func (b internalBackend) AppendBatch(ctx context.Context, topic string, partition int32, batch []byte, durable bool) *storage.Appended {
	if internalTopic(topic) {
		return storage.FailedAppend(kerr.InvalidTopicException)
	}
	return b.Backend.AppendBatch(ctx, topic, partition, batch, durable)
}

func (b internalBackend) ReadBatches(ctx context.Context, topic string, partition int32, offset int64, maxBytes int) (storage.ReadResult, error) {
	if internalTopic(topic) {
		return storage.ReadResult{}, internalPartition(partition)
	}
	return b.Backend.ReadBatches(ctx, topic, partition, offset, maxBytes)
}

func (b internalBackend) Read(ctx context.Context, topic string, partition int32, offset int64, maxBytes int) (storage.ReadResult, error) {
	if internalTopic(topic) {
		return storage.ReadResult{}, internalPartition(partition)
	}
	return b.Backend.Read(ctx, topic, partition, offset, maxBytes)
}

func (b internalBackend) Offsets(ctx context.Context, topic string, partition int32) (storage.Offsets, error) {
	if internalTopic(topic) {
		return storage.Offsets{}, internalPartition(partition)
	}
	return b.Backend.Offsets(ctx, topic, partition)
}

func (b internalBackend) OffsetForTime(ctx context.Context, topic string, partition int32, ts int64) (int64, int64, error) {
	if internalTopic(topic) {
		return -1, -1, internalPartition(partition)
	}
	return b.Backend.OffsetForTime(ctx, topic, partition, ts)
}

func (b internalBackend) MaxTimestamp(ctx context.Context, topic string, partition int32) (int64, int64, error) {
	if internalTopic(topic) {
		return -1, -1, internalPartition(partition)
	}
	return b.Backend.MaxTimestamp(ctx, topic, partition)
}

func (b internalBackend) Changed(topic string, partition int32, hw int64) <-chan struct{} {
	if internalTopic(topic) {
		return never
	}
	return b.Backend.Changed(topic, partition, hw)
}

// WriteMarker has nothing to mark in an internal topic: it holds no
// transaction's records (no client appends to it).
func (b internalBackend) WriteMarker(ctx context.Context, topic string, partition int32, m storage.Marker) error {
	if internalTopic(topic) {
		return internalPartition(partition)
	}
	return b.Backend.WriteMarker(ctx, topic, partition, m)
}

func (b internalBackend) Transactions(ctx context.Context, topic string, partition int32, from, to int64) (storage.PartitionTxns, error) {
	if internalTopic(topic) {
		return storage.PartitionTxns{FirstUnstable: -1}, internalPartition(partition)
	}
	return b.Backend.Transactions(ctx, topic, partition, from, to)
}

func (b internalBackend) Producers(ctx context.Context, topic string, partition int32) ([]storage.ProducerInfo, error) {
	if internalTopic(topic) {
		return nil, internalPartition(partition)
	}
	return b.Backend.Producers(ctx, topic, partition)
}
