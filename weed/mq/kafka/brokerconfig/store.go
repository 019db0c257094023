// Package brokerconfig keeps the cluster's dynamic broker configs, as
// Kafka's AlterConfigs and IncrementalAlterConfigs set them on BROKER
// resources: the cluster-wide defaults (the resource named "") and each
// gateway's own (the resource named by its node id). They are one file in
// the filer, written with a conditional write so that two gateways
// altering at once lose neither change; every gateway reads it again
// every RefreshEvery, and at once after its own change.
//
// Which names Kafka makes dynamic, their types and which are per-broker
// only are in catalog.go. The log.* ones are the defaults of the topic
// configs they are synonyms of (TopicDefaults): a topic that does not set
// one inherits it, as from a Kafka broker. The others are kept and shown
// but change nothing here (docs/configuration.md names them).
package brokerconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
)

// Dir and File are where the filer keeps the configs.
const (
	Dir  = "/etc/kafka-gateway"
	File = "broker-configs.json"
)

// RefreshEvery is how often each gateway reads the configs again.
const RefreshEvery = 2 * time.Second

// Configs are the dynamic broker configs: the cluster-wide defaults and
// each broker's own, by node id.
type Configs struct {
	Default map[string]string            `json:"default,omitempty"`
	Brokers map[string]map[string]string `json:"brokers,omitempty"`
}

// Of returns a resource's configs: "" the cluster-wide defaults, else a
// broker's by its node id. The map is the store's: not to be changed.
func (c Configs) Of(resource string) map[string]string {
	if resource == "" {
		return c.Default
	}
	return c.Brokers[resource]
}

// Store keeps the configs of one cluster, as read by the gateway of node
// id self.
type Store struct {
	files filerfs.VersionedFiles
	self  string

	mu     sync.RWMutex
	cur    Configs
	topics topicDefaults
	loaded bool

	loop *filerfs.Loop
}

// topicDefaults are the topic configs' defaults the log.* configs give,
// by topic config name, with a version that changes with them.
type topicDefaults struct {
	version uint64
	values  map[string]string
}

// New returns the store of files for the gateway of node id self.
func New(files filerfs.VersionedFiles, self int32) *Store {
	s := &Store{files: files, self: strconv.Itoa(int(self))}
	s.loop = filerfs.NewLoop(RefreshEvery, func(ctx context.Context) {
		if err := guard.Try("BrokerConfigRefresh", func() error { return s.Refresh(ctx) }); err != nil {
			glog.V(1).Infof("kafka broker configs: reading %s/%s: %v", Dir, File, err)
		}
	})
	return s
}

// Start reads the configs now and every RefreshEvery, until Close.
func (s *Store) Start() { s.loop.Start() }

// Close stops the refreshes.
func (s *Store) Close() { s.loop.Close() }

// Current returns the configs as last read. Its maps are the store's:
// not to be changed.
func (s *Store) Current() Configs {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cur
}

// TopicDefaults returns the defaults the dynamic log.* configs give topic
// configs (this gateway's own over the cluster-wide ones), by topic config
// name, and a version that changes whenever they do. The map is the
// store's: not to be changed.
func (s *Store) TopicDefaults() (uint64, map[string]string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.topics.version, s.topics.values
}

// Inherited is where a topic config not set on the topic comes from: the
// value, and whether it is this gateway's own config (else the
// cluster-wide default); ok false if neither sets a synonym of it.
func (s *Store) Inherited(topicConfig string) (value string, perBroker, ok bool) {
	cur := s.Current()
	for _, e := range catalog {
		if e.topic != topicConfig {
			continue
		}
		if v, found := cur.Brokers[s.self][e.Name]; found {
			return v, true, true
		}
		if v, found := cur.Default[e.Name]; found {
			return v, false, true
		}
	}
	return "", false, false
}

func (s *Store) read(ctx context.Context) (Configs, string, error) {
	data, version, err := s.files.ReadFileVersion(ctx, Dir, File)
	if errors.Is(err, fs.ErrNotExist) {
		return Configs{}, "", nil
	}
	if err != nil {
		return Configs{}, "", err
	}
	var c Configs
	if err := json.Unmarshal(data, &c); err != nil {
		return Configs{}, "", fmt.Errorf("%s/%s: %w", Dir, File, err)
	}
	return c, version, nil
}

