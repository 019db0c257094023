// Package offset keeps consumer groups' committed offsets, and the group
// state Kafka keeps beside them in __consumer_offsets, durably in the
// SeaweedFS filer.
//
// Layout, under Dir:
//
//	<group>.group         the group's state (members, generation), written by package group
//	<group>/<topic>       the group's committed offsets of one topic, JSON
//
// A group's name is escaped to a file name (see filerfs.Escape). A commit is written
// to the filer before it is acknowledged; commits of one group are written in
// the order they were accepted, and those waiting together are written
// together (one filer write per topic touched).
package offset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/sync/semaphore"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
)

// Dir is where the filer keeps the groups' files.
const Dir = "/etc/kafka-gateway/groups"

// groupSuffix names a group's state file.
const groupSuffix = ".group"

// Committed is one partition's committed offset.
type Committed struct {
	Offset      int64   `json:"offset"`
	LeaderEpoch int32   `json:"leaderEpoch"`
	Metadata    *string `json:"metadata,omitempty"`
	// CommitTime is when the commit was accepted, in Unix milliseconds.
	CommitTime int64 `json:"commitTime"`
	// TopicID is the id (hex) of the topic the commit was made for: a
	// topic deleted and created again under its name has another id, and
	// none of the old topic's commits (empty in commits made before ids
	// were kept).
	TopicID string `json:"topicId,omitempty"`
}

// Topics maps topic → partition → committed offset.
type Topics map[string]map[int32]Committed

// Clone returns a copy of the offsets.
func (t Topics) Clone() Topics {
	out := make(Topics, len(t))
	for topic, parts := range t {
		out[topic] = maps.Clone(parts)
	}
	return out
}

// Store is the filer-backed store of every group's offsets and state.
type Store struct {
	files filerfs.VersionedFiles
	dir   string

	mu     sync.Mutex
	groups map[string]*groupOffsets
}

// NewStore returns a store keeping its files under Dir in files.
func NewStore(files filerfs.VersionedFiles) *Store {
	return &Store{files: files, dir: Dir, groups: map[string]*groupOffsets{}}
}

// groupOffsets is one group's committed offsets, loaded once from the filer
// and from then on changed only through this store.
type groupOffsets struct {
	name string

	loading *semaphore.Weighted // one load at a time, waited for within the caller's context
	loaded  bool

	mu       sync.Mutex
	durable  Topics            // what the filer holds
	versions map[string]string // of each topic's file, as read or written
	queue    []*write          // accepted, not yet written
	writing  bool
	// forgotten: dropped from the store once its writes are done
	// (Forget while they were going on).
	forgotten atomic.Bool
	// stale: another gateway wrote the offsets since they were read;
	// every write fails until the group is forgotten.
	stale atomic.Bool
}

// write is one accepted change: offsets to set and partitions to drop.
type write struct {
	set  Topics
	drop map[string][]int32
	done chan error
}

func (s *Store) group(name string) *groupOffsets {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[name]
	if g == nil {
		g = &groupOffsets{name: name, loading: semaphore.NewWeighted(1)}
		s.groups[name] = g
	}
	return g
}

// load reads the group's offsets from the filer the first time they are
// needed.
func (s *Store) load(ctx context.Context, g *groupOffsets) error {
	if err := g.loading.Acquire(ctx, 1); err != nil {
		return err
	}
	defer g.loading.Release(1)
	if g.loaded {
		return nil
	}
	files, err := s.files.ListFiles(ctx, s.dir+"/"+filerfs.Escape(g.name))
	if err != nil {
		return fmt.Errorf("loading offsets of group %q: %w", g.name, err)
	}
	durable, versions := Topics{}, map[string]string{}
	for _, f := range files {
		if f.Dir {
			continue
		}
		topic, ok := filerfs.Unescape(f.Name)
		if !ok {
			continue
		}
		var parts map[int32]Committed
		if err := json.Unmarshal(f.Data, &parts); err != nil {
			return fmt.Errorf("offsets of group %q topic %q: %w", g.name, topic, err)
		}
		durable[topic], versions[topic] = parts, f.Version
	}
	g.mu.Lock()
	g.durable, g.versions = durable, versions
	g.mu.Unlock()
	g.loaded = true
	return nil
}

// Fetch returns the group's committed offsets of topics (all topics if nil).
func (s *Store) Fetch(ctx context.Context, group string, topics []string) (Topics, error) {
	g := s.group(group)
	if err := s.load(ctx, g); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	out := Topics{}
	if topics == nil {
		for t, parts := range g.durable {
			out[t] = maps.Clone(parts)
		}
		return out, nil
	}
	for _, t := range topics {
		if parts, ok := g.durable[t]; ok {
			out[t] = maps.Clone(parts)
		}
	}
	return out, nil
}

