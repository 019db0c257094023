// Package protocol serves the Kafka APIs: one file per API, each declaring the
// versions it serves in an init() beside its handler. ApiVersions and the
// version check are both built from that one registry.
package protocol

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/semaphore"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/audit"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/brokerconfig"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/feature"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/quota"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/registry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/telemetry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/txn"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// Config is what the handlers know about the gateway and its cluster.
type Config struct {
	NodeID int32  // this gateway's broker id in Metadata
	Host   string // advertised host
	Port   int32  // advertised port
	// Listeners are the advertised listeners, "NAME://host:port,...".
	Listeners string
	// ClusterID is the cluster's id as Metadata and DescribeCluster
	// answer it (read from the filer once the gateway reaches it).
	ClusterID func() string
	// LogDir is the log directory DescribeLogDirs reports (LogDir when
	// empty): the directory of the cluster's topics.
	LogDir            string
	DefaultPartitions int32
	// DefaultReplicationFactor is what DescribeConfigs says of the
	// factor of topics created with the default (-1: the cluster's
	// default replication; 0: 1).
	DefaultReplicationFactor int16
	AutoCreateTopics         bool
	// ReadOnly says whether a topic is a mirror of a topic link's source
	// not yet promoted, and of which link: produce to it is refused
	// (nil: none is).
	ReadOnly func(topic string) (link string, ok bool)
	// MaxMessageBytes is the default max.message.bytes of topics: the
	// largest record batch a producer may send.
	MaxMessageBytes int32
	// FetchMaxBytes caps the record bytes of one Fetch response (Kafka's
	// fetch.max.bytes); 0: DefaultFetchMaxBytes.
	FetchMaxBytes int
	// DecompressionMaxBytes bounds the produced bytes held decompressed
	// across the gateway; 0: DefaultDecompressionMaxBytes.
	DecompressionMaxBytes int64
	// FetchBatchCacheBytes bounds the batches kept for fetches, compressed
	// as produced (see batch_cache.go); 0: DefaultFetchBatchCacheBytes,
	// <0: none.
	FetchBatchCacheBytes int64
	// FetchSessionSlots is max.incremental.fetch.session.cache.slots: how
	// many fetch sessions are kept; 0: DefaultFetchSessionSlots, <0: none.
	FetchSessionSlots int
	// TransactionVersion is the transaction.version feature ApiVersions
	// finalizes without Features: 2 lets clients use transactions v2
	// (KIP-890: the epoch bumped at every end, partitions and groups added
	// implicitly); 0 or 1 keeps them on the classic protocol.
	TransactionVersion int16
	// Features keeps the cluster's finalized feature levels, which
	// UpdateFeatures moves (nil: group.version and share.version 1,
	// transaction.version TransactionVersion, fixed).
	Features *feature.Store
	// Cluster tells which gateway owns what; nil: this one owns all.
	Cluster Cluster
	// Txns checks a transactional produce with the transactional id's
	// coordinator, on whichever gateway it is (nil: this gateway's
	// coordinator, with Cluster nil).
	Txns TxnVerifier
	// Users keeps the SCRAM credentials (nil: none are kept).
	Users Users
	// Tokens keeps the delegation tokens (nil, or without a secret:
	// DELEGATION_TOKEN_AUTH_DISABLED).
	Tokens *user.Tokens
	// Quotas keeps the client quotas and measures clients against them
	// (nil: no quotas).
	Quotas *quota.Store
	// ClientMetrics keeps the client metrics subscriptions and what
	// clients push (KIP-714); nil: no subscription is served and
	// PushTelemetry is not advertised.
	ClientMetrics *telemetry.Manager
	// Authorizer decides requests by the cluster's ACLs (nil: everyone
	// may do everything).
	Authorizer *acl.Authorizer
	// Schemas is the schema registry's state, for topics that validate
	// their records' schema ids (confluent.key/value.schema.validation);
	// nil: this gateway serves no registry, and such topics refuse
	// records.
	Schemas *registry.State
	// BrokerConfigs keeps the dynamic broker configs (nil: altering a
	// BROKER resource is INVALID_REQUEST).
	BrokerConfigs *brokerconfig.Store
	// Shares keeps the share-partitions (KIP-932) of the partitions this
	// gateway leads, and the groups' configs (nil: share groups are not
	// served).
	Shares *share.Store
	// ShareSessionSlots is group.share.max.share.sessions; 0:
	// DefaultShareSessions.
	ShareSessionSlots int
	// Audit records logins, denials and administrative requests (nil:
	// none are).
	Audit *audit.Log
	// HighWatermark reads a partition's high watermark whichever gateway
	// leads it, without taking it over: DescribeShareGroupOffsets' lag,
	// answered by the group's coordinator (nil: the Backend's Offsets, for
	// a gateway that leads every partition).
	HighWatermark func(ctx context.Context, topic string, partition int32) (int64, error)
	// Replicas reads the partitions other gateways lead, for the
	// consumers of this gateway's rack (KIP-392, fetch_replica.go; nil:
	// none are read here, and no consumer is sent to another gateway).
	Replicas ReplicaReader
}

