// Package node is one gateway put together: the SeaweedMQ client, the
// membership among the cluster's gateways, the coordinators, the Kafka
// server and the HTTP servers beside it, built in one place from one
// Config (New), started (Start) and closed (Close) in the reverse order of
// their building, the same on a failed start as on shutdown. Every
// background loop the node runs itself is in its wait group.
package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/util"
	"github.com/spf13/viper"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/audit"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/brokerconfig"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/cluster"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/feature"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/gateway"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/iceberg"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/link"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/quota"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/registry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/sasl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/telemetry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/txn"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// Node is a gateway.
type Node struct {
	cfg  Config
	self membership.Member

	// closers are what New and Start built, in that order; Close runs
	// them in reverse.
	closers   []closer
	wg        sync.WaitGroup // the node's own loops
	stop      chan struct{}  // closed by Close: those loops end
	closeOnce sync.Once
	closed    chan struct{} // closed when Close is done
	served    chan error    // the Kafka server's end, or why the gateway did not join

	store         Storage
	client        *seaweedmq.Client // the store, unless Config.Storage gave another
	backend       storage.Backend   // instrumented, not leadership-checked
	members       *membership.Membership
	authz         *acl.Authorizer // nil without -authorizer.enabled
	groups        *group.Coordinator
	txns          *txn.Coordinator
	users         *user.Store
	tokens        *user.Tokens
	quotas        *quota.Store
	clientMetrics *telemetry.Manager
	features      *feature.Store
	brokerConfigs *brokerconfig.Store
	peerOpts      cluster.PeerOptions
	identity      *cluster.Identity // the gateways' own user, with SASL between them
	sealer        *user.Sealer      // of the users' and tokens' credentials
	fileSecret    []byte            // -cluster.secret.file's secret, nil without
	logins        bool              // a listener has SASL
	// id is the cluster's id: as the filer keeps it once read
	// (readSecret), the one this gateway would give it before.
	id           atomic.Pointer[string]
	srv          *gateway.Server
	schemaState  *registry.State // nil without a registry
	regListeners []registryListener
	conListeners []registryListener
	links        *link.Manager
	started      time.Time  // when New was called
	audit        *audit.Log // nil without -audit.enabled
	// kafkaListeners are the Kafka listeners, as -listeners gives them.
	kafkaListeners []gateway.Listener
	metricsLn      net.Listener // nil without -metricsPort
	pprofLn        net.Listener // nil without -port.pprof

	// What ClusterReady waits for besides the parts' own readiness:
	// the users of -sasl.users made, the cluster's id and secret read
	// (and the gateways' own user made: ensureSecret).
	usersCreated, secretRead atomic.Bool
	initialUsers             map[string]string
}

type closer struct {
	what  string
	close func()
}

// onClose adds a step to Close, after (in Close: before) those added
// earlier.
func (n *Node) onClose(what string, close func()) {
	n.closers = append(n.closers, closer{what, close})
}

// goLoop runs f in the node's wait group; f returns once n.stop is closed.
func (n *Node) goLoop(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// sleep waits d, or until the node closes (false then).
func (n *Node) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-n.stop:
		return false
	case <-t.C:
		return true
	}
}

