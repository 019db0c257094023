// Package quota keeps the cluster's client quotas (KIP-13, KIP-55,
// KIP-546, KIP-599) and measures clients against them, as Kafka's quota
// managers do: quotas are set for users, client ids and their defaults
// (and for IP addresses, connection_creation_rate), kept in the SeaweedFS
// filer and shared by every gateway; each gateway measures the bytes a
// client produces and fetches over a window of samples (Record), and the
// partitions it creates and deletes in a token bucket (Mutate), and
// answers how long a client over its quota is throttled (KIP-219: the
// response's throttle_time_ms, the connection muted that long).
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
// Each gateway measures what it serves, and the gateways share what they
// measure (usage.go): a client spread over n gateways is held to its quota
// in all. request_percentage counts the time the gateway works on a
// client's requests (RecordTime), connection_creation_rate the
// connections an IP opens at one gateway (Connect).
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
	"golang.org/x/sync/semaphore"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
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
	Files filerfs.VersionedFiles
	// Samples and Window are quota.window.num and
	// quota.window.size.seconds: a rate is measured over Samples windows
	// of Window (DefaultSamples and DefaultWindow when 0).
	Samples int
	Window  time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Node names this gateway in the rates the gateways share (UsageDir);
	// "": this gateway measures its clients alone.
	Node string
	// Gateways is the number of gateways in the cluster (1 when nil): a
	// client new to this gateway is held to that part of its quota until
	// the others have had the time to say whether they serve it too.
	Gateways func() int
}

// Store keeps the quotas and the clients' rates.
type Store struct {
	opts Options

	mu      sync.RWMutex
	entries map[ident]Entry
	loaded  bool

	// write orders this gateway's changes of an entity's file, waited
	// for within the caller's context.
	write *semaphore.Weighted

	ratesMu sync.Mutex
	rates   map[Sensor]*rate
	buckets map[Sensor]*bucket // controller_mutation_rate's
	remote  map[Sensor]others  // what the other gateways share
	shares  map[Sensor]float64 // this gateway's share, as of the last read of them

	// Kept by the share loop alone.
	peers     map[string]*peerUsage
	seq       uint64
	published bool

	loop, shareLoop *filerfs.Loop
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
	s := &Store{opts: opts, write: semaphore.NewWeighted(1), entries: map[ident]Entry{}, rates: map[Sensor]*rate{}, buckets: map[Sensor]*bucket{}, peers: map[string]*peerUsage{}}
	s.loop = filerfs.NewLoop(RefreshEvery, func(ctx context.Context) {
		if err := guard.Try("QuotaRefresh", func() error { return s.Refresh(ctx) }); err != nil {
			glog.V(1).Infof("kafka quotas: reading %s: %v", Dir, err)
		}
		s.dropQuiet()
	})
	s.shareLoop = filerfs.NewLoop(ShareEvery, func(ctx context.Context) {
		_ = guard.Try("QuotaShare", func() error { s.share(ctx); return nil })
	})
	return s
}

// Start reads the quotas now and every RefreshEvery until Close, drops
// the rates of clients gone quiet, and shares the rates with the other
// gateways every ShareEvery.
func (s *Store) Start() {
	s.loop.Start()
	s.shareLoop.Start()
}

