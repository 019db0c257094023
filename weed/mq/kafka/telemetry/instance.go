package telemetry

import (
	"crypto/rand"
	"encoding/binary"
	"hash/crc32"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// instance is a client instance known to this gateway.
type instance struct {
	client   Client
	version  int // of the subscriptions it was given
	subID    int32
	metrics  []string
	interval time.Duration

	lastGet, lastPush time.Time
	lastErr           *kerr.Error
	terminating       bool
	used              time.Time // the last request, for expiry and eviction

	series map[string]*point
}

// Subscription is a client instance's answer to GetTelemetrySubscriptions.
type Subscription struct {
	InstanceID     [16]byte
	ID             int32
	Metrics        []string
	IntervalMillis int32
}

// Compression types accepted in a push, in the order of preference (as
// Kafka's: zstd, lz4, gzip, snappy).
var AcceptedCompression = []int8{int8(record.CodecZstd), int8(record.CodecLZ4), int8(record.CodecGzip), int8(record.CodecSnappy)}

// Subscribe answers a client's GetTelemetrySubscriptions: a client with no
// instance id (zero) is given a new one.
func (m *Manager) Subscribe(c Client) (Subscription, *kerr.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.opts.Now()
	if c.InstanceID == ([16]byte{}) {
		c.InstanceID = m.newInstanceIDLocked()
	}
	in := m.instanceLocked(c, now)
	// As Kafka's: a request before the interval is throttled, unless the
	// last answer told the client to ask again.
	if now.Sub(maxTime(in.lastGet, in.lastPush)) >= in.interval {
		in.lastGet = now
	} else if in.lastErr != kerr.UnknownSubscriptionID && in.lastErr != kerr.UnsupportedCompressionType {
		return Subscription{}, kerr.ThrottlingQuotaExceeded
	}
	in.lastErr = nil
	return Subscription{InstanceID: c.InstanceID, ID: in.subID, Metrics: slices.Clone(in.metrics),
		IntervalMillis: int32(in.interval / time.Millisecond)}, nil
}

// Push takes a client's PushTelemetry: metrics compressed with codec.
func (m *Manager) Push(c Client, subID int32, terminating bool, codec int8, data []byte) *kerr.Error {
	if c.InstanceID == ([16]byte{}) || c.InstanceID == ([16]byte{15: 1}) {
		return kerr.InvalidRequest // Kafka's reserved ids
	}
	m.mu.Lock()
	now := m.opts.Now()
	in := m.instanceLocked(c, now)
	e := m.checkPushLocked(in, subID, terminating, codec, data, now)
	in.terminating = in.terminating || terminating
	if e != nil {
		in.lastErr = e
		m.mu.Unlock()
		metrics.ClientPushErrors.WithLabelValues(e.Message).Inc()
		return e
	}
	m.mu.Unlock()
	if len(data) == 0 {
		return nil
	}
	raw, err := record.Decompress(record.Codec(codec), nil, data, MaxBytes)
	var pts map[string]*point
	if err == nil {
		pts, err = parse(raw, in.client)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case err == record.ErrTooLarge:
		in.lastErr = kerr.TelemetryTooLarge
	case err != nil:
		in.lastErr = kerr.InvalidRecord
	default:
		in.lastErr = nil
		if m.inst[c.InstanceID] == in { // not forgotten meanwhile
			m.keepLocked(in, pts)
		}
		return nil
	}
	metrics.ClientPushErrors.WithLabelValues(in.lastErr.Message).Inc()
	return in.lastErr
}

func (m *Manager) checkPushLocked(in *instance, subID int32, terminating bool, codec int8, data []byte, now time.Time) *kerr.Error {
	if in.terminating {
		return kerr.InvalidRequest // nothing after a terminating push
	}
	// A push right after a subscription is taken whatever the interval:
	// clients put a jitter on the first.
	if in.lastGet.After(in.lastPush) || now.Sub(in.lastPush) >= in.interval {
		in.lastPush = now
	} else if !terminating {
		return kerr.ThrottlingQuotaExceeded
	}
	switch {
	case subID != in.subID:
		return kerr.UnknownSubscriptionID
	case codec != int8(record.CodecNone) && !slices.Contains(AcceptedCompression, codec):
		return kerr.UnsupportedCompressionType
	case len(data) > MaxBytes:
		return kerr.TelemetryTooLarge
	}
	return nil
}

// instanceLocked is the client's instance, new or given the current
// subscriptions if they changed since.
func (m *Manager) instanceLocked(c Client, now time.Time) *instance {
	in := m.inst[c.InstanceID]
	switch {
	case in == nil:
		if len(m.inst) >= CacheSize {
			m.evictLocked()
		}
		in = &instance{client: c}
		m.inst[c.InstanceID] = in
		metrics.ClientInstances.Set(float64(len(m.inst)))
		m.subscribeLocked(in)
	case in.version != m.version:
		// As Kafka's, the instance begins again on the new subscriptions.
		fresh := &instance{client: in.client, series: in.series}
		*in = *fresh
		m.subscribeLocked(in)
	}
	in.used = now
	return in
}

// subscribeLocked gives the instance the subscriptions it matches.
func (m *Manager) subscribeLocked(in *instance) {
	interval := int32(DefaultIntervalMs)
	set := map[string]bool{}
	all := false
	for _, s := range m.subs {
		if !s.matches(in.client) {
			continue
		}
		for _, p := range s.metrics {
			set[p] = true
			all = all || p == AllMetrics
		}
		interval = min(interval, s.interval)
	}
	names := []string{}
	if all {
		names = []string{AllMetrics}
	} else {
		for p := range set {
			names = append(names, p)
		}
		slices.Sort(names)
	}
	in.version, in.metrics, in.interval = m.version, names, time.Duration(interval)*time.Millisecond
	in.subID = subscriptionID(names, interval, in.client.InstanceID)
}

// subscriptionID is Kafka's: the CRC-32C of the metrics as a Java list
// prints and the interval, XORed with the instance id's Java hash.
func subscriptionID(names []string, interval int32, id [16]byte) int32 {
	s := "[" + strings.Join(names, ", ") + "]" + strconv.Itoa(int(interval))
	crc := crc32.Checksum([]byte(s), crc32.MakeTable(crc32.Castagnoli))
	x := binary.BigEndian.Uint64(id[:8]) ^ binary.BigEndian.Uint64(id[8:])
	return int32(crc) ^ (int32(x>>32) ^ int32(x))
}

// NewInstanceID is a random (version 4) UUID that, as Kafka's
// Uuid.randomUuid, is neither of the reserved ids (0 and 1) nor one whose
// base64 form begins with '-'.
func NewInstanceID() [16]byte {
	for {
		var id [16]byte
		rand.Read(id[:]) //nolint:errcheck // crypto/rand.Read does not fail
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if id[0]>>2 != 62 { // base64url's '-'; the version bits rule out 0 and 1
			return id
		}
	}
}

// newInstanceIDLocked is a new id no known instance has.
func (m *Manager) newInstanceIDLocked() [16]byte {
	for {
		if id := NewInstanceID(); m.inst[id] == nil {
			return id
		}
	}
}

// evictLocked forgets the instance idle longest.
func (m *Manager) evictLocked() {
	var oldest [16]byte
	var at time.Time
	for id, in := range m.inst {
		if at.IsZero() || in.used.Before(at) {
			oldest, at = id, in.used
		}
	}
	m.dropLocked(oldest)
}

func (m *Manager) dropLocked(id [16]byte) {
	if in, ok := m.inst[id]; ok {
		m.series -= len(in.series)
		delete(m.inst, id)
		metrics.ClientInstances.Set(float64(len(m.inst)))
	}
}

// expire forgets the instances idle for three push intervals (at least
// MinExpiry).
func (m *Manager) expire() {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.opts.Now()
	for id, in := range m.inst {
		if now.Sub(in.used) > max(MinExpiry, 3*in.interval) {
			m.dropLocked(id)
		}
	}
}

// keepLocked makes pts the instance's series, within the bounds.
func (m *Manager) keepLocked(in *instance, pts map[string]*point) {
	m.series -= len(in.series)
	room := min(MaxSeriesPerClient, MaxSeries-m.series)
	if len(pts) > room {
		keys := slices.Sorted(maps.Keys(pts))
		for _, k := range keys[max(room, 0):] {
			delete(pts, k)
		}
		metrics.ClientSeriesDropped.Add(float64(len(keys) - max(room, 0)))
	}
	in.series = pts
	m.series += len(pts)
	metrics.ClientPushes.Inc()
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
