package seaweedmq

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/mq/pub_balancer"
	"github.com/seaweedfs/seaweedfs/weed/mq/topic"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/schema_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// ConfigDir holds what Kafka knows of a topic and SeaweedMQ does not (the
// settings made with CreateTopics), one JSON file per topic. It lies outside
// /topics so SeaweedMQ never mistakes it for topic data.
const ConfigDir = "/etc/kafka-gateway/topics"

// topicConfigFile is the content of a topic's file in ConfigDir.
type topicConfigFile struct {
	Configs map[string]string `json:"configs"`
	// Replication is SeaweedFS's replication of the topic's files, as
	// its replication factor maps onto it ("": the cluster's default).
	Replication string `json:"replication,omitempty"`
	// LogStart holds the log start offsets DeleteRecords moved up, by
	// partition: records below are gone for Kafka clients.
	LogStart map[int32]int64 `json:"logStart,omitempty"`
}

// topicEntry is a topic as last read from the filer.
type topicEntry struct {
	// info holds the topic's own settings; infoOf adds what it inherits.
	info storage.TopicInfo
	// inherited is info with the topic configs' defaults of a version
	// of Options.TopicDefaults, once asked for.
	inherited atomic.Pointer[inheritedInfo]
	// parts are the SeaweedMQ partitions in Kafka partition order (by
	// range start), with their leader brokers.
	parts []*mq_pb.BrokerPartitionAssignment
	read  time.Time
	// logStart: log start offsets moved up by DeleteRecords.
	logStart map[int32]int64
	// replicationWant is the replication of the topic's files.
	replicationWant string
	// conf is the topic's SeaweedMQ configuration as read (partitions in
	// the file's order); confVersion and settingsVersion the versions of
	// the two files read (filerfs.VersionedFiles; "" for none), which a
	// change writes over.
	conf                         *mq_pb.ConfigureTopicResponse
	confVersion, settingsVersion string
}

type topicCache struct {
	mu     sync.Mutex
	byName map[string]*topicEntry
	// gen counts the forgets: what was read from the filer before one
	// (it may predate a write) is not cached after it.
	gen uint64
}

func (tc *topicCache) init() { tc.byName = map[string]*topicEntry{} }

func (tc *topicCache) forget(name string) {
	tc.mu.Lock()
	delete(tc.byName, name)
	tc.gen++
	tc.mu.Unlock()
}

// generation is the count of forgets so far, for a read about to begin.
func (tc *topicCache) generation() uint64 {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.gen
}

// topicID derives a stable, non-zero Kafka topic id from the topic's
// namespace and name and the time SeaweedMQ created its partitions: the
// same topic has the same id across restarts and gateways, and a
// re-created topic gets a new one.
func topicID(ns, name string, generation int64) [16]byte {
	sum := sha256.Sum256([]byte(ns + "/" + name + "/" + strconv.FormatInt(generation, 10)))
	var id [16]byte
	copy(id[:], sum[:16])
	id[6] = id[6]&0x0f | 0x80 // UUID version 8 (name-based, custom hash)
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return id
}

// readTopic reads a topic's SeaweedMQ configuration and Kafka settings.
// A name outside Kafka's rule names no topic: it never becomes a path.
func (c *Client) readTopic(ctx context.Context, name string) (*topicEntry, error) {
	if storage.ValidTopicName(name) != nil {
		return nil, kerr.UnknownTopicOrPartition
	}
	data, confVersion, err := c.ReadFileVersion(ctx, topic.Topic{Namespace: c.l.ns, Name: name}.Dir(), filer.TopicConfFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, kerr.UnknownTopicOrPartition
	}
	if err != nil {
		return nil, fmt.Errorf("read topic.conf of %s: %w", name, err)
	}
	conf := &mq_pb.ConfigureTopicResponse{}
	if err := protojson.Unmarshal(data, conf); err != nil {
		return nil, fmt.Errorf("topic.conf of %s: %w", name, err)
	}
	var kconf topicConfigFile
	data, settingsVersion, err := c.ReadFileVersion(ctx, ConfigDir, name+".json")
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read the settings of topic %s: %w", name, err)
	default:
		if err := json.Unmarshal(data, &kconf); err != nil {
			glog.Warningf("kafka topic %s: ignoring unreadable settings file: %v", name, err)
		}
	}
	parts := append([]*mq_pb.BrokerPartitionAssignment(nil), conf.BrokerPartitionAssignments...)
	if len(parts) == 0 {
		return nil, kerr.UnknownTopicOrPartition
	}
	// Kafka partition order: by generation (partitions added to a topic
	// whose first ones were ranges of the ring are a generation of their
	// own), then by range.
	sort.Slice(parts, func(i, j int) bool {
		a, b := parts[i].Partition, parts[j].Partition
		if a.UnixTimeNs != b.UnixTimeNs {
			return a.UnixTimeNs < b.UnixTimeNs
		}
		return a.RangeStart < b.RangeStart
	})
	e := &topicEntry{parts: parts, read: time.Now(), logStart: kconf.LogStart, replicationWant: kconf.Replication,
		conf: conf, confVersion: confVersion, settingsVersion: settingsVersion}
	e.info = storage.TopicInfo{
		Name:              name,
		ID:                topicID(c.l.ns, name, parts[0].Partition.UnixTimeNs),
		Partitions:        int32(len(parts)),
		ReplicationFactor: c.replicationFactor(kconf.Replication),
		Configs:           kconf.Configs,
	}
	return e, nil
}

