package share

// Group configs (Kafka's GROUP config resources, set with
// IncrementalAlterConfigs and shown by DescribeConfigs): the settings of a
// share group, and a consumer group's session timeout and heartbeat
// interval (KIP-848). They are kept in the filer, one small JSON file per group,
// so that every gateway reads the same: the one that coordinates the
// group's members and those that lead its partitions.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
)

// ConfigDir holds the groups' configs.
const ConfigDir = "/etc/kafka-gateway/group-configs"

// The group configs served, as Kafka names them.
const (
	AutoOffsetReset   = "share.auto.offset.reset"
	LockDuration      = "share.record.lock.duration.ms"
	DeliveryLimit     = "share.delivery.count.limit"
	IsolationLevel    = "share.isolation.level"
	SessionTimeout    = "share.session.timeout.ms"
	HeartbeatInterval = "share.heartbeat.interval.ms"
	MaxRecordLocks    = "share.partition.max.record.locks"
	// A consumer group's (KIP-848).
	ConsumerSessionTimeout    = "consumer.session.timeout.ms"
	ConsumerHeartbeatInterval = "consumer.heartbeat.interval.ms"
)

// Limits are the gateway's defaults of the group configs and their bounds
// (Kafka's group.share.* broker configs).
type Limits struct {
	LockDuration, MinLockDuration, MaxLockDuration                time.Duration
	SessionTimeout, MinSessionTimeout, MaxSessionTimeout          time.Duration
	HeartbeatInterval, MinHeartbeatInterval, MaxHeartbeatInterval time.Duration
	DeliveryLimit                                                 int16
	MaxRecordLocks                                                int
	// A consumer group's defaults and bounds (Kafka's
	// group.consumer.* broker configs).
	ConsumerSessionTimeout, MinConsumerSessionTimeout, MaxConsumerSessionTimeout          time.Duration
	ConsumerHeartbeatInterval, MinConsumerHeartbeatInterval, MaxConsumerHeartbeatInterval time.Duration
}

// DefaultLimits are Kafka's.
var DefaultLimits = Limits{
	LockDuration: 30 * time.Second, MinLockDuration: 15 * time.Second, MaxLockDuration: time.Minute,
	SessionTimeout: 45 * time.Second, MinSessionTimeout: 45 * time.Second, MaxSessionTimeout: time.Minute,
	HeartbeatInterval: 5 * time.Second, MinHeartbeatInterval: 5 * time.Second, MaxHeartbeatInterval: 15 * time.Second,
	DeliveryLimit: 5, MaxRecordLocks: 2000,
	ConsumerSessionTimeout: 45 * time.Second, MinConsumerSessionTimeout: 45 * time.Second, MaxConsumerSessionTimeout: time.Minute,
	ConsumerHeartbeatInterval: 5 * time.Second, MinConsumerHeartbeatInterval: 5 * time.Second, MaxConsumerHeartbeatInterval: 15 * time.Second,
}

// Settings are a share group's settings in force: its configs, else the
// gateway's defaults.
type Settings struct {
	// Reset is share.auto.offset.reset: where a share-partition starts.
	Reset             Reset
	LockDuration      time.Duration
	DeliveryLimit     int16
	ReadCommitted     bool
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	MaxRecordLocks    int
	// A consumer group's session timeout and heartbeat interval.
	ConsumerSessionTimeout, ConsumerHeartbeatInterval time.Duration
}

// Reset is share.auto.offset.reset.
type Reset struct {
	Earliest bool
	// Before, if not zero, starts at the first record of this long ago
	// (by_duration).
	Before time.Duration
}

// ConfigDefault is one group config with its default, as DescribeConfigs
// shows it.
type ConfigDefault struct {
	Name, Value string
	Sensitive   bool
}

// Defaults lists the group configs and their defaults under l, by name.
func (l Limits) Defaults() []ConfigDefault {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	return []ConfigDefault{
		{Name: AutoOffsetReset, Value: "latest"},
		{Name: DeliveryLimit, Value: strconv.Itoa(int(l.DeliveryLimit))},
		{Name: HeartbeatInterval, Value: ms(l.HeartbeatInterval)},
		{Name: IsolationLevel, Value: "read_uncommitted"},
		{Name: MaxRecordLocks, Value: strconv.Itoa(l.MaxRecordLocks)},
		{Name: LockDuration, Value: ms(l.LockDuration)},
		{Name: SessionTimeout, Value: ms(l.SessionTimeout)},
		{Name: ConsumerHeartbeatInterval, Value: ms(l.ConsumerHeartbeatInterval)},
		{Name: ConsumerSessionTimeout, Value: ms(l.ConsumerSessionTimeout)},
	}
}