// New builds a gateway from cfg: every part, its listeners bound, nothing
// served yet. On an error, what was built is closed again.
func New(cfg Config) (_ *Node, err error) {
	n := &Node{cfg: cfg, stop: make(chan struct{}), closed: make(chan struct{}), served: make(chan error, 2), started: time.Now()}
	defer func() {
		if err != nil {
			n.Close(context.Background()) //nolint:errcheck // without a deadline it does not fail
		}
	}()
	if tv := cfg.TransactionVersion; tv < 0 || tv > 2 {
		return nil, fmt.Errorf("-transaction.version %d: 0, 1 or 2", tv)
	}
	listeners, err := n.listeners()
	n.logins = slices.ContainsFunc(listeners, gateway.Listener.SASL)
	n.kafkaListeners = listeners
	if err != nil {
		return nil, err
	}
	if n.self, err = selfMember(int32(cfg.NodeID), listeners, cfg.Authorizer); err != nil {
		return nil, err
	}
	n.self.Rack = cfg.Rack
	if cfg.RegistryListeners != "none" {
		if n.regListeners, n.self.Registry, err = parseHTTPListeners("-schema.registry.listeners", cfg.RegistryListeners, cfg.IP); err != nil {
			return nil, err
		}
	}
	if cfg.ConsoleListeners != "none" {
		if n.conListeners, _, err = parseHTTPListeners("-console.listeners", cfg.ConsoleListeners, cfg.IP); err != nil {
			return nil, err
		}
	}
	if n.self.NodeID < 0 {
		// From the first listener's address (-ip and -port without
		// -listeners), so it stays the same across restarts.
		first := listeners[0].Advertised
		if first == "" {
			first = listeners[0].Bind
		}
		host, port, _ := net.SplitHostPort(first)
		p, _ := strconv.Atoi(port)
		n.self.NodeID = membership.NodeID(host, int32(p))
	}
	assignors := splitList(cfg.ConsumerAssignors, ",")
	for _, a := range assignors {
		if !slices.Contains(group.DefaultConsumerAssignors, a) {
			return nil, fmt.Errorf("-group.consumer.assignors: %q is not an assignor (uniform, range)", a)
		}
	}
	firstID := firstClusterID(cfg.Masters, cfg.FilerGroup, cfg.ClusterName)
	n.id.Store(&firstID)
	if cfg.ClusterSecretFile != "" {
		data, err := os.ReadFile(cfg.ClusterSecretFile)
		if err == nil {
			n.fileSecret, err = cluster.SecretFromFile(data)
		}
		if err != nil {
			return nil, fmt.Errorf("-cluster.secret.file: %w", err)
		}
	}
	if cfg.SASLUsersFile != "" {
		if n.initialUsers, err = readUsersFile(cfg.SASLUsersFile); err != nil {
			return nil, fmt.Errorf("-sasl.users: %w", err)
		}
	}

	if cfg.Storage != nil {
		if cfg.IcebergCatalog != "" {
			return nil, errors.New("the Iceberg tables need SeaweedFS: a catalog without SeaweedMQ as the storage")
		}
		n.store = cfg.Storage
	} else {
		if err := seaweedmq.ValidClusterName(cfg.ClusterName); err != nil {
			return nil, err
		}
		access, err := seaweedmq.ParseVolumeAccess(cfg.VolumeServerAccess)
		if err != nil {
			return nil, err
		}
		spread, err := seaweedmq.ParseSpread(cfg.ReplicationSpread)
		if err != nil {
			return nil, err
		}
		if f := cfg.DefaultReplicationFactor; f != -1 && (f < 1 || f > seaweedmq.MaxReplicationFactor) {
			return nil, fmt.Errorf("-default.replication.factor: %d is not -1 or 1 to %d", f, seaweedmq.MaxReplicationFactor)
		}
		sec, err := seaweedmq.LoadSecurity(viper.ConfigFileUsed(), util.GetViper())
		if err != nil {
			return nil, err
		}
		glog.V(0).Infof("kafka gateway: security: %s; volume servers reached %s", sec, access)
		n.client = seaweedmq.New(seaweedmq.Options{
			Masters:                  pb.ServerAddresses(cfg.Masters).ToAddresses(),
			FilerGroup:               cfg.FilerGroup,
			Cluster:                  cfg.ClusterName,
			Security:                 sec,
			VolumeAccess:             access,
			Spread:                   spread,
			DefaultReplicationFactor: int16(cfg.DefaultReplicationFactor),
			// The write-ahead log is the node's: a restarted gateway trims
			// what it left, and whoever takes its partitions reads it.
			WALName: strconv.Itoa(int(n.self.NodeID)),
		})
		n.store = n.client
	}
	n.onClose("the storage", n.store.Close)
	// The handlers, groups and transactions reach SeaweedFS through
	// wrappers that time every call for the metrics.
	n.backend = cluster.Instrument(n.store)
	files := cluster.InstrumentFiles(n.store)

	// The gateways of the cluster share its partitions, groups and
	// transactional ids: this one serves only what it owns.
	members := membership.New(membership.Options{Self: n.self, Filer: n.store})
	n.members = members
	n.onClose("the membership", members.Close) // the others take over without waiting for the lock to expire
	n.store.SetTerm(func(topic string, index int32) int64 {
		if term, ok := members.Serving(membership.PartitionKey(topic, index)); ok {
			return term
		}
		return 0
	})
	serving := func(key func(string) string) func(string) (int64, bool) {
		return func(name string) (int64, bool) { return members.Serving(key(name)) }
	}
	// Share groups' settings, and their share-partitions of the
	// partitions this gateway leads (released with the leadership).
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	limits := share.DefaultLimits
	limits.SessionTimeout, limits.MinSessionTimeout = ms(cfg.ShareSessionMs), ms(cfg.ShareMinSessionMs)
	limits.HeartbeatInterval, limits.MinHeartbeatInterval = ms(cfg.ShareHeartbeatMs), ms(cfg.ShareMinHeartbeatMs)
	limits.LockDuration, limits.MinLockDuration = ms(cfg.ShareLockMs), ms(cfg.ShareMinLockMs)
	limits.DeliveryLimit, limits.MaxRecordLocks = int16(cfg.ShareDeliveryLimit), cfg.ShareMaxLocks
	// Consumer groups' consumer.session.timeout.ms and
	// consumer.heartbeat.interval.ms: the flags are the defaults, within
	// Kafka's bounds (or at the flags', set outside them).
	limits.ConsumerSessionTimeout, limits.ConsumerHeartbeatInterval = ms(cfg.ConsumerSessionMs), ms(cfg.ConsumerHeartbeatMs)
	limits.MinConsumerSessionTimeout = min(limits.MinConsumerSessionTimeout, limits.ConsumerSessionTimeout)
	limits.MaxConsumerSessionTimeout = max(limits.MaxConsumerSessionTimeout, limits.ConsumerSessionTimeout)
	limits.MinConsumerHeartbeatInterval = min(limits.MinConsumerHeartbeatInterval, limits.ConsumerHeartbeatInterval)
	limits.MaxConsumerHeartbeatInterval = max(limits.MaxConsumerHeartbeatInterval, limits.ConsumerHeartbeatInterval)
	shareConfigs := share.NewConfigs(files, limits)
	shares := share.NewStore(files, shareConfigs)
	n.onClose("the share-partitions", shares.Close)
	owned := cluster.NewOwned(n.backend, cluster.Releasers{n.store, shares}, members.Serving, members.Changed)
	n.onClose("partition ownership", owned.Close)
	if cfg.CleanerBackoffMs >= 0 && n.client != nil {
		n.client.StartCleaner(seaweedmq.CleanerOptions{
			Backoff: max(ms(cfg.CleanerBackoffMs), 100*time.Millisecond),
			Leads: func(topic string, index int32) bool {
				_, ok := members.Serving(membership.PartitionKey(topic, index))
				return ok
			},
		})
	}

	if n.client != nil {
		n.client.StartRetention(seaweedmq.RetentionOptions{
			Check: max(ms(cfg.LogRetentionCheckMs), 100*time.Millisecond),
			Leads: func(topic string, index int32) bool {
				_, ok := members.Serving(membership.PartitionKey(topic, index))
				return ok
			},
		})
	}

	if cfg.Authorizer {
		n.authz = acl.New(acl.Options{Files: files, AllowIfNoACL: cfg.AllowIfNoACL,
			SuperUsers: append(splitList(cfg.SuperUsers, ";"), cluster.GatewayPrincipal)})
		n.onClose("the ACL refresh", n.authz.Close)
	}
	authz := n.authz
	n.groups = group.New(group.Options{
		Store:                     offset.NewStore(files),
		ShareConfigs:              shareConfigs,
		ShareStates:               shares,
		ShareMaxSize:              cfg.ShareMaxSize,
		Topics:                    protocol.GroupTopics(n.store),
		ConsumerSessionTimeout:    ms(cfg.ConsumerSessionMs),
		ConsumerHeartbeatInterval: ms(cfg.ConsumerHeartbeatMs),
		ConsumerAssignors:         assignors,
		ConsumerMaxSize:           cfg.ConsumerMaxSize,
		ClassicMaxSize:            cfg.ClassicMaxSize,
		StreamsSessionTimeout:     ms(cfg.StreamsSessionMs),
		StreamsHeartbeatInterval:  ms(cfg.StreamsHeartbeatMs),
		StreamsInitialDelay:       ms(cfg.StreamsDelayMs),
		StreamsNumStandbyReplicas: cfg.StreamsStandbys,
		StreamsMaxSize:            cfg.StreamsMaxSize,
		TopicVisible: func(principal, host, topic string) bool {
			return authz == nil || authz.Authorize(principal, host, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, topic)
		},
		InitialRebalanceDelay: max(time.Millisecond, ms(cfg.GroupInitialDelayMs)),
		MinSessionTimeout:     ms(cfg.GroupMinSessionMs),
		MaxSessionTimeout:     ms(cfg.GroupMaxSessionMs),
		OffsetsRetention:      retention(cfg.OffsetsRetentionMin, time.Minute),
		RetentionCheck:        ms(cfg.RetentionCheckMs),
		Serving:               serving(membership.GroupKey),
		Changed:               members.Changed,
	})
	n.onClose("the group coordinator", n.groups.Close)

	// Transactions reach the partitions and groups they span on whichever
	// gateway leads or coordinates them. The gateways reach one another
	// on interListener: logged in as their own user when it has SASL (as
	// their own super user, with the authorizer), over TLS when it has
	// TLS.
	n.sealer = user.NewSealer(nil) // given the cluster's secret at start (ensureSecret)
	n.users = user.NewStore(files, n.sealer)
	// Topic links: every gateway pulls the mirrored partitions it leads;
	// the gateway that owns a link controls it.
	n.links = link.New(link.Options{
		Store:   &link.Store{Files: files, Sealer: n.sealer},
		Backend: owned, Mirror: owned,
		Serving: members.Serving, Self: n.self.NodeID,
		Local: func() []kgo.Opt {
			return append(n.peerOpts.ClientOpts(), kgo.SeedBrokers(n.self.Addr()), kgo.ClientID("kafka-gateway-link"))
		},
		Refresh:  ms(cfg.LinkRefreshMs),
		Interval: ms(cfg.LinkIntervalMs),
	})
	n.onClose("the topic links", n.links.Close)
	inter := interListener(listeners, cfg.Authorizer)
	if inter.SASL() {
		if !slices.Contains(splitList(cfg.SASLMechanisms, ","), sasl.ScramSHA512) {
			return nil, errors.New("the gateways log in to one another with SCRAM-SHA-512: add it to -sasl.enabled.mechanisms")
		}
		n.identity = &cluster.Identity{}
		n.peerOpts.Identity = n.identity
	} else if cfg.Authorizer {
		glog.Warningf("kafka gateway: -authorizer.enabled without a SASL listener: the gateways reach one another on %s as %s, which needs to be in -super.users for transactions that span gateways", inter.Name, gateway.Anonymous)
	}
	if inter.TLS() {
		if n.peerOpts.TLS, err = peerTLS(cfg.SSLClientCA); err != nil {
			return nil, err
		}
	}
	peers := cluster.NewPeers(n.peerOpts)
	n.onClose("the connections to other gateways", peers.Close)
	forward := &cluster.Forwarder{Log: owned, Known: n.store.KnownOffsets, Groups: n.groups, Members: members, Peers: peers}
	n.txns = txn.New(txn.Options{Files: files, Log: forward, Groups: forward, Serving: serving(membership.TxnKey),
		Changed: members.Changed, IDExpiration: retention(cfg.TxnIDExpirationMs, time.Millisecond)})
	forward.Txns = n.txns
	n.onClose("the transaction coordinator", n.txns.Close)
	unregister, err := metrics.Register(n.groups.Metrics(forward.LogOffsets, shareStarts(shares)))
	if err != nil {
		return nil, fmt.Errorf("the groups' metrics: %w", err)
	}
	n.onClose("the groups' metrics", unregister)
	if cfg.PartitionMetrics != "" {
		match, err := regexp.Compile(cfg.PartitionMetrics)
		if err != nil {
			return nil, fmt.Errorf("-metrics.partitions: %w", err)
		}
		unregister, err := metrics.Register(&partitionCollector{match: match, topics: owned.ListTopics, serving: members.Serving,
			offsets: n.store.KnownOffsets, size: n.store.PartitionSize})
		if err != nil {
			return nil, fmt.Errorf("the partitions' metrics: %w", err)
		}
		n.onClose("the partitions' metrics", unregister)
	}

	// Logins: SCRAM and PLAIN check the users every gateway shares, SCRAM
	// the delegation tokens too.
	ms64 := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	n.tokens = user.NewTokens(user.TokenOptions{Files: files, Secret: cfg.TokenSecret, Sealer: n.sealer,
		MaxLifetime: ms64(cfg.TokenMaxLifetimeMs), RenewTime: ms64(cfg.TokenExpiryMs), CheckEvery: ms64(cfg.TokenCheckMs)})
	n.onClose("the delegation tokens' sweep", n.tokens.Close)
	auth, err := sasl.New(sasl.Config{
		Mechanisms: splitList(cfg.SASLMechanisms, ","),
		Users:      n.users,
		Tokens:     n.tokens,
		OAuth: sasl.OAuthConfig{
			JWKSFile: cfg.OAuthJWKS, Unsecured: cfg.OAuthUnsecured,
			Issuer: cfg.OAuthIssuer, Audience: cfg.OAuthAudience, SubClaim: cfg.OAuthSubClaim,
		},
	})
	if err != nil {
		return nil, err
	}
	// Client quotas: kept in the filer, read again every 2 s; the rates
	// of quota'd clients shared with the other gateways every second.
	n.quotas = quota.New(quota.Options{Files: files, Samples: cfg.QuotaSamples, Window: time.Duration(cfg.QuotaWindowSeconds) * time.Second,
		Node: strconv.Itoa(int(n.self.NodeID)), Gateways: func() int { return len(members.Members()) }})
	n.onClose("the client quotas' refresh", n.quotas.Close)
	// Client metrics subscriptions (KIP-714): kept in the filer, read
	// again every 2 s; what clients push is served on /metrics.
	n.clientMetrics = telemetry.New(telemetry.Options{Files: files})
	n.onClose("the client metrics' refresh", n.clientMetrics.Close)
	unregister, err = metrics.Register(n.clientMetrics)
	if err != nil {
		return nil, fmt.Errorf("client metrics on /metrics: %w", err)
	}
	n.onClose("the client metrics on /metrics", unregister)
	// The finalized features: -transaction.version until UpdateFeatures
	// sets them for the cluster.
	n.features = feature.New(files, map[string]int16{feature.Group: 1, feature.Share: 1, feature.Streams: 1, feature.Transaction: int16(cfg.TransactionVersion)})
	n.onClose("the features' refresh", n.features.Close)
	// The dynamic broker configs: the log.* ones are the defaults of
	// the topics' configs.
	n.brokerConfigs = brokerconfig.New(files, n.self.NodeID)
	n.onClose("the broker configs' refresh", n.brokerConfigs.Close)
	n.store.SetTopicDefaults(n.brokerConfigs.TopicDefaults)
	if len(n.regListeners) > 0 {
		// The schema registry's state also checks the schema ids of
		// topics that validate them.
		n.schemaState = registry.NewState()
	}

	// The partitions' tails are written to segments once no request is
	// in flight (the write-ahead log holds them anyway), before the
	// partitions are handed over.
	n.onClose("the partitions' tails", func() {
		n.store.FlushTails(2 * time.Second)
		n.store.SaveProducers(2 * time.Second)
	})
	if n.audit, err = n.newAudit(); err != nil {
		return nil, err
	}
	n.srv, err = gateway.NewServer(gateway.Options{
		Config: protocol.Config{
			NodeID:                   n.self.NodeID,
			ClusterID:                n.clusterID,
			LogDir:                   filer.TopicsDir + "/" + seaweedmq.ClusterNamespace(cfg.ClusterName),
			DefaultPartitions:        int32(cfg.DefaultPartitions),
			DefaultReplicationFactor: int16(cfg.DefaultReplicationFactor),
			AutoCreateTopics:         cfg.AutoCreateTopics,
			ReadOnly:                 n.links.ReadOnly,
			FetchMaxBytes:            cfg.FetchMaxBytes,
			FetchSessionSlots:        int(orNone(int64(cfg.FetchSessionSlots))),
			FetchBatchCacheBytes:     orNone(cfg.FetchBatchCache),
			DecompressionMaxBytes:    cfg.DecompressMaxBytes,
			TransactionVersion:       int16(cfg.TransactionVersion),
			Features:                 n.features,
			BrokerConfigs:            n.brokerConfigs,
			Cluster:                  members,
			Txns:                     forward,
			Users:                    n.users,
			Tokens:                   n.tokens,
			Quotas:                   n.quotas,
			ClientMetrics:            n.clientMetrics,
			Authorizer:               n.authz,
			Schemas:                  n.schemaState,
			Shares:                   shares,
			ShareSessionSlots:        cfg.ShareSessions,
			HighWatermark:            forward.HighWatermark,
			Replicas:                 n.replicas(cfg, members, peers),
			Audit:                    n.audit,
		},
		Listeners: listeners,
		TLS: gateway.TLSOptions{
			CertFile: cfg.SSLCert, KeyFile: cfg.SSLKey,
			ClientCAFile: cfg.SSLClientCA, ClientAuth: cfg.SSLClientAuth,
			PrincipalRules: cfg.SSLPrincipalRules,
		},
		SASL:                auth,
		MaxReauth:           ms(cfg.MaxReauthMs),
		MaxRequestSize:      cfg.MaxRequestBytes,
		MaxIdle:             ms(cfg.MaxIdleMs),
		MaxConnections:      cfg.MaxConnections,
		MaxConnectionsPerIP: cfg.MaxConnectionsPerIP,
		FetchResponseBytes:  cfg.FetchResponseBytes,
		Backend:             owned,
		Groups:              n.groups,
		Txns:                n.txns,
		ClusterReady:        n.ready,
	})
	if err != nil {
		n.audit.Close()
		return nil, err
	}
	n.onClose("the listeners and requests in flight", func() { n.srv.Close() })
	if n.audit != nil {
		n.onClose("the audit log", n.audit.Close) // its last events while the server still serves
	}

	// The HTTP ports are bound here too: not serving a port asked for is
	// a failure to start, as for the Kafka listeners (probes and scrapes
	// would find nothing, or something else).
	if cfg.MetricsPort > 0 {
		ip := cfg.MetricsIP
		if ip == "" {
			ip = n.bindIP()
		}
		addr := net.JoinHostPort(ip, strconv.Itoa(cfg.MetricsPort))
		if n.metricsLn, err = net.Listen("tcp", addr); err != nil {
			return nil, fmt.Errorf("metrics on %s: %w", addr, err)
		}
		n.onClose("the metrics port", func() { n.metricsLn.Close() })
	}
	if cfg.PprofPort > 0 {
		addr := net.JoinHostPort(cfg.PprofIP, strconv.Itoa(cfg.PprofPort))
		if n.pprofLn, err = net.Listen("tcp", addr); err != nil {
			return nil, fmt.Errorf("pprof on %s: %w", addr, err)
		}
		n.onClose("the pprof port", func() { n.pprofLn.Close() })
	}
	return n, nil
}

