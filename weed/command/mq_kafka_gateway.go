// Package command holds this project's weed subcommands, in SeaweedFS's
// house style: init() binding the flags (the gateway's into node.Config).
package command

import (
	"context"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	swcommand "github.com/seaweedfs/seaweedfs/weed/command"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/util"
	"github.com/seaweedfs/seaweedfs/weed/util/grace"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/node"
)

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
  -cluster.name        name of this Kafka cluster among those one filer holds
                       (a-z, 0-9, _): topics in namespace kafka_<name>, state
                       in /etc/kafka-gateway/clusters/<name> (default empty:
                       namespace kafka, /etc/kafka-gateway)
  -volumeServerAccess  reach volume servers at their address in the cluster
                       (direct, the default), their publicUrl, or through
                       the filer's HTTP port (filerProxy)
  -default.replication.factor
                       replication factor of topics created with the default
                       (-1): the copies SeaweedFS keeps of their files
                       (default -1: the cluster's default replication)
  -replication.spread  where a topic's copies go: server (default), rack or
                       datacenter (factor 3: SeaweedFS replication 002, 020
                       or 200)
  -default-partitions  partitions of auto-created topics and of CreateTopics
                       asking for the default (-1)
  -auto.create.topics  create unknown topics on Metadata requests, like
                       Kafka's auto.create.topics.enable (default true)
  -max.request.bytes   largest request frame accepted, like Kafka's
                       socket.request.max.bytes (default 100 MiB)
  -node.id             broker id this gateway has in Metadata (default:
                       derived from -ip and -port, so it stays the same
                       across restarts); unique among the cluster's gateways
  -rack                this gateway's rack or zone (Kafka's broker.rack), in
                       Metadata and DescribeCluster (default: none)
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
  -metrics.partitions  a regexp of the topics whose partitions' log start and
                       end offsets and sizes are on /metrics, each from the
                       gateway leading it (default empty: none; at most 2000
                       partitions a gateway)
  -group.initial.rebalance.delay.ms
                       how long a new consumer group waits for more members
                       before its first rebalance (default 3000, as Kafka)
  -group.min.session.timeout.ms, -group.max.session.timeout.ms
                       the session timeouts group members may ask for
                       (default 6000 and 1800000, as Kafka)
  -group.max.size      most members of a classic group; past it JoinGroup
                       answers GROUP_MAX_SIZE_REACHED (default 1000; 0:
                       unbounded, Kafka's default)
  -group.consumer.session.timeout.ms, -group.consumer.heartbeat.interval.ms
                       session timeout and heartbeat interval of the members
                       of consumer groups of the KIP-848 protocol (default
                       45000 and 5000, as Kafka)
  -group.consumer.assignors
                       their server-side assignors, uniform and range; the
                       first is used when no member names one (default
                       uniform,range)
  -group.consumer.max.size
                       most members of such a group; past it
                       GROUP_MAX_SIZE_REACHED (default 0: unbounded)
  -group.streams.session.timeout.ms, -group.streams.heartbeat.interval.ms
                       session timeout and heartbeat interval of the members
                       of streams groups (KIP-1071) (default 45000 and 5000)
  -group.streams.initial.rebalance.delay.ms
                       how long a new streams group waits for more members
                       before its first assignment (default 3000; -1: none)
  -group.streams.num.standby.replicas
                       standby tasks of each stateful task of a streams
                       group (default 0)
  -group.streams.max.size
                       most members of a streams group (default 0: unbounded)
  -group.share.session.timeout.ms, -group.share.heartbeat.interval.ms,
  -group.share.record.lock.duration.ms
                       share group members' session timeout, heartbeat
                       interval, and how long they hold the records they
                       acquired (default 45000, 5000, 30000, as Kafka); a
                       share group's own share.* configs override them
  -group.share.min.session.timeout.ms,
  -group.share.min.heartbeat.interval.ms,
  -group.share.min.record.lock.duration.ms
                       the smallest of each a share group may set (default
                       45000, 5000, 15000, as Kafka)
  -group.share.delivery.count.limit
                       deliveries of a record to share group members before
                       it is archived (default 5, as Kafka)
  -group.share.partition.max.record.locks
                       most records of a share-partition in flight (default
                       2000, as Kafka)
  -group.share.max.size, -group.share.max.share.sessions
                       most members of a share group, and most share
                       sessions this gateway keeps (default 200 and 2000)
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
  -log.retention.check.interval.ms
                       how often the partitions this gateway leads lose
                       the log segments their topic's retention.bytes, or
                       DeleteRecords, left behind (default 300000, as
                       Kafka)
Security (see docs/security.md):
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
  -cluster.secret.file file of the cluster's secret (16 bytes or more), the
                       same on every gateway: it seals the SCRAM credentials
                       kept in the filer and is the gateways' password to one
                       another (default empty: one kept in the filer)
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
  -fetch.batch.cache.bytes
                       memory for the batches kept for fetches, as produced
                       (compressed as the producer sent them) or as built
                       from stored records (default 67108864; 0: none)
  -fetch.response.budget.bytes
                       most record bytes all fetch responses hold until
                       written; past it a fetch answers with what fits, at
                       least its first batch (default 536870912)
  -max.incremental.fetch.session.cache.slots
                       fetch sessions (KIP-227) this gateway keeps (default
                       1000; 0: none, clients then send full fetches)
  -decompression.max.bytes
                       most bytes held decompressed from produced batches
                       across the gateway; beyond it produces wait (default
                       536870912)
  -connections.max.idle.ms
                       close a connection that sends no request for this long
                       (default 600000, as Kafka; -1: never)
  -max.connections, -max.connections.per.ip
                       most connections open at once, in all and from one
                       address; the excess is closed at accept (0:
                       unbounded; default unbounded and 1000)
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
  -console.listeners   serve the gateway's HTTP API on these
                       http(s)://host:port: topic links (weed
                       mq.kafka.link), with HTTP basic auth by the
                       gateway's users when it has a SASL listener (with
                       -embedded.dir: http://127.0.0.1:8080 unless set;
                       none: off)
  -console.readonly    the console only shows (default true); false: it
                       creates, deletes and alters what the user's ACLs allow
  -console.export      the console exports the records it shows as JSON and
                       CSV (default true; false: it refuses)
  -console.mask        fields the console hides in records before showing,
                       searching and exporting them:
                       topic-regexp=field,field;... ("value": whole values)
  -console.max.records, -console.max.bytes
                       records one browse of the console shows, and record
                       bytes it reads, at most (default 500 and 8388608)
  -console.admin.url, -console.grafana.url
                       weed admin and the Grafana dashboard, linked from the
                       console's cluster page (default: none)
  -link.refresh.ms, -link.sync.interval.ms
                       how often each gateway reads the topic links, and
                       how often a link's controller syncs (default 2000,
                       5000)
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
  -audit.enabled       record an audit log (OCSF events) of logins, requests
                       the ACLs deny and administrative changes (default
                       false; see docs/audit.md)
  -audit.topic, -audit.retention.ms
                       the topic the events are written to (default
                       _audit_log; "": none) and its retention.ms when the
                       gateway creates it (default 604800000, 7 days)
  -audit.file          a file the events are appended to as JSON lines
                       ("-": stdout; default: none)
  -audit.exclude.principals, -audit.exclude.topics
                       principals (User:alice,...) and topics whose events
                       are not recorded, comma-separated (the gateways' own
                       user is never recorded)

  -embedded.dir        start a single-node SeaweedFS (master, volume, filer,
                       MQ broker) from this same binary with its data in this
                       folder, and serve Kafka on it. Never started unless
                       asked: without it, an unreachable -master is retried,
                       and clients get retriable errors meanwhile.
  -embedded.ports      master,volume,filer,broker ports of the embedded
                       SeaweedFS (default 9333,8082,8888,17777; each of the
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

// defaultEmbeddedRegistry is where the run command's schema registry
// listens when -schema.registry.listeners is not given.
const defaultEmbeddedRegistry = "http://127.0.0.1:8081"

// defaultEmbeddedConsole is where the run command serves the gateway's
// HTTP API when -console.listeners is not given.
const defaultEmbeddedConsole = "http://127.0.0.1:8080"

func runMqKafkaGateway(cmd *swcommand.Command, args []string) bool {
	cfg, p := kafkaGatewayConfig, &kafkaGatewayProcess
	util.LoadSecurityConfiguration()
	if p.clockSkewFile != "" {
		// For the life of the process, as the clock it sets.
		clock.Follow(context.Background(), p.clockSkewFile, time.Second)
	}
	var emb *embedded
	if p.embeddedDir != "" {
		var err error
		if emb, err = startEmbedded(p.embeddedDir, p.embeddedPorts, p.embeddedS3, p.embeddedIceberg); err != nil {
			glog.Errorf("kafka gateway: embedded SeaweedFS: %v", err)
			return false
		}
		// The gateway serves the embedded SeaweedFS, with a schema
		// registry and the S3 gateway's Iceberg catalog unless told
		// otherwise.
		cfg.Masters = emb.master
		if cfg.RegistryListeners == "" {
			cfg.RegistryListeners = defaultEmbeddedRegistry
		}
		if cfg.ConsoleListeners == "" {
			cfg.ConsoleListeners = defaultEmbeddedConsole
		}
		if p.embeddedS3 > 0 && cfg.IcebergCatalog == "" {
			cfg.IcebergCatalog = "http://127.0.0.1:" + strconv.Itoa(p.embeddedIceberg)
		}
		if p.embeddedS3 > 0 && cfg.IcebergS3 == "" {
			cfg.IcebergS3 = "http://127.0.0.1:" + strconv.Itoa(p.embeddedS3)
		}
	}

	// Shutdown: the node (requests in flight answered, the partitions'
	// tails written, partitions and groups handed over), then the
	// embedded SeaweedFS. SeaweedFS's own signal handler runs it and
	// exits; a second signal exits at once.
	var n *node.Node
	var shutdownOnce sync.Once
	shutdown := func() {
		shutdownOnce.Do(func() {
			if n != nil {
				n.Close(context.Background()) //nolint:errcheck // without a deadline it does not fail
			}
			if emb != nil {
				emb.stop()
			}
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

	var err error
	if n, err = node.New(cfg); err == nil {
		err = n.Start()
	}
	if err == nil {
		err = <-n.Served() // nil once shut down
	}
	if err != nil {
		glog.Errorf("kafka gateway: %v", err)
		shutdown()
		return false
	}
	select {} // closed by the signal handler, which exits when shutdown is done
}
