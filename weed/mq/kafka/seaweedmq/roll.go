package seaweedmq

// When a partition's segments roll: as Kafka's do, by the topic's
// segment.bytes and segment.ms (less a segment.jitter.ms share), within
// the gateway's own bounds. A tail is written every tailFlushAge or
// maxTailBytes, or sooner when the topic asks for smaller or younger
// segments; a tail larger than segment.bytes is written as several
// segments. A write whose name (the time of its last record, to the
// second) is the newest segment's joins that file only while the file
// stays within segment.bytes and the topic rolls no faster than the
// flusher writes; otherwise it starts a file of its own, named after the
// newest with a sequence as its fractional second ("…-05.000001"), which
// sorts after it and parses as its time.

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/mq/topic"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// rolling is a topic's segment.bytes, segment.ms and segment.jitter.ms.
type rolling struct {
	bytes  int64
	age    time.Duration
	jitter time.Duration
	// compacted: the log cleaner is told of each segment written
	// (wakeCleaner).
	compacted bool
}

// Kafka's defaults: 1 GiB, 7 days, no jitter.
var defaultRolling = rolling{bytes: 1 << 30, age: 7 * 24 * time.Hour}

// rollingOf reads a topic's settings; a missing or unreadable one keeps
// Kafka's default (CreateTopics and AlterConfigs checked them).
func rollingOf(configs map[string]string) rolling {
	r := defaultRolling
	num := func(name string) (int64, bool) {
		v, err := strconv.ParseInt(configs[name], 10, 64)
		return v, err == nil
	}
	if v, ok := num("segment.bytes"); ok && v > 0 {
		r.bytes = v
	}
	if v, ok := num("segment.ms"); ok && v > 0 && v < int64(1<<62)/int64(time.Millisecond) {
		r.age = time.Duration(v) * time.Millisecond
	}
	if v, ok := num("segment.jitter.ms"); ok && v > 0 && v < int64(1<<62)/int64(time.Millisecond) {
		r.jitter = time.Duration(v) * time.Millisecond
	}
	r.compacted = storage.Compacted(configs)
	return r
}

// flushBytes is the tail size at which a partition's tail is written.
func (r rolling) flushBytes() int {
	return int(min(r.bytes, maxTailBytes))
}

// flushAge is how long the oldest batch of a tail waits for its segment:
// segment.ms less the jitter Kafka would draw for the segment (a share of
// segment.jitter.ms fixed by the partition and the segment's first
// offset, as Kafka draws one per segment), at most tailFlushAge.
func (r rolling) flushAge(dir string, first int64) time.Duration {
	age := r.age
	if r.jitter > 0 {
		h := fnv.New64a()
		fmt.Fprintf(h, "%s@%d", dir, first)
		age -= time.Duration(h.Sum64() % uint64(min(r.jitter, r.age)))
	}
	return max(min(age, tailFlushAge), time.Millisecond)
}

// joins reports whether a segment of size bytes may be appended to the
// newest segment file rather than roll: a file a gateway wrote, that
// stays within segment.bytes, of a topic whose segments may be older
// than the flusher's writes.
func (r rolling) joins(newest *filer_pb.Entry, size int) bool {
	return newest.Extended[gatewaySegmentAttr] != nil &&
		int64(filer.FileSize(newest))+int64(size) <= r.bytes &&
		r.age >= tailFlushAge
}

// rollName is the name of the segment file after newest that the same
// second names: newest's time with the next sequence as its fraction.
func rollName(newest string) string {
	base := len(topic.TIME_FORMAT)
	if len(newest) <= base || newest[base] != '.' {
		return newest[:min(len(newest), base)] + ".000001"
	}
	seq, err := strconv.ParseUint(newest[base+1:], 10, 64)
	if err != nil {
		return newest + ".000001" // not ours: still after it
	}
	return fmt.Sprintf("%s.%06d", newest[:base], seq+1)
}

// rollingOf returns the rolling of the partition's topic as the topic
// cache knows it (no filer call: the flusher asks for every partition
// twice a second); Kafka's defaults while it knows nothing.
func (c *Client) rollingOf(topicName string) rolling {
	c.topics.mu.Lock()
	e := c.topics.byName[topicName]
	c.topics.mu.Unlock()
	if e == nil {
		return defaultRolling
	}
	return rollingOf(c.infoOf(e).Configs)
}