// TxnVerifier reaches a transactional id's coordinator for the partitions'
// leaders and the groups' coordinators: Verify checks that a transactional
// batch's transaction is open and has the partition (adding it first with
// add), then runs write (see txn.Coordinator.Verify); AddGroup adds a
// group's offsets to the transaction (TxnOffsetCommit v5+, KIP-890).
type TxnVerifier interface {
	Verify(ctx context.Context, id *string, producerID int64, epoch int16, topic string, partition int32, add bool, write func()) *kerr.Error
	AddGroup(ctx context.Context, id string, producerID int64, epoch int16, group string) *kerr.Error
}

// Handler answers decoded requests.
type Handler struct {
	cfg     Config
	cluster Cluster
	backend storage.Backend
	groups  *group.Coordinator
	txns    *txn.Coordinator
	inflate *semaphore.Weighted // DecompressionMaxBytes
	bulk    *semaphore.Weighted // bulkSlots
	// drain is closed when the gateway stops: waiting fetches answer at
	// once with what they have, so that stopping does not wait out
	// long-polls.
	drain     chan struct{}
	drainOnce sync.Once
	sessions  *fetchSessions
	batches   *batchCache
	// Share groups: the share-partitions held here and the members'
	// share sessions.
	shares        *share.Store
	brokerConfigs *brokerconfig.Store
	shareSessions *shareSessions
}

// Drain makes waiting fetches (and those to come) answer without waiting
// for more records: the gateway is stopping.
func (h *Handler) Drain() { h.drainOnce.Do(func() { close(h.drain) }) }

func (h *Handler) draining() bool {
	select {
	case <-h.drain:
		return true
	default:
		return false
	}
}

