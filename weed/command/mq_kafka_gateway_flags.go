package command

// The gateway command's flags, parsed into node.Config (and what the
// command itself does around the node: the embedded SeaweedFS, the clock).

import (
	"github.com/seaweedfs/seaweedfs/weed/util"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/node"
)

// kafkaGatewayConfig is the gateway's configuration, which the flags
// are parsed into; kafkaGatewayProcess what concerns the process around
// it.
var (
	kafkaGatewayConfig  node.Config
	kafkaGatewayProcess struct {
		embeddedDir     string
		embeddedPorts   string
		embeddedS3      int
		embeddedIceberg int
		clockSkewFile   string
	}
)

func init() {
	MqKafkaGateway.Run = runMqKafkaGateway
	f := &MqKafkaGateway.Flag
	c, e := &kafkaGatewayConfig, &kafkaGatewayProcess
	d := node.Defaults()
	f.StringVar(&c.IP, "ip", util.DetectedHostAddress(), "host advertised to Kafka clients")
	f.StringVar(&c.IPBind, "ip.bind", d.IPBind, "address to listen on (default: same as -ip)")
	f.IntVar(&c.Port, "port", d.Port, "Kafka listener port")
	f.IntVar(&c.PprofPort, "port.pprof", d.PprofPort, "Go profiling port (0: off)")
	f.StringVar(&e.clockSkewFile, "clock.skew.file", "", "for fault tests: a file holding a duration (30s, -30s) added to the gateway's wall clock, read every second")
	f.StringVar(&c.Masters, "master", d.Masters, "comma-separated SeaweedFS master servers")
	f.StringVar(&c.FilerGroup, "filerGroup", d.FilerGroup, "filer group of the cluster")
	f.StringVar(&c.ClusterName, "cluster.name", d.ClusterName, "name of this Kafka cluster among those one filer holds (a-z, 0-9, _): its topics in SeaweedMQ namespace kafka_<name>, its state under /etc/kafka-gateway/clusters/<name>, the Iceberg namespace kafka_<name>; empty: the default cluster (namespace kafka, /etc/kafka-gateway)")
	f.StringVar(&c.VolumeServerAccess, "volumeServerAccess", d.VolumeServerAccess, "reach volume servers by [direct|publicUrl|filerProxy]: their address in the cluster, their public address, or through the filer's HTTP port")
	f.IntVar(&c.DefaultReplicationFactor, "default.replication.factor", d.DefaultReplicationFactor, "replication factor of topics created with the default (-1): the copies SeaweedFS keeps of their files (-1: the cluster's default replication, weed master -defaultReplication)")
	f.StringVar(&c.ReplicationSpread, "replication.spread", d.ReplicationSpread, "where a topic's copies go: [server|rack|datacenter] (factor 3 is SeaweedFS replication 002, 020 or 200)")
	f.IntVar(&c.DefaultPartitions, "default-partitions", d.DefaultPartitions, "partitions of auto-created topics")
	f.BoolVar(&c.AutoCreateTopics, "auto.create.topics", d.AutoCreateTopics, "create unknown topics on Metadata requests")
	f.IntVar(&c.MaxRequestBytes, "max.request.bytes", d.MaxRequestBytes, "largest request frame accepted")
	f.IntVar(&c.NodeID, "node.id", d.NodeID, "broker id of this gateway in Metadata (default: derived from -ip and -port)")
	f.StringVar(&c.Rack, "rack", d.Rack, "this gateway's rack or zone (Kafka's broker.rack), in Metadata and DescribeCluster")
	f.StringVar(&e.embeddedDir, "embedded.dir", "", "start a single-node SeaweedFS with its data in this folder and serve Kafka on it")
	f.IntVar(&c.GroupInitialDelayMs, "group.initial.rebalance.delay.ms", d.GroupInitialDelayMs, "how long a new group waits for more members before its first rebalance")
	f.IntVar(&c.OffsetsRetentionMin, "offsets.retention.minutes", d.OffsetsRetentionMin, "committed offsets of a group empty this long (of a group that only commits: committed this long ago) are removed, then the group; -1: never")
	f.IntVar(&c.TxnIDExpirationMs, "transactional.id.expiration.ms", d.TxnIDExpirationMs, "a transactional id without a transaction going on and unchanged this long is removed; -1: never")
	f.IntVar(&c.CleanerBackoffMs, "log.cleaner.backoff.ms", d.CleanerBackoffMs, "pause between the log cleaner's rounds over compacted partitions (-1: no cleaning)")
	f.IntVar(&c.LogRetentionCheckMs, "log.retention.check.interval.ms", d.LogRetentionCheckMs, "how often the partitions this gateway leads lose the log segments their topic's retention.bytes, or DeleteRecords, left behind")
	f.IntVar(&c.RetentionCheckMs, "offsets.retention.check.interval.ms", d.RetentionCheckMs, "how often expired offsets are looked for")
	f.IntVar(&c.GroupMinSessionMs, "group.min.session.timeout.ms", d.GroupMinSessionMs, "smallest session timeout a group member may ask for")
	f.IntVar(&c.GroupMaxSessionMs, "group.max.session.timeout.ms", d.GroupMaxSessionMs, "largest session timeout a group member may ask for")
	f.IntVar(&c.ConsumerSessionMs, "group.consumer.session.timeout.ms", d.ConsumerSessionMs, "session timeout of consumer group (KIP-848) members")
	f.IntVar(&c.ConsumerHeartbeatMs, "group.consumer.heartbeat.interval.ms", d.ConsumerHeartbeatMs, "heartbeat interval of consumer group (KIP-848) members")
	f.StringVar(&c.ConsumerAssignors, "group.consumer.assignors", d.ConsumerAssignors, "server-side assignors of consumer groups (uniform, range); the first is the default")
	f.IntVar(&c.ConsumerMaxSize, "group.consumer.max.size", d.ConsumerMaxSize, "most members of a consumer group (0: unbounded)")
	f.IntVar(&c.StreamsSessionMs, "group.streams.session.timeout.ms", d.StreamsSessionMs, "session timeout of streams group (KIP-1071) members")
	f.IntVar(&c.StreamsHeartbeatMs, "group.streams.heartbeat.interval.ms", d.StreamsHeartbeatMs, "heartbeat interval of streams group members")
	f.IntVar(&c.StreamsDelayMs, "group.streams.initial.rebalance.delay.ms", d.StreamsDelayMs, "how long a new streams group waits for more members before its first assignment (-1: none)")
	f.IntVar(&c.StreamsStandbys, "group.streams.num.standby.replicas", d.StreamsStandbys, "standby tasks of each stateful task of a streams group")
	f.IntVar(&c.ClassicMaxSize, "group.max.size", d.ClassicMaxSize, "most members of a classic consumer group; past it JoinGroup answers GROUP_MAX_SIZE_REACHED (0: unbounded, as Kafka's default)")
	f.IntVar(&c.StreamsMaxSize, "group.streams.max.size", d.StreamsMaxSize, "most members of a streams group (0: unbounded)")
	f.IntVar(&c.ShareSessionMs, "group.share.session.timeout.ms", d.ShareSessionMs, "session timeout of share group members (a group's share.session.timeout.ms overrides it)")
	f.IntVar(&c.ShareMinSessionMs, "group.share.min.session.timeout.ms", d.ShareMinSessionMs, "smallest share.session.timeout.ms a share group may set")
	f.IntVar(&c.ShareHeartbeatMs, "group.share.heartbeat.interval.ms", d.ShareHeartbeatMs, "heartbeat interval of share group members")
	f.IntVar(&c.ShareMinHeartbeatMs, "group.share.min.heartbeat.interval.ms", d.ShareMinHeartbeatMs, "smallest share.heartbeat.interval.ms a share group may set")
	f.IntVar(&c.ShareLockMs, "group.share.record.lock.duration.ms", d.ShareLockMs, "how long a share group member holds the records it acquired")
	f.IntVar(&c.ShareMinLockMs, "group.share.min.record.lock.duration.ms", d.ShareMinLockMs, "smallest share.record.lock.duration.ms a share group may set")
	f.IntVar(&c.ShareDeliveryLimit, "group.share.delivery.count.limit", d.ShareDeliveryLimit, "deliveries of a record to share group members before it is archived")
	f.IntVar(&c.ShareMaxLocks, "group.share.partition.max.record.locks", d.ShareMaxLocks, "most records of a share-partition in flight")
	f.IntVar(&c.ShareMaxSize, "group.share.max.size", d.ShareMaxSize, "most members of a share group")
	f.IntVar(&c.ShareSessions, "group.share.max.share.sessions", d.ShareSessions, "most share sessions this gateway keeps")
	f.IntVar(&c.MetricsPort, "metricsPort", d.MetricsPort, "Prometheus /metrics, /health and /ready HTTP port (0: off)")
	f.StringVar(&c.PartitionMetrics, "metrics.partitions", d.PartitionMetrics, "a regexp of the topics whose partitions' log start and end offsets and sizes are on /metrics, each from the gateway leading it (\"\": none; at most 2000 partitions a gateway)")
	f.StringVar(&c.MetricsIP, "metricsIp", d.MetricsIP, "address of the metrics port (default: -ip.bind, or -ip)")
	f.StringVar(&c.PprofIP, "pprof.ip", d.PprofIP, "address of the profiling port")
	f.StringVar(&c.Listeners, "listeners", d.Listeners, "PROTOCOL://host:port listeners (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL); default PLAINTEXT on -ip.bind:-port")
	f.StringVar(&c.AdvertisedListeners, "advertised.listeners", d.AdvertisedListeners, "PROTOCOL://host:port addresses clients use (default: -ip and each listener's port)")
	f.StringVar(&c.SSLCert, "ssl.cert", d.SSLCert, "PEM certificate (chain) of the SSL listeners")
	f.StringVar(&c.RegistryListeners, "schema.registry.listeners", d.RegistryListeners, "serve the schema registry (Confluent's REST API) on these http(s)://host:port; with -embedded.dir, "+defaultEmbeddedRegistry+" unless set (\"none\": off)")
	f.BoolVar(&c.RegistryBasicAuth, "schema.registry.basic.auth", d.RegistryBasicAuth, "the schema registry asks for HTTP basic auth with the gateway's SCRAM users (with -authorizer.enabled, subjects are decided by their topics' ACLs either way)")
	f.StringVar(&c.ConsoleListeners, "console.listeners", d.ConsoleListeners, "serve the web console and the HTTP API (topic links: weed mq.kafka.link) on these http(s)://host:port, with a login by the gateway's users when it has a SASL listener; with -embedded.dir, "+defaultEmbeddedConsole+" unless set (\"none\": off)")
	f.BoolVar(&c.ConsoleReadOnly, "console.readonly", d.ConsoleReadOnly, "the console shows and changes nothing (false: it creates, deletes and alters, as the user's ACLs allow)")
	f.BoolVar(&c.ConsoleExport, "console.export", d.ConsoleExport, "the console exports the records it shows as JSON and CSV")
	f.StringVar(&c.ConsoleMask, "console.mask", d.ConsoleMask, "fields the console hides in records, before showing, searching and exporting them: topic-regexp=field,field;... (a field of JSON, Avro or Protobuf values and keys at any depth, or a header; \"value\" hides whole values)")
	f.IntVar(&c.ConsoleMaxRecords, "console.max.records", d.ConsoleMaxRecords, "records one browse of the console shows at most")
	f.IntVar(&c.ConsoleMaxBytes, "console.max.bytes", d.ConsoleMaxBytes, "record bytes one browse of the console reads at most")
	f.BoolVar(&c.AuditEnabled, "audit.enabled", d.AuditEnabled, "record an audit log (OCSF events): logins, requests the ACLs deny, administrative changes (topics, configs, ACLs, users, quotas, groups, features, tokens, the schema registry, the console's actions)")
	f.StringVar(&c.AuditTopic, "audit.topic", d.AuditTopic, "the topic the audit events are written to (\"\": none)")
	f.Int64Var(&c.AuditRetentionMs, "audit.retention.ms", d.AuditRetentionMs, "retention.ms of the audit topic when the gateway creates it")
	f.StringVar(&c.AuditFile, "audit.file", d.AuditFile, "a file the audit events are appended to as JSON lines (\"-\": stdout)")
	f.StringVar(&c.AuditExcludePrincipals, "audit.exclude.principals", d.AuditExcludePrincipals, "principals whose events are not recorded, comma-separated (User:alice,...; the gateways' own is never)")
	f.StringVar(&c.AuditExcludeTopics, "audit.exclude.topics", d.AuditExcludeTopics, "topics whose events are not recorded, comma-separated")
	f.StringVar(&c.ConsoleAdminURL, "console.admin.url", d.ConsoleAdminURL, "URL of weed admin, linked from the console's cluster page")
	f.StringVar(&c.ConsoleGrafanaURL, "console.grafana.url", d.ConsoleGrafanaURL, "URL of the Grafana dashboard, linked from the console's cluster page")
	f.IntVar(&c.LinkRefreshMs, "link.refresh.ms", d.LinkRefreshMs, "how often every gateway reads the topic links (which topics are mirrors, which partitions it pulls)")
	f.IntVar(&c.LinkIntervalMs, "link.sync.interval.ms", d.LinkIntervalMs, "how often a topic link's controller syncs its topics, configs, group offsets and ACLs, measures its lag and promotes")
	f.StringVar(&c.SSLKey, "ssl.key", d.SSLKey, "PEM key of the SSL listeners")
	f.StringVar(&c.SSLClientCA, "ssl.client.ca", d.SSLClientCA, "PEM certificates that sign client certificates")
	f.StringVar(&c.SSLClientAuth, "ssl.client.auth", d.SSLClientAuth, "client certificates: none, requested or required")
	f.StringVar(&c.SSLPrincipalRules, "ssl.principal.mapping.rules", d.SSLPrincipalRules, "a client certificate's principal (Kafka's ssl.principal.mapping.rules)")
	f.StringVar(&c.SASLMechanisms, "sasl.enabled.mechanisms", d.SASLMechanisms, "SASL mechanisms of the SASL listeners")
	f.StringVar(&c.SASLUsersFile, "sasl.users", d.SASLUsersFile, "file of user:password lines given SCRAM credentials at start")
	f.StringVar(&c.OAuthJWKS, "sasl.oauthbearer.jwks", d.OAuthJWKS, "JSON Web Key Set file of the keys that sign OAUTHBEARER tokens")
	f.BoolVar(&c.OAuthUnsecured, "sasl.oauthbearer.unsecured", d.OAuthUnsecured, "accept unsigned OAUTHBEARER tokens (tests only)")
	f.StringVar(&c.OAuthIssuer, "sasl.oauthbearer.expected.issuer", d.OAuthIssuer, "the iss OAUTHBEARER tokens must have")
	f.StringVar(&c.OAuthAudience, "sasl.oauthbearer.expected.audience", d.OAuthAudience, "an aud OAUTHBEARER tokens must have")
	f.StringVar(&c.OAuthSubClaim, "sasl.oauthbearer.sub.claim.name", d.OAuthSubClaim, "the claim naming an OAUTHBEARER token's principal")
	f.IntVar(&c.MaxReauthMs, "connections.max.reauth.ms", d.MaxReauthMs, "SASL session lifetime before the client logs in again (0: unbounded)")
	f.IntVar(&c.QuotaSamples, "quota.window.num", d.QuotaSamples, "samples a client's byte rate is measured over, against its quota")
	f.IntVar(&c.QuotaWindowSeconds, "quota.window.size.seconds", d.QuotaWindowSeconds, "the time span of each sample")
	f.StringVar(&c.ClusterSecretFile, "cluster.secret.file", d.ClusterSecretFile, "file holding the cluster's secret, the same on every gateway (16 bytes or more): it seals the SCRAM credentials kept in the filer and gives the gateways their password to one another (empty: a secret the first gateway makes, kept in the filer's key-value store, which its HTTP API does not serve)")
	f.StringVar(&c.TokenSecret, "delegation.token.secret.key", d.TokenSecret, "secret of the delegation tokens' HMACs, the same on every gateway (empty: delegation tokens are disabled)")
	f.Int64Var(&c.TokenMaxLifetimeMs, "delegation.token.max.lifetime.ms", d.TokenMaxLifetimeMs, "no renewal takes a delegation token past this long after its creation")
	f.Int64Var(&c.TokenExpiryMs, "delegation.token.expiry.time.ms", d.TokenExpiryMs, "a delegation token expires this long after its creation or renewal")
	f.Int64Var(&c.TokenCheckMs, "delegation.token.expiry.check.interval.ms", d.TokenCheckMs, "how often expired delegation tokens are removed")
	f.BoolVar(&c.Authorizer, "authorizer.enabled", d.Authorizer, "decide every request by Kafka's ACLs, kept in the filer")
	f.StringVar(&c.SuperUsers, "super.users", d.SuperUsers, "principals that may do everything, as User:alice;User:bob")
	f.BoolVar(&c.AllowIfNoACL, "allow.everyone.if.no.acl.found", d.AllowIfNoACL, "allow what no ACL of the resource speaks of")
	f.IntVar(&c.FetchMaxBytes, "fetch.max.bytes", d.FetchMaxBytes, "most record bytes of one Fetch response, whatever the client asks")
	f.Int64Var(&c.FetchBatchCache, "fetch.batch.cache.bytes", d.FetchBatchCache, "memory for batches kept for fetches as produced (compressed as the producer sent them) or as built from stored records; 0 keeps none")
	f.IntVar(&c.TransactionVersion, "transaction.version", d.TransactionVersion, "the transaction.version feature clients are given: 2 for transactions v2 (KIP-890), 0 or 1 for the classic protocol")
	f.IntVar(&c.FetchSessionSlots, "max.incremental.fetch.session.cache.slots", d.FetchSessionSlots, "fetch sessions (KIP-227) kept by this gateway; 0 keeps none")
	f.Int64Var(&c.DecompressMaxBytes, "decompression.max.bytes", d.DecompressMaxBytes, "most bytes held decompressed and decoded from produced batches across the gateway (records and headers counted as held); beyond it produces wait")
	f.IntVar(&c.MaxIdleMs, "connections.max.idle.ms", d.MaxIdleMs, "close connections idle this long (-1: never)")
	f.IntVar(&c.MaxConnections, "max.connections", d.MaxConnections, "most connections open at once; the excess is closed at accept (0: unbounded)")
	f.Int64Var(&c.FetchResponseBytes, "fetch.response.budget.bytes", d.FetchResponseBytes, "most record bytes the gateway's fetch responses hold until written, over all connections; past it fetches answer with what fits (each at least its first batch)")
	f.IntVar(&c.MaxConnectionsPerIP, "max.connections.per.ip", d.MaxConnectionsPerIP, "most connections open at once from one address (0: unbounded)")
	f.StringVar(&e.embeddedPorts, "embedded.ports", "9333,8082,8888,17777", "master,volume,filer,broker ports of the embedded SeaweedFS")
	f.IntVar(&e.embeddedS3, "embedded.s3.port", 8333, "S3 API port of the embedded SeaweedFS's S3 gateway (0: no S3 gateway, no Iceberg catalog)")
	f.IntVar(&e.embeddedIceberg, "embedded.iceberg.port", 8181, "Iceberg REST catalog port of the embedded S3 gateway")
	f.StringVar(&c.IcebergCatalog, "iceberg.catalog", d.IcebergCatalog, "Iceberg REST catalog of the topics' tables (iceberg.mode); with -embedded.dir, the embedded one")
	f.StringVar(&c.IcebergWarehouse, "iceberg.warehouse", d.IcebergWarehouse, "the table bucket (warehouse) of the topics' tables")
	f.IntVar(&c.IcebergMaintenanceMs, "iceberg.maintenance.interval.ms", d.IcebergMaintenanceMs, "how often each topic's table has its snapshots expired (as its history.expire.* properties say), its orphan files older than 72 h deleted and its small data files compacted (SeaweedFS's iceberg_maintenance compaction), by the leader of its partition 0 (0: never, when SeaweedFS's iceberg_maintenance workers do it)")
	f.StringVar(&c.IcebergS3, "iceberg.s3.endpoint", d.IcebergS3, "S3 API the tables' data files are written through, where a missing table bucket is made; with -embedded.dir, the embedded one")
}
