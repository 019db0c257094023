package storagetest

import (
	"context"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// Storage is a whole gateway's storage in memory, as a node takes it
// (node.Storage): the records in a Backend, the small files and locks in
// filerfstest's, the key-value store's values in its Secrets. It has no tails or producer state kept apart to flush,
// and one gateway's terms are not its concern.
type Storage struct {
	*Backend
	*filerfstest.Files
	*filerfstest.Locks
	*filerfstest.Secrets
}

// NewStorage returns an empty Storage.
func NewStorage() *Storage {
	return &Storage{Backend: New(), Files: filerfstest.New(), Locks: filerfstest.NewLocks(nil), Secrets: &filerfstest.Secrets{}}
}

// Ready is nil: memory is always reached.
func (s *Storage) Ready(context.Context) error { return nil }

// SetTerm is ignored.
func (s *Storage) SetTerm(func(topic string, partition int32) int64) {}

// SetTopicDefaults gives the backend's topics what they inherit.
func (s *Storage) SetTopicDefaults(fn func() (uint64, map[string]string)) { s.TopicDefaults = fn }

// Release is ignored: the records stay in memory for the next leader.
func (s *Storage) Release(topic string, partition int32) {}

// KnownOffsets is Offsets.
func (s *Storage) KnownOffsets(ctx context.Context, topic string, partition int32) (storage.Offsets, error) {
	return s.Offsets(ctx, topic, partition)
}

// FlushTails has nothing to flush.
func (s *Storage) FlushTails(time.Duration) {}

// SaveProducers has nothing to save.
func (s *Storage) SaveProducers(time.Duration) {}

// Close keeps the records: a node closed and another built on the same
// Storage find them, as a restarted gateway finds SeaweedFS's.
func (s *Storage) Close() {}

// ReadStored is ReadBatches: memory holds every record as stored.
func (s *Storage) ReadStored(ctx context.Context, topic string, partition int32, offset int64, maxBytes int) (storage.ReadResult, error) {
	return s.ReadBatches(ctx, topic, partition, offset, maxBytes)
}