// How long a topic's read may take: one the cache knows is then served
// from it; another fails (SeaweedFS unavailable).
const (
	topicRefreshTimeout = 2 * time.Second
	topicReadTimeout    = 5 * time.Second
)

// topic returns a topic's entry, from the cache while it is fresh. When
// the filer cannot be reached, or does not answer within
// topicRefreshTimeout, a known topic is served from the cache.
func (c *Client) topic(ctx context.Context, name string) (*topicEntry, error) {
	c.topics.mu.Lock()
	e := c.topics.byName[name]
	gen := c.topics.gen
	c.topics.mu.Unlock()
	if e != nil && time.Since(e.read) < c.opts.TopicCacheTTL {
		return e, nil
	}
	// A gateway cut off from SeaweedFS answers from the cache, or with
	// an error, within moments rather than holding its clients' requests
	// for as long as the call hangs.
	timeout := topicReadTimeout
	if e != nil {
		timeout = topicRefreshTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fresh, err := c.readTopic(rctx, name)
	if err != nil {
		if e != nil && (isUnavailable(err) || rctx.Err() != nil && ctx.Err() == nil) {
			return e, nil
		}
		if err == kerr.UnknownTopicOrPartition {
			c.topics.mu.Lock()
			delete(c.topics.byName, name)
			c.topics.mu.Unlock()
		}
		return nil, err
	}
	c.topics.mu.Lock()
	if c.topics.gen == gen {
		c.topics.byName[name] = fresh
	}
	c.topics.mu.Unlock()
	if e != nil && e.info.ID != fresh.info.ID {
		c.parts.closeTopic(name) // re-created around us: old streams are stale
	}
	return fresh, nil
}

// ListTopics lists the topics of the Kafka namespace. The names are
// listed from the filer every time (one call): a topic another gateway
// created a moment ago is in the list, as Kafka's brokers list it once
// created. Only the topics' entries are reused while fresh.
func (c *Client) ListTopics(ctx context.Context) ([]storage.TopicInfo, error) {
	gen := c.topics.generation()
	names, err := c.TopicNames(ctx)
	if err != nil {
		return nil, err
	}
	entries := make(map[string]*topicEntry, len(names))
	c.topics.mu.Lock()
	for _, n := range names {
		if e := c.topics.byName[n]; e != nil && time.Since(e.read) < c.opts.TopicCacheTTL {
			entries[n] = e
		}
	}
	c.topics.mu.Unlock()
	var read []*topicEntry
	for _, n := range names {
		if entries[n] != nil {
			continue
		}
		e, err := c.readTopic(ctx, n)
		if err == kerr.UnknownTopicOrPartition {
			continue // a directory without a topic.conf
		}
		if err != nil {
			return nil, err
		}
		entries[n] = e
		read = append(read, e)
	}
	c.topics.mu.Lock()
	if c.topics.gen == gen {
		// What was read is cached; names no longer listed are gone. A
		// topic changed while listing (a forget meanwhile) leaves the
		// cache as it is: this listing may predate the change.
		for _, e := range read {
			c.topics.byName[e.info.Name] = e
		}
		for n := range c.topics.byName {
			if entries[n] == nil {
				delete(c.topics.byName, n)
			}
		}
	}
	c.topics.mu.Unlock()
	out := make([]storage.TopicInfo, 0, len(entries))
	for _, e := range entries {
		out = append(out, c.infoOf(e))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// TopicNames lists the names of the Kafka namespace's topic directories
// (one filer call; a directory without a topic.conf is not a topic, which
// DescribeTopic tells).
func (c *Client) TopicNames(ctx context.Context) ([]string, error) {
	var names []string
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		return filer_pb.SeaweedList(ctx, fc, c.l.topicsDir(), "", func(entry *filer_pb.Entry, isLast bool) error {
			if entry.IsDirectory {
				names = append(names, entry.Name)
			}
			return nil
		}, "", false, math.MaxInt32)
	})
	if err != nil && !errors.Is(err, filer_pb.ErrNotFound) {
		return nil, err
	}
	return names, nil
}

// DescribeTopic implements storage.Backend.
func (c *Client) DescribeTopic(ctx context.Context, name string) (storage.TopicInfo, error) {
	e, err := c.topic(ctx, name)
	if err != nil {
		return storage.TopicInfo{}, err
	}
	return c.infoOf(e), nil
}

// inheritedInfo is a topic's info with the topic configs' defaults of a
// version of Options.TopicDefaults.
type inheritedInfo struct {
	version uint64
	info    storage.TopicInfo
}

// infoOf is a topic's info as the handlers and this client's own loops
// use it: its settings, and the defaults the dynamic broker configs give
// where it sets none (computed once per version of them).
func (c *Client) infoOf(e *topicEntry) storage.TopicInfo {
	if c.opts.TopicDefaults == nil {
		return e.info
	}
	version, defaults := c.opts.TopicDefaults()
	if len(defaults) == 0 {
		return e.info
	}
	if in := e.inherited.Load(); in != nil && in.version == version {
		return in.info
	}
	info := e.info.WithDefaults(defaults)
	e.inherited.Store(&inheritedInfo{version: version, info: info})
	return info
}

// TopicByID implements storage.Backend.
func (c *Client) TopicByID(ctx context.Context, id [16]byte) (storage.TopicInfo, error) {
	c.topics.mu.Lock()
	for _, e := range c.topics.byName {
		if e.info.ID == id && time.Since(e.read) < c.opts.TopicCacheTTL {
			c.topics.mu.Unlock()
			return c.infoOf(e), nil
		}
	}
	c.topics.mu.Unlock()
	topics, err := c.ListTopics(ctx)
	if err != nil {
		return storage.TopicInfo{}, err
	}
	for _, t := range topics {
		if t.ID == id {
			return t, nil
		}
	}
	return storage.TopicInfo{}, kerr.UnknownTopicID
}

// MaxPartitions is the most partitions a topic may have: the size of
// SeaweedMQ's partition ring, in which each Kafka partition has a slot.
const MaxPartitions = pub_balancer.MaxPartitionCount

// newPartitions returns the SeaweedMQ partitions of Kafka partitions from
// to from+n-1. Kafka partition i is the ring's slot [i, i+1), in the
// topic's one generation (created): its directory depends on its index
// alone, so that partitions added later leave every record where it is.
// No broker leads them: the gateway that leads a partition writes its
// segments (write.go).
func newPartitions(from, n int32, created int64) []*mq_pb.BrokerPartitionAssignment {
	out := make([]*mq_pb.BrokerPartitionAssignment, 0, n)
	for i := from; i < from+n; i++ {
		out = append(out, &mq_pb.BrokerPartitionAssignment{Partition: &schema_pb.Partition{
			RingSize: MaxPartitions, RangeStart: i, RangeStop: i + 1, UnixTimeNs: created,
		}})
	}
	return out
}

// CreatePartitions implements storage.Backend: the new partitions are
// added to the topic's configuration after the others, each in its own
// slot of the ring, so that every record stays where it is. Partitions
// added to a topic whose partitions are ranges of the ring (created by an
// earlier version, or by SeaweedMQ) are a generation of their own.
func (c *Client) CreatePartitions(ctx context.Context, name string, count int32, validateOnly bool) error {
	if count > MaxPartitions {
		return fmt.Errorf("%w: at most %d partitions", kerr.InvalidPartitions, MaxPartitions)
	}
	return c.changeTopic(ctx, name, func(e *topicEntry) error {
		conf := proto.Clone(e.conf).(*mq_pb.ConfigureTopicResponse)
		have := int32(len(conf.BrokerPartitionAssignments))
		if count <= have {
			return fmt.Errorf("%w: the topic has %d partitions", kerr.InvalidPartitions, have)
		}
		if validateOnly {
			return nil
		}
		gen, slots := int64(0), true
		for i, a := range conf.BrokerPartitionAssignments {
			p := a.Partition
			gen = max(gen, p.UnixTimeNs)
			if p.RangeStop-p.RangeStart != 1 || p.RangeStart != int32(i) {
				slots = false
			}
		}
		if !slots {
			// A new generation, in a directory of its own (named to
			// the second).
			gen = max(clock.Now().UnixNano(), gen+int64(time.Second))
		}
		conf.BrokerPartitionAssignments = append(conf.BrokerPartitionAssignments, newPartitions(have, count-have, gen)...)
		if !slots {
			for _, a := range conf.BrokerPartitionAssignments[have:] {
				a.Partition.RangeStart -= have
				a.Partition.RangeStop -= have
			}
		}
		if err := c.writeTopicConf(ctx, name, conf, e.confVersion); err != nil {
			return err
		}
		glog.V(0).Infof("kafka gateway: topic %s has %d partitions (was %d)", name, count, have)
		return nil
	})
}

// writeTopicConf saves a topic's SeaweedMQ configuration (topic.conf, as
// SeaweedFS writes it) over the version read (filerfs.ErrChanged if it
// has another).
func (c *Client) writeTopicConf(ctx context.Context, name string, conf *mq_pb.ConfigureTopicResponse, version string) error {
	var buf bytes.Buffer
	if err := filer.ProtoToText(&buf, conf); err != nil {
		return err
	}
	_, err := c.WriteFileIf(ctx, topic.Topic{Namespace: c.l.ns, Name: name}.Dir(), filer.TopicConfFile, buf.Bytes(), version)
	c.topics.forget(name)
	return err
}

// changeTopic runs change on the topic as read under its lock; change
// writes its files over the versions read. A write that finds a file
// changed since (another gateway's change that outlasted its lock, or a
// lock that expired during this one) leaves it as the other wrote it, and
// change runs again on the topic read again, a few times at most: a
// change that keeps finding the files changed fails rather than asking
// the filer without end.
func (c *Client) changeTopic(ctx context.Context, name string, change func(e *topicEntry) error) error {
	if storage.ValidTopicName(name) != nil {
		return kerr.UnknownTopicOrPartition
	}
	const attempts = 5
	return c.withTopicLock(ctx, name, func() error {
		for range attempts {
			c.topics.forget(name)
			e, err := c.readTopic(ctx, name)
			if err != nil {
				return err
			}
			if err := change(e); !errors.Is(err, filerfs.ErrChanged) {
				return err
			}
			glog.V(0).Infof("kafka topic %s: changed by another gateway during this change; made again on what it wrote", name)
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return fmt.Errorf("topic %s changed by other gateways %d times during this change: %w", name, attempts, filerfs.ErrChanged)
	})
}

// CreateTopic implements storage.Backend: the topic's configuration is
// written to the filer as SeaweedMQ's brokers write it (topic.conf), with
// the Kafka settings beside it; no broker is asked, so a partition costs a
// broker nothing.
func (c *Client) CreateTopic(ctx context.Context, spec storage.TopicSpec) (storage.TopicInfo, error) {
	if err := storage.ValidTopicName(spec.Name); err != nil {
		return storage.TopicInfo{}, err
	}
	if spec.Partitions > MaxPartitions {
		return storage.TopicInfo{}, fmt.Errorf("%w: at most %d partitions", kerr.InvalidPartitions, MaxPartitions)
	}
	exists := func() error {
		c.topics.forget(spec.Name)
		if _, err := c.readTopic(ctx, spec.Name); err == nil {
			return kerr.TopicAlreadyExists
		} else if err != kerr.UnknownTopicOrPartition {
			return err
		}
		return nil
	}
	replication, err := c.replicationOf(ctx, spec.ReplicationFactor)
	if err != nil {
		return storage.TopicInfo{}, err
	}
	if spec.ValidateOnly {
		if err := exists(); err != nil {
			return storage.TopicInfo{}, err
		}
		return storage.TopicInfo{Name: spec.Name, Partitions: spec.Partitions, Configs: spec.Configs,
			ReplicationFactor: c.replicationFactor(replication)}, nil
	}
	// Two gateways creating the topic at once (clients auto-creating it
	// on each) would each write its settings and a configuration of
	// partitions of their own creation time: the last written wins, and
	// what was produced to the other's partitions is lost. One creates it
	// under the topic's lock; its configuration is written only if there
	// is none, for a create that outlasts the lock.
	err = c.withTopicLock(ctx, spec.Name, func() error {
		if err := exists(); err != nil {
			return err
		}
		// The settings are written over those read (a deleted topic's
		// left, or none), so that a create outlasting the lock does not
		// replace another's settings either.
		_, version, err := c.ReadFileVersion(ctx, ConfigDir, spec.Name+".json")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		err = c.saveTopicFile(ctx, spec.Name, topicConfigFile{Configs: spec.Configs, Replication: replication}, version)
		if errors.Is(err, filerfs.ErrChanged) {
			return fmt.Errorf("%w: being created on another gateway", kerr.TopicAlreadyExists)
		}
		if err != nil {
			return err
		}
		conf := &mq_pb.ConfigureTopicResponse{
			BrokerPartitionAssignments: newPartitions(0, spec.Partitions, clock.Now().UnixNano()),
			Retention:                  retention(spec.Configs),
		}
		if err := c.createTopicConf(ctx, spec.Name, conf); err != nil {
			return err
		}
		return nil
	})
	c.topics.forget(spec.Name)
	if err != nil {
		return storage.TopicInfo{}, err
	}
	glog.V(0).Infof("kafka gateway: created topic %s with %d partitions, replication %q", spec.Name, spec.Partitions, replication)
	return c.DescribeTopic(ctx, spec.Name)
}

// createTopicConf writes a new topic's SeaweedMQ configuration
// (topic.conf, as SeaweedFS writes it) if the topic has none:
// TOPIC_ALREADY_EXISTS if it has.
func (c *Client) createTopicConf(ctx context.Context, name string, conf *mq_pb.ConfigureTopicResponse) error {
	var buf bytes.Buffer
	if err := filer.ProtoToText(&buf, conf); err != nil {
		return err
	}
	content := buf.Bytes()
	sum := md5.Sum(content)
	now := clock.Now().Unix()
	return c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		err := createIf(ctx, fc, topic.Topic{Namespace: c.l.ns, Name: name}.Dir(), &filer_pb.Entry{
			Name:       filer.TopicConfFile,
			Attributes: &filer_pb.FuseAttributes{Mtime: now, Crtime: now, FileMode: 0o644, FileSize: uint64(len(content)), Md5: sum[:]},
			Content:    content,
		}, &filer_pb.WriteCondition_Clause{Kind: filer_pb.WriteCondition_IF_NOT_EXISTS})
		switch {
		case errors.Is(err, errPrecondition):
			return kerr.TopicAlreadyExists
		case err != nil:
			return fmt.Errorf("create topic %s: %w", name, err)
		}
		return nil
	})
}