// New returns a Handler serving cfg's cluster from backend, with groups
// coordinated by groups and transactions by txns.
func New(cfg Config, backend storage.Backend, groups *group.Coordinator, txns *txn.Coordinator) *Handler {
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.FetchMaxBytes <= 0 {
		cfg.FetchMaxBytes = DefaultFetchMaxBytes
	}
	if cfg.LogDir == "" {
		cfg.LogDir = LogDir
	}
	if cfg.ClusterID == nil {
		cfg.ClusterID = func() string { return "" }
	}
	if cfg.DefaultReplicationFactor == 0 {
		cfg.DefaultReplicationFactor = 1
	}
	if cfg.DefaultPartitions <= 0 {
		cfg.DefaultPartitions = 1
	}
	if cfg.DecompressionMaxBytes <= 0 {
		cfg.DecompressionMaxBytes = DefaultDecompressionMaxBytes
	}
	if cfg.FetchBatchCacheBytes == 0 {
		cfg.FetchBatchCacheBytes = DefaultFetchBatchCacheBytes
	}
	if cfg.FetchSessionSlots == 0 {
		cfg.FetchSessionSlots = DefaultFetchSessionSlots
	}
	// The internal topics are answered here, never by the backend.
	h := &Handler{cfg: cfg, cluster: cfg.Cluster, backend: internalBackend{backend}, groups: groups, txns: txns,
		inflate: semaphore.NewWeighted(cfg.DecompressionMaxBytes), bulk: semaphore.NewWeighted(bulkSlots()), drain: make(chan struct{}),
		sessions: newFetchSessions(cfg.FetchSessionSlots), batches: newBatchCache(cfg.FetchBatchCacheBytes)}
	if cfg.ShareSessionSlots <= 0 {
		cfg.ShareSessionSlots = DefaultShareSessions
	}
	if h.cfg.HighWatermark == nil {
		h.cfg.HighWatermark = func(ctx context.Context, topic string, partition int32) (int64, error) {
			offs, err := h.backend.Offsets(ctx, topic, partition)
			return offs.HighWatermark, err
		}
	}
	h.shares = cfg.Shares
	h.brokerConfigs = cfg.BrokerConfigs
	h.shareSessions = newShareSessions(h, cfg.ShareSessionSlots)
	if h.cfg.Users == nil {
		h.cfg.Users = noUsers{}
	}
	if h.cluster == nil {
		h.cluster = alone{h.self()}
	}
	return h
}

// Request is one decoded request.
type Request struct {
	Header
	Body kmsg.Request
	// ClientHost is the client's address as DescribeGroups shows it.
	ClientHost string
	// Listener is the name of the listener the connection came in on:
	// the brokers Metadata and FindCoordinator name are its addresses.
	Listener string
	// Principal is who the connection authenticated as ("User:alice",
	// "User:ANONYMOUS" without authentication).
	Principal string
	// TokenAuthenticated is set when the principal logged in with a
	// delegation token.
	TokenAuthenticated bool
	// Size is the request's frame size, what a produce counts against
	// its client's producer_byte_rate.
	Size int
	// Conn is the connection the request came on (nil in tests that
	// have none).
	Conn Conn
	// ConnID is the connection's number, "cid:N" in log lines about it
	// or its requests (0 without a connection).
	ConnID uint64
	// Session is the connection's login (nil on a listener without
	// SASL).
	Session Session
	// waited is the time the request's handler and reply spent waiting
	// for something to happen (a fetch's long-poll, a produce's durable
	// write, a group's members), not counted against request_percentage.
	waited time.Duration
	// versionTooNew marks an ApiVersions request newer than we serve: it
	// is answered in v0 format with UNSUPPORTED_VERSION.
	versionTooNew bool
	// Responses is the gateway's budget of fetched bytes held (nil:
	// none); responseHeld what this request's response holds of it,
	// given back by ReleaseResponse once written.
	Responses    *ResponseBudget
	responseHeld int64
}

// Conn is what handlers need of a request's connection. Its methods are
// called from handlers, on the connection's reader.
type Conn interface {
	// Mute stops the connection reading requests for d: its client is
	// throttled by a quota.
	Mute(d time.Duration)
	// SetClientSoftware keeps what the client called itself in
	// ApiVersions v3+ (KIP-511), and ClientSoftware returns it ("" if it
	// did not).
	SetClientSoftware(name, version string)
	ClientSoftware() (name, version string)
	// RemoteAddr is the client's address.
	RemoteAddr() net.Addr
}

// Reply produces the response to a request. It is called by the
// connection's writer, in request order, so a handler may return at once
// and finish its work (a produce waiting for acks, a fetch long-poll) in
// the Reply. A nil response means none is sent (produce with acks=0); an
// error means the connection cannot go on.
type Reply func() (kmsg.Response, error)

func now(resp kmsg.Response) Reply { return func() (kmsg.Response, error) { return resp, nil } }