// Known reports whether name is a group config served.
func Known(name string) bool {
	switch name {
	case AutoOffsetReset, LockDuration, DeliveryLimit, IsolationLevel, SessionTimeout, HeartbeatInterval, MaxRecordLocks,
		ConsumerSessionTimeout, ConsumerHeartbeatInterval:
		return true
	}
	return false
}

// isoDuration is the by_duration form Kafka takes (java.time.Duration's):
// PnDTnHnMn.nS.
var isoDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

func parseISODuration(s string) (time.Duration, bool) {
	m := isoDuration.FindStringSubmatch(strings.ToUpper(s))
	if m == nil || s == "P" || strings.HasSuffix(strings.ToUpper(s), "T") {
		return 0, false
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute} {
		if m[i+1] != "" {
			n, err := strconv.ParseInt(m[i+1], 10, 64)
			if err != nil {
				return 0, false
			}
			d += time.Duration(n) * unit
		}
	}
	if m[4] != "" {
		f, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return 0, false
		}
		d += time.Duration(f * float64(time.Second))
	}
	return d, true
}

// Check validates a group config's value under l, as Kafka does; the
// error says why it is refused.
func (l Limits) Check(name, value string) error {
	intIn := func(lo, hi int64) error {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%s must be between %d and %d", name, lo, hi)
		}
		return nil
	}
	switch name {
	case AutoOffsetReset:
		if value == "latest" || value == "earliest" {
			return nil
		}
		if d, ok := strings.CutPrefix(value, "by_duration:"); ok {
			if _, ok := parseISODuration(d); ok {
				return nil
			}
		}
		return fmt.Errorf("%s must be latest, earliest or by_duration:<ISO-8601 duration>", name)
	case IsolationLevel:
		if value == "read_uncommitted" || value == "read_committed" {
			return nil
		}
		return fmt.Errorf("%s must be read_uncommitted or read_committed", name)
	case LockDuration:
		return intIn(l.MinLockDuration.Milliseconds(), l.MaxLockDuration.Milliseconds())
	case SessionTimeout:
		return intIn(l.MinSessionTimeout.Milliseconds(), l.MaxSessionTimeout.Milliseconds())
	case HeartbeatInterval:
		return intIn(l.MinHeartbeatInterval.Milliseconds(), l.MaxHeartbeatInterval.Milliseconds())
	case DeliveryLimit:
		return intIn(2, 10)
	case MaxRecordLocks:
		return intIn(100, 10000)
	case ConsumerSessionTimeout:
		return intIn(l.MinConsumerSessionTimeout.Milliseconds(), l.MaxConsumerSessionTimeout.Milliseconds())
	case ConsumerHeartbeatInterval:
		return intIn(l.MinConsumerHeartbeatInterval.Milliseconds(), l.MaxConsumerHeartbeatInterval.Milliseconds())
	}
	return fmt.Errorf("%s is not a group config", name)
}

// Settings are the settings in force given a group's configs.
func (l Limits) Settings(configs map[string]string) Settings {
	s := Settings{LockDuration: l.LockDuration, DeliveryLimit: l.DeliveryLimit, SessionTimeout: l.SessionTimeout,
		HeartbeatInterval: l.HeartbeatInterval, MaxRecordLocks: l.MaxRecordLocks,
		ConsumerSessionTimeout: l.ConsumerSessionTimeout, ConsumerHeartbeatInterval: l.ConsumerHeartbeatInterval}
	ms := func(name string, d *time.Duration) {
		if n, err := strconv.ParseInt(configs[name], 10, 64); err == nil {
			*d = time.Duration(n) * time.Millisecond
		}
	}
	ms(LockDuration, &s.LockDuration)
	ms(SessionTimeout, &s.SessionTimeout)
	ms(HeartbeatInterval, &s.HeartbeatInterval)
	ms(ConsumerSessionTimeout, &s.ConsumerSessionTimeout)
	ms(ConsumerHeartbeatInterval, &s.ConsumerHeartbeatInterval)
	if n, err := strconv.Atoi(configs[DeliveryLimit]); err == nil {
		s.DeliveryLimit = int16(n)
	}
	if n, err := strconv.Atoi(configs[MaxRecordLocks]); err == nil {
		s.MaxRecordLocks = n
	}
	s.ReadCommitted = configs[IsolationLevel] == "read_committed"
	switch v := configs[AutoOffsetReset]; {
	case v == "earliest":
		s.Reset.Earliest = true
	case strings.HasPrefix(v, "by_duration:"):
		s.Reset.Before, _ = parseISODuration(strings.TrimPrefix(v, "by_duration:"))
	}
	return s
}

