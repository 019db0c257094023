// Package storage is the contract between the Kafka protocol's handlers
// and where topics and records live: the Backend interface and what it
// takes and gives. SeaweedMQ (package seaweedmq) implements it in the
// gateway; an in-memory fake does in the handlers' unit tests.
package storage

import (
	"context"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// Backend is where topics and records live: SeaweedMQ in the gateway, an
// in-memory fake in the protocol package's unit tests. Errors a Kafka
// client should see are *kerr.Error values (possibly wrapped); anything
// else is an outage of the backend and is reported with a retriable code.
type Backend interface {
	ListTopics(ctx context.Context) ([]TopicInfo, error)
	// DescribeTopic returns kerr.UnknownTopicOrPartition for a missing topic.
	DescribeTopic(ctx context.Context, name string) (TopicInfo, error)
	// TopicByID returns kerr.UnknownTopicID for an unknown id.
	TopicByID(ctx context.Context, id [16]byte) (TopicInfo, error)
	// CreateTopic returns kerr.TopicAlreadyExists for an existing topic.
	CreateTopic(ctx context.Context, spec TopicSpec) (TopicInfo, error)
	DeleteTopic(ctx context.Context, name string) error
	// CreatePartitions grows a topic to count partitions, as Kafka does:
	// the partitions it has keep their records and offsets, the new ones
	// start empty. It returns kerr.InvalidPartitions for a count that
	// does not grow the topic or is more than the backend holds.
	CreatePartitions(ctx context.Context, name string, count int32, validateOnly bool) error
	// AlterTopicConfigs changes the settings made for a topic: change gets
	// the current ones, read afresh while no other gateway changes them,
	// and edits them in place; its error is returned and nothing saved.
	AlterTopicConfigs(ctx context.Context, name string, change func(configs map[string]string) error) error
	// DeleteRecords moves a partition's log start offset up to before (-1:
	// the high watermark) and returns the new log start.
	DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (int64, error)
	// PartitionSize returns the bytes a partition's stored records take.
	PartitionSize(ctx context.Context, topic string, partition int32) (int64, error)

	// Append writes a batch's records to a partition, after the records of
	// every earlier Append to it. If the first record names an idempotent
	// producer's batch (record.ProducerBatch), its sequence numbers are
	// checked as Kafka does: a retry of a batch written is answered with
	// its first write's offset, a gap with OUT_OF_ORDER_SEQUENCE_NUMBER. It returns at once; the result says when
	// the records are stored and at which offset the first one is. Durable
	// records (acks=all) are stored once they would survive a restart of
	// the backend; others once the backend holds them.
	Append(ctx context.Context, topic string, partition int32, records []record.Record, durable bool) *Appended
	// AppendBatch is Append of one produced v2 batch, kept as it is (its
	// bytes as the producer compressed them, CRC kept) so that fetches
	// return it whole. The batch has passed the produce path's checks
	// (record.WalkBatch); what Append takes from a first record's marks
	// its header says (record.Head). batch is not changed (the stored
	// copy gets the base offset).
	AppendBatch(ctx context.Context, topic string, partition int32, batch []byte, durable bool) *Appended
	// Read returns records from offset on, up to about maxBytes (at least
	// one record if any), with the partition's offsets.
	Read(ctx context.Context, topic string, partition int32, offset int64, maxBytes int) (ReadResult, error)
	// ReadBatches is Read, with the batches stored by AppendBatch left
	// whole in ReadResult.Raw instead of decoded into Records.
	ReadBatches(ctx context.Context, topic string, partition int32, offset int64, maxBytes int) (ReadResult, error)
	// Offsets returns the log start offset and the high watermark.
	Offsets(ctx context.Context, topic string, partition int32) (Offsets, error)
	// OffsetForTime returns the first record whose timestamp is at least
	// ts (milliseconds), or offset -1 if there is none.
	OffsetForTime(ctx context.Context, topic string, partition int32, ts int64) (offset, timestamp int64, err error)
	// MaxTimestamp returns the record with the largest timestamp (the
	// first such), or offset -1 for an empty partition.
	MaxTimestamp(ctx context.Context, topic string, partition int32) (offset, timestamp int64, err error)
	// Changed returns a channel closed when the partition's high watermark
	// moves past hw, or that is closed already if it has.
	Changed(topic string, partition int32, hw int64) <-chan struct{}

	// NewProducerID returns a producer id no producer had before, on any
	// gateway of the cluster.
	NewProducerID(ctx context.Context) (int64, error)

	// WriteMarker ends the producer's transaction in the partition with a
	// commit or abort marker; it returns once the marker is durable. A
	// marker whose coordinator epoch is below one the partition took for
	// the producer is refused (TRANSACTION_COORDINATOR_FENCED): it comes
	// from a coordinator that was deposed. One of a producer epoch below
	// the producer's batches in the partition, or not above them when
	// its end raised the epoch (Marker.Bumped), is refused too
	// (INVALID_PRODUCER_EPOCH): it ends a transaction the producer no
	// longer runs.
	WriteMarker(ctx context.Context, topic string, partition int32, m Marker) error
	// Transactions returns the partition's open transactions and, of its
	// aborted ones, those with records between offsets from and to (none
	// when from > to).
	Transactions(ctx context.Context, topic string, partition int32, from, to int64) (PartitionTxns, error)
	// Producers returns the partition's idempotent and transactional
	// producers.
	Producers(ctx context.Context, topic string, partition int32) ([]ProducerInfo, error)
}

// Mirror is what a topic link (package link) writes with, beside Backend:
// another Kafka cluster's batches kept at their own offsets.
type Mirror interface {
	// AppendMirrored stores batches a source cluster's partition served
	// (v2, in offset order, bytes as its log holds them), each at its own
	// base offset; offsets before one that the source had no batch for
	// stay empty, as a compacted log's. A batch that ends at or below the
	// partition's end was stored before and is skipped; one that begins
	// below it is refused. The partition's producers follow the batches:
	// their sequences and epochs, open and aborted transactions. It is
	// done once the batches are durable, Base the first offset stored.
	AppendMirrored(ctx context.Context, topic string, partition int32, batches [][]byte) *Appended
	// MirroredProducers returns the largest producer id a partition's
	// producer state holds, -1 for none.
	MirroredProducers(ctx context.Context, topic string, partition int32) (int64, error)
	// RaiseProducerIDs makes the producer ids handed out from now on, by
	// any gateway once it dropped its own (DropProducerIDs), larger than
	// floor: a mirrored producer's id is never given to another producer.
	RaiseProducerIDs(ctx context.Context, floor int64) error
	// DropProducerIDs forgets this gateway's reserved producer ids if any
	// is at most floor.
	DropProducerIDs(floor int64)
}

// Stored is what any gateway reads of a partition it does not lead (a
// follower's read, KIP-392): the batches its segments hold, never the
// tail its leader keeps in memory.
type Stored interface {
	// ReadStored returns the stored batches from offset on, up to about
	// maxBytes, as ReadBatches does; the result's LogStart and
	// HighWatermark are the segments' first offset and end, not the
	// partition's (its leader knows those).
	ReadStored(ctx context.Context, topic string, partition int32, offset int64, maxBytes int) (ReadResult, error)
}

// Marker is a transaction's end, written to one of its partitions.
type Marker struct {
	ProducerID int64
	// Epoch is the producer epoch the end carries.
	Epoch int16
	// CoordinatorEpoch is the term of the coordinator that ended it.
	CoordinatorEpoch int32
	Commit           bool
	// Bumped says the end raised the producer's epoch to Epoch
	// (transactions v2, KIP-890, and a coordinator's own aborts): the
	// transaction's batches carry an epoch below it, and batches of Epoch
	// are the producer's next transaction. Kafka's WriteTxnMarkers carries
	// it as the transaction version 2 (KIP-1228).
	Bumped bool
}

// PartitionTxns is what read_committed readers of a partition need.
type PartitionTxns struct {
	// FirstUnstable is the first offset of the earliest open transaction,
	// -1 if none: the last stable offset is the high watermark or this.
	FirstUnstable int64
	// Aborted are the aborted transactions asked for, in the order they
	// ended.
	Aborted []AbortedTxn
}

// AbortedTxn is an aborted transaction in a partition: its records are
// between FirstOffset and its abort marker at LastOffset.
type AbortedTxn struct {
	ProducerID  int64 `json:"producerId"`
	FirstOffset int64 `json:"first"`
	LastOffset  int64 `json:"last"`
}

// ProducerInfo is a producer as DescribeProducers shows it.
type ProducerInfo struct {
	ProducerID     int64
	Epoch          int16
	LastSequence   int32
	LastTimestamp  int64
	TxnStartOffset int64 // -1 without an open transaction
}

// TopicInfo describes a topic as Kafka clients see it.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
	// ReplicationFactor is the copies the storage keeps of the topic's
	// records (SeaweedFS's replication of its files).
	ReplicationFactor int16
	// Configs holds the settings in force for this topic that are not
	// the defaults: those made for it, and those it inherits from the
	// dynamic broker configs (package brokerconfig) where it sets none.
	Configs map[string]string
	// Inherited holds those of Configs that the topic inherits (nil:
	// none).
	Inherited map[string]string
}