// saveTopicFile writes a topic's Kafka settings over the version read
// (filerfs.ErrChanged if the file has another).
func (c *Client) saveTopicFile(ctx context.Context, name string, file topicConfigFile, version string) error {
	data, err := json.Marshal(file)
	if err != nil {
		return err
	}
	_, err = c.WriteFileIf(ctx, ConfigDir, name+".json", data, version)
	return err
}

// AlterTopicConfigs implements storage.Backend: the topic's settings become
// configs, saved with it; a change of retention.ms (or of cleanup.policy's
// delete) becomes SeaweedMQ's
// retention of the topic (its partitions stay where they are).
func (c *Client) AlterTopicConfigs(ctx context.Context, name string, change func(map[string]string) error) error {
	var before, configs map[string]string
	err := c.changeTopic(ctx, name, func(e *topicEntry) error {
		before, configs = e.info.Configs, maps.Clone(e.info.Configs)
		if configs == nil {
			configs = map[string]string{}
		}
		if err := change(configs); err != nil {
			return err
		}
		return c.saveTopicFile(ctx, name, topicConfigFile{Configs: configs, LogStart: e.logStart, Replication: e.replicationWant}, e.settingsVersion)
	})
	if err != nil {
		return err
	}
	defer c.topics.forget(name)
	if proto.Equal(retention(before), retention(configs)) {
		return nil
	}
	ret := retention(configs)
	if ret == nil {
		ret = &mq_pb.TopicRetention{Enabled: false}
	}
	return c.changeTopic(ctx, name, func(e *topicEntry) error {
		conf := proto.Clone(e.conf).(*mq_pb.ConfigureTopicResponse)
		conf.Retention = ret
		return c.writeTopicConf(ctx, name, conf, e.confVersion)
	})
}

