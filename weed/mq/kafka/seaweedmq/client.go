// Package seaweedmq is the gateway's SeaweedMQ backend: it finds the
// cluster's filers through the masters, keeps Kafka topics as SeaweedMQ
// topics in one namespace (topic.conf, partition directories and log
// segments in the broker's format), and is the one writer of the
// partitions this gateway leads: it gives their offsets, logs their
// batches in its write-ahead log and writes their log segments itself, so
// that no MQ broker is on a Kafka record's way (see write.go).
package seaweedmq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/seaweedfs/seaweedfs/weed/cluster"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/master_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/wal"
)

// Options configure a Client.
type Options struct {
	Masters    []pb.ServerAddress
	FilerGroup string
	// Cluster names the Kafka cluster among those the filer holds (""
	// the default; see layout.go).
	Cluster string
	// Security is what the calls to SeaweedFS carry (security.toml).
	Security Security
	// VolumeAccess is how volume servers are reached: AccessDirect
	// (""), AccessPublicURL or AccessFilerProxy.
	VolumeAccess string
	// Spread is where a topic's copies go (Spread*: "" is server), and
	// DefaultReplicationFactor the copies of a topic created with the
	// default factor (-1 or 0: the cluster's default replication); see
	// replication.go.
	Spread                   string
	DefaultReplicationFactor int16
	// TopicCacheTTL bounds how stale a topic list may be when topics are
	// created or deleted around this gateway.
	TopicCacheTTL time.Duration
	// WALName names this gateway's write-ahead log (wal.Dir/<name>); it
	// must be the gateway's own among the cluster's gateways and the
	// same across its restarts (the node id).
	WALName string
	// Term returns the term in which this gateway leads a partition (0
	// if it does not, or nobody says): each batch carries it into the
	// write-ahead log (see wal_format.go). It may be set after New, with
	// SetTerm, before the first write.
	Term func(topic string, partition int32) int64
	// TopicDefaults, if set, returns the topic configs' defaults that
	// the dynamic broker configs give (by topic config name) and a
	// version that changes with them: topics that set none of those
	// inherit them (package brokerconfig).
	TopicDefaults func() (uint64, map[string]string)
}

// SetTerm sets Options.Term: the membership that knows the terms is made
// after the client it reads its files through.
func (c *Client) SetTerm(fn func(topic string, partition int32) int64) { c.opts.Term = fn }

// SetTopicDefaults sets Options.TopicDefaults, before the client is used.
func (c *Client) SetTopicDefaults(fn func() (uint64, map[string]string)) { c.opts.TopicDefaults = fn }

// ErrUnavailable wraps failures to reach the cluster.
var ErrUnavailable = errors.New("seaweedfs cluster unavailable")

// Client talks to one SeaweedFS cluster.
type Client struct {
	opts Options
	l    layout // where the cluster's files are

	mu    sync.Mutex
	filer pb.ServerAddress // current filer ("" until discovered)
	// filerChecked: the filer checks the conditions of the gateway's
	// writes (checkFiler, on checkTurn: one probe at a time).
	filerChecked atomic.Bool
	checkTurn    turn

	topics topicCache
	parts  partitions
	segs   segmentStore
	vols   volumes
	view   clusterView
	pids   producerIDs
	// segWrites makes the last check and the entry's update of a
	// segment write one step among this gateway's writes to a
	// partition's directory (a released partition's tail, the
	// recovery of its next term), by the directory's hash.
	segWrites [64]turn
	// beforeSegmentSave, if set, runs between a segment file's lookup and
	// its update (tests: another gateway's write landing there).
	beforeSegmentSave func()

	wal       *wal.Log
	walReader *wal.Reader
	// logBatch hands a batch to the write-ahead log (wal.Add; a fake in
	// tests of the write path).
	logBatch func(wal.Batch, func(error))
	flusher  *flusher
	// background tracks the cleanups under way; Close waits.
	background sync.WaitGroup

	stop chan struct{} // ends saveLoop
	// cleanerWake asks the log cleaner for a round (wakeCleaner).
	cleanerWake chan struct{}
	stopped     chan struct{}
	closeOnce   sync.Once
}

// New returns a client of the cluster at opts.Masters. It connects lazily.
func New(opts Options) *Client {
	if opts.Security.DialOption == nil {
		opts.Security.DialOption = grpc.WithTransportCredentials(insecure.NewCredentials())
	}
	if opts.DefaultReplicationFactor == 0 {
		opts.DefaultReplicationFactor = -1
	}
	if opts.TopicCacheTTL <= 0 {
		opts.TopicCacheTTL = 2 * time.Second
	}
	if opts.WALName == "" {
		opts.WALName = "default"
	}
	c := &Client{opts: opts, l: newLayout(opts.Cluster), stop: make(chan struct{}), stopped: make(chan struct{}), cleanerWake: make(chan struct{}, 1)}
	c.topics.init()
	c.parts.init()
	c.segs.init()
	store := &walStore{c: c}
	c.wal = wal.New(wal.Options{Store: store, Name: opts.WALName, Covered: c.walCovered})
	c.walReader = wal.NewReader(store)
	c.logBatch = c.wal.Add
	c.wal.Start()
	c.flusher = newFlusher(c)
	go c.flusher.loop()
	go c.saveLoop()
	return c
}