// Close stops the refreshes and the sharing, and removes this gateway's
// shared rates.
func (s *Store) Close() {
	s.loop.Close()
	s.shareLoop.Close()
	if s.published {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.opts.Files.Remove(ctx, UsageDir, s.usageName())
	}
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
	entries := map[ident]Entry{}
	for _, f := range files {
		if f.Dir || !strings.HasSuffix(f.Name, ".json") {
			continue
		}
		var e Entry
		if err := json.Unmarshal(f.Data, &e); err != nil || e.Entity.Validate() != "" {
			glog.Warningf("kafka quotas: ignoring unreadable %s/%s", Dir, f.Name)
			continue
		}
		entries[e.Entity.ident()] = e
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
	if err := s.write.Acquire(ctx, 1); err != nil {
		return err
	}
	defer s.write.Release(1)
	e = e.Sorted()
	// Written over the file as read: another gateway's change made
	// meanwhile is read, and these ops made again on it.
	for attempt := 1; ; attempt++ {
		entry, err := s.alter(ctx, e, ops)
		if errors.Is(err, filerfs.ErrChanged) && attempt < 5 {
			continue
		}
		if err != nil {
			return err
		}
		s.mu.Lock()
		if len(entry.Values) == 0 {
			delete(s.entries, e.ident())
		} else {
			s.entries[e.ident()] = entry
		}
		s.mu.Unlock()
		return nil
	}
}

func (s *Store) alter(ctx context.Context, e Entity, ops []Op) (Entry, error) {
	name := e.key()
	entry := Entry{Entity: e, Values: map[string]float64{}}
	data, version, err := s.opts.Files.ReadFileVersion(ctx, Dir, name)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &entry); err != nil {
			return entry, fmt.Errorf("quotas of %s: unreadable file: %w", e, err)
		}
		if entry.Values == nil {
			entry.Values = map[string]float64{}
		}
	case !errors.Is(err, fs.ErrNotExist):
		return entry, err
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
			return entry, err
		}
		return entry, nil
	}
	data, err = json.Marshal(entry)
	if err != nil {
		return entry, err
	}
	_, err = s.opts.Files.WriteFileIf(ctx, Dir, name, data, version)
	return entry, err
}

// UserName is the user a principal is for quotas: its name ("User:alice"
// is alice).
func UserName(principal string) string {
	if _, name, ok := strings.Cut(principal, ":"); ok {
		return name
	}
	return principal
}

// Sensor is what a client's rate is measured for: the quota's key and the
// entity the quota belongs to, with a default standing for the client's
// user or client id.
type Sensor struct {
	Key      string `json:"key"`
	User     string `json:"user,omitempty"`
	ClientID string `json:"clientId,omitempty"`
	ByUser   bool   `json:"byUser,omitempty"`
	ByClient bool   `json:"byClient,omitempty"`
	// IP is a connection_creation_rate's IP.
	IP string `json:"ip,omitempty"`
}

func (m Sensor) String() string {
	if m.IP != "" {
		return "ip=" + m.IP
	}
	var parts []string
	if m.ByUser {
		parts = append(parts, "user="+m.User)
	}
	if m.ByClient {
		parts = append(parts, "client-id="+m.ClientID)
	}
	return strings.Join(parts, ",")
}

