// Package telemetry serves client metrics (KIP-714): the cluster's
// client-metrics subscriptions (config resources named by the operator,
// each with the metric prefixes it asks for, a push interval and patterns
// a client must match), the subscription each client instance is given
// (GetTelemetrySubscriptions), and the metrics clients push (PushTelemetry,
// OpenTelemetry MetricsData), which a Kafka broker only hands to a plugin
// and which this package serves on the gateway's /metrics with the
// client's labels.
//
// A client instance is answered as Kafka's ClientMetricsManager answers
// it: the metrics of every subscription it matches, the shortest of their
// intervals (5 minutes if none), a subscription id that changes when
// those do, THROTTLING_QUOTA_EXCEEDED for a request before its interval,
// UNKNOWN_SUBSCRIPTION_ID for a push of an older subscription, and
// TELEMETRY_TOO_LARGE for a push of more than MaxBytes. Clients are asked
// for cumulative sums (not Kafka's delta temporality), what Prometheus
// shows as counters.
//
// Bounded: at most CacheSize client instances are known (Kafka's 16384;
// the one idle longest is forgotten first), each forgotten after three
// push intervals (at least a minute) without a request; at most
// MaxSeriesPerClient series of one client and MaxSeries in all are kept,
// the rest dropped and counted.
//
// Layout, under Dir:
//
//	<escaped name>   one subscription's configs (JSON)
//
// Every gateway reads the directory again every RefreshEvery, and at once
// after its own changes. Client instances and their metrics are each
// gateway's own: a client pushes to one gateway at a time.
package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/sync/semaphore"
	"io/fs"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
)

// Dir is where the filer keeps the subscriptions.
const Dir = "/etc/kafka-gateway/client-metrics"

// RefreshEvery is how often each gateway reads the subscriptions again.
const RefreshEvery = 2 * time.Second

// Bounds, each with its reason.
const (
	// MaxBytes is client.telemetry.max.bytes: the largest push accepted
	// (Kafka's default, 1 MiB), compressed or not.
	MaxBytes = 1 << 20
	// CacheSize bounds the client instances known, as Kafka's.
	CacheSize = 16384
	// MinExpiry is the least time an idle instance is kept (Kafka's).
	MinExpiry = time.Minute
	// MaxSeriesPerClient and MaxSeries bound the pushed series kept: a
	// Java producer of a few topics pushes about a hundred.
	MaxSeriesPerClient = 2000
	MaxSeries          = 100_000
)

// Options configure a Manager.
type Options struct {
	Files filerfs.VersionedFiles
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Manager keeps the subscriptions, the client instances and their
// metrics.
type Manager struct {
	opts Options

	mu      sync.Mutex
	configs map[string]map[string]string
	subs    []*subscription
	version int // bumped when the subscriptions change
	loaded  bool

	inst   map[[16]byte]*instance
	series int // kept in all instances

	write *semaphore.Weighted // orders this gateway's writes, waited for within the caller's context

	loop *filerfs.Loop
}

// New returns a manager of opts.
func New(opts Options) *Manager {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Manager{opts: opts, write: semaphore.NewWeighted(1), configs: map[string]map[string]string{}, inst: map[[16]byte]*instance{}}
	m.loop = filerfs.NewLoop(RefreshEvery, func(ctx context.Context) {
		if err := guard.Try("ClientMetricsRefresh", func() error { return m.Refresh(ctx) }); err != nil {
			glog.V(1).Infof("kafka client metrics: reading %s: %v", Dir, err)
		}
		m.expire()
	})
	return m
}

// Start reads the subscriptions now and every RefreshEvery until Close,
// and forgets idle client instances.
func (m *Manager) Start() { m.loop.Start() }

// Close stops the refreshes.
func (m *Manager) Close() { m.loop.Close() }

// Refresh reads the subscriptions from the filer.
func (m *Manager) Refresh(ctx context.Context) error {
	files, err := m.opts.Files.ListFiles(ctx, Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	configs := map[string]map[string]string{}
	for _, f := range files {
		name, ok := filerfs.Unescape(f.Name)
		if f.Dir || !ok {
			continue
		}
		var c map[string]string
		if err := json.Unmarshal(f.Data, &c); err != nil {
			glog.Warningf("kafka client metrics: ignoring unreadable %s/%s", Dir, f.Name)
			continue
		}
		configs[name] = c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loaded = true
	m.setLocked(configs)
	return nil
}

// setLocked makes configs the subscriptions, a new version if they
// changed.
func (m *Manager) setLocked(configs map[string]map[string]string) {
	if maps.EqualFunc(configs, m.configs, maps.Equal) {
		return
	}
	var subs []*subscription
	for name, c := range configs {
		s, err := Parse(name, c)
		if err != nil {
			glog.Warningf("kafka client metrics: ignoring subscription %s: %v", name, err)
			continue
		}
		subs = append(subs, s)
	}
	m.configs, m.subs = configs, subs
	m.version++
}

// Ready reports whether the subscriptions have been read once.
func (m *Manager) Ready() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.loaded {
		return errors.New("the client metrics subscriptions are not read yet")
	}
	return nil
}

// Names are the subscriptions' names, sorted.
func (m *Manager) Names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.configs))
}

// Configs are the configs set for a subscription (empty if there is
// none of that name).
func (m *Manager) Configs(name string) map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.configs[name])
}

// Alter changes a subscription's configs with change, checks them and,
// unless validateOnly, saves them: a subscription left with no config is
// removed. The errors of the checks are *UnknownConfig and
// *InvalidConfig, and change's own.
func (m *Manager) Alter(ctx context.Context, name string, validateOnly bool, change func(map[string]string) error) error {
	if err := m.write.Acquire(ctx, 1); err != nil {
		return err
	}
	defer m.write.Release(1)
	if name == "" {
		return &InvalidConfig{"a client metrics subscription needs a name"}
	}
	// Written over the file as read: another gateway's change made
	// meanwhile is read, and this change made again on it.
	for attempt := 1; ; attempt++ {
		configs, err := m.alter(ctx, name, validateOnly, change)
		if errors.Is(err, filerfs.ErrChanged) && attempt < 5 {
			continue
		}
		if err != nil || validateOnly {
			return err
		}
		m.saved(name, configs)
		return nil
	}
}

func (m *Manager) alter(ctx context.Context, name string, validateOnly bool, change func(map[string]string) error) (map[string]string, error) {
	file := filerfs.Escape(name)
	configs := map[string]string{}
	data, version, err := m.opts.Files.ReadFileVersion(ctx, Dir, file)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &configs); err != nil {
			return nil, fmt.Errorf("client metrics subscription %s: unreadable file: %w", name, err)
		}
		if configs == nil {
			configs = map[string]string{}
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	if err := change(configs); err != nil {
		return nil, err
	}
	if _, err := Parse(name, configs); err != nil {
		return nil, err
	}
	if validateOnly {
		return configs, nil
	}
	if len(configs) == 0 {
		if err := m.opts.Files.Remove(ctx, Dir, file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return configs, nil
	}
	data, err = json.Marshal(configs)
	if err != nil {
		return nil, err
	}
	_, err = m.opts.Files.WriteFileIf(ctx, Dir, file, data, version)
	return configs, err
}

// saved takes a subscription's configs as saved (none: removed).
func (m *Manager) saved(name string, configs map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := maps.Clone(m.configs)
	if len(configs) == 0 {
		delete(all, name)
	} else {
		all[name] = configs
	}
	m.setLocked(all)
}
