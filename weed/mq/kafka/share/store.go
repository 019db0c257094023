package share

// The share-partitions a gateway holds, read from the filer when first
// used in a term of its leadership and saved there: at every
// acknowledgement (before it is answered), release and lock expiry, as
// Kafka's share coordinator keeps them. The writes are conditional: a
// gateway that lost a partition's leadership, and acts on what it held,
// cannot overwrite what the new leader wrote (its copy is dropped and it
// answers NOT_LEADER_OR_FOLLOWER).
//
// In the filer, under Dir: <group>/<topic>/<partition>, JSON:
//
//	{"stateEpoch": 0, "startOffset": 120, "leaderEpoch": 3,
//	 "batches": [{"first": 120, "last": 130, "state": 2, "count": 1}, ...],
//	 "deliveryComplete": 11}
//
// (names %-escaped as the groups' files are).

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"golang.org/x/sync/semaphore"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
)

// Dir holds the share-partitions' states.
const Dir = "/etc/kafka-gateway/share"

// Key names a share-partition.
type Key struct {
	Group, Topic string
	Partition    int32
}

func (k Key) dir() string  { return Dir + "/" + filerfs.Escape(k.Group) + "/" + filerfs.Escape(k.Topic) }
func (k Key) name() string { return strconv.Itoa(int(k.Partition)) }

// savedState is a share-partition's file.
type savedState struct {
	// TopicID is the id of the topic the state is of (hex): a topic
	// deleted and created again under its name starts afresh.
	TopicID          string       `json:"topicId,omitempty"`
	StateEpoch       int32        `json:"stateEpoch"`
	StartOffset      int64        `json:"startOffset"`
	LeaderEpoch      int64        `json:"leaderEpoch"`
	Batches          []savedBatch `json:"batches,omitempty"`
	DeliveryComplete int64        `json:"deliveryComplete"`
}

type savedBatch struct {
	First int64 `json:"first"`
	Last  int64 `json:"last"`
	State State `json:"state"`
	Count int16 `json:"count"`
}

// saveTimeout bounds a save made with no request waiting.
const saveTimeout = 10 * time.Second

// Store holds the share-partitions of the partitions this gateway leads.
type Store struct {
	files   filerfs.VersionedFiles
	configs *Configs
	now     func() time.Time

	mu      sync.Mutex
	parts   map[Key]*Partition
	loading map[Key]chan struct{}
	closed  bool
	wg      sync.WaitGroup // saves made with no request waiting
}

// NewStore returns a store of share-partitions kept in files, with the
// groups' settings from configs.
func NewStore(files filerfs.VersionedFiles, configs *Configs) *Store {
	return &Store{files: files, configs: configs, now: time.Now, parts: map[Key]*Partition{}, loading: map[Key]chan struct{}{}}
}

// Configs are the groups' configs the store reads settings from.
func (s *Store) Configs() *Configs { return s.configs }