// Quota returns the quota of key that applies to user and client id, by
// Kafka's precedence, and what it is measured for (the user and client id
// only where the entity has them). It allocates nothing:
// every produce and fetch asks.
func (s *Store) Quota(key, user, clientID string) (float64, Sensor, bool) {
	if s == nil {
		return 0, Sensor{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.entries) == 0 {
		return 0, Sensor{}, false
	}
	const u, c = typeUser, typeClient
	for _, l := range [...]struct {
		has, dflt uint8
	}{
		{u | c, 0}, {u | c, c}, {u, 0},
		{u | c, u}, {u | c, u | c}, {u, u},
		{c, 0}, {c, c},
	} {
		id := ident{has: l.has, dflt: l.dflt}
		if l.has&u != 0 && l.dflt&u == 0 {
			id.user = user
		}
		if l.has&c != 0 && l.dflt&c == 0 {
			id.client = clientID
		}
		if e, ok := s.entries[id]; ok {
			if q, ok := e.Values[key]; ok {
				m := Sensor{Key: key, ByUser: l.has&u != 0, ByClient: l.has&c != 0}
				if m.ByUser {
					m.User = user
				}
				if m.ByClient {
					m.ClientID = clientID
				}
				return q, m, true
			}
		}
	}
	return 0, Sensor{}, false
}

// Record adds bytes to the rate of key's quota that applies to the
// principal and client id, and returns how long the client is throttled:
// 0 within its quota or without one. typ names the quota in the throttle
// metric (produce, fetch). The rate is what the client takes of every
// gateway: this one's and what the others share.
func (s *Store) Record(key, typ, principal, clientID string, bytes int64) time.Duration {
	return s.record(key, typ, principal, clientID, float64(bytes), s.opts.Window*time.Duration(s.opts.Samples))
}

// RecordTime adds the time the gateway worked on a request of the principal
// and client id to their request_percentage's rate, and returns how long
// the client is throttled. As Kafka measures a request thread's time, the
// quota is in percent of one second per second (200: two threads' whole
// time), and a throttle is at most one window.
func (s *Store) RecordTime(principal, clientID string, work time.Duration) time.Duration {
	return s.record(RequestPercentage, "request", principal, clientID, work.Seconds()*100, s.opts.Window)
}

// HasRequestQuota reports whether a request_percentage applies to the
// principal and client id: their requests' time is measured only then.
func (s *Store) HasRequestQuota(principal, clientID string) bool {
	_, _, ok := s.Quota(RequestPercentage, UserName(principal), clientID)
	return ok
}

func (s *Store) record(key, typ, principal, clientID string, v float64, maxThrottle time.Duration) time.Duration {
	if s == nil {
		return 0
	}
	q, sensor, ok := s.Quota(key, UserName(principal), clientID)
	if !ok {
		return 0
	}
	now := s.opts.Now()
	s.ratesMu.Lock()
	r := s.rateOf(sensor)
	r.record(v, now, s.opts.Window, s.opts.Samples)
	observed, window := r.measure(now, s.opts.Window, s.opts.Samples)
	share := q * s.shareLocked(sensor, r, now)
	total := observed + s.remote[sensor].measured
	s.ratesMu.Unlock()
	// Over this gateway's share, or over the quota in all, as the others
	// last said: the shares may add up to more than the whole (the least
	// share each gateway keeps, the others' a round old).
	over := max((observed-share)/share, (total-q)/q)
	if over <= 0 {
		return 0
	}
	throttle := min(time.Duration(over*float64(window)), maxThrottle)
	metrics.ThrottleSeconds.WithLabelValues(typ, metrics.Principal(principal)).Add(throttle.Seconds())
	return throttle
}

// shareLocked is this gateway's share of sensor's quota: as of the last
// read of the others' rates; else, for a client new here, an equal part
// among the gateways until the others have had settle to share what they
// measure of it (each shares every ShareEvery, a new gateway's file counts
// from its second version), so that a client starting on every gateway at
// once does not take its first burst on each; else all of it.
func (s *Store) shareLocked(sensor Sensor, r *rate, now time.Time) float64 {
	if sh, ok := s.shares[sensor]; ok {
		return sh
	}
	remote := s.remote[sensor].avg
	if remote <= 0 && s.opts.Gateways != nil && now.Sub(r.since) < settle {
		if n := s.opts.Gateways(); n > 1 {
			return 1 / float64(n)
		}
	}
	return shareOf(r.average(now, s.opts.Window, s.opts.Samples), remote)
}

// settle is how long after a client's first request on this gateway the
// others' rates of it are known here.
const settle = 3 * ShareEvery

// minShare is the least share of a quota a gateway keeps of a client it
// serves: one the client has just begun to use is not starved while its
// average grows.
const minShare = 0.1

// shareOf is this gateway's share of a client's quota: its part of what the
// gateways serving the client served of it lately (their rates' moving
// averages), all of it while no other gateway serves the client. Split so,
// the quota's bursts are too: a client idle for a window may send a
// window's worth in all, not on each gateway.
func shareOf(local, remote float64) float64 {
	if remote <= 0 {
		return 1
	}
	return max(local/(local+remote), minShare)
}

// Connect counts a connection from ip against its connection_creation_rate
// (KIP-612: ip=<ip>, else ip=<default>, each IP measured on its own) and
// returns 0, or how long the connection is held before it is closed
// unserved: the IP is over its quota, and a refused connection does not
// count. The rate is this gateway's, as each Kafka broker's.
func (s *Store) Connect(ip string) time.Duration {
	if s == nil {
		return 0
	}
	q, ok := s.ipQuota(ip)
	if !ok {
		return 0
	}
	sensor := Sensor{Key: ConnectionCreationRate, IP: ip}
	now := s.opts.Now()
	s.ratesMu.Lock()
	r := s.rateOf(sensor)
	r.record(1, now, s.opts.Window, s.opts.Samples)
	observed, window := r.measure(now, s.opts.Window, s.opts.Samples)
	if observed > q {
		r.record(-1, now, s.opts.Window, s.opts.Samples)
	}
	s.ratesMu.Unlock()
	if observed <= q {
		return 0
	}
	throttle := min(time.Duration((observed-q)/q*float64(window)), s.opts.Window*time.Duration(s.opts.Samples))
	metrics.ThrottleSeconds.WithLabelValues("connection_creation", "").Add(throttle.Seconds())
	return throttle
}

// rateOf returns a sensor's rate, a new one if it has none. s.ratesMu is
// held.
func (s *Store) rateOf(sensor Sensor) *rate {
	r := s.rates[sensor]
	if r == nil {
		r = &rate{since: s.opts.Now()}
		s.rates[sensor] = r
	}
	return r
}

// ipQuota is the connection_creation_rate of ip, or of the default IP.
func (s *Store) ipQuota(ip string) (float64, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, id := range [...]ident{{has: typeIP, ip: ip}, {has: typeIP, dflt: typeIP}} {
		if e, ok := s.entries[id]; ok {
			if q, ok := e.Values[ConnectionCreationRate]; ok {
				return q, true
			}
		}
	}
	return 0, false
}

// Mutate takes n controller mutations (partitions created or deleted,
// KIP-599) from the client's controller_mutation_rate, a token bucket as
// Kafka's: it holds a whole window of samples' worth at most, refills at
// the quota's rate, and may go below 0. Strict (CreateTopics v6+,
// CreatePartitions v3+, DeleteTopics v5+): a bucket already below 0
// refuses the mutation (ok false: THROTTLING_QUOTA_EXCEEDED) with the time
// until it is back at 0; otherwise the mutation is taken. Permissive (older
// versions): always taken, with the time until the bucket is back at 0 as
// the throttle.
func (s *Store) Mutate(principal, clientID string, n int, strict bool) (ok bool, throttle time.Duration) {
	if s == nil {
		return true, 0
	}
	q, sensor, found := s.Quota(ControllerMutationRate, UserName(principal), clientID)
	if !found {
		return true, 0
	}
	now := s.opts.Now()
	burst := q * (s.opts.Window * time.Duration(s.opts.Samples)).Seconds()
	owed := func(tokens float64) time.Duration { return time.Duration(-tokens / q * float64(time.Second)) }
	s.ratesMu.Lock()
	b := s.buckets[sensor]
	if b == nil {
		b = &bucket{tokens: burst, last: now}
		s.buckets[sensor] = b
	}
	b.tokens = min(burst, b.tokens+q*now.Sub(b.last).Seconds())
	b.rate, b.burst, b.last = q, burst, now
	ok = true
	switch {
	case strict && b.tokens < 0:
		ok, throttle = false, owed(b.tokens)
	default:
		b.tokens = min(burst, b.tokens-float64(n))
		if !strict && b.tokens < 0 {
			throttle = owed(b.tokens)
		}
	}
	s.ratesMu.Unlock()
	if throttle > 0 {
		metrics.ThrottleSeconds.WithLabelValues("controller_mutation", metrics.Principal(principal)).Add(throttle.Seconds())
	}
	return ok, throttle
}

// bucket is a client's controller mutation tokens, refilled at rate up to
// burst.
type bucket struct {
	tokens, rate, burst float64
	last                time.Time
}

// quietFor is how long a client records nothing before its rate is
// forgotten: three whole windows of samples, when its rate measures 0 and
// its average has fallen to a twentieth (the gateways' shares of its
// quota are kept that long: a client throttled for a whole window keeps
// them).
func (s *Store) quietFor() time.Duration {
	return 3 * s.opts.Window * time.Duration(s.opts.Samples)
}

// dropQuiet forgets the rates of clients quiet for quietFor, and the
// buckets that have refilled whole since their last mutation.
func (s *Store) dropQuiet() {
	now := s.opts.Now()
	quiet := s.quietFor()
	s.ratesMu.Lock()
	defer s.ratesMu.Unlock()
	for k, r := range s.rates {
		if now.Sub(r.last) > quiet {
			delete(s.rates, k)
		}
	}
	for k, b := range s.buckets {
		if b.tokens+b.rate*now.Sub(b.last).Seconds() >= b.burst {
			delete(s.buckets, k) // full again: as a new one
		}
	}
}