// DeleteRecords implements storage.Backend: the partition's log start
// offset moves up to before (the high watermark if -1), saved with the
// topic's settings so that every gateway and restart honours it. The
// records below are not read any more; SeaweedMQ's retention frees their
// space.
func (c *Client) DeleteRecords(ctx context.Context, name string, index int32, before int64) (int64, error) {
	c.topics.forget(name)
	e, err := c.readTopic(ctx, name)
	if err != nil {
		return -1, err
	}
	if index < 0 || index >= e.info.Partitions {
		return -1, kerr.UnknownTopicOrPartition
	}
	offs, err := c.Offsets(ctx, name, index)
	if err != nil {
		return -1, err
	}
	if before == -1 {
		before = offs.HighWatermark
	}
	if before < 0 || before > offs.HighWatermark {
		return -1, kerr.OffsetOutOfRange
	}
	if before <= offs.LogStart {
		return offs.LogStart, nil
	}
	// Read again under the topic's lock: a log start only moves up, and
	// the settings saved beside it are the current ones.
	err = c.changeTopic(ctx, name, func(fresh *topicEntry) error {
		if fresh.logStart[index] >= before {
			before = fresh.logStart[index]
			return nil
		}
		starts := maps.Clone(fresh.logStart)
		if starts == nil {
			starts = map[int32]int64{}
		}
		starts[index] = before
		return c.saveTopicFile(ctx, name, topicConfigFile{Configs: fresh.info.Configs, LogStart: starts, Replication: fresh.replicationWant}, fresh.settingsVersion)
	})
	if err != nil {
		return -1, err
	}
	c.topics.forget(name)
	glog.V(0).Infof("kafka partition %s/%d: records before offset %d deleted (log start moved up)", name, index, before)
	return before, nil
}