// Close waits for the saves under way; the locks' timers are stopped.
func (s *Store) Close() {
	s.mu.Lock()
	s.closed = true
	for _, p := range s.parts {
		p.mu.Lock()
		if p.timer != nil {
			p.timer.Stop()
		}
		p.mu.Unlock()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Partition returns the share-partition held in term (the leadership's),
// read from the filer when not held yet (or held in an earlier term): a
// new one starts where start says (it is given the group's
// share.auto.offset.reset) and is saved at once.
func (s *Store) Partition(ctx context.Context, key Key, topicID [16]byte, term int64, start func(context.Context, Reset) (int64, error)) (*Partition, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, kerr.NotLeaderForPartition
		}
		if p := s.parts[key]; p != nil {
			if p.term == term && p.topicID == topicID && !p.isDropped() {
				s.mu.Unlock()
				return p, p.refresh(ctx)
			}
			s.dropLocked(p)
		}
		if wait, ok := s.loading[key]; ok {
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		s.loading[key] = done
		s.mu.Unlock()
		p, err := s.load(ctx, key, topicID, term, start)
		s.mu.Lock()
		delete(s.loading, key)
		close(done)
		if err == nil {
			s.parts[key] = p
		}
		s.mu.Unlock()
		return p, err
	}
}

func (p *Partition) isDropped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// refresh reads the group's settings again when they are a second old.
func (p *Partition) refresh(ctx context.Context) error {
	p.mu.Lock()
	stale := time.Since(p.readAt) >= configCacheTTL
	p.mu.Unlock()
	if !stale {
		return nil
	}
	st, err := p.store.configs.Settings(ctx, p.Group, false)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.settings, p.readAt = st, time.Now()
	p.mu.Unlock()
	return nil
}

// Settings are the group's settings the partition uses.
func (p *Partition) Settings() Settings {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.settings
}

func (s *Store) load(ctx context.Context, key Key, topicID [16]byte, term int64, start func(context.Context, Reset) (int64, error)) (*Partition, error) {
	settings, err := s.configs.Settings(ctx, key.Group, true)
	if err != nil {
		return nil, err
	}
	p := &Partition{Key: key, topicID: topicID, store: s, term: term, changed: make(chan struct{}), settings: settings, readAt: time.Now(), turn: semaphore.NewWeighted(1)}
	data, version, err := s.files.ReadFileVersion(ctx, key.dir(), key.name())
	var st savedState
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st.StartOffset = -1
	case err != nil:
		return nil, err
	default:
		if err := json.Unmarshal(data, &st); err != nil {
			glog.Errorf("kafka share-partition %s/%s-%d: unreadable state, starting afresh: %v", key.Group, key.Topic, key.Partition, err)
			st = savedState{StartOffset: -1}
		}
	}
	p.version = version
	if id := hex.EncodeToString(topicID[:]); st.TopicID != "" && st.TopicID != id {
		// Of a topic of the same name deleted since: not this one's.
		st = savedState{StateEpoch: st.StateEpoch + 1, StartOffset: -1}
	}
	if st.StartOffset < 0 {
		// A new share-partition (or one whose offsets were deleted)
		// starts as share.auto.offset.reset says, now, and is saved so
		// that another leader starts at the same place.
		at, err := start(ctx, settings.Reset)
		if err != nil {
			return nil, err
		}
		st.StartOffset, st.Batches = at, nil
		p.restore(st)
		if err := s.save(ctx, p); err != nil {
			return nil, err
		}
		glog.V(1).Infof("kafka share-partition %s/%s-%d: starts at %d", key.Group, key.Topic, key.Partition, at)
		return p, nil
	}
	p.restore(st)
	return p, nil
}

// save writes the partition as it is now; another gateway having written
// it since drops this copy (NOT_LEADER_OR_FOLLOWER).
func (s *Store) save(ctx context.Context, p *Partition) *kerr.Error {
	if err := p.turn.Acquire(ctx, 1); err != nil {
		return kerr.RequestTimedOut // the request gave up waiting for the save before
	}
	defer p.turn.Release(1)
	p.mu.Lock()
	if p.dropped {
		p.mu.Unlock()
		return kerr.NotLeaderForPartition
	}
	data, err := json.Marshal(p.snapshotLocked())
	version := p.version
	p.mu.Unlock()
	if err != nil {
		return kerr.UnknownServerError
	}
	version, err = s.files.WriteFileIf(ctx, p.dir(), p.name(), data, version)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case errors.Is(err, filerfs.ErrChanged):
		glog.Warningf("kafka share-partition %s/%s-%d: written by another gateway since read here; dropping this copy", p.Group, p.Topic, p.Partition)
		p.dropped = true
		p.signalLocked()
		return kerr.NotLeaderForPartition
	case err != nil:
		glog.Warningf("kafka share-partition %s/%s-%d: saving: %v", p.Group, p.Topic, p.Partition, err)
		return kerr.CoordinatorNotAvailable
	}
	p.version = version
	return nil
}

// saveLater saves the partition with no request waiting (a release, an
// expiry); a failure keeps what changed, as Kafka does, for the next save.
func (s *Store) saveLater(p *Partition) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	p.later.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer p.later.Add(-1)
		guard.Run("SharePartitionSave", func() { //nolint:errcheck // logged and counted
			ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
			defer cancel()
			s.save(ctx, p) //nolint:errcheck // logged; the next save writes it
		})
	}()
}

func (s *Store) dropLocked(p *Partition) {
	if s.parts[p.Key] == p {
		delete(s.parts, p.Key)
	}
	p.mu.Lock()
	p.dropped = true
	if p.timer != nil {
		p.timer.Stop()
	}
	p.signalLocked()
	p.mu.Unlock()
}

// Release forgets what is held of a topic partition (this gateway no
// longer leads it, cluster.Releaser): the next leader reads it from the
// filer.
func (s *Store) Release(topic string, partition int32) {
	s.Forget(func(k Key) bool { return k.Topic == topic && k.Partition == partition })
}

// Idle drops what is held of a group's share-partitions that no member
// has records of (its members' sessions here all ended), once their
// saves are done: they are read from the filer when used again.
func (s *Store) Idle(group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, p := range s.parts {
		if k.Group == group && !p.holding() {
			s.dropLocked(p)
		}
	}
}

