package telemetry

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The configs of a client-metrics resource (a subscription), as Kafka
// names them.
const (
	// MetricsConfig is the list of metric name prefixes the subscription
	// asks for ("*" is every metric; empty, none).
	MetricsConfig = "metrics"
	// IntervalConfig is how often a matching client pushes, in ms.
	IntervalConfig = "interval.ms"
	// MatchConfig is the list of key=regex patterns a client must all
	// match (empty: every client).
	MatchConfig = "match"
)

// Kafka's bounds and default of interval.ms.
const (
	DefaultIntervalMs = 5 * 60 * 1000
	MinIntervalMs     = 100
	MaxIntervalMs     = 60 * 60 * 1000
)

// AllMetrics subscribes to every metric.
const AllMetrics = "*"

// The client attributes a match pattern may name.
const (
	ClientInstanceID      = "client_instance_id"
	ClientID              = "client_id"
	ClientSoftwareName    = "client_software_name"
	ClientSoftwareVersion = "client_software_version"
	ClientSourceAddress   = "client_source_address"
	ClientSourcePort      = "client_source_port"
)

var matchKeys = []string{ClientInstanceID, ClientID, ClientSoftwareName, ClientSoftwareVersion, ClientSourceAddress, ClientSourcePort}

// Known reports whether name is a client-metrics config.
func Known(name string) bool {
	return name == MetricsConfig || name == IntervalConfig || name == MatchConfig
}

// IsList reports whether a config is a list (APPEND and SUBTRACT apply).
func IsList(name string) bool { return name == MetricsConfig || name == MatchConfig }

// Defaults are the configs a subscription has when they are not set.
var Defaults = map[string]string{MetricsConfig: "", IntervalConfig: strconv.Itoa(DefaultIntervalMs), MatchConfig: ""}

// UnknownConfig is a config name that is not a client-metrics config
// (INVALID_REQUEST, as Kafka answers).
type UnknownConfig struct{ Names []string }

func (e *UnknownConfig) Error() string {
	return "unknown client metrics configuration: " + strings.Join(e.Names, ", ")
}

// InvalidConfig is a config whose value is not allowed (INVALID_CONFIG).
type InvalidConfig struct{ Reason string }

func (e *InvalidConfig) Error() string { return e.Reason }

// Client is what a subscription's patterns match against: the client's
// attributes as Kafka names them.
type Client struct {
	InstanceID      [16]byte
	ClientID        string
	SoftwareName    string
	SoftwareVersion string
	Address         string
	Port            string
}

// attribute is the client's value of a match key.
func (c Client) attribute(key string) string {
	switch key {
	case ClientInstanceID:
		return InstanceIDString(c.InstanceID)
	case ClientID:
		return c.ClientID
	case ClientSoftwareName:
		return c.SoftwareName
	case ClientSoftwareVersion:
		return c.SoftwareVersion
	case ClientSourceAddress:
		return c.Address
	case ClientSourcePort:
		return c.Port
	}
	return ""
}

// InstanceIDString is a client instance id as Kafka writes a Uuid:
// URL-safe base64 without padding.
func InstanceIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// subscription is a client-metrics resource, parsed.
type subscription struct {
	name     string
	metrics  []string
	interval int32
	match    map[string]*regexp.Regexp
}

// SplitList splits a list config as Kafka does: comma-separated, each
// element trimmed, empty ones dropped.
func SplitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Parse checks a subscription's configs as Kafka's ClientMetricsConfigs
// does and returns it parsed.
func Parse(name string, configs map[string]string) (*subscription, error) {
	if name == "" {
		return nil, &InvalidConfig{"a client metrics subscription needs a name"}
	}
	var unknown []string
	for n := range configs {
		if !Known(n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, &UnknownConfig{unknown}
	}
	s := &subscription{name: name, metrics: SplitList(configs[MetricsConfig]), interval: DefaultIntervalMs, match: map[string]*regexp.Regexp{}}
	if v, ok := configs[IntervalConfig]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || n < MinIntervalMs || n > MaxIntervalMs {
			return nil, &InvalidConfig{fmt.Sprintf("invalid value %s for configuration %s: it must be an integer between %d and %d",
				v, IntervalConfig, MinIntervalMs, MaxIntervalMs)}
		}
		s.interval = int32(n)
	}
	for _, p := range SplitList(configs[MatchConfig]) {
		key, re, ok := strings.Cut(p, "=")
		key, re = strings.TrimSpace(key), strings.TrimSpace(re)
		if !ok || key == "" || re == "" {
			return nil, &InvalidConfig{fmt.Sprintf("illegal client matching pattern %q: it must be key=regex", p)}
		}
		if !slices.Contains(matchKeys, key) {
			return nil, &InvalidConfig{fmt.Sprintf("unknown client matching key %q: it must be one of %s", key, strings.Join(matchKeys, ", "))}
		}
		// A Java Matcher.matches: the whole value.
		r, err := regexp.Compile(`^(?:` + re + `)$`)
		if err != nil {
			return nil, &InvalidConfig{fmt.Sprintf("illegal regular expression in client matching pattern %q: %v", p, err)}
		}
		s.match[key] = r
	}
	return s, nil
}

// matches reports whether every pattern of the subscription matches the
// client.
func (s *subscription) matches(c Client) bool {
	for key, re := range s.match {
		if !re.MatchString(c.attribute(key)) {
			return false
		}
	}
	return true
}
