// Package quota keeps the cluster's client quotas (KIP-13, KIP-55,
// KIP-546) and measures clients against them, as Kafka's
// ClientQuotaManager does: quotas are set for users, client ids and their
// defaults (and for IP addresses, connection_creation_rate), kept in the
// SeaweedFS filer and shared by every gateway; each gateway measures the
// bytes a client produces and fetches over a window of samples and, when
// the rate exceeds the quota, answers how long the client is throttled
// (KIP-219: the response's throttle_time_ms, the connection muted that
// long).
//
// Which quota applies to a request of user U and client id C is Kafka's
// precedence, the first entity with the key set:
//
//	user=U,client-id=C   user=U,client-id=<default>   user=U
//	user=<default>,client-id=C   user=<default>,client-id=<default>   user=<default>
//	client-id=C   client-id=<default>
//
// and the rate is measured per entity the quota belongs to, with the
// defaults standing for each user or client id: a quota of user=U is
// shared by all of U's clients, one of user=<default> is each user's own.
//
// As in Kafka, each gateway measures what it serves itself (a Kafka
// broker's quotas are per broker): a client spread over n gateways may
// reach n times its quota in all.
//
// Layout, under Dir:
//
//	<sha256 of the entity>.json   one entity's quotas
//
// Every gateway reads the directory again every RefreshEvery, and at once
// after its own changes.
package quota

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// Dir is where the filer keeps the quotas.
const Dir = "/etc/kafka-gateway/quotas"

// RefreshEvery is how often each gateway reads the quotas again.
const RefreshEvery = 2 * time.Second

// Kafka's defaults of quota.window.num and quota.window.size.seconds.
const (
	DefaultSamples = 11
	DefaultWindow  = time.Second
)

// Options configure a Store.
type Options struct {
	Files filerfs.Files
	// Samples and Window are quota.window.num and
	// quota.window.size.seconds: a rate is measured over Samples windows
	// of Window (DefaultSamples and DefaultWindow when 0).
	Samples int
	Window  time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Store keeps the quotas and the clients' rates.
type Store struct {
	opts Options

	mu      sync.RWMutex
	entries map[string]Entry // by key()
	loaded  bool

	// write orders this gateway's changes of an entity's file.
	write sync.Mutex

	ratesMu sync.Mutex
	rates   map[string]*rate

	stop, done chan struct{}
	startOnce  sync.Once
	stopOnce   sync.Once
}

// New returns a store of opts.
func New(opts Options) *Store {
	if opts.Samples <= 0 {
		opts.Samples = DefaultSamples
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{opts: opts, entries: map[string]Entry{}, rates: map[string]*rate{},
		stop: make(chan struct{}), done: make(chan struct{})}
}

// Start reads the quotas now and every RefreshEvery until Close, and drops
// the rates of clients gone quiet.
func (s *Store) Start() {
	s.startOnce.Do(func() {
		go func() {
			defer close(s.done)
			t := time.NewTicker(RefreshEvery)
			defer t.Stop()
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := metrics.Try("QuotaRefresh", func() error { return s.Refresh(ctx) }); err != nil {
					glog.V(1).Infof("kafka quotas: reading %s: %v", Dir, err)
				}
				cancel()
				s.dropQuiet()
				select {
				case <-s.stop:
					return
				case <-t.C:
				}
			}
		}()
	})
}

// Close stops the refreshes.
func (s *Store) Close() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.startOnce.Do(func() { close(s.done) })
	<-s.done
}

// Ready reports whether the quotas have been read once.
func (s *Store) Ready() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.loaded {
		return errors.New("the client quotas are not read yet")
	}
	return nil
}

// Refresh reads the quotas from the filer.
func (s *Store) Refresh(ctx context.Context) error {
	files, err := s.opts.Files.ListFiles(ctx, Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	entries := map[string]Entry{}
	for _, f := range files {
		if f.Dir || !strings.HasSuffix(f.Name, ".json") {
			continue
		}
		var e Entry
		if err := json.Unmarshal(f.Data, &e); err != nil || e.Entity.Validate() != "" {
			glog.Warningf("kafka quotas: ignoring unreadable %s/%s", Dir, f.Name)
			continue
		}
		entries[e.Entity.key()] = e
	}
	s.mu.Lock()
	s.entries, s.loaded = entries, true
	s.mu.Unlock()
	return nil
}

// Describe returns the entries the filter selects.
func (s *Store) Describe(fs []Filter, strict bool) []Entry {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Entry
	for _, e := range s.entries {
		if matches(fs, strict, e.Entity) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Entity.String(), b.Entity.String()) })
	return out
}