// bindIP is the address the listeners bind by default.
func (n *Node) bindIP() string {
	if n.cfg.IPBind != "" {
		return n.cfg.IPBind
	}
	return n.cfg.IP
}

// listeners are -listeners, or one PLAINTEXT listener on -ip.bind:-port.
func (n *Node) listeners() ([]gateway.Listener, error) {
	list := n.cfg.Listeners
	if list == "" {
		list = gateway.Plaintext + "://" + net.JoinHostPort(n.bindIP(), strconv.Itoa(n.cfg.Port))
	}
	return gateway.ParseListeners(list, n.cfg.AdvertisedListeners, n.cfg.IP)
}

// ready is the server's ClusterReady: SeaweedFS reached, and every part
// that reads the filer at start has read it.
func (n *Node) ready(ctx context.Context) error {
	if err := n.store.Ready(ctx); err != nil {
		return err
	}
	if !n.usersCreated.Load() {
		return errors.New("the users of -sasl.users are not created yet")
	}
	if !n.secretRead.Load() {
		return errors.New("the cluster's secret is not read yet (and the gateways' own user not made)")
	}
	if n.authz != nil {
		if err := n.authz.Ready(); err != nil {
			return err
		}
	}
	if err := n.quotas.Ready(); err != nil {
		return err
	}
	if err := n.clientMetrics.Ready(); err != nil {
		return err
	}
	if err := n.features.Ready(); err != nil {
		return err
	}
	if err := n.brokerConfigs.Ready(); err != nil {
		return err
	}
	return n.members.Ready()
}