// HasOffsets reports whether the group has any committed offset.
func (s *Store) HasOffsets(ctx context.Context, group string) (bool, error) {
	g := s.group(group)
	if err := s.load(ctx, g); err != nil {
		return false, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, parts := range g.durable {
		if len(parts) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// Commit accepts offsets for the group and returns a channel that yields
// nil once they are in the filer, or the error that kept them out. Commits
// are written in the order Commit is called.
func (s *Store) Commit(group string, offsets Topics) <-chan error {
	return s.enqueue(group, &write{set: offsets, done: make(chan error, 1)})
}

// Delete drops the committed offsets of some partitions (OffsetDelete), in
// order with the group's commits.
func (s *Store) Delete(group string, partitions map[string][]int32) <-chan error {
	return s.enqueue(group, &write{drop: partitions, done: make(chan error, 1)})
}

func (s *Store) enqueue(group string, w *write) <-chan error {
	g := s.group(group)
	g.mu.Lock()
	g.queue = append(g.queue, w)
	start := !g.writing
	g.writing = true
	g.mu.Unlock()
	if start {
		go s.drain(g)
	}
	return w.done
}

// writeTimeout bounds one round of filer writes; a commit that cannot be
// written in it fails and the client retries.
const writeTimeout = 30 * time.Second

// drain writes the group's queued changes until none are left. Those queued
// together are merged in order and written with one filer write per topic.
func (s *Store) drain(g *groupOffsets) {
	for {
		s.mu.Lock()
		g.mu.Lock()
		batch := g.queue // never empty: enqueue starts the drain with one, and it goes on while more come
		g.queue = nil
		g.mu.Unlock()
		s.mu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		// A panic fails the batch's commits; their clients retry them.
		err := guard.Try("OffsetWrite", func() error {
			if g.stale.Load() {
				return fmt.Errorf("offsets of group %q: %w", g.name, filerfs.ErrChanged)
			}
			return s.writeBatch(ctx, g, batch)
		})
		cancel()
		// The last batch ends the writing before its commits are
		// answered: a group forgotten meanwhile is gone by then, and the
		// next use of it reads what other gateways wrote since.
		s.mu.Lock()
		g.mu.Lock()
		last := len(g.queue) == 0
		if last {
			g.writing = false
			if g.forgotten.Load() && s.groups[g.name] == g {
				delete(s.groups, g.name)
			}
		}
		g.mu.Unlock()
		s.mu.Unlock()
		for _, w := range batch {
			w.done <- err
		}
		if last {
			return
		}
	}
}

func (s *Store) writeBatch(ctx context.Context, g *groupOffsets, batch []*write) error {
	if err := s.load(ctx, g); err != nil {
		return err
	}
	g.mu.Lock()
	next := Topics{}
	touch := func(topic string) map[int32]Committed {
		parts, ok := next[topic]
		if !ok {
			parts = maps.Clone(g.durable[topic])
			if parts == nil {
				parts = map[int32]Committed{}
			}
			next[topic] = parts
		}
		return parts
	}
	for _, w := range batch {
		for topic, offs := range w.set {
			parts := touch(topic)
			maps.Copy(parts, offs)
		}
		for topic, drop := range w.drop {
			parts := touch(topic)
			for _, p := range drop {
				delete(parts, p)
			}
		}
	}
	g.mu.Unlock()

	dir := s.dir + "/" + filerfs.Escape(g.name)
	var firstErr error
	for _, topic := range slices.Sorted(maps.Keys(next)) {
		parts := next[topic]
		var err error
		if g.stale.Load() {
			if firstErr == nil {
				firstErr = fmt.Errorf("writing offsets of group %q: %w", g.name, filerfs.ErrChanged)
			}
			continue
		}
		var version string
		g.mu.Lock()
		was := g.versions[topic]
		g.mu.Unlock()
		if len(parts) == 0 {
			err = s.files.RemoveIf(ctx, dir, filerfs.Escape(topic), was)
		} else {
			var data []byte
			data, err = json.Marshal(parts)
			if err == nil {
				version, err = s.files.WriteFileIf(ctx, dir, filerfs.Escape(topic), data, was)
			}
		}
		if errors.Is(err, filerfs.ErrChanged) {
			// Another gateway wrote the group's offsets: what this one
			// holds of them, and the commits it accepted, are stale.
			// They all fail (clients retry them where the group is
			// coordinated now); the group is read afresh once forgotten.
			g.stale.Store(true)
		}
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("writing offsets of group %q topic %q: %w", g.name, topic, err)
			}
			continue
		}
		g.mu.Lock()
		if len(parts) == 0 {
			delete(g.durable, topic)
			delete(g.versions, topic)
		} else {
			g.durable[topic], g.versions[topic] = parts, version
		}
		g.mu.Unlock()
	}
	return firstErr
}

// LoadState returns the group's saved state, or nil if it has none, with
// its version.
func (s *Store) LoadState(ctx context.Context, group string) ([]byte, string, error) {
	data, version, err := s.files.ReadFileVersion(ctx, s.dir, filerfs.Escape(group)+groupSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("loading state of group %q: %w", group, err)
	}
	return data, version, nil
}

// SaveState writes the group's state if the saved one is still at version
// (the one loaded or saved last; "" for none), replacing it, and returns
// the new version; filerfs.ErrChanged if another gateway saved it since. The state
// is JSON with the group's name in a "group" field.
func (s *Store) SaveState(ctx context.Context, group string, state []byte, version string) (string, error) {
	version, err := s.files.WriteFileIf(ctx, s.dir, filerfs.Escape(group)+groupSuffix, state, version)
	if err != nil {
		return "", fmt.Errorf("saving state of group %q: %w", group, err)
	}
	return version, nil
}

// States lists every saved group with its state.
func (s *Store) States(ctx context.Context) (map[string][]byte, error) {
	files, err := s.files.ListFiles(ctx, s.dir)
	if err != nil {
		return nil, fmt.Errorf("listing groups: %w", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		if f.Dir || !strings.HasSuffix(f.Name, groupSuffix) {
			continue
		}
		name, ok := filerfs.Unescape(strings.TrimSuffix(f.Name, groupSuffix))
		if !ok {
			// A hashed name: the state names its group.
			var named struct {
				Group *string `json:"group"`
			}
			if json.Unmarshal(f.Data, &named) != nil || named.Group == nil {
				continue
			}
			name = *named.Group
		}
		out[name] = f.Data
	}
	return out, nil
}

// DeleteGroup removes the group's state, only at stateVersion, and its
// offsets, each only as this store last read or wrote it: a file
// another gateway wrote since (the group's new coordinator, while this
// one, paused or slow, did not know it lost the group) is left in place,
// and DeleteGroup answers filerfs.ErrChanged; the group's offsets are then
// read afresh. Every file is checked before any is removed. The caller
// makes sure nothing else of this gateway writes to the group meanwhile.
func (s *Store) DeleteGroup(ctx context.Context, group, stateVersion string) error {
	g := s.group(group)
	if err := s.load(ctx, g); err != nil {
		return err
	}
	dir := s.dir + "/" + filerfs.Escape(group)
	files, err := s.files.ListFiles(ctx, dir)
	if err != nil {
		return fmt.Errorf("deleting offsets of group %q: %w", group, err)
	}
	g.mu.Lock()
	versions := maps.Clone(g.versions)
	g.mu.Unlock()
	changed := func(what string) error {
		g.stale.Store(true)
		s.Forget(group)
		return fmt.Errorf("deleting group %q: %s: %w", group, what, filerfs.ErrChanged)
	}
	for _, f := range files {
		topic, ok := filerfs.Unescape(f.Name)
		if f.Dir || !ok {
			continue
		}
		if v, known := versions[topic]; !known || v != f.Version {
			return changed("offsets of topic " + topic + " written elsewhere")
		}
	}
	stateFile := filerfs.Escape(group) + groupSuffix
	if _, v, err := s.files.ReadFileVersion(ctx, s.dir, stateFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("deleting group %q: %w", group, err)
	} else if err == nil && v != stateVersion {
		return changed("its state saved elsewhere")
	}
	// The state first: a new coordinator that saves it after this finds
	// it gone and reads the group afresh.
	if err := s.files.RemoveIf(ctx, s.dir, stateFile, stateVersion); errors.Is(err, filerfs.ErrChanged) {
		return changed("its state saved elsewhere")
	} else if err != nil {
		return fmt.Errorf("deleting group %q: %w", group, err)
	}
	for _, f := range files {
		if topic, ok := filerfs.Unescape(f.Name); ok && !f.Dir {
			if err := s.files.RemoveIf(ctx, dir, f.Name, versions[topic]); errors.Is(err, filerfs.ErrChanged) {
				return changed("offsets of topic " + topic + " written elsewhere")
			} else if err != nil {
				return fmt.Errorf("deleting offsets of group %q: %w", group, err)
			}
		}
	}
	// The directory goes only empty (a directory has no version: the
	// filer removes it only if nothing was written in it meanwhile).
	if err := s.files.RemoveIf(ctx, s.dir, filerfs.Escape(group), ""); errors.Is(err, filerfs.ErrChanged) {
		return changed("offsets written elsewhere")
	} else if err != nil {
		return fmt.Errorf("deleting offsets of group %q: %w", group, err)
	}
	s.Forget(group)
	return nil
}

// Forget drops what the store holds in memory for the group, so that it is
// read again from the filer next time (another gateway may have written it).
// A group whose writes are still going on is dropped when they are done.
func (s *Store) Forget(group string) {
	s.mu.Lock()
	g := s.groups[group]
	if g == nil {
		s.mu.Unlock()
		return
	}
	g.mu.Lock()
	busy := g.writing
	g.mu.Unlock()
	if !busy {
		delete(s.groups, group)
	}
	s.mu.Unlock()
	if busy {
		g.forgotten.Store(true)
	}
}
