package protocol

// Fetch sessions (KIP-227), as Kafka's broker keeps them: a full fetch
// (epoch 0) opens a session holding its partitions, their fetch offsets and
// what the client was last told of each (high watermark, last stable
// offset, log start); the client's next fetches name the session and its
// epoch, and carry only the partitions whose fetch offset changed, and
// those to forget. The answer to such an incremental fetch holds only the
// partitions with records, an error, or news of their offsets. A full
// fetch with epoch -1 closes the session and opens none.
//
// The cache holds -max.incremental.fetch.session.cache.slots sessions
// (Kafka's 1000). A new session takes the slot of one unused for two
// minutes; failing that, of the smallest session older than two minutes if
// it has no more partitions than the new one (Kafka's eviction for
// consumers' sessions); failing that, it is not opened (session id 0: the
// client goes on with full fetches). Each gateway keeps its own sessions,
// as each Kafka broker does.

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// DefaultFetchSessionSlots is Kafka's max.incremental.fetch.session.cache.slots.
const DefaultFetchSessionSlots = 1000

// sessionEvictableAfter is Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS:
// a session unused this long may be evicted for any new one; one created
// this long ago, for a new one at least as large.
const sessionEvictableAfter = 2 * time.Minute

// minSessionVersion is the first Fetch version with sessions.
const minSessionVersion = 7

// fetchPart is one partition a fetch reads, and in a session what the
// client was last told of it.
type fetchPart struct {
	topic     string // empty when addressed by id (v13+)
	topicID   [16]byte
	partition int32
	offset    int64
	maxBytes  int32
	// Last sent; -1 before the first answer.
	hw, lso, logStart int64
}

type sessionKey struct {
	topic     string
	topicID   [16]byte
	partition int32
}

func (p *fetchPart) key() sessionKey { return sessionKey{p.topic, p.topicID, p.partition} }

type fetchSession struct {
	id      int32
	epoch   int32 // what the next incremental fetch must carry
	byID    bool  // its partitions are named by topic id (v13+)
	created time.Time
	used    time.Time
	parts   []*fetchPart // in the order they are read
	index   map[sessionKey]*fetchPart
	evicted bool
}

// fetchSessions is a gateway's cache of fetch sessions.
type fetchSessions struct {
	mu    sync.Mutex
	slots int
	byID  map[int32]*fetchSession
	now   func() time.Time
}

func newFetchSessions(slots int) *fetchSessions {
	if slots < 0 {
		slots = 0
	}
	return &fetchSessions{slots: slots, byID: map[int32]*fetchSession{}, now: time.Now}
}

// fetchContext is how one Fetch request is answered.
type fetchContext struct {
	err   *kerr.Error // the whole request's: FETCH_SESSION_ID_NOT_FOUND, ...
	parts []fetchPart // what to read, in order
	// session is the incremental fetch's session (nil for full ones);
	// open says a full fetch may open one.
	session *fetchSession
	open    bool
	byID    bool // partitions are named by topic id (v13+)
}

// requested lists a request's partitions in order.
func requested(req *kmsg.FetchRequest, byID bool) []fetchPart {
	var out []fetchPart
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			p := fetchPart{partition: rp.Partition, offset: rp.FetchOffset, maxBytes: rp.PartitionMaxBytes, hw: -1, lso: -1, logStart: -1}
			if byID {
				p.topicID = rt.TopicID
			} else {
				p.topic = rt.Topic
			}
			out = append(out, p)
		}
	}
	return out
}

// nextEpoch is Kafka's JFetchMetadata.nextEpoch.
func nextEpoch(epoch int32) int32 {
	switch {
	case epoch < 0:
		return -1
	case epoch == math.MaxInt32:
		return 1
	default:
		return epoch + 1
	}
}

// begin decides how req is answered, and changes the session it names.
func (c *fetchSessions) begin(req *kmsg.FetchRequest, version int16) fetchContext {
	byID := version >= 13
	if version < minSessionVersion {
		return fetchContext{parts: requested(req, byID), byID: byID}
	}
	full := req.SessionEpoch == 0 || req.SessionEpoch == -1
	c.mu.Lock()
	defer c.mu.Unlock()
	if full {
		if req.SessionID != 0 {
			c.removeLocked(c.byID[req.SessionID]) // a full fetch closes the session it names
		}
		return fetchContext{parts: requested(req, byID), byID: byID, open: req.SessionEpoch == 0 && c.slots > 0}
	}
	s := c.byID[req.SessionID]
	switch {
	case s == nil:
		return fetchContext{err: kerr.FetchSessionIDNotFound}
	case s.epoch != req.SessionEpoch:
		return fetchContext{err: kerr.InvalidFetchSessionEpoch}
	case s.byID != byID:
		return fetchContext{err: kerr.FetchSessionTopicIDError}
	}
	for _, p := range requested(req, byID) {
		if old := s.index[p.key()]; old != nil {
			old.offset, old.maxBytes = p.offset, p.maxBytes
			continue
		}
		np := p
		s.parts = append(s.parts, &np)
		s.index[np.key()] = &np
	}
	for _, ft := range req.ForgottenTopics {
		for _, part := range ft.Partitions {
			k := sessionKey{partition: part}
			if byID {
				k.topicID = ft.TopicID
			} else {
				k.topic = ft.Topic
			}
			if p := s.index[k]; p != nil {
				delete(s.index, k)
				for i, q := range s.parts {
					if q == p {
						s.parts = append(s.parts[:i], s.parts[i+1:]...)
						break
					}
				}
			}
		}
	}
	if len(s.parts) == 0 {
		// Nothing left to fetch: the session ends, the answer is a
		// sessionless one (Kafka's SessionlessFetchContext).
		c.removeLocked(s)
		return fetchContext{byID: byID}
	}
	s.epoch = nextEpoch(s.epoch)
	s.used = c.now()
	ctx := fetchContext{session: s, byID: byID}
	for _, p := range s.parts {
		ctx.parts = append(ctx.parts, *p)
	}
	return ctx
}

