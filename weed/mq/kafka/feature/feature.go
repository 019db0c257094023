// Package feature keeps the cluster's finalized feature levels (KIP-584),
// which ApiVersions tells clients and UpdateFeatures (kafka-features.sh
// upgrade/downgrade) moves for the whole cluster: transaction.version
// (KIP-890's transactions v2 from 2), group.version (the consumer group
// protocol of KIP-848 from 1), share.version (share groups, KIP-932, from
// 1) and streams.version (Streams groups, KIP-1071, from 1).
//
// The levels are one file in the filer, written with a conditional write
// so that two gateways updating at once cannot lose either update, each
// write one epoch further; every gateway reads it again every
// RefreshEvery, and at once after its own update. Until a first update the
// levels are the gateway's defaults (-transaction.version, 1 for group and
// share groups), at epoch 1.
package feature

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
)

// Dir and File are where the filer keeps the levels.
const (
	Dir  = "/etc/kafka-gateway"
	File = "features.json"
)

// RefreshEvery is how often each gateway reads the levels again.
const RefreshEvery = 2 * time.Second

// The features.
const (
	Transaction = "transaction.version"
	Group       = "group.version"
	Share       = "share.version"
	Streams     = "streams.version"
)

// Range is the levels of a feature the gateways support.
type Range struct{ Min, Max int16 }

// Supported are the features and the levels the gateways serve.
var Supported = map[string]Range{
	Group:       {0, 1},
	Share:       {0, 1},
	Streams:     {0, 1},
	Transaction: {0, 2},
}

// Levels are the finalized levels at an epoch; a feature at level 0 is
// not finalized (off).
type Levels struct {
	Epoch  int64            `json:"epoch"`
	Levels map[string]int16 `json:"levels"`
}

// Level is a feature's finalized level, 0 if it is off.
func (l Levels) Level(name string) int16 { return l.Levels[name] }

// The upgrade types of UpdateFeatures v1+ (v0's allow_downgrade is a safe
// downgrade).
const (
	Upgrade         = 1
	SafeDowngrade   = 2
	UnsafeDowngrade = 3
)

// Update is one feature's change.
type Update struct {
	Feature string
	Level   int16
	Type    int8
}

// Error is an update refused as Kafka refuses it (INVALID_UPDATE_VERSION).
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

// Store keeps the levels.
type Store struct {
	files    filerfs.VersionedFiles
	defaults map[string]int16

	mu     sync.RWMutex
	cur    Levels
	loaded bool

	loop *filerfs.Loop
}

// New returns the store of files, with the levels before any update.
func New(files filerfs.VersionedFiles, defaults map[string]int16) *Store {
	s := &Store{files: files, defaults: maps.Clone(defaults)}
	s.cur = Levels{Epoch: 1, Levels: s.defaults}
	s.loop = filerfs.NewLoop(RefreshEvery, func(ctx context.Context) {
		if err := guard.Try("FeatureRefresh", func() error { return s.Refresh(ctx) }); err != nil {
			glog.V(1).Infof("kafka features: reading %s/%s: %v", Dir, File, err)
		}
	})
	return s
}

// Current returns the finalized levels.
func (s *Store) Current() Levels {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cur
}

// Level is a feature's finalized level.
func (s *Store) Level(name string) int16 { return s.Current().Level(name) }

// read reads the file: the levels and the file's version ("" if there is
// none yet, and the defaults then).
func (s *Store) read(ctx context.Context) (Levels, string, error) {
	data, version, err := s.files.ReadFileVersion(ctx, Dir, File)
	if errors.Is(err, fs.ErrNotExist) {
		return Levels{Epoch: 1, Levels: maps.Clone(s.defaults)}, "", nil
	}
	if err != nil {
		return Levels{}, "", err
	}
	var l Levels
	if err := json.Unmarshal(data, &l); err != nil {
		return Levels{}, "", fmt.Errorf("%s/%s: %w", Dir, File, err)
	}
	if l.Levels == nil {
		l.Levels = map[string]int16{}
	}
	return l, version, nil
}

// Refresh reads the levels from the filer.
func (s *Store) Refresh(ctx context.Context) error {
	l, _, err := s.read(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.cur, s.loaded = l, true
	s.mu.Unlock()
	return nil
}

// Ready reports whether the levels have been read once.
func (s *Store) Ready() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.loaded {
		return errors.New("the finalized features are not read yet")
	}
	return nil
}

// Start reads the levels now and every RefreshEvery, until Close.
func (s *Store) Start() { s.loop.Start() }

// Close stops the refreshes.
func (s *Store) Close() { s.loop.Close() }

// check returns why an update cannot be made on levels, as Kafka's
// controller refuses it, or nil.
func check(l Levels, u Update) error {
	r, ok := Supported[u.Feature]
	if !ok {
		return &Error{fmt.Sprintf("Invalid update version %d for feature %s. The controller does not support the given feature.", u.Level, u.Feature)}
	}
	if u.Level < 0 || (u.Level > 0 && (u.Level < r.Min || u.Level > r.Max)) {
		return &Error{fmt.Sprintf("Invalid update version %d for feature %s. Local controller supports versions %d-%d.", u.Level, u.Feature, r.Min, r.Max)}
	}
	cur := l.Level(u.Feature)
	switch u.Type {
	case Upgrade:
		if u.Level < cur {
			return &Error{fmt.Sprintf("Invalid update version %d for feature %s. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.", u.Level, u.Feature)}
		}
	case SafeDowngrade, UnsafeDowngrade:
		if u.Level > cur {
			return &Error{fmt.Sprintf("Invalid update version %d for feature %s. Can't downgrade to a newer version.", u.Level, u.Feature)}
		}
	default:
		return &Error{fmt.Sprintf("Invalid upgrade type %d for feature %s.", u.Type, u.Feature)}
	}
	return nil
}

// Update makes the updates, all or none (validateOnly: none, once
// checked); it returns the new levels, or an *Error for the first update
// refused. A feature named twice is refused.
func (s *Store) Update(ctx context.Context, updates []Update, validateOnly bool) (Levels, error) {
	names := map[string]bool{}
	for _, u := range updates {
		if names[u.Feature] {
			return Levels{}, &Error{fmt.Sprintf("Feature %s appears more than once in the request.", u.Feature)}
		}
		names[u.Feature] = true
	}
	for try := 0; ; try++ {
		l, version, err := s.read(ctx)
		if err != nil {
			return Levels{}, err
		}
		next := Levels{Epoch: l.Epoch + 1, Levels: maps.Clone(l.Levels)}
		for _, u := range updates {
			if err := check(l, u); err != nil {
				return Levels{}, err
			}
			if u.Level == 0 {
				delete(next.Levels, u.Feature)
			} else {
				next.Levels[u.Feature] = u.Level
			}
		}
		if validateOnly || len(updates) == 0 {
			return l, nil
		}
		data, err := json.Marshal(next)
		if err != nil {
			return Levels{}, err
		}
		_, err = s.files.WriteFileIf(ctx, Dir, File, data, version)
		if errors.Is(err, filerfs.ErrChanged) && try < 10 {
			continue // another gateway updated them: again, from theirs
		}
		if err != nil {
			return Levels{}, err
		}
		s.mu.Lock()
		s.cur, s.loaded = next, true
		s.mu.Unlock()
		return next, nil
	}
}

// Names are the supported features in name order.
func Names() []string { return slices.Sorted(maps.Keys(Supported)) }