// Start serves: the background loops, the HTTP servers, the schema
// registry and the Iceberg tables, then the Kafka listeners. What it
// starts is closed by Close, also after a failed Start.
func (n *Node) Start() error {
	if n.authz != nil {
		n.authz.Start()
	}
	n.quotas.Start()
	n.clientMetrics.Start()
	n.features.Start()
	n.brokerConfigs.Start()
	n.usersCreated.Store(len(n.initialUsers) == 0)
	if len(n.initialUsers) > 0 {
		n.goLoop(n.createUsers)
	}
	n.goLoop(n.ensureSecret)
	if n.metricsLn != nil {
		mon := &http.Server{Handler: n.srv.MonitorHandler(), ReadHeaderTimeout: 10 * time.Second}
		n.serveHTTP("metrics", mon, n.metricsLn)
		glog.V(0).Infof("kafka gateway: metrics, health and readiness on http://%s (/metrics, /health, /ready)", n.metricsLn.Addr())
	}
	if n.pprofLn != nil {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		n.serveHTTP("pprof", &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, n.pprofLn)
	}
	n.links.Start()
	if len(n.conListeners) > 0 {
		if err := n.startConsole(n.kafkaListeners); err != nil {
			return err
		}
	}
	var schemasOf iceberg.Schemas // the registry's, when this gateway serves one
	if len(n.regListeners) > 0 {
		schemas, err := startSchemaRegistry(n.schemaState, n.regListeners, append(n.peerOpts.ClientOpts(), kgo.SeedBrokers(n.self.Addr())), n.members,
			registrySecurity(n.cfg.RegistryBasicAuth, n.users, n.authz), n.cfg.SSLCert, n.cfg.SSLKey, n.audit)
		if err != nil {
			return err
		}
		n.onClose("the schema registry", schemas.Close)
		schemasOf = schemas
	}
	var filer func(context.Context, func(filer_pb.SeaweedFilerClient) error) error
	if n.client != nil {
		filer = n.client.WithFiler
	}
	tables, err := startIcebergTables(n.icebergOptions(), n.backend, filer, n.members, schemasOf, time.Duration(n.cfg.IcebergMaintenanceMs)*time.Millisecond)
	if err != nil {
		return err
	}
	if tables != nil {
		n.onClose("the Iceberg tables", tables.Close)
	}
	glog.V(0).Infof("kafka gateway: node %d listening on %s, serving %s", n.self.NodeID, n.srv.Listeners(), n.storageName())
	n.goLoop(n.watchCluster)
	n.goLoop(n.joinWhenFormatKnown)
	n.groups.Start()
	n.txns.Start()
	n.tokens.Start()
	n.goLoop(func() { n.served <- n.srv.Serve() })
	return nil
}