// logStartOf is the log start offset DeleteRecords set for a partition, 0
// if none.
func (c *Client) logStartOf(ctx context.Context, name string, index int32) int64 {
	e, err := c.topic(ctx, name)
	if err != nil {
		return 0
	}
	return e.logStart[index]
}

// retention maps retention.ms to SeaweedMQ's retention, nil when unset.
// A compacted topic without the delete policy keeps its records by time
// (the log cleaner removes only superseded ones).
func retention(configs map[string]string) *mq_pb.TopicRetention {
	v, ok := configs["retention.ms"]
	if !ok {
		return nil
	}
	if storage.Compacted(configs) && !strings.Contains(configs["cleanup.policy"], "delete") {
		return &mq_pb.TopicRetention{Enabled: false}
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		return &mq_pb.TopicRetention{Enabled: false}
	}
	return &mq_pb.TopicRetention{Enabled: true, RetentionSeconds: max(1, ms/1000)}
}

// DeleteTopic implements storage.Backend: SeaweedMQ has no delete call, so
// the topic's directory and settings are removed from the filer after this
// gateway's streams to it are closed. It holds the topic's lock, as its
// changes do: one made meanwhile on another gateway finds the topic gone
// (its write over the version it read is refused) rather than writing
// its settings back.
func (c *Client) DeleteTopic(ctx context.Context, name string) error {
	if storage.ValidTopicName(name) != nil {
		return kerr.UnknownTopicOrPartition
	}
	return c.withTopicLock(ctx, name, func() error { return c.deleteTopic(ctx, name) })
}