// configCacheTTL is how long a gateway trusts the group configs it read:
// a change reaches the share-partitions it leads within about this long.
const configCacheTTL = time.Second

// Configs keeps the groups' configs in the filer.
type Configs struct {
	files  filerfs.VersionedFiles
	limits Limits

	mu    sync.Mutex
	cache map[string]cachedConfigs
}

type cachedConfigs struct {
	configs map[string]string
	read    time.Time
}

// NewConfigs returns the groups' configs kept in files.
func NewConfigs(files filerfs.VersionedFiles, limits Limits) *Configs {
	return &Configs{files: files, limits: limits, cache: map[string]cachedConfigs{}}
}

// Limits are the defaults and bounds the configs are checked against.
func (c *Configs) Limits() Limits { return c.limits }

// Get returns a group's configs (those set; none if the group has none),
// from this gateway's copy of the last second unless fresh.
func (c *Configs) Get(ctx context.Context, group string, fresh bool) (map[string]string, error) {
	c.mu.Lock()
	cc, ok := c.cache[group]
	c.mu.Unlock()
	if ok && !fresh && time.Since(cc.read) < configCacheTTL {
		return cc.configs, nil
	}
	configs, _, err := c.read(ctx, group)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.cache) > 10000 { // a bound, not an eviction policy: all are read again
		clear(c.cache)
	}
	c.cache[group] = cachedConfigs{configs: configs, read: time.Now()}
	c.mu.Unlock()
	return configs, nil
}

// Settings are the settings in force for a group.
func (c *Configs) Settings(ctx context.Context, group string, fresh bool) (Settings, error) {
	configs, err := c.Get(ctx, group, fresh)
	if err != nil {
		return Settings{}, err
	}
	return c.limits.Settings(configs), nil
}

func (c *Configs) read(ctx context.Context, group string) (map[string]string, string, error) {
	data, version, err := c.files.ReadFileVersion(ctx, ConfigDir, filerfs.Escape(group))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	configs := map[string]string{}
	if err := json.Unmarshal(data, &configs); err != nil {
		return nil, "", fmt.Errorf("group %s's configs: %w", group, err)
	}
	return configs, version, nil
}

// Groups are the groups that have configs set.
func (c *Configs) Groups(ctx context.Context) ([]string, error) {
	files, err := c.files.ListFiles(ctx, ConfigDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var groups []string
	for _, f := range files {
		if g, ok := filerfs.Unescape(f.Name); ok && !f.Dir {
			groups = append(groups, g)
		}
	}
	return groups, nil
}

// Alter changes a group's configs: change edits them in place (read
// afresh), its error is returned and nothing saved; every value is checked
// against the limits first. Concurrent changes from other gateways are
// not lost: the write is conditional and retried on a fresh read.
func (c *Configs) Alter(ctx context.Context, group string, change func(configs map[string]string) error) error {
	for attempt := 0; ; attempt++ {
		configs, version, err := c.read(ctx, group)
		if err != nil {
			return err
		}
		if err := change(configs); err != nil {
			return err
		}
		for _, name := range slices.Sorted(maps.Keys(configs)) {
			if err := c.limits.Check(name, configs[name]); err != nil {
				return &InvalidConfig{err.Error()}
			}
		}
		var data []byte
		if len(configs) > 0 {
			data, _ = json.Marshal(configs)
		}
		switch {
		case data == nil && version == "":
			err = nil // nothing set, nothing to remove
		case data == nil:
			err = c.files.Remove(ctx, ConfigDir, filerfs.Escape(group))
		default:
			_, err = c.files.WriteFileIf(ctx, ConfigDir, filerfs.Escape(group), data, version)
		}
		if errors.Is(err, filerfs.ErrChanged) && attempt < 5 {
			continue
		}
		if err == nil {
			c.mu.Lock()
			c.cache[group] = cachedConfigs{configs: configs, read: time.Now()}
			c.mu.Unlock()
		}
		return err
	}
}

// Forget drops a deleted group's configs.
func (c *Configs) Forget(ctx context.Context, group string) error {
	c.mu.Lock()
	delete(c.cache, group)
	c.mu.Unlock()
	err := c.files.Remove(ctx, ConfigDir, filerfs.Escape(group))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// InvalidConfig is a config value refused, with Kafka's reason.
type InvalidConfig struct{ Reason string }

func (e *InvalidConfig) Error() string { return e.Reason }