// serveHTTP serves srv on ln until Close shuts it down.
func (n *Node) serveHTTP(what string, srv *http.Server, ln net.Listener) {
	n.onClose("the "+what+" server", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx) //nolint:errcheck // closing anyway
	})
	n.goLoop(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			glog.Errorf("kafka gateway: %s on %s: %v", what, ln.Addr(), err)
		}
	})
}

// serveListener serves handler on one of an HTTP server's listeners
// (https with the -ssl.* files).
func (n *Node) serveListener(what string, l registryListener, handler http.Handler) error {
	ln, err := net.Listen("tcp", l.bind)
	if err != nil {
		return fmt.Errorf("%s on %s: %w", what, l.bind, err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	scheme := "http"
	if l.tls {
		if n.cfg.SSLCert == "" || n.cfg.SSLKey == "" {
			ln.Close()
			return fmt.Errorf("an https %s listener needs -ssl.cert and -ssl.key", what)
		}
		cert, err := tls.LoadX509KeyPair(n.cfg.SSLCert, n.cfg.SSLKey)
		if err != nil {
			ln.Close()
			return fmt.Errorf("%s: %w", what, err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		scheme = "https"
	}
	n.serveHTTP(what, srv, ln)
	glog.V(0).Infof("kafka gateway: %s on %s://%s", what, scheme, ln.Addr())
	return nil
}

// Addr is the host:port this gateway gives clients for itself in
// Metadata.
func (n *Node) Addr() string { return n.self.Addr() }

// Served is sent the Kafka server's end: an error if a listener failed,
// nil once it was closed; or why the gateway did not join the cluster
// (a cluster state of a newer format).
func (n *Node) Served() <-chan error { return n.served }

// Close stops everything New and Start started, in the reverse order,
// logging each step that takes long. It returns once done, or with ctx's
// error when ctx ends first (the steps go on). Closing again waits for
// the first.
func (n *Node) Close(ctx context.Context) error {
	n.closeOnce.Do(func() {
		go func() {
			began := time.Now()
			close(n.stop)
			for _, c := range slices.Backward(n.closers) {
				start := time.Now()
				c.close()
				if d := time.Since(start); d > 500*time.Millisecond {
					glog.V(0).Infof("kafka gateway: stopping %s took %v", c.what, d.Round(time.Millisecond))
				}
			}
			n.wg.Wait()
			glog.V(0).Infof("kafka gateway: stopped in %v", time.Since(began).Round(time.Millisecond))
			close(n.closed)
		}()
	})
	select {
	case <-n.closed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// createUsers gives the users of -sasl.users their credentials, retrying
// until the filer takes them (it may not be up yet when the gateway
// starts).
func (n *Node) createUsers() {
	for name, pass := range n.initialUsers {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := n.users.SetPassword(ctx, name, pass)
			cancel()
			if err == nil {
				glog.V(0).Infof("kafka gateway: user %s has SCRAM credentials (from -sasl.users)", name)
				break
			}
			glog.V(1).Infof("kafka gateway: user %s from -sasl.users: %v; retrying", name, err)
			if !n.sleep(time.Second) {
				return
			}
		}
	}
	n.usersCreated.Store(true)
}

// joinWhenFormatKnown joins the cluster's gateways once the cluster's
// state is known to be of a format this gateway understands
// (cluster.EnsureFormat), retrying until the filer answers. A newer
// format stops the gateway: it never joins, and Served reports why.
func (n *Node) joinWhenFormatKnown() {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := cluster.EnsureFormat(ctx, n.store)
		cancel()
		switch {
		case err == nil:
			n.members.Start()
			return
		case errors.Is(err, cluster.ErrNewerFormat):
			glog.Errorf("kafka gateway: not joining: %v", err)
			select {
			case n.served <- fmt.Errorf("not joining the cluster: %w", err):
			default:
			}
			return
		}
		glog.V(1).Infof("kafka gateway: the cluster's format: %v; retrying", err)
		if !n.sleep(time.Second) {
			return
		}
	}
}

// ensureSecret reads the cluster's id and secret (made by the first
// gateway if none is kept, and no file gives the secret), seals the
// credentials older gateways left in the clear, removes the password they
// kept in a file, and makes the gateways' own user; it retries until the
// filer takes it all.
func (n *Node) ensureSecret() {
	files := cluster.InstrumentFiles(n.store)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := n.readSecret(ctx, files)
		cancel()
		if err == nil {
			n.secretRead.Store(true)
			return
		}
		glog.V(1).Infof("kafka gateway: the cluster's secret: %v; retrying", err)
		if !n.sleep(time.Second) {
			return
		}
	}
}

func (n *Node) readSecret(ctx context.Context, files filerfs.Files) error {
	secret := n.fileSecret
	if secret == nil {
		var err error
		if secret, err = cluster.EnsureSecret(ctx, n.store, n.store, strconv.Itoa(int(n.self.NodeID))); err != nil {
			return err
		}
	}
	id, err := cluster.EnsureID(ctx, n.store, *n.id.Load())
	if err != nil {
		return err
	}
	n.id.Store(&id)
	n.sealer.SetSecret(secret)
	sealed, err := n.users.SealAll(ctx)
	if err != nil {
		return err
	}
	tokens, err := n.tokens.SealAll(ctx)
	if err != nil {
		return err
	}
	if sealed+tokens > 0 {
		glog.V(0).Infof("kafka gateway: sealed the SCRAM credentials of %d users and %d delegation tokens that older gateways kept in the clear", sealed, tokens)
	}
	if removed, err := cluster.RemoveLegacyPassword(ctx, files); err != nil {
		return err
	} else if removed {
		glog.V(0).Infof("kafka gateway: removed the gateways' password older gateways kept in the filer; gateways of those versions can no longer log in to this one")
	}
	if n.identity != nil {
		if err := n.identity.Ensure(ctx, secret, n.users); err != nil {
			return err
		}
	}
	if n.client != nil && n.logins {
		// Nothing there logs in, but ACLs, users' names and
		// groups' offsets are for Kafka's clients to see as ACLs allow.
		if url, served, err := n.client.FilerServes(ctx, "/etc/kafka-gateway"); err == nil && served {
			glog.Warningf("kafka gateway: the filer serves the gateways' state to anyone over HTTP (%s answers without a token): set [jwt.filer_signing.read] key in the filer's security.toml, or keep its HTTP port from untrusted networks", url)
		}
	}
	return nil
}

// clusterID is the cluster's id, as Metadata answers it.
func (n *Node) clusterID() string { return *n.id.Load() }

// storageName names the storage in log lines.
func (n *Node) storageName() string {
	if n.client == nil {
		return "the storage given in its Config"
	}
	return "the SeaweedFS cluster at masters " + n.cfg.Masters
}

// watchCluster logs when the SeaweedFS cluster becomes reachable and when
// it is lost, so an operator sees why clients get retriable errors.
func (n *Node) watchCluster() {
	ready, reached, mismatched := false, false, 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := n.store.Ready(ctx)
		cancel()
		switch {
		case err == nil && !ready:
			glog.V(0).Infof("kafka gateway: %s is ready", n.storageName())
		case errors.Is(err, seaweedmq.ErrFilerTooOld), errors.Is(err, seaweedmq.ErrSecurity) && !reached && mismatched > 0:
			// Asking again will not mend it: the gateway stops, saying
			// what to set. (Seen once, it may be a server restarting,
			// and a cluster reached before with the same security is
			// one: they are waited for.)
			select {
			case n.served <- err:
			default:
			}
			return
		case err != nil && ready:
			glog.Warningf("kafka gateway: %s unreachable, clients get retriable errors: %v", n.storageName(), err)
		case err != nil:
			glog.V(0).Infof("kafka gateway: waiting for %s: %v", n.storageName(), err)
		}
		ready = err == nil
		reached = reached || ready
		if errors.Is(err, seaweedmq.ErrSecurity) {
			mismatched++
		} else {
			mismatched = 0
		}
		if !n.sleep(5 * time.Second) {
			return
		}
	}
}