// fenced is e as a client of version knows it: PRODUCER_FENCED came with
// version since of its API (KIP-588); older ones get INVALID_PRODUCER_EPOCH
// instead, as Kafka answers them.
func fenced(e *kerr.Error, version, since int16) *kerr.Error {
	if e == kerr.ProducerFenced && version < since {
		return kerr.InvalidProducerEpoch
	}
	return e
}

// errCode is e's error code: 0 for nil, success. A Kafka error is a
// *kerr.Error throughout, named e (or for what it is about, topicErr).
func errCode(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}

type api struct {
	min, max int16
	handle   func(h *Handler, ctx context.Context, r *Request) Reply
}

var apis [kmsg.MaxKey + 1]*api

// register declares the versions served for key and its handler. Each API
// file calls it from init().
func register(key kmsg.Key, min, max int16, handle func(*Handler, context.Context, *Request) Reply) {
	if apis[key] != nil {
		panic(fmt.Sprintf("api %s registered twice", key.Name()))
	}
	if req := kmsg.RequestForKey(int16(key)); req == nil || max > req.MaxVersion() {
		panic(fmt.Sprintf("api %s: version %d is beyond the codec", key.Name(), max))
	}
	apis[key] = &api{min: min, max: max, handle: handle}
}

// Supported returns the versions served for key, and whether it is served.
func Supported(key int16) (min, max int16, ok bool) {
	if key < 0 || int(key) >= len(apis) || apis[key] == nil {
		return 0, 0, false
	}
	return apis[key].min, apis[key].max, true
}

// Decode parses a request frame (without its size prefix). An error means
// the frame cannot be answered and the connection must close, as Kafka does
// for malformed requests, unknown keys and unsupported versions.
func Decode(frame []byte) (*Request, error) {
	hdr, rest, err := ParseHeader(frame)
	if err != nil {
		return nil, err
	}
	r := &Request{Header: hdr}
	a := (*api)(nil)
	if hdr.Key >= 0 && int(hdr.Key) < len(apis) {
		a = apis[hdr.Key]
	}
	if a == nil {
		return nil, fmt.Errorf("unsupported api key %d", hdr.Key)
	}
	if hdr.Key == int16(kmsg.ApiVersions) && hdr.Version > a.max {
		r.versionTooNew = true
		r.Body = &kmsg.ApiVersionsRequest{}
		return r, nil
	}
	if hdr.Version < a.min || hdr.Version > a.max {
		return nil, fmt.Errorf("unsupported %s version %d (serving %d-%d)", kmsg.NameForKey(hdr.Key), hdr.Version, a.min, a.max)
	}
	body := kmsg.RequestForKey(hdr.Key)
	body.SetVersion(hdr.Version)
	if body.IsFlexible() {
		if rest, err = SkipHeaderTags(rest); err != nil {
			return nil, err
		}
	}
	if err := body.ReadFrom(rest); err != nil {
		return nil, fmt.Errorf("malformed %s v%d request: %w", kmsg.NameForKey(hdr.Key), hdr.Version, err)
	}
	if err := checkRequestLimits(body, len(rest)); err != nil {
		return nil, fmt.Errorf("malformed %s v%d request: %w", kmsg.NameForKey(hdr.Key), hdr.Version, err)
	}
	r.Body = body
	return r, nil
}

// Handle answers a decoded request. It runs on the connection's reader, in
// request order.
func (h *Handler) Handle(ctx context.Context, r *Request) Reply {
	if h.cfg.Quotas == nil {
		return h.audited(r, apis[r.Key].handle(h, ctx, r))
	}
	timed := h.requestQuota(r)
	var start time.Time
	if timed {
		start = time.Now()
	}
	reply := h.throttled(r, h.audited(r, apis[r.Key].handle(h, ctx, r)))
	if timed {
		reply = h.timed(r, reply, time.Since(start))
	}
	return reply
}