// changed reports whether an incremental answer includes the partition:
// it has records or an error, or offsets the client was not told yet.
func (p *fetchPart) changed(sp *kmsg.FetchResponseTopicPartition) bool {
	return len(sp.RecordBatches) > 0 || sp.ErrorCode != 0 || sp.PreferredReadReplica >= 0 ||
		sp.HighWatermark != p.hw || sp.LastStableOffset != p.lso || sp.LogStartOffset != p.logStart
}

// finish records what the answer told the client. For a full fetch that
// may, it opens a session and returns its id (0 if none could be opened);
// for an incremental one it notes the offsets sent and moves the
// partitions that had records to the end, so that the next fetch's size
// limit falls on the others first (as Kafka does).
func (c *fetchSessions) finish(fc *fetchContext, answered []*kmsg.FetchResponseTopicPartition) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if s := fc.session; s != nil {
		if s.evicted {
			return s.id // the client finds out at its next fetch
		}
		var moved []*fetchPart
		for i, sp := range answered {
			if sp == nil {
				continue
			}
			p := s.index[fc.parts[i].key()]
			if p == nil {
				continue
			}
			p.hw, p.lso, p.logStart = sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset
			if len(sp.RecordBatches) > 0 {
				moved = append(moved, p)
			}
		}
		if len(moved) > 0 {
			had := make(map[*fetchPart]bool, len(moved))
			for _, p := range moved {
				had[p] = true
			}
			kept := s.parts[:0]
			for _, p := range s.parts {
				if !had[p] {
					kept = append(kept, p)
				}
			}
			s.parts = append(kept, moved...)
		}
		return s.id
	}
	if !fc.open || len(fc.parts) == 0 {
		return 0
	}
	if len(c.byID) >= c.slots && !c.evictLocked(len(fc.parts), now) {
		return 0
	}
	s := &fetchSession{epoch: 1, byID: fc.byID, created: now, used: now, index: map[sessionKey]*fetchPart{}}
	for s.id == 0 || c.byID[s.id] != nil {
		s.id = rand.Int32N(math.MaxInt32) + 1
	}
	for i := range fc.parts {
		p := fc.parts[i]
		if sp := answered[i]; sp != nil {
			p.hw, p.lso, p.logStart = sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset
		}
		if s.index[p.key()] != nil {
			continue
		}
		s.parts = append(s.parts, &p)
		s.index[p.key()] = &p
	}
	c.byID[s.id] = s
	metrics.FetchSessions.Set(float64(len(c.byID)))
	return s.id
}

// evictLocked makes room for a new session of size partitions, as Kafka's
// FetchSessionCache.tryEvict does for consumers: the least recently used
// session if unused for sessionEvictableAfter, else the smallest (then
// oldest id) of the sessions created that long ago if the new one is at
// least as large.
func (c *fetchSessions) evictLocked(size int, now time.Time) bool {
	var stale, small *fetchSession
	for _, s := range c.byID {
		if stale == nil || s.used.Before(stale.used) {
			stale = s
		}
		if now.Sub(s.created) > sessionEvictableAfter && (small == nil || len(s.parts) < len(small.parts) ||
			(len(s.parts) == len(small.parts) && s.id < small.id)) {
			small = s
		}
	}
	switch {
	case stale != nil && now.Sub(stale.used) > sessionEvictableAfter:
		c.removeLocked(stale)
	case small != nil && size >= len(small.parts):
		c.removeLocked(small)
	default:
		return false
	}
	metrics.FetchSessionEvictions.Inc()
	return true
}

func (c *fetchSessions) removeLocked(s *fetchSession) {
	if s == nil {
		return
	}
	s.evicted = true
	delete(c.byID, s.id)
	metrics.FetchSessions.Set(float64(len(c.byID)))
}
