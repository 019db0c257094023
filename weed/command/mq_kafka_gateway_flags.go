package command

// The gateway command's options and their flags.

import (
	"strings"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/util"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/quota"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/txn"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

type kafkaGatewayOptions struct {
	ip                *string
	ipBind            *string
	port              *int
	pprofPort         *int
	master            *string
	filerGroup        *string
	defaultPartitions *int
	autoCreate        *bool
	maxRequestBytes   *int
	nodeID            *int
	embeddedDir       *string
	embeddedPorts     *string
	embeddedS3        *int
	embeddedIceberg   *int
	icebergCatalog    *string
	icebergWarehouse  *string
	icebergS3         *string
	icebergMaintain   *int
	groupInitialDelay *int
	offsetsRetention  *int
	txnIDExpiration   *int
	retentionCheck    *int
	cleanerBackoff    *int
	groupMinSession   *int
	groupMaxSession   *int
	consumerSession   *int
	consumerHeartbeat *int
	consumerAssignors *string
	consumerMaxSize   *int

	streamsSession   *int
	streamsHeartbeat *int
	streamsDelay     *int
	streamsStandbys  *int
	streamsMaxSize   *int

	shareSession       *int
	shareMinSession    *int
	shareHeartbeat     *int
	shareMinHeartbeat  *int
	shareLock          *int
	shareMinLock       *int
	shareDeliveryLimit *int
	shareMaxLocks      *int
	shareMaxSize       *int
	shareSessions      *int
	metricsIP          *string
	metricsPort        *int
	pprofIP            *string
	clockSkewFile      *string

	listeners           *string
	advertisedListeners *string
	sslCert             *string
	registryListeners   *string
	registryBasicAuth   *bool
	sslKey              *string
	sslClientCA         *string
	sslClientAuth       *string
	sslPrincipalRules   *string
	saslMechanisms      *string
	saslUsers           *string
	oauthJWKS           *string
	oauthUnsecured      *bool
	oauthIssuer         *string
	oauthAudience       *string
	oauthSubClaim       *string
	maxReauthMs         *int
	tokenSecret         *string
	quotaSamples        *int
	quotaWindow         *int
	tokenMaxLifetime    *int64
	tokenExpiry         *int64
	tokenCheck          *int64
	authorizer          *bool
	superUsers          *string
	allowIfNoACL        *bool
	maxIdleMs           *int
	maxConnections      *int
	maxConnectionsPerIP *int
	fetchMaxBytes       *int
	fetchSessionSlots   *int
	transactionVersion  *int
	fetchBatchCache     *int64
	decompressMaxBytes  *int64
}

func init() {
	MqKafkaGateway.Run = runMqKafkaGateway
	f := &MqKafkaGateway.Flag
	o := &kafkaGatewayOpts
	o.ip = f.String("ip", util.DetectedHostAddress(), "host advertised to Kafka clients")
	o.ipBind = f.String("ip.bind", "", "address to listen on (default: same as -ip)")
	o.port = f.Int("port", 9092, "Kafka listener port")
	o.pprofPort = f.Int("port.pprof", 0, "Go profiling port (0: off)")
	o.clockSkewFile = f.String("clock.skew.file", "", "for fault tests: a file holding a duration (30s, -30s) added to the gateway's wall clock, read every second")
	o.master = f.String("master", "localhost:9333", "comma-separated SeaweedFS master servers")
	o.filerGroup = f.String("filerGroup", "", "filer group of the cluster")
	o.defaultPartitions = f.Int("default-partitions", 4, "partitions of auto-created topics")
	o.autoCreate = f.Bool("auto.create.topics", true, "create unknown topics on Metadata requests")
	o.maxRequestBytes = f.Int("max.request.bytes", protocol.DefaultMaxRequestSize, "largest request frame accepted")
	o.nodeID = f.Int("node.id", -1, "broker id of this gateway in Metadata (default: derived from -ip and -port)")
	o.embeddedDir = f.String("embedded.dir", "", "start a single-node SeaweedFS with its data in this folder and serve Kafka on it")
	o.groupInitialDelay = f.Int("group.initial.rebalance.delay.ms", int(group.DefaultInitialRebalanceDelay/time.Millisecond), "how long a new group waits for more members before its first rebalance")
	o.offsetsRetention = f.Int("offsets.retention.minutes", int(group.DefaultOffsetsRetention/time.Minute), "committed offsets of a group empty this long (of a group that only commits: committed this long ago) are removed, then the group; -1: never")
	o.txnIDExpiration = f.Int("transactional.id.expiration.ms", int(txn.DefaultIDExpiration/time.Millisecond), "a transactional id without a transaction going on and unchanged this long is removed; -1: never")
	o.cleanerBackoff = f.Int("log.cleaner.backoff.ms", 15000, "pause between the log cleaner's rounds over compacted partitions (-1: no cleaning)")
	o.retentionCheck = f.Int("offsets.retention.check.interval.ms", int(group.DefaultRetentionCheck/time.Millisecond), "how often expired offsets are looked for")
	o.groupMinSession = f.Int("group.min.session.timeout.ms", int(group.DefaultMinSessionTimeout/time.Millisecond), "smallest session timeout a group member may ask for")
	o.groupMaxSession = f.Int("group.max.session.timeout.ms", int(group.DefaultMaxSessionTimeout/time.Millisecond), "largest session timeout a group member may ask for")
	o.consumerSession = f.Int("group.consumer.session.timeout.ms", int(group.DefaultConsumerSessionTimeout/time.Millisecond), "session timeout of consumer group (KIP-848) members")
	o.consumerHeartbeat = f.Int("group.consumer.heartbeat.interval.ms", int(group.DefaultConsumerHeartbeatInterval/time.Millisecond), "heartbeat interval of consumer group (KIP-848) members")
	o.consumerAssignors = f.String("group.consumer.assignors", strings.Join(group.DefaultConsumerAssignors, ","), "server-side assignors of consumer groups (uniform, range); the first is the default")
	o.consumerMaxSize = f.Int("group.consumer.max.size", 0, "most members of a consumer group (0: unbounded)")
	o.streamsSession = f.Int("group.streams.session.timeout.ms", int(group.DefaultStreamsSessionTimeout/time.Millisecond), "session timeout of streams group (KIP-1071) members")
	o.streamsHeartbeat = f.Int("group.streams.heartbeat.interval.ms", int(group.DefaultStreamsHeartbeatInterval/time.Millisecond), "heartbeat interval of streams group members")
	o.streamsDelay = f.Int("group.streams.initial.rebalance.delay.ms", int(group.DefaultStreamsInitialDelay/time.Millisecond), "how long a new streams group waits for more members before its first assignment (-1: none)")
	o.streamsStandbys = f.Int("group.streams.num.standby.replicas", 0, "standby tasks of each stateful task of a streams group")
	o.streamsMaxSize = f.Int("group.streams.max.size", 0, "most members of a streams group (0: unbounded)")
	sl := share.DefaultLimits
	ms := func(d time.Duration) int { return int(d / time.Millisecond) }
	o.shareSession = f.Int("group.share.session.timeout.ms", ms(sl.SessionTimeout), "session timeout of share group members (a group's share.session.timeout.ms overrides it)")
	o.shareMinSession = f.Int("group.share.min.session.timeout.ms", ms(sl.MinSessionTimeout), "smallest share.session.timeout.ms a share group may set")
	o.shareHeartbeat = f.Int("group.share.heartbeat.interval.ms", ms(sl.HeartbeatInterval), "heartbeat interval of share group members")
	o.shareMinHeartbeat = f.Int("group.share.min.heartbeat.interval.ms", ms(sl.MinHeartbeatInterval), "smallest share.heartbeat.interval.ms a share group may set")
	o.shareLock = f.Int("group.share.record.lock.duration.ms", ms(sl.LockDuration), "how long a share group member holds the records it acquired")
	o.shareMinLock = f.Int("group.share.min.record.lock.duration.ms", ms(sl.MinLockDuration), "smallest share.record.lock.duration.ms a share group may set")
	o.shareDeliveryLimit = f.Int("group.share.delivery.count.limit", int(sl.DeliveryLimit), "deliveries of a record to share group members before it is archived")
	o.shareMaxLocks = f.Int("group.share.partition.max.record.locks", sl.MaxRecordLocks, "most records of a share-partition in flight")
	o.shareMaxSize = f.Int("group.share.max.size", group.DefaultShareMaxSize, "most members of a share group")
	o.shareSessions = f.Int("group.share.max.share.sessions", protocol.DefaultShareSessions, "most share sessions this gateway keeps")
	o.metricsPort = f.Int("metricsPort", 0, "Prometheus /metrics, /health and /ready HTTP port (0: off)")
	o.metricsIP = f.String("metricsIp", "", "address of the metrics port (default: -ip.bind, or -ip)")
	o.pprofIP = f.String("pprof.ip", "127.0.0.1", "address of the profiling port")
	o.listeners = f.String("listeners", "", "PROTOCOL://host:port listeners (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL); default PLAINTEXT on -ip.bind:-port")
	o.advertisedListeners = f.String("advertised.listeners", "", "PROTOCOL://host:port addresses clients use (default: -ip and each listener's port)")
	o.sslCert = f.String("ssl.cert", "", "PEM certificate (chain) of the SSL listeners")
	o.registryListeners = f.String("schema.registry.listeners", "", "serve the schema registry (Confluent's REST API) on these http(s)://host:port; with -embedded.dir, "+defaultEmbeddedRegistry+" unless set (\"none\": off)")
	o.registryBasicAuth = f.Bool("schema.registry.basic.auth", false, "the schema registry asks for HTTP basic auth with the gateway's SCRAM users (with -authorizer.enabled, subjects are decided by their topics' ACLs either way)")
	o.sslKey = f.String("ssl.key", "", "PEM key of the SSL listeners")
	o.sslClientCA = f.String("ssl.client.ca", "", "PEM certificates that sign client certificates")
	o.sslClientAuth = f.String("ssl.client.auth", "none", "client certificates: none, requested or required")
	o.sslPrincipalRules = f.String("ssl.principal.mapping.rules", "DEFAULT", "a client certificate's principal (Kafka's ssl.principal.mapping.rules)")
	o.saslMechanisms = f.String("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "SASL mechanisms of the SASL listeners")
	o.saslUsers = f.String("sasl.users", "", "file of user:password lines given SCRAM credentials at start")
	o.oauthJWKS = f.String("sasl.oauthbearer.jwks", "", "JSON Web Key Set file of the keys that sign OAUTHBEARER tokens")
	o.oauthUnsecured = f.Bool("sasl.oauthbearer.unsecured", false, "accept unsigned OAUTHBEARER tokens (tests only)")
	o.oauthIssuer = f.String("sasl.oauthbearer.expected.issuer", "", "the iss OAUTHBEARER tokens must have")
	o.oauthAudience = f.String("sasl.oauthbearer.expected.audience", "", "an aud OAUTHBEARER tokens must have")
	o.oauthSubClaim = f.String("sasl.oauthbearer.sub.claim.name", "sub", "the claim naming an OAUTHBEARER token's principal")
	o.maxReauthMs = f.Int("connections.max.reauth.ms", 0, "SASL session lifetime before the client logs in again (0: unbounded)")
	o.quotaSamples = f.Int("quota.window.num", quota.DefaultSamples, "samples a client's byte rate is measured over, against its quota")
	o.quotaWindow = f.Int("quota.window.size.seconds", int(quota.DefaultWindow/time.Second), "the time span of each sample")
	o.tokenSecret = f.String("delegation.token.secret.key", "", "secret of the delegation tokens' HMACs, the same on every gateway (empty: delegation tokens are disabled)")
	o.tokenMaxLifetime = f.Int64("delegation.token.max.lifetime.ms", user.DefaultTokenMaxLifetime.Milliseconds(), "no renewal takes a delegation token past this long after its creation")
	o.tokenExpiry = f.Int64("delegation.token.expiry.time.ms", user.DefaultTokenRenewTime.Milliseconds(), "a delegation token expires this long after its creation or renewal")
	o.tokenCheck = f.Int64("delegation.token.expiry.check.interval.ms", user.DefaultTokenCheckEvery.Milliseconds(), "how often expired delegation tokens are removed")
	o.authorizer = f.Bool("authorizer.enabled", false, "decide every request by Kafka's ACLs, kept in the filer")
	o.superUsers = f.String("super.users", "", "principals that may do everything, as User:alice;User:bob")
	o.allowIfNoACL = f.Bool("allow.everyone.if.no.acl.found", false, "allow what no ACL of the resource speaks of")
	o.fetchMaxBytes = f.Int("fetch.max.bytes", protocol.DefaultFetchMaxBytes, "most record bytes of one Fetch response, whatever the client asks")
	o.fetchBatchCache = f.Int64("fetch.batch.cache.bytes", protocol.DefaultFetchBatchCacheBytes, "memory for batches kept for fetches as produced (compressed as the producer sent them) or as built from stored records; 0 keeps none")
	o.transactionVersion = f.Int("transaction.version", 2, "the transaction.version feature clients are given: 2 for transactions v2 (KIP-890), 0 or 1 for the classic protocol")
	o.fetchSessionSlots = f.Int("max.incremental.fetch.session.cache.slots", protocol.DefaultFetchSessionSlots, "fetch sessions (KIP-227) kept by this gateway; 0 keeps none")
	o.decompressMaxBytes = f.Int64("decompression.max.bytes", protocol.DefaultDecompressionMaxBytes, "most bytes held decompressed from produced batches across the gateway; beyond it produces wait")
	o.maxIdleMs = f.Int("connections.max.idle.ms", int(protocol.DefaultMaxIdle/time.Millisecond), "close connections idle this long (-1: never)")
	o.maxConnections = f.Int("max.connections", 0, "most connections open at once; the excess is closed at accept (0: unbounded)")
	o.maxConnectionsPerIP = f.Int("max.connections.per.ip", 0, "most connections open at once from one address (0: unbounded)")
	o.embeddedPorts = f.String("embedded.ports", "9333,8080,8888,17777", "master,volume,filer,broker ports of the embedded SeaweedFS")
	o.embeddedS3 = f.Int("embedded.s3.port", 8333, "S3 API port of the embedded SeaweedFS's S3 gateway (0: no S3 gateway, no Iceberg catalog)")
	o.embeddedIceberg = f.Int("embedded.iceberg.port", 8181, "Iceberg REST catalog port of the embedded S3 gateway")
	o.icebergCatalog = f.String("iceberg.catalog", "", "Iceberg REST catalog of the topics' tables (iceberg.mode); with -embedded.dir, the embedded one")
	o.icebergWarehouse = f.String("iceberg.warehouse", "kafka", "the table bucket (warehouse) of the topics' tables")
	o.icebergMaintain = f.Int("iceberg.maintenance.interval.ms", 3600000, "how often each topic's table has its snapshots expired (as its history.expire.* properties say), its orphan files older than 72 h deleted and its small data files compacted (SeaweedFS's iceberg_maintenance compaction), by the leader of its partition 0 (0: never, when SeaweedFS's iceberg_maintenance workers do it)")
	o.icebergS3 = f.String("iceberg.s3.endpoint", "", "S3 API the tables' data files are written through, where a missing table bucket is made; with -embedded.dir, the embedded one")
}
