// Package command holds this project's weed subcommands, in SeaweedFS's
// house style: an options struct of flag pointers, init() binding the flags.
package command

import (
	"context"
	"errors"
	"net"
	"net/http"
	_ "net/http/pprof" // served on -port.pprof
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	swcommand "github.com/seaweedfs/seaweedfs/weed/command"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/security"
	"github.com/seaweedfs/seaweedfs/weed/util"
	"github.com/seaweedfs/seaweedfs/weed/util/grace"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/feature"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/gateway"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/iceberg"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/quota"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/registry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/sasl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/telemetry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/txn"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

var kafkaGatewayOpts kafkaGatewayOptions

// MqKafkaGateway is `weed mq.kafka.gateway`; it takes the place of upstream's
// command of the same name.
var MqKafkaGateway = &swcommand.Command{
	UsageLine: "mq.kafka.gateway [-port=9092] [-master=localhost:9333] [-ip=<host>] [-embedded.dir=<folder>]",
	Short:     "serve the Kafka wire protocol on SeaweedMQ",
	Long: `Serve the Kafka wire protocol on SeaweedMQ.

Kafka clients (Java, librdkafka, franz-go, sarama, kafka-go, ...) produce to
and consume from SeaweedMQ topics through this gateway as if it were a Kafka
broker. Kafka topics are SeaweedMQ topics in the "kafka" namespace; records,
their keys, headers and timestamps live in SeaweedFS.

The gateway joins an existing SeaweedFS cluster through its masters: it finds
the filers and MQ brokers there and follows them as they move.

  -ip                  host advertised to clients in Metadata (default: this
                       machine's detected address). Clients connect to
                       <ip>:<port>, so it must be reachable by them.
  -ip.bind             address to listen on (default: same as -ip); use
                       0.0.0.0 to listen everywhere while advertising -ip
  -port                Kafka listener port (default 9092)
  -master              comma-separated SeaweedFS masters (default localhost:9333)
  -filerGroup          filer group of the cluster, if it uses one
  -default-partitions  partitions of auto-created topics and of CreateTopics
                       asking for the default (-1)
  -auto.create.topics  create unknown topics on Metadata requests, like
                       Kafka's auto.create.topics.enable (default true)
  -max.request.bytes   largest request frame accepted, like Kafka's
                       socket.request.max.bytes (default 100 MiB)
  -node.id             broker id this gateway has in Metadata (default:
                       derived from -ip and -port, so it stays the same
                       across restarts); unique among the cluster's gateways
  -port.pprof          serve Go profiling on this port (0: off), on
                       -pprof.ip (default 127.0.0.1: profiles show memory)
  -clock.skew.file     for fault tests: a file holding a duration (30s,
                       -30s) the gateway adds to its wall clock (the times
                       it stores and compares with stored times), read
                       every second, so that a test can skew it or make it
                       jump
  -metricsPort         serve /metrics (Prometheus), /health and /ready on
                       this HTTP port (0: off), like SeaweedFS's servers
  -metricsIp           address of that port (default: -ip.bind, or -ip)
  -group.initial.rebalance.delay.ms
                       how long a new consumer group waits for more members
                       before its first rebalance (default 3000, as Kafka)
  -group.min.session.timeout.ms, -group.max.session.timeout.ms
                       the session timeouts group members may ask for
                       (default 6000 and 1800000, as Kafka)
  -offsets.retention.minutes
                       committed offsets of a group empty this long (of a
                       group that only commits: committed this long ago) are
                       removed, then the group (default 10080, 7 days, as
                       Kafka; -1: never)
  -offsets.retention.check.interval.ms
                       how often expired offsets are looked for (default
                       600000, as Kafka)
  -transactional.id.expiration.ms
                       a transactional id without a transaction going on and
                       unchanged this long is removed (default 604800000, 7
                       days, as Kafka; -1: never)
  -transaction.version the transaction.version feature ApiVersions gives
                       clients (default 2: transactions v2, KIP-890, the
                       producer epoch bumped at every end; 0 or 1: the
                       classic protocol)
  -log.cleaner.backoff.ms
                       the pause between the log cleaner's rounds over the
                       compacted partitions this gateway leads (default
                       15000, as Kafka; -1: compacted topics are not
                       cleaned)
Security (see the README's Security section):
  -listeners           PROTOCOL://host:port entries, comma-separated, of
                       PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL (default:
                       one PLAINTEXT listener on -ip.bind:-port). Metadata
                       answers each client with the addresses of the
                       listener it came in on.
  -advertised.listeners
                       the addresses clients use, PROTOCOL://host:port
                       (default: -ip and each listener's port)
  -ssl.cert, -ssl.key  PEM certificate (chain) and key of the SSL and
                       SASL_SSL listeners, read again when they change
  -ssl.client.ca       PEM certificates that sign client certificates
  -ssl.client.auth     none, requested or required (mTLS)
  -ssl.principal.mapping.rules
                       a client certificate's principal, as Kafka's rules:
                       DEFAULT (the whole subject) or
                       RULE:^CN=([^,]+).*$/$1/ (its CN)
  -sasl.enabled.mechanisms
                       of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER
  -sasl.users          FILE of user:password lines: these users are given
                       SCRAM credentials at start (the first administrator)
  -sasl.oauthbearer.jwks FILE
                       the JSON Web Key Set that signs valid OAUTHBEARER
                       tokens; -sasl.oauthbearer.expected.issuer and
                       -sasl.oauthbearer.expected.audience check iss and aud,
                       -sasl.oauthbearer.sub.claim.name names the principal
  -sasl.oauthbearer.unsecured
                       accept unsigned tokens (alg none): for tests only
  -authorizer.enabled  decide every request by Kafka's ACLs (CreateAcls,
                       DescribeAcls, DeleteAcls; kept in the filer, applied by
                       every gateway within seconds); off by default, as Kafka
  -super.users         principals that may do everything: User:alice;User:bob
  -allow.everyone.if.no.acl.found
                       allow what no ACL of the resource speaks of (default
                       false, as Kafka)
  -fetch.max.bytes     most record bytes of one Fetch response, whatever the
                       client asks (default 57671680, as Kafka's)
  -decompression.max.bytes
                       most bytes held decompressed from produced batches
                       across the gateway; beyond it produces wait (default
                       536870912)
  -connections.max.idle.ms
                       close a connection that sends no request for this long
                       (default 600000, as Kafka; -1: never)
  -max.connections, -max.connections.per.ip
                       most connections open at once, in all and from one
                       address; the excess is closed at accept (0: unbounded)
  -connections.max.reauth.ms
                       SASL sessions end after this long unless the client
                       logs in again (KIP-368); 0: never
  -quota.window.num, -quota.window.size.seconds
                       a client's byte rate is measured over this many
                       samples of this many seconds (default 11 and 1, as
                       Kafka) against its quota (kafka-configs.sh
                       --entity-type users/clients)
  -schema.registry.listeners
                       serve the schema registry (Confluent's REST API) on
                       these http(s)://host:port, kept in the _schemas
                       topic (with -embedded.dir: http://127.0.0.1:8081
                       unless set; none: off)
  -schema.registry.basic.auth
                       the schema registry asks for HTTP basic auth with
                       the gateway's SCRAM users; with -authorizer.enabled
                       subjects are decided by their topics' ACLs
  -delegation.token.secret.key
                       turns delegation tokens on (KIP-48): the secret of
                       their HMACs, the same on every gateway; tokens log in
                       with SCRAM (tokenauth=true) on every gateway
  -delegation.token.max.lifetime.ms, -delegation.token.expiry.time.ms,
  -delegation.token.expiry.check.interval.ms
                       a token's longest life (default 7 days), its life
                       between renewals (1 day), how often expired tokens
                       are removed (1 hour), as Kafka's

  -embedded.dir        start a single-node SeaweedFS (master, volume, filer,
                       MQ broker) from this same binary with its data in this
                       folder, and serve Kafka on it. Never started unless
                       asked: without it, an unreachable -master is retried,
                       and clients get retriable errors meanwhile.
  -embedded.ports      master,volume,filer,broker ports of the embedded
                       SeaweedFS (default 9333,8080,8888,17777; each of the
                       first three also uses its port+10000 for gRPC)
  -embedded.s3.port, -embedded.iceberg.port
                       the embedded SeaweedFS's S3 gateway (default 8333,
                       gRPC on 18333) and its Iceberg REST catalog (8181),
                       where topics with iceberg.mode are kept as tables;
                       -embedded.s3.port=0: neither
  -iceberg.catalog, -iceberg.warehouse, -iceberg.s3.endpoint
                       against a running cluster: the Iceberg REST catalog
                       (http://host:8181) of the topics' tables, its table
                       bucket (default kafka), and the S3 API (made if
                       missing) the data files go through
  -iceberg.maintenance.interval.ms
                       how often each table's snapshots are expired, its
                       orphan files deleted and its small data files
                       compacted (default 1 hour; 0: never)

Examples:
  # one command, a persistent Kafka endpoint on 127.0.0.1:9092
  weed mq.kafka.gateway -ip=127.0.0.1 -embedded.dir=./kafka-data

  # join a running cluster
  weed mq.kafka.gateway -port=9092 -master=master1:9333,master2:9333

  # listen on every interface, advertise a name clients resolve
  weed mq.kafka.gateway -ip=kafka.example.com -ip.bind=0.0.0.0 -master=localhost:9333
`,
}

func runMqKafkaGateway(cmd *swcommand.Command, args []string) bool {
	o := &kafkaGatewayOpts
	util.LoadSecurityConfiguration()
	masters := *o.master
	if tv := *o.transactionVersion; tv < 0 || tv > 2 {
		glog.Errorf("kafka gateway: -transaction.version %d: 0, 1 or 2", tv)
		return false
	}

	if *o.clockSkewFile != "" {
		// For the life of the process, as the clock it sets.
		clock.Follow(context.Background(), *o.clockSkewFile, time.Second)
	}

	var emb *embedded
	if *o.embeddedDir != "" {
		var err error
		if emb, err = startEmbedded(*o.embeddedDir, *o.embeddedPorts, *o.embeddedS3, *o.embeddedIceberg); err != nil {
			glog.Errorf("kafka gateway: embedded SeaweedFS: %v", err)
			return false
		}
		masters = emb.master
	}

	bind := *o.ipBind
	if bind == "" {
		bind = *o.ip
	}
	listenerList := *o.listeners
	if listenerList == "" {
		listenerList = gateway.Plaintext + "://" + net.JoinHostPort(bind, strconv.Itoa(*o.port))
	}
	listeners, err := gateway.ParseListeners(listenerList, *o.advertisedListeners, *o.ip)
	if err != nil {
		glog.Errorf("kafka gateway: %v", err)
		return false
	}
	self, err := selfMember(int32(*o.nodeID), listeners, *o.authorizer)
	if err != nil {
		glog.Errorf("kafka gateway: %v", err)
		return false
	}
	regSpec := *o.registryListeners
	if regSpec == "" && emb != nil {
		regSpec = defaultEmbeddedRegistry
	}
	if regSpec == "none" {
		regSpec = ""
	}
	regListeners, regURL, err := parseRegistryListeners(regSpec, *o.ip)
	if err != nil {
		glog.Errorf("kafka gateway: %v", err)
		return false
	}
	self.Registry = regURL
	if self.NodeID < 0 {
		// From the first listener's address (-ip and -port without
		// -listeners), so it stays the same across restarts.
		first := listeners[0].Advertised
		if first == "" {
			first = listeners[0].Bind
		}
		host, port, _ := net.SplitHostPort(first)
		p, _ := strconv.Atoi(port)
		self.NodeID = membership.NodeID(host, int32(p))
	}
	client := seaweedmq.New(seaweedmq.Options{
		Masters:    pb.ServerAddresses(masters).ToAddresses(),
		FilerGroup: *o.filerGroup,
		DialOption: security.LoadClientTLS(util.GetViper(), "grpc.mq"),
		// The write-ahead log is the node's: a restarted gateway trims
		// what it left, and whoever takes its partitions reads it.
		WALName: strconv.Itoa(int(self.NodeID)),
	})
	// The handlers, groups and transactions reach SeaweedFS through
	// wrappers that time every call for the metrics.
	backend := gateway.Instrument(client)
	files := gateway.InstrumentFiles(client)

	// The gateways of the cluster share its partitions, groups and
	// transactional ids: this one serves only what it owns.
	members := membership.New(membership.Options{Self: self, Filer: client})
	client.SetTerm(func(topic string, index int32) int64 {
		if term, ok := members.Serving(membership.PartitionKey(topic, index)); ok {
			return term
		}
		return 0
	})
	// Share groups' settings, and their share-partitions of the
	// partitions this gateway leads (released with the leadership).
	msd := func(n *int) time.Duration { return time.Duration(*n) * time.Millisecond }
	limits := share.DefaultLimits
	limits.SessionTimeout, limits.MinSessionTimeout = msd(o.shareSession), msd(o.shareMinSession)
	limits.HeartbeatInterval, limits.MinHeartbeatInterval = msd(o.shareHeartbeat), msd(o.shareMinHeartbeat)
	limits.LockDuration, limits.MinLockDuration = msd(o.shareLock), msd(o.shareMinLock)
	limits.DeliveryLimit, limits.MaxRecordLocks = int16(*o.shareDeliveryLimit), *o.shareMaxLocks
	shareConfigs := share.NewConfigs(files, limits)
	shares := share.NewStore(files, shareConfigs)
	owned := gateway.NewOwned(backend, gateway.Releasers{client, shares}, members.Serving, members.Changed)
	if *o.cleanerBackoff >= 0 {
		client.StartCleaner(seaweedmq.CleanerOptions{
			Backoff: max(time.Duration(*o.cleanerBackoff)*time.Millisecond, 100*time.Millisecond),
			Leads: func(topic string, index int32) bool {
				_, ok := members.Serving(membership.PartitionKey(topic, index))
				return ok
			},
		})
	}
	serving := func(key func(string) string) func(string) (int64, bool) {
		return func(name string) (int64, bool) { return members.Serving(key(name)) }
	}

	var authz *acl.Authorizer
	if *o.authorizer {
		authz = acl.New(acl.Options{Files: files, AllowIfNoACL: *o.allowIfNoACL,
			SuperUsers: append(splitList(*o.superUsers, ";"), gateway.GatewayPrincipal)})
	}
	assignors := splitList(*o.consumerAssignors, ",")
	for _, a := range assignors {
		if !slices.Contains(group.DefaultConsumerAssignors, a) {
			glog.Errorf("kafka gateway: -group.consumer.assignors: %q is not an assignor (uniform, range)", a)
			return false
		}
	}
	groups := group.New(group.Options{
		Store:                     offset.NewStore(files),
		ShareConfigs:              shareConfigs,
		ShareStates:               shares,
		ShareMaxSize:              *o.shareMaxSize,
		Topics:                    protocol.GroupTopics(client),
		ConsumerSessionTimeout:    time.Duration(*o.consumerSession) * time.Millisecond,
		ConsumerHeartbeatInterval: time.Duration(*o.consumerHeartbeat) * time.Millisecond,
		ConsumerAssignors:         assignors,
		ConsumerMaxSize:           *o.consumerMaxSize,
		StreamsSessionTimeout:     time.Duration(*o.streamsSession) * time.Millisecond,
		StreamsHeartbeatInterval:  time.Duration(*o.streamsHeartbeat) * time.Millisecond,
		StreamsInitialDelay:       time.Duration(*o.streamsDelay) * time.Millisecond,
		StreamsNumStandbyReplicas: *o.streamsStandbys,
		StreamsMaxSize:            *o.streamsMaxSize,
		TopicVisible: func(principal, host, topic string) bool {
			return authz == nil || authz.Authorize(principal, host, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, topic)
		},
		InitialRebalanceDelay: max(time.Millisecond, time.Duration(*o.groupInitialDelay)*time.Millisecond),
		MinSessionTimeout:     time.Duration(*o.groupMinSession) * time.Millisecond,
		MaxSessionTimeout:     time.Duration(*o.groupMaxSession) * time.Millisecond,
		OffsetsRetention:      retention(*o.offsetsRetention, time.Minute),
		RetentionCheck:        time.Duration(*o.retentionCheck) * time.Millisecond,
		Serving:               serving(membership.GroupKey),
		Changed:               members.Changed,
	})

	// Transactions reach the partitions and groups they span on whichever
	// gateway leads or coordinates them.
	// With the authorizer, the gateways log in to one another (on a SASL
	// listener) as their own super user.
	users := user.NewStore(files)
	var identity *gateway.Identity
	peerOpts := gateway.PeerOptions{}
	// The gateways reach one another on interListener: logged in as
	// their own user when it has SASL, over TLS when it has TLS.
	inter := interListener(listeners, *o.authorizer)
	if inter.SASL() {
		if !slices.Contains(splitList(*o.saslMechanisms, ","), sasl.ScramSHA512) {
			glog.Errorf("kafka gateway: the gateways log in to one another with SCRAM-SHA-512: add it to -sasl.enabled.mechanisms")
			return false
		}
		identity = &gateway.Identity{}
		peerOpts.Identity = identity
	} else if *o.authorizer {
		glog.Warningf("kafka gateway: -authorizer.enabled without a SASL listener: the gateways reach one another on %s as %s, which needs to be in -super.users for transactions that span gateways", inter.Name, gateway.Anonymous)
	}
	if inter.TLS() {
		if peerOpts.TLS, err = peerTLS(*o.sslClientCA); err != nil {
			glog.Errorf("kafka gateway: %v", err)
			return false
		}
	}
	peers := gateway.NewPeers(peerOpts)
	// The schema registry: a Kafka client of this gateway, kept in
	// _schemas, started with the listeners below; its state also checks
	// the schema ids of topics that validate them.
	var schemas *schemaRegistry
	var tables *iceberg.Tables
	var schemaState *registry.State
	if len(regListeners) > 0 {
		schemaState = registry.NewState()
	}
	forward := &gateway.Forwarder{Log: owned, Watermark: client.HighWatermark, Groups: groups, Members: members, Peers: peers}
	txns := txn.New(txn.Options{Files: files, Log: forward, Groups: forward, Serving: serving(membership.TxnKey),
		Changed: members.Changed, IDExpiration: retention(*o.txnIDExpiration, time.Millisecond)})
	forward.Txns = txns
	metrics.RegisterGroups(groups, forward.HighWatermark)

	// Logins: SCRAM and PLAIN check the users every gateway shares, SCRAM
	// the delegation tokens too.
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	tokens := user.NewTokens(user.TokenOptions{Files: files, Secret: *o.tokenSecret,
		MaxLifetime: ms(*o.tokenMaxLifetime), RenewTime: ms(*o.tokenExpiry), CheckEvery: ms(*o.tokenCheck)})
	auth, err := sasl.New(sasl.Config{
		Mechanisms: splitList(*o.saslMechanisms, ","),
		Users:      users,
		Tokens:     tokens,
		OAuth: sasl.OAuthConfig{
			JWKSFile: *o.oauthJWKS, Unsecured: *o.oauthUnsecured,
			Issuer: *o.oauthIssuer, Audience: *o.oauthAudience, SubClaim: *o.oauthSubClaim,
		},
	})
	if err != nil {
		glog.Errorf("kafka gateway: %v", err)
		return false
	}
	var usersCreated atomic.Bool
	usersCreated.Store(true)
	if *o.saslUsers != "" {
		initial, err := readUsersFile(*o.saslUsers)
		if err != nil {
			glog.Errorf("kafka gateway: -sasl.users: %v", err)
			return false
		}
		usersCreated.Store(false)
		go func() {
			createUsers(users, initial)
			usersCreated.Store(true)
		}()
	}
	var identityRead atomic.Bool
	identityRead.Store(identity == nil)
	if identity != nil {
		go func() {
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := identity.Ensure(ctx, files, client, users, strconv.Itoa(int(self.NodeID)))
				cancel()
				if err == nil {
					identityRead.Store(true)
					return
				}
				glog.V(1).Infof("kafka gateway: the gateways' own user: %v; retrying", err)
				time.Sleep(time.Second)
			}
		}()
	}
	if authz != nil {
		authz.Start()
	}
	// Client quotas: kept in the filer, read again every 2 s; the rates
	// of quota'd clients shared with the other gateways every second.
	quotas := quota.New(quota.Options{Files: files, Samples: *o.quotaSamples, Window: time.Duration(*o.quotaWindow) * time.Second,
		Node: strconv.Itoa(int(self.NodeID)), Gateways: func() int { return len(members.Members()) }})
	quotas.Start()
	// Client metrics subscriptions (KIP-714): kept in the filer, read
	// again every 2 s; what clients push is served on /metrics.
	clientMetrics := telemetry.New(telemetry.Options{Files: files})
	clientMetrics.Start()
	if err := metrics.Register(clientMetrics); err != nil {
		glog.Warningf("kafka gateway: client metrics are not served on /metrics: %v", err)
	}
	// The finalized features: -transaction.version until UpdateFeatures
	// sets them for the cluster.
	features := feature.New(files, map[string]int16{feature.Group: 1, feature.Share: 1, feature.Streams: 1, feature.Transaction: int16(*o.transactionVersion)})
	features.Start()

	srv, err := gateway.NewServer(gateway.Options{
		Listeners: listeners,
		TLS: gateway.TLSOptions{
			CertFile: *o.sslCert, KeyFile: *o.sslKey,
			ClientCAFile: *o.sslClientCA, ClientAuth: *o.sslClientAuth,
			PrincipalRules: *o.sslPrincipalRules,
		},
		SASL:                  auth,
		MaxReauth:             time.Duration(*o.maxReauthMs) * time.Millisecond,
		Users:                 users,
		Tokens:                tokens,
		Quotas:                quotas,
		Schemas:               schemaState,
		ClientMetrics:         clientMetrics,
		Features:              features,
		Authorizer:            authz,
		NodeID:                self.NodeID,
		ClusterID:             clusterID(masters, *o.filerGroup),
		DefaultPartitions:     int32(*o.defaultPartitions),
		AutoCreateTopics:      *o.autoCreate,
		MaxRequestSize:        *o.maxRequestBytes,
		MaxIdle:               time.Duration(*o.maxIdleMs) * time.Millisecond,
		MaxConnections:        *o.maxConnections,
		FetchMaxBytes:         *o.fetchMaxBytes,
		FetchSessionSlots:     int(orNone(int64(*o.fetchSessionSlots))),
		TransactionVersion:    int16(*o.transactionVersion),
		FetchBatchCacheBytes:  orNone(*o.fetchBatchCache),
		DecompressionMaxBytes: *o.decompressMaxBytes,
		MaxConnectionsPerIP:   *o.maxConnectionsPerIP,
		Backend:               owned,
		Groups:                groups,
		Shares:                shares,
		ShareSessionSlots:     *o.shareSessions,
		HighWatermark:         forward.HighWatermark,
		Txns:                  txns,
		Cluster:               members,
		Verifier:              forward,
		ClusterReady: func(ctx context.Context) error {
			if err := client.Ready(ctx); err != nil {
				return err
			}
			if !usersCreated.Load() {
				return errors.New("the users of -sasl.users are not created yet")
			}
			if !identityRead.Load() {
				return errors.New("the gateways' own user is not ready yet")
			}
			if authz != nil {
				if err := authz.Ready(); err != nil {
					return err
				}
			}
			if err := quotas.Ready(); err != nil {
				return err
			}
			if err := clientMetrics.Ready(); err != nil {
				return err
			}
			if err := features.Ready(); err != nil {
				return err
			}
			return members.Ready()
		},
	})
	if err != nil {
		glog.Errorf("kafka gateway: %v", err)
		if authz != nil {
			authz.Close()
		}
		quotas.Close()
		clientMetrics.Close()
		features.Close()
		owned.Close()
		txns.Close()
		groups.Close()
		shares.Close()
		client.Close()
		if emb != nil {
			emb.stop()
		}
		return false
	}

	// Shutdown, in order: stop taking requests and answer those in flight,
	// write the partitions' tails to segments (the write-ahead log holds
	// them anyway), hand the partitions and groups over, then stop the
	// embedded SeaweedFS. SeaweedFS's own signal handler runs it
	// and exits; a second signal exits at once.
	var shutdownOnce sync.Once
	shutdown := func() {
		shutdownOnce.Do(func() {
			began := time.Now()
			// Each step that takes long is named in the log.
			step := func(what string, stop func()) {
				start := time.Now()
				stop()
				if d := time.Since(start); d > 500*time.Millisecond {
					glog.V(0).Infof("kafka gateway: stopping %s took %v", what, d.Round(time.Millisecond))
				}
			}
			step("the schema registry", schemas.Close)
			if tables != nil {
				step("the Iceberg tables", tables.Close)
			}
			step("the listeners and requests in flight", func() { srv.Close() })
			step("the partitions' tails", func() { client.FlushTails(2 * time.Second) })
			step("the membership", members.Close) // the others take over without waiting for the lock to expire
			step("partition ownership", owned.Close)
			step("the transaction coordinator", txns.Close)
			step("the connections to other gateways", peers.Close)
			if authz != nil {
				step("the ACL refresh", authz.Close)
			}
			step("the delegation tokens' sweep", tokens.Close)
			step("the client quotas' refresh", quotas.Close)
			step("the client metrics' refresh", clientMetrics.Close)
			step("the features' refresh", features.Close)
			step("the group coordinator", groups.Close)
			step("the share-partitions", shares.Close)
			step("the SeaweedMQ client", client.Close)
			if emb != nil {
				step("the embedded SeaweedFS", emb.stop)
			}
			glog.V(0).Infof("kafka gateway: stopped in %v", time.Since(began).Round(time.Millisecond))
			glog.Flush()
		})
	}
	grace.OnInterrupt(shutdown)
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sig
		glog.V(0).Infof("kafka gateway: %v: finishing requests in flight (again to exit at once)", s)
		<-sig
		glog.Warningf("kafka gateway: second signal, exiting now")
		glog.Flush()
		os.Exit(1)
	}()

	if *o.metricsPort > 0 {
		ip := *o.metricsIP
		if ip == "" {
			ip = bind
		}
		addr := net.JoinHostPort(ip, strconv.Itoa(*o.metricsPort))
		ml, err := net.Listen("tcp", addr)
		if err != nil {
			// Not serving the port asked for is a failure to start, as
			// for the Kafka listeners: probes and scrapes would find
			// nothing, or something else.
			glog.Errorf("kafka gateway: metrics on %s: %v", addr, err)
			shutdown()
			return false
		}
		mon := &http.Server{Addr: addr, Handler: srv.MonitorHandler(), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := mon.Serve(ml); err != nil && err != http.ErrServerClosed {
				glog.Errorf("kafka gateway: metrics on %s: %v", addr, err)
			}
		}()
		glog.V(0).Infof("kafka gateway: metrics, health and readiness on http://%s (/metrics, /health, /ready)", addr)
	}

	if *o.pprofPort > 0 {
		go func() {
			addr := net.JoinHostPort(*o.pprofIP, strconv.Itoa(*o.pprofPort))
			if err := http.ListenAndServe(addr, nil); err != nil {
				glog.Errorf("kafka gateway: pprof on %s: %v", addr, err)
			}
		}()
	}

	if len(regListeners) > 0 {
		if schemas, err = startSchemaRegistry(schemaState, regListeners, append(peerOpts.ClientOpts(), kgo.SeedBrokers(self.Addr())), members,
			registrySecurity(*o.registryBasicAuth, users, authz), *o.sslCert, *o.sslKey); err != nil {
			glog.Errorf("kafka gateway: %v", err)
			shutdown()
			return false
		}
	}
	var schemasOf iceberg.Schemas // the registry's, when this gateway serves one
	if schemas != nil {
		schemasOf = schemas
	}
	if tables, err = startIcebergTables(icebergOptions(emb), backend, client.WithFiler, members, schemasOf); err != nil {
		glog.Errorf("kafka gateway: %v", err)
		shutdown()
		return false
	}
	glog.V(0).Infof("kafka gateway: node %d listening on %s, serving SeaweedFS at masters %s", self.NodeID, srv.Listeners(), masters)
	go watchCluster(client, masters)
	members.Start()
	groups.Start()
	txns.Start()
	tokens.Start()

	if err := srv.Serve(); err != nil {
		glog.Errorf("kafka gateway: %v", err)
		shutdown()
		return false
	}
	select {} // closed by the signal handler, which exits when shutdown is done
}