// holding reports whether a member holds records of the partition, or a
// save of it is under way.
func (p *Partition) holding() bool {
	if p.later.Load() > 0 || !p.turn.TryAcquire(1) {
		return true
	}
	defer p.turn.Release(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.recs {
		if p.recs[i].state == Acquired || p.recs[i].pending != 0 {
			return true
		}
	}
	return false
}

// Held returns the share-partitions held of keys.
func (s *Store) Held(keys []Key) []*Partition {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Partition
	for _, k := range keys {
		if p := s.parts[k]; p != nil {
			out = append(out, p)
		}
	}
	return out
}

// Forget drops what is held of the partitions match says (their group's
// offsets changed, their topic was deleted): they are read afresh.
func (s *Store) Forget(match func(Key) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, p := range s.parts {
		if match(k) {
			s.dropLocked(p)
		}
	}
}

// Offsets is a share-partition as DescribeShareGroupOffsets shows it.
type Offsets struct {
	Partition        int32
	StartOffset      int64
	LeaderEpoch      int64
	DeliveryComplete int64
}

// GroupTopics lists the topics a share group has share-partitions of.
func (s *Store) GroupTopics(ctx context.Context, group string) ([]string, error) {
	files, err := s.files.ListFiles(ctx, Dir+"/"+filerfs.Escape(group))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		if t, ok := filerfs.Unescape(f.Name); ok && f.Dir {
			out = append(out, t)
		}
	}
	return out, nil
}

// TopicOffsets reads the saved state of a group's share-partitions of a
// topic.
func (s *Store) TopicOffsets(ctx context.Context, group, topic string) ([]Offsets, error) {
	dir := Key{Group: group, Topic: topic}.dir()
	files, err := s.files.ListFiles(ctx, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Offsets
	for _, f := range files {
		n, err := strconv.Atoi(f.Name)
		if err != nil || f.Dir {
			continue
		}
		var st savedState
		if err := json.Unmarshal(f.Data, &st); err != nil {
			continue
		}
		out = append(out, Offsets{Partition: int32(n), StartOffset: st.StartOffset, LeaderEpoch: st.LeaderEpoch, DeliveryComplete: st.DeliveryComplete})
	}
	return out, nil
}

// SetStart starts a share-partition afresh at offset (AlterShareGroupOffsets:
// the group has no members), its records in flight and delivery counts
// forgotten, its state epoch moved on. The leader's copy is dropped.
//
// The state is written over the one read only: a write that lands late
// (sent before a cut) never replaces what the share-partition's leader
// saved since.
func (s *Store) SetStart(ctx context.Context, key Key, offset int64) error {
	for attempt := 1; ; attempt++ {
		var st savedState
		data, version, err := s.files.ReadFileVersion(ctx, key.dir(), key.name())
		if err == nil {
			json.Unmarshal(data, &st) //nolint:errcheck // a broken one is replaced
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		next := savedState{StateEpoch: st.StateEpoch + 1, StartOffset: offset, LeaderEpoch: st.LeaderEpoch}
		data, err = json.Marshal(next)
		if err != nil {
			return err
		}
		s.Forget(func(k Key) bool { return k == key })
		_, err = s.files.WriteFileIf(ctx, key.dir(), key.name(), data, version)
		if !errors.Is(err, filerfs.ErrChanged) || attempt == 3 {
			return err
		}
	}
}

// DeleteTopic removes a group's share-partitions of a topic
// (DeleteShareGroupOffsets); it reports whether there were any.
func (s *Store) DeleteTopic(ctx context.Context, group, topic string) (bool, error) {
	files, err := s.files.ListFiles(ctx, Key{Group: group, Topic: topic}.dir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if len(files) == 0 {
		return false, nil
	}
	s.Forget(func(k Key) bool { return k.Group == group && k.Topic == topic })
	return true, s.files.Remove(ctx, Dir+"/"+filerfs.Escape(group), filerfs.Escape(topic))
}

// TopicDeleted removes every group's share-partitions of a deleted topic,
// as Kafka's share coordinator deletes their state with the topic. (A copy
// still held by a partition's leader and saved after this is ignored when
// read: it names the old topic's id.)
func (s *Store) TopicDeleted(ctx context.Context, topic string) error {
	s.Forget(func(k Key) bool { return k.Topic == topic })
	groups, err := s.files.ListFiles(ctx, Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, g := range groups {
		if !g.Dir {
			continue
		}
		if err := s.files.Remove(ctx, Dir+"/"+g.Name, filerfs.Escape(topic)); err != nil {
			return err
		}
	}
	return nil
}

// DeleteGroup removes every share-partition of a group (DeleteGroups).
func (s *Store) DeleteGroup(ctx context.Context, group string) error {
	s.Forget(func(k Key) bool { return k.Group == group })
	return s.files.Remove(ctx, Dir, filerfs.Escape(group))
}