// Refresh reads the configs from the filer.
func (s *Store) Refresh(ctx context.Context) error {
	c, _, err := s.read(ctx)
	if err != nil {
		return err
	}
	s.set(c)
	return nil
}

// set makes c the configs as read.
func (s *Store) set(c Configs) {
	values := map[string]string{}
	// Kafka's order: a broker's own config over the cluster-wide
	// default.
	for _, e := range catalog {
		if e.topic == "" {
			continue
		}
		if v, ok := c.Brokers[s.self][e.Name]; ok {
			values[e.topic] = v
		} else if v, ok := c.Default[e.Name]; ok {
			values[e.topic] = v
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur, s.loaded = c, true
	if !maps.Equal(values, s.topics.values) {
		s.topics = topicDefaults{version: s.topics.version + 1, values: values}
	}
}

// Ready reports whether the configs have been read once.
func (s *Store) Ready() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.loaded {
		return errors.New("the dynamic broker configs are not read yet")
	}
	return nil
}

// Alter changes a resource's configs ("" the cluster-wide defaults, else
// a broker's node id): change edits them in place (read afresh; an empty
// map to begin with); its error is returned and nothing saved. Every name
// and value left is checked (an *InvalidConfig or *InvalidRequest, as
// Kafka refuses them). validateOnly checks without saving. Concurrent
// changes from other gateways are not lost: the write is conditional and
// retried on a fresh read.
func (s *Store) Alter(ctx context.Context, resource string, validateOnly bool, change func(configs map[string]string) error) error {
	if err := s.CheckResource(resource); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		all, version, err := s.read(ctx)
		if err != nil {
			return err
		}
		configs := maps.Clone(all.Of(resource))
		if configs == nil {
			configs = map[string]string{}
		}
		if err := change(configs); err != nil {
			return err
		}
		if err := Check(resource == "", configs); err != nil {
			return err
		}
		// Passwords (sasl.jaas.config, key store passwords) change
		// nothing here and DescribeConfigs never shows them: only that
		// they are set is kept, not the secret, in a file the filer's
		// HTTP API may serve.
		for name := range configs {
			if e, ok := Lookup(name); ok && e.Type == Password {
				configs[name] = hiddenPassword
			}
		}
		if validateOnly {
			return nil
		}
		if resource == "" {
			all.Default = configs
		} else {
			all.Brokers = maps.Clone(all.Brokers)
			if all.Brokers == nil {
				all.Brokers = map[string]map[string]string{}
			}
			all.Brokers[resource] = configs
			if len(configs) == 0 {
				delete(all.Brokers, resource)
			}
		}
		data, err := json.Marshal(all)
		if err != nil {
			return err
		}
		_, err = s.files.WriteFileIf(ctx, Dir, File, data, version)
		if errors.Is(err, filerfs.ErrChanged) && attempt < 5 {
			continue
		}
		if err == nil {
			s.set(all)
		}
		return err
	}
}

// hiddenPassword is what is kept of a password config's value.
const hiddenPassword = "[hidden]"

// CheckResource refuses a BROKER resource this gateway does not answer
// for, as a Kafka broker refuses it: another broker's id (the client asks
// that broker) or a name that is not a node id.
func (s *Store) CheckResource(resource string) error {
	if resource == "" || resource == s.self {
		return nil
	}
	if _, err := strconv.ParseInt(resource, 10, 32); err != nil {
		return &InvalidRequest{"Node id must be an integer, but it is: " + resource}
	}
	return &InvalidRequest{fmt.Sprintf("Unexpected broker id, expected %s, but received %s", s.self, resource)}
}

// InvalidConfig is a value Kafka refuses with INVALID_CONFIG, and why.
type InvalidConfig struct{ Reason string }

func (e *InvalidConfig) Error() string { return e.Reason }

// InvalidRequest is a change Kafka refuses with INVALID_REQUEST, and why.
type InvalidRequest struct{ Reason string }

func (e *InvalidRequest) Error() string { return e.Reason }