// Own returns the settings made for the topic itself: Configs without
// the inherited ones (a new map when some are).
func (t TopicInfo) Own() map[string]string {
	if len(t.Inherited) == 0 {
		return t.Configs
	}
	own := make(map[string]string, len(t.Configs))
	for k, v := range t.Configs {
		if _, inherited := t.Inherited[k]; !inherited {
			own[k] = v
		}
	}
	return own
}

// WithDefaults returns t with defaults (topic config names) inherited
// where t's own settings set none.
func (t TopicInfo) WithDefaults(defaults map[string]string) TopicInfo {
	if len(defaults) == 0 {
		return t
	}
	own := t.Own()
	t.Configs = make(map[string]string, len(own)+len(defaults))
	t.Inherited = map[string]string{}
	for k, v := range defaults {
		if _, set := own[k]; !set {
			t.Configs[k], t.Inherited[k] = v, v
		}
	}
	for k, v := range own {
		t.Configs[k] = v
	}
	return t
}

// TopicSpec is a topic to create.
type TopicSpec struct {
	Name       string
	Partitions int32
	// ReplicationFactor is the copies to keep (-1 or 0: the storage's
	// default); one the storage cannot keep is kerr.InvalidReplicationFactor.
	ReplicationFactor int16
	Configs           map[string]string
	ValidateOnly      bool
}