// Alter makes the ops on the entity's quotas in one write; both must have
// been validated. An entity left without quotas is removed.
func (s *Store) Alter(ctx context.Context, e Entity, ops []Op) error {
	if s == nil {
		return errors.New("this gateway keeps no client quotas")
	}
	s.write.Lock()
	defer s.write.Unlock()
	e = e.Sorted()
	name := e.key()
	entry := Entry{Entity: e, Values: map[string]float64{}}
	data, err := s.opts.Files.ReadFile(ctx, Dir, name)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &entry); err != nil {
			return fmt.Errorf("quotas of %s: unreadable file: %w", e, err)
		}
		if entry.Values == nil {
			entry.Values = map[string]float64{}
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	for _, op := range ops {
		if op.Remove {
			delete(entry.Values, op.Key)
		} else {
			entry.Values[op.Key] = op.Value
		}
	}
	if len(entry.Values) == 0 {
		if err := s.opts.Files.Remove(ctx, Dir, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	} else {
		data, err := json.Marshal(entry)
		if err != nil {
			return err
		}
		if err := s.opts.Files.WriteFile(ctx, Dir, name, data); err != nil {
			return err
		}
	}
	s.mu.Lock()
	if len(entry.Values) == 0 {
		delete(s.entries, name)
	} else {
		s.entries[name] = entry
	}
	s.mu.Unlock()
	return nil
}

// UserName is the user a principal is for quotas: its name ("User:alice"
// is alice).
func UserName(principal string) string {
	if _, name, ok := strings.Cut(principal, ":"); ok {
		return name
	}
	return principal
}

// Quota returns the quota of key that applies to user and client id, by
// Kafka's precedence, and the entity it is measured for.
func (s *Store) Quota(key, user, clientID string) (float64, string, bool) {
	if s == nil {
		return 0, "", false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.entries) == 0 {
		return 0, "", false
	}
	name := func(n string) *string { return &n }
	type level struct {
		entity  Entity
		measure string
	}
	u, c := Component{Type: User, Name: name(user)}, Component{Type: ClientID, Name: name(clientID)}
	du, dc := Component{Type: User}, Component{Type: ClientID}
	ub, cb := "user="+user, "client-id="+clientID
	levels := []level{
		{Entity{c, u}, ub + "," + cb},
		{Entity{dc, u}, ub + "," + cb},
		{Entity{u}, ub},
		{Entity{c, du}, ub + "," + cb},
		{Entity{dc, du}, ub + "," + cb},
		{Entity{du}, ub},
		{Entity{c}, cb},
		{Entity{dc}, cb},
	}
	for _, l := range levels {
		if e, ok := s.entries[l.entity.key()]; ok {
			if q, ok := e.Values[key]; ok {
				return q, l.measure, true
			}
		}
	}
	return 0, "", false
}

// Record adds bytes to the rate of key's quota that applies to the
// principal and client id, and returns how long the client is throttled:
// 0 within its quota or without one. typ names the quota in the throttle
// metric (produce, fetch).
func (s *Store) Record(key, typ, principal, clientID string, bytes int64) time.Duration {
	if s == nil {
		return 0
	}
	q, measure, ok := s.Quota(key, UserName(principal), clientID)
	if !ok {
		return 0
	}
	now := s.opts.Now()
	s.ratesMu.Lock()
	r := s.rates[key+"|"+measure]
	if r == nil {
		r = &rate{}
		s.rates[key+"|"+measure] = r
	}
	r.record(float64(bytes), now, s.opts.Window, s.opts.Samples)
	observed, window := r.measure(now, s.opts.Window, s.opts.Samples)
	s.ratesMu.Unlock()
	if observed <= q {
		return 0
	}
	throttle := time.Duration((observed - q) / q * float64(window))
	throttle = min(throttle, s.opts.Window*time.Duration(s.opts.Samples))
	metrics.ThrottleSeconds.WithLabelValues(typ, metrics.Principal(principal)).Add(throttle.Seconds())
	return throttle
}

// dropQuiet forgets the rates of clients that recorded nothing for a whole
// window of samples: they measure 0 anyway.
func (s *Store) dropQuiet() {
	now := s.opts.Now()
	s.ratesMu.Lock()
	defer s.ratesMu.Unlock()
	for k, r := range s.rates {
		if now.Sub(r.last) > s.opts.Window*time.Duration(s.opts.Samples) {
			delete(s.rates, k)
		}
	}
}