func (c *Client) deleteTopic(ctx context.Context, name string) error {
	c.topics.forget(name)
	e, err := c.readTopic(ctx, name)
	if err != nil {
		return err
	}
	var partDirs []string
	for _, a := range e.parts {
		partDirs = append(partDirs, c.partitionDir(name, a))
	}
	c.parts.closeTopic(name)
	dir := topic.Topic{Namespace: c.l.ns, Name: name}.Dir()
	c.segs.forget(dir + "/")
	parent, base := dir[:len(dir)-len(name)-1], name
	err = c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		if err := filer_pb.DoRemove(ctx, fc, parent, base, true, true, true, false, nil); err != nil {
			return err
		}
		err := filer_pb.DoRemove(ctx, fc, c.l.at(ConfigDir), name+".json", true, false, true, false, nil)
		if err != nil && !errors.Is(err, filer_pb.ErrNotFound) {
			glog.V(1).Infof("kafka topic %s: removing settings: %v", name, err)
		}
		// Its partitions' producer states go with it: a topic created
		// again under the name starts without them.
		err = filer_pb.DoRemove(ctx, fc, c.l.at(ProducersDir), name, true, true, true, false, nil)
		if err != nil && !errors.Is(err, filer_pb.ErrNotFound) {
			glog.V(1).Infof("kafka topic %s: removing producer states: %v", name, err)
		}
		return nil
	})
	c.topics.forget(name)
	if err == nil {
		glog.V(0).Infof("kafka gateway: deleted topic %s", name)
		c.removeLeftovers(parent+"/"+base, partDirs)
	}
	return err
}

