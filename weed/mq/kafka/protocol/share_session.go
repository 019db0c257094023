package protocol

// Share sessions (KIP-932), as Kafka's share session cache keeps them: one
// per share group member on this gateway, holding the partitions the
// member fetches and the epoch its next request must carry. ShareFetch at
// epoch 0 opens one (replacing the member's earlier one), later requests
// move it on one epoch at a time and add and forget partitions, epoch -1
// closes it. A session ends with the connection that opened it; a session
// that ends by a close or with its connection releases the records its
// member holds in its partitions.

import (
	"context"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
)

// DefaultShareSessions is group.share.max.share.sessions.
const DefaultShareSessions = 2000

type shareSessionKey struct{ group, member string }

// sharePart is a partition of a share session.
type sharePart struct {
	topicID   [16]byte
	partition int32
}

type shareSession struct {
	key   shareSessionKey
	epoch int32 // the epoch the next request carries
	// parts are the session's partitions in the order they came, and
	// reported has each of them: true once an incremental answer has
	// named it (a partition new to the session is answered at least
	// once).
	parts    []sharePart
	reported map[sharePart]bool
	// stop unhooks the release at the connection's close.
	stop func() bool
}

// add adds partitions the session does not have yet.
func (s *shareSession) add(parts []sharePart) {
	for _, sp := range parts {
		if _, ok := s.reported[sp]; !ok {
			s.reported[sp] = false
			s.parts = append(s.parts, sp)
		}
	}
}

// forget removes partitions from the session.
func (s *shareSession) forget(gone map[sharePart]bool) {
	if len(gone) == 0 {
		return
	}
	s.parts = slices.DeleteFunc(s.parts, func(sp sharePart) bool { return gone[sp] })
	for sp := range gone {
		delete(s.reported, sp)
	}
}

type shareSessions struct {
	h    *Handler
	max  int
	mu   sync.Mutex
	byID map[shareSessionKey]*shareSession
}

func newShareSessions(h *Handler, max int) *shareSessions {
	return &shareSessions{h: h, max: max, byID: map[shareSessionKey]*shareSession{}}
}

func nextShareEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// open starts a member's session at epoch 0 with parts (its earlier one
// goes, its records kept); conn is the connection's context: the session
// ends with it.
func (ss *shareSessions) open(conn context.Context, key shareSessionKey, parts []sharePart) (*shareSession, *kerr.Error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if old := ss.byID[key]; old != nil {
		old.stop()
		delete(ss.byID, key)
	}
	if len(ss.byID) >= ss.max {
		return nil, kerr.ShareSessionLimitReached
	}
	s := &shareSession{key: key, epoch: 1, reported: make(map[sharePart]bool, len(parts))}
	s.add(parts)
	s.stop = context.AfterFunc(conn, func() { ss.end(s) })
	ss.byID[key] = s
	return s, nil
}

// step checks a request's epoch against the member's session and moves it
// on; update changes its partitions meanwhile.
func (ss *shareSessions) step(key shareSessionKey, epoch int32, update func(*shareSession)) (*shareSession, *kerr.Error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.byID[key]
	switch {
	case s == nil:
		return nil, kerr.ShareSessionNotFound
	case epoch != s.epoch:
		return nil, kerr.InvalidShareSessionEpoch
	}
	if update != nil {
		update(s)
	}
	s.epoch = nextShareEpoch(s.epoch)
	return s, nil
}

// closing returns the member's session for a request of epoch -1.
func (ss *shareSessions) closing(key shareSessionKey) (*shareSession, *kerr.Error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.byID[key]
	if s == nil {
		return nil, kerr.ShareSessionNotFound
	}
	return s, nil
}

// end removes a session (closed, or its connection gone) and releases what
// its member holds in its partitions. Once no member of the group has a
// session here, what this gateway holds of the group's share-partitions is
// dropped (it is in the filer), as Kafka evicts them: share groups that
// come and go leave nothing in memory.
func (ss *shareSessions) end(s *shareSession) {
	ss.mu.Lock()
	if ss.byID[s.key] == s {
		delete(ss.byID, s.key)
	}
	s.stop()
	parts := append([]sharePart(nil), s.parts...)
	last := true
	for k := range ss.byID {
		if k.group == s.key.group {
			last = false
			break
		}
	}
	ss.mu.Unlock()
	ss.h.releaseShared(s.key, parts)
	if last && ss.h.shares != nil {
		ss.h.shares.Idle(s.key.group)
	}
}

// count is the number of sessions open.
func (ss *shareSessions) count() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.byID)
}

// releaseShared releases what a member holds in share-partitions of this
// gateway.
func (h *Handler) releaseShared(key shareSessionKey, parts []sharePart) {
	if h.shares == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), shareLookupTimeout)
	defer cancel()
	keys := make([]share.Key, 0, len(parts))
	for _, sp := range parts {
		info, err := h.backend.TopicByID(ctx, sp.topicID)
		if err != nil {
			continue
		}
		keys = append(keys, share.Key{Group: key.group, Topic: info.Name, Partition: sp.partition})
	}
	for _, p := range h.shares.Held(keys) {
		p.ReleaseMember(key.member)
	}
}