// Offsets are a partition's log start offset and high watermark.
type Offsets struct {
	LogStart      int64
	HighWatermark int64
}

// StoredRecord is a record with its offset.
type StoredRecord struct {
	Offset int64
	record.Record
}

// ReadResult is what a Read found.
type ReadResult struct {
	Offsets
	Records []StoredRecord
	// Raw are the batches ReadBatches found, in offset order; the
	// offsets they take hold no Records.
	Raw []RawBatch
}

// RawBatch is a stored v2 batch as produced: Count offsets from Base.
type RawBatch struct {
	Base  int64
	Count int32
	Codec record.Codec
	Data  []byte
}

// Appended is the outcome of an Append, known once Done is closed.
type Appended struct {
	Done chan struct{}
	Base int64 // offset of the first record
	Err  error

	mu       sync.Mutex
	finished bool
	then     []func(*Appended)
}

// NewAppended returns an Appended that is not yet done.
func NewAppended() *Appended { return &Appended{Done: make(chan struct{})} }

// Finish records the outcome, closes Done and runs what Then was given.
func (a *Appended) Finish(base int64, err error) {
	a.Base, a.Err = base, err
	a.mu.Lock()
	a.finished = true
	then := a.then
	a.then = nil
	a.mu.Unlock()
	close(a.Done)
	for _, fn := range then {
		fn(a)
	}
}

// Then runs fn with the outcome once it is known: at once if it is, else
// on the goroutine that finishes the append (a partition's acknowledgement
// reader), so fn must be quick and must not block. It finishes a batch
// where its outcome becomes known, without a goroutine waiting on Done.
func (a *Appended) Then(fn func(*Appended)) {
	a.mu.Lock()
	if !a.finished {
		a.then = append(a.then, fn)
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	fn(a)
}

// FailedAppend returns an Appended that is already done with err.
func FailedAppend(err error) *Appended {
	a := NewAppended()
	a.Finish(-1, err)
	return a
}

// IsKafkaError reports whether err carries a Kafka error for the client,
// rather than an outage of the backend.
func IsKafkaError(err error) bool {
	var e *kerr.Error
	return errors.As(err, &e)
}
