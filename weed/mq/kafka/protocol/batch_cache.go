package protocol

// Fetched batches of records stored one by one. A partition's produced
// batch is stored as it is and fetched so (AppendBatch, ReadBatches); the
// batches of a produce stored record by record (a compacted topic's, a
// compression.type other than the producer's) are not, and neither are records written by earlier
// versions or SeaweedMQ's publishers. For those, the leader keeps the batches produced
// through it (their bytes as the producer compressed them, base offset
// set) in a cache bounded by -fetch.batch.cache.bytes, most recently used
// kept; a fetch at a cached batch's first offset gets its bytes as they
// are, the way Kafka returns a producer's batch: no compression on fetch,
// and bytes on the wire as produced. Records not cached (written before
// this gateway led the partition, or evicted) are built into batches of up
// to recordsPerBatch records compressed with the topic's codec: its
// compression.type if it names one, or the codec last produced to the
// topic through this gateway (none before the first produce after a
// start); those batches are cached too, so that consumers reading the
// same records after one another compress them once.

import (
	"container/list"
	"sync"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// DefaultFetchBatchCacheBytes bounds the cached batches.
const DefaultFetchBatchCacheBytes = 64 << 20

type batchKey struct {
	topicID   [16]byte
	partition int32
	base      int64
}

type cachedBatch struct {
	key   batchKey
	count int32
	codec record.Codec
	data  []byte
	elem  *list.Element
}

// batchCache holds batches by their partition and first offset.
type batchCache struct {
	mu     sync.Mutex
	max    int64
	size   int64
	byKey  map[batchKey]*cachedBatch
	lru    list.List // front: most recently used
	codecs sync.Map  // topic id -> record.Codec last produced
}

func newBatchCache(max int64) *batchCache {
	return &batchCache{max: max, byKey: map[batchKey]*cachedBatch{}}
}

// keeps reports whether a batch of size bytes would be cached, so that
// callers copy only what is kept.
func (c *batchCache) keeps(size int) bool { return c.max > 0 && int64(size) <= c.max/4 }

// put caches a batch (data is kept as it is: the caller's copy).
func (c *batchCache) put(key batchKey, count int32, codec record.Codec, data []byte) {
	if !c.keeps(len(data)) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.byKey[key]; old != nil {
		c.removeLocked(old)
	}
	b := &cachedBatch{key: key, count: count, codec: codec, data: data}
	b.elem = c.lru.PushFront(b)
	c.byKey[key] = b
	c.size += int64(len(data))
	for c.size > c.max {
		c.removeLocked(c.lru.Back().Value.(*cachedBatch))
	}
}

func (c *batchCache) removeLocked(b *cachedBatch) {
	c.lru.Remove(b.elem)
	delete(c.byKey, b.key)
	c.size -= int64(len(b.data))
}

// get returns the batch that begins at key's offset, if cached.
func (c *batchCache) get(key batchKey) *cachedBatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.byKey[key]
	if b != nil {
		c.lru.MoveToFront(b.elem)
	}
	return b
}

// nextCached returns the index of the first of recs after the first that
// begins a cached batch (len(recs) if none does), under one lock.
func (c *batchCache) nextCached(topicID [16]byte, partition int32, recs []storage.StoredRecord) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 1; i < len(recs); i++ {
		if c.byKey[batchKey{topicID, partition, recs[i].Offset}] != nil {
			return i
		}
	}
	return len(recs)
}

// learn remembers the codec a produced record set was sent with, for the
// topic's records built into batches (see codecFor).
func (c *batchCache) learn(info storage.TopicInfo, raw []byte) {
	record.Batches(raw, func(_ []byte, _ int32, codec record.Codec) {
		if v, ok := c.codecs.Load(info.ID); !ok || v.(record.Codec) != codec {
			c.codecs.Store(info.ID, codec)
		}
	})
}

// produced caches the batches of a produced record set stored from base on,
// compressed as the producer sent them, when the topic keeps the
// producer's codec. raw is kept: it is the caller's copy.
func (c *batchCache) produced(info storage.TopicInfo, partition int32, base int64, raw []byte) {
	topicCodec, keepsProducers := compressionOf(info)
	record.Batches(raw, func(batch []byte, count int32, codec record.Codec) {
		if keepsProducers || codec == topicCodec {
			record.SetBaseOffset(batch, base)
			c.put(batchKey{info.ID, partition, base}, count, codec, batch)
		}
		base += int64(count)
	})
}

// codecFor is the codec batches built of the topic's stored records get.
func (c *batchCache) codecFor(info storage.TopicInfo) record.Codec {
	codec, keepsProducers := compressionOf(info)
	if !keepsProducers {
		return codec
	}
	if v, ok := c.codecs.Load(info.ID); ok {
		return v.(record.Codec)
	}
	return record.CodecNone
}

// compressionOf reads the topic's compression.type: a codec, or that the
// producer's is kept ("producer", Kafka's default).
func compressionOf(info storage.TopicInfo) (record.Codec, bool) {
	switch info.Configs["compression.type"] {
	case "uncompressed":
		return record.CodecNone, false
	case "gzip":
		return record.CodecGzip, false
	case "snappy":
		return record.CodecSnappy, false
	case "lz4":
		return record.CodecLZ4, false
	case "zstd":
		return record.CodecZstd, false
	}
	return record.CodecNone, true
}