// saveLoop saves the partitions' changed producer states now and then.
func (c *Client) saveLoop() {
	defer close(c.stopped)
	t := time.NewTicker(saveProducersEvery / 2)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			all := c.parts.all()
			metrics.PartitionsHeld.Set(float64(len(all)))
			tail := 0
			for _, p := range all {
				p.notifyMu.Lock()
				tail += p.tailBytes
				p.notifyMu.Unlock()
			}
			metrics.TailBytes.Set(float64(tail))
			for _, p := range all {
				guard.Run("ProducerStateSave", func() { c.saveProducers(p, false) }) //nolint:errcheck // logged and counted; saved again next round
			}
		}
	}
}

// closeTimeout bounds each step of Close: the log's last commit, the
// tails' segments, the producers' states.
const closeTimeout = 2 * time.Second

// Close commits what waits for the write-ahead log, writes the partitions'
// tails to segments and saves what they know of their producers, each in
// closeTimeout at most (the log holds the records in any case), and ends
// every connection.
func (c *Client) Close() {
	c.closeOnce.Do(func() { close(c.stop) })
	<-c.stopped
	c.wal.Close(closeTimeout)
	c.flusher.close(closeTimeout)
	c.parts.saveAll(closeTimeout)
	c.background.Wait()
}

// listNodes asks the masters for the cluster's nodes of one type.
func (c *Client) listNodes(ctx context.Context, clientType string) ([]string, error) {
	var lastErr error = fmt.Errorf("%w: no master given", ErrUnavailable)
	for _, m := range c.opts.Masters {
		var addrs []string
		err := pb.WithMasterClient(ctx, false, m, c.opts.Security.DialOption, false, func(mc master_pb.SeaweedClient) error {
			resp, err := mc.ListClusterNodes(ctx, &master_pb.ListClusterNodesRequest{ClientType: clientType, FilerGroup: c.opts.FilerGroup})
			if err != nil {
				return err
			}
			for _, n := range resp.ClusterNodes {
				addrs = append(addrs, n.Address)
			}
			return nil
		})
		if err == nil {
			return addrs, nil
		}
		if serr := c.opts.Security.securityMismatch("master "+string(m), err); serr != nil {
			return nil, serr
		}
		lastErr = fmt.Errorf("%w: master %s: %v", ErrUnavailable, m, err)
	}
	return nil, lastErr
}

// Filers lists the cluster's filers (of its filer group), as the masters
// know them.
func (c *Client) Filers(ctx context.Context) ([]string, error) {
	filers, err := c.listNodes(ctx, cluster.FilerType)
	for i, f := range filers {
		filers[i] = pb.ServerAddress(f).ToHttpAddress()
	}
	return filers, err
}

// filerAddr returns a filer of the cluster, discovering one if needed.
func (c *Client) filerAddr(ctx context.Context) (pb.ServerAddress, error) {
	c.mu.Lock()
	f := c.filer
	c.mu.Unlock()
	if f != "" {
		return f, nil
	}
	filers, err := c.listNodes(ctx, cluster.FilerType)
	if err != nil {
		return "", err
	}
	if len(filers) == 0 {
		return "", fmt.Errorf("%w: no filer registered with the masters", ErrUnavailable)
	}
	c.mu.Lock()
	c.filer = pb.ServerAddress(filers[0])
	f = c.filer
	c.mu.Unlock()
	glog.V(0).Infof("kafka gateway: using filer %s", f)
	return f, nil
}

// WithFiler runs fn with a client of the cluster's filer.
func (c *Client) WithFiler(ctx context.Context, fn func(filer_pb.SeaweedFilerClient) error) error {
	return c.withFiler(ctx, fn)
}

// withFiler runs fn with a filer client; a failure to reach the filer makes
// the next call discover the filers again.
func (c *Client) withFiler(ctx context.Context, fn func(filer_pb.SeaweedFilerClient) error) error {
	f, err := c.filerAddr(ctx)
	if err != nil {
		return err
	}
	err = pb.WithGrpcFilerClient(false, 0, f, c.opts.Security.DialOption, fn)
	if serr := c.opts.Security.securityMismatch("filer "+string(f), err); serr != nil {
		return serr
	}
	if isUnavailable(err) {
		c.mu.Lock()
		if c.filer == f {
			c.filer = ""
		}
		c.mu.Unlock()
		return fmt.Errorf("%w: filer %s: %v", ErrUnavailable, f, err)
	}
	return err
}

// Ready reports whether the cluster can serve: a filer is known and
// answers, and (asked once) checks the conditions of the gateway's writes
// (ErrFilerTooOld if not).
func (c *Client) Ready(ctx context.Context) error {
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		_, err := fc.GetFilerConfiguration(ctx, &filer_pb.GetFilerConfigurationRequest{})
		return err
	})
	if err != nil || c.filerChecked.Load() {
		return err
	}
	if err := c.checkTurn.take(ctx); err != nil {
		return err
	}
	defer c.checkTurn.give()
	if c.filerChecked.Load() {
		return nil
	}
	if err := c.checkFiler(ctx); err != nil {
		return err
	}
	if _, _, err := c.cluster(ctx); err != nil { // the default replication, for the factors
		return err
	}
	c.filerChecked.Store(true)
	return nil
}

// isUnavailable reports whether err means the peer could not be reached.
func isUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return strings.Contains(err.Error(), "connection refused")
}
