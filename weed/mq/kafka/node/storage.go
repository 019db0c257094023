package node

import (
	"context"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// Storage is where a node keeps its records (storage.Backend) and its
// small files and locks (the groups' offsets, transactional ids, users,
// ACLs, the membership's locks): SeaweedMQ and its filer
// (*seaweedmq.Client), unless Config.Storage gives another. Only the
// in-process tests give another, an in-memory one; what needs SeaweedFS
// itself (the log cleaner of compacted topics, the Iceberg tables'
// compaction) runs on SeaweedMQ only.
type Storage interface {
	storage.Backend
	// What a follower reads of partitions other gateways lead.
	storage.Stored
	filerfs.VersionedFiles
	Lock(ctx context.Context, name, owner, token string, ttl time.Duration) (string, error)
	Unlock(ctx context.Context, name, token string) error
	LockOwner(ctx context.Context, name string) (string, error)
	// ReadSecret and WriteSecret keep small values where the filer's
	// HTTP API does not serve them (nil: none yet).
	ReadSecret(ctx context.Context, name string) ([]byte, error)
	WriteSecret(ctx context.Context, name string, value []byte) error

	// Ready fails while the storage cannot be reached.
	Ready(ctx context.Context) error
	// SetTerm tells the storage in which term of its leadership this
	// gateway writes a partition (0: it does not lead it).
	SetTerm(term func(topic string, partition int32) int64)
	// SetTopicDefaults gives the storage the topic configs' defaults
	// the dynamic broker configs set (package brokerconfig), which
	// topics that set none inherit.
	SetTopicDefaults(defaults func() (uint64, map[string]string))
	// Release drops what the storage keeps of a partition this gateway
	// no longer leads.
	Release(topic string, partition int32)
	// KnownOffsets is a partition's log start and high watermark as this
	// gateway knows them without leading it.
	KnownOffsets(ctx context.Context, topic string, partition int32) (storage.Offsets, error)
	// FlushTails and SaveProducers write what the partitions hold in
	// memory (tails, idempotent producers' state) before a stop.
	FlushTails(timeout time.Duration)
	SaveProducers(timeout time.Duration)
	Close()
}