// removeLeftovers removes, a few seconds after a topic was deleted, the
// partition directories its broker makes again when the closed publish
// streams end (with its offset checkpoint in each): every deleted topic
// left them in the filer for good. Only the deleted topic's own partition
// directories go (named for when it was created), and only holding nothing
// but the checkpoint; the directories above only if empty: a topic created
// again under the name is not touched.
func (c *Client) removeLeftovers(topicDir string, partDirs []string) {
	if len(partDirs) == 0 {
		return
	}
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		for _, wait := range []time.Duration{3 * time.Second, 12 * time.Second, 45 * time.Second} {
			select {
			case <-c.stop:
				return
			case <-time.After(wait):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := guard.Try("TopicLeftovers", func() error {
				return c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
					for _, dir := range partDirs {
						only, err := onlyCheckpoint(ctx, fc, dir)
						if err != nil || !only {
							return err
						}
						if err := removeIfThere(ctx, fc, dir, true); err != nil {
							return err
						}
					}
					for _, dir := range []string{path.Dir(partDirs[0]), topicDir} {
						removeIfThere(ctx, fc, dir, false) //nolint:errcheck // not empty: something else is there
					}
					return nil
				})
			})
			cancel()
			if err != nil {
				glog.V(1).Infof("kafka topic %s: removing what its broker left after the deletion: %v", path.Base(topicDir), err)
			}
		}
	}()
}

// onlyCheckpoint says whether a partition directory holds nothing but the
// broker's offset checkpoint (a missing one holds nothing).
func onlyCheckpoint(ctx context.Context, fc filer_pb.SeaweedFilerClient, dir string) (bool, error) {
	only := true
	err := filer_pb.SeaweedList(ctx, fc, dir, "", func(e *filer_pb.Entry, _ bool) error {
		if e.IsDirectory || e.Name != checkpointFile {
			only = false
		}
		return nil
	}, "", false, 100)
	if errors.Is(err, filer_pb.ErrNotFound) {
		return true, nil
	}
	return only, err
}

// removeIfThere removes a directory (with what it holds if recursive; a
// non-recursive removal of a directory that is not empty fails).
func removeIfThere(ctx context.Context, fc filer_pb.SeaweedFilerClient, dir string, recursive bool) error {
	err := filer_pb.DoRemove(ctx, fc, path.Dir(dir), path.Base(dir), true, recursive, true, false, nil)
	if errors.Is(err, filer_pb.ErrNotFound) || (err != nil && strings.Contains(err.Error(), "not found")) {
		return nil
	}
	return err
}

// topicLockTTL bounds how long a gateway that died holding a topic's
// settings lock keeps the others from changing them.
const topicLockTTL = 10 * time.Second

// withTopicLock runs fn holding the filer lock of a topic's settings, so
// that changes made on several gateways at once read and write them one
// after the other (DeleteRecords and AlterConfigs each rewrite the file).
func (c *Client) withTopicLock(ctx context.Context, name string, fn func() error) error {
	lock := "kafka-topic-settings/" + name
	var token string
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		var err error
		if token, err = c.Lock(ctx, lock, c.opts.WALName, "", topicLockTTL); err == nil {
			break
		}
		if !errors.Is(err, ErrLockHeld) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s settings lock: %w", name, ctx.Err())
		case <-time.After(wait):
		}
	}
	defer func() {
		if err := c.Unlock(context.WithoutCancel(ctx), lock, token); err != nil {
			glog.V(1).Infof("kafka topic %s: releasing the settings lock: %v", name, err)
		}
	}()
	return fn()
}
