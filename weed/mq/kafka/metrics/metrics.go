// Package metrics declares the gateway's Prometheus metrics, in one place,
// registered like SeaweedFS's own (in its stats.Gather registry, so the
// gateway's /metrics also carries SeaweedFS's build info and Go runtime
// metrics), named SeaweedFS_kafka_* after Kafka's own broker metrics, and
// the consumer group metrics under the names kafka_exporter gives them, so
// that existing lag dashboards and alerts work unchanged.
//
// Labels stay bounded: topics and groups beyond MaxLabelValues distinct
// ones are counted under "other".
package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seaweedfs/seaweedfs/weed/stats"
)

const namespace, subsystem = "SeaweedFS", "kafka"

// MaxLabelValues bounds the distinct topics (and groups) that get their own
// label value.
const MaxLabelValues = 1000

// latencyBuckets span 0.5 ms to about 33 s.
var latencyBuckets = prometheus.ExponentialBuckets(0.0005, 2, 17)

var (
	// Requests counts requests by API and version, as Kafka's
	// kafka.network:type=RequestMetrics,name=RequestsPerSec.
	Requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "requests_total",
		Help: "Kafka requests received, by API and version.",
	}, []string{"api", "version"})

	// RequestSeconds is the time from a request read to its response
	// written (Kafka's TotalTimeMs).
	RequestSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "request_duration_seconds",
		Help: "Time from a request read to its response written, by API.", Buckets: latencyBuckets,
	}, []string{"api"})

	// Errors counts error codes in responses, by API and code name.
	Errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "errors_total",
		Help: "Error codes in Kafka responses (per partition, group or member), by API and code.",
	}, []string{"api", "error"})

	// BackendSeconds is the time spent waiting on SeaweedFS (MQ brokers and
	// filers), by call: the part of request latency that is not the
	// gateway's.
	BackendSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "backend_duration_seconds",
		Help: "Time spent waiting on SeaweedFS (MQ brokers, filers), by call.", Buckets: latencyBuckets,
	}, []string{"call"})

	// BackendErrors counts failed calls to SeaweedFS.
	BackendErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "backend_errors_total",
		Help: "Calls to SeaweedFS that failed, by call.",
	}, []string{"call"})

	// MessagesIn, BytesIn, MessagesOut and BytesOut are Kafka's
	// BrokerTopicMetrics, by topic.
	MessagesIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "messages_in_total",
		Help: "Records produced, by topic.",
	}, []string{"topic"})
	BytesIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "bytes_in_total",
		Help: "Record batch bytes produced, by topic.",
	}, []string{"topic"})
	MessagesOut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "messages_out_total",
		Help: "Records fetched, by topic.",
	}, []string{"topic"})
	BytesOut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "bytes_out_total",
		Help: "Record batch bytes fetched, by topic.",
	}, []string{"topic"})

	// FollowerFetchBytes counts the record bytes this gateway served to
	// consumers of partitions other gateways lead (KIP-392), by where it
	// read them: "segments" (SeaweedFS) or "leader" (the leader's tail);
	// ReplicaBytesOut the bytes this gateway, leading, sent such followers.
	FollowerFetchBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "follower_fetch_bytes_total",
		Help: "Record batch bytes served for partitions another gateway leads, by source (segments, leader).",
	}, []string{"source"})
	ReplicaBytesOut = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "replica_bytes_out_total",
		Help: "Record batch bytes sent to other gateways serving reads of partitions led here.",
	})

	// FetchBudgetShort counts fetches that got less of the gateway's
	// response budget than they asked (-fetch.response.budget.bytes).
	FetchBudgetShort = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "fetch_budget_short_total",
		Help: "Fetches answered with less than they asked because the gateway's fetch response budget was spent.",
	})

	// ProduceBatchRecords and FetchRecords are the records per produced
	// partition batch and per fetched partition.
	ProduceBatchRecords = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "produce_batch_records",
		Help: "Records per produced partition batch.", Buckets: prometheus.ExponentialBuckets(1, 4, 9),
	})
	FetchRecords = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "fetch_partition_records",
		Help: "Records per partition in fetch responses that carried records.", Buckets: prometheus.ExponentialBuckets(1, 4, 9),
	})

	// FetchSessions is the fetch sessions kept (Kafka's
	// NumIncrementalFetchSessions); FetchSessionEvictions counts those
	// evicted for new ones (IncrementalFetchSessionEvictionsPerSec).
	FetchSessions = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "fetch_sessions",
		Help: "Incremental fetch sessions kept (KIP-227).",
	})
	FetchSessionEvictions = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "fetch_session_evictions_total",
		Help: "Fetch sessions evicted to make room for new ones.",
	})

	// Connections is the open client connections; ConnectionsTotal counts
	// accepted ones (its rate is Kafka's connection-creation-rate).
	Connections = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "connections",
		Help: "Open Kafka client connections.",
	})
	ConnectionsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "connections_total",
		Help: "Kafka client connections accepted.",
	})
	RecordsSkipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "records_skipped_total",
		Help: "Stored records that could not be decoded as Kafka records, left out of fetches.",
	}, []string{"topic"})
	DecompressionWaits = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "decompression_waits_total",
		Help: "Produced partitions whose compressed batches waited for room in the gateway's decompression budget (-decompression.max.bytes).",
	})
	Panics = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "panics_total",
		Help: "Panics recovered, by the API or background task that met one: the connection, partition stream or round of work concerned ended and the gateway went on.",
	}, []string{"where"})
	ConnectionsRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "connections_refused_total",
		Help: "Connections closed at accept: past max.connections or max.connections.per.ip.",
	})
	// ConnectionsCut counts connections the gateway closed for what their
	// peer did, by why: "slow_request", a request that did not arrive
	// whole within its time (protocol.FrameTimeout).
	ConnectionsCut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "connections_cut_total",
		Help: "Connections closed for what their peer did, by why (slow_request: a request not received whole within its time).",
	}, []string{"why"})
	ConnectionsThrottled = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "connections_throttled_total",
		Help: "Connections held unserved for their throttle, then closed: their IP was over its connection_creation_rate quota (KIP-612).",
	})

	// WALCommitSeconds is the time of one write-ahead log group commit (a
	// chunk uploaded to a volume server and the log file's filer entry
	// updated): what acks=all adds to a produce.
	WALCommitSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "wal_commit_duration_seconds",
		Help: "Time of one write-ahead log group commit.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 17),
	})
	// WALCommitBatches and WALCommitRecords are the partition batches and
	// records one group commit carried.
	WALCommitBatches = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "wal_commit_batches",
		Help: "Partition batches per write-ahead log group commit.", Buckets: prometheus.ExponentialBuckets(1, 2, 12),
	})
	WALCommitRecords = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "wal_commit_records",
		Help: "Records per write-ahead log group commit.", Buckets: prometheus.ExponentialBuckets(1, 4, 10),
	})
	// WALBytes counts the bytes written to the write-ahead log.
	WALBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "wal_bytes_total",
		Help: "Bytes written to the write-ahead log.",
	})
	// WALErrors counts failed group commits (they are tried again).
	WALErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "wal_commit_errors_total",
		Help: "Write-ahead log group commits that failed and were tried again.",
	})
	// SegmentsWritten counts the log segments the partitions' tails were
	// written to.
	SegmentsWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "segments_written_total",
		Help: "Log segments written from the partitions' tails.",
	})
	// PartitionsDropped counts partitions dropped from memory, unused.
	PartitionsDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "partitions_dropped_total",
		Help: "Partitions dropped from the gateway's memory after a time unused.",
	})
	// PartitionsHeld is the partitions held in memory.
	PartitionsHeld = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "partitions_held",
		Help: "Partitions the gateway holds in memory (written or read lately).",
	})
	// TailBytes is what the partitions' tails hold, not yet in segments.
	// TailFull counts appends refused because their partition's tail,
	// not yet in segments, was at its cap.
	TailFull = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "tail_full_total",
		Help: "Produced batches refused (KAFKA_STORAGE_ERROR, retriable) because their partition's tail not yet in segments was at its cap: segments are not being written.",
	})
	// GroupStateTooLarge counts group states not saved for their size.
	GroupStateTooLarge = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "group_state_too_large_total",
		Help: "Group states not saved because they were larger than 8 MiB (members' metadata and assignments); what asked for them got UNKNOWN_SERVER_ERROR.",
	})
	// TailWaits counts appends held until their partition's tail, at its
	// cap, had room.
	TailWaits = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "tail_waits_total",
		Help: "Produced batches held (up to 10 s) until their partition's tail not yet in segments, at its cap, had room: producers faster than segments are written.",
	})
	TailBytes = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "tail_bytes",
		Help: "Bytes of logged records held in memory until written to a log segment.",
	})
	// WALRepublished counts acknowledged records written back from the
	// write-ahead log at recovery (no segment held them yet).
	WALRepublished = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "wal_republished_records_total",
		Help: "Acknowledged records written back from the write-ahead log at recovery: no segment held them yet.",
	})

	// CompactionRecords and CompactionBytes count what the log cleaner
	// removed from compacted topics' segments; CompactionDirtyRatio is a
	// partition's dirty ratio (cleanable bytes not cleaned yet over all
	// cleanable bytes) as the cleaner last measured it; CompactionRuns
	// counts the partitions' cleanings.
	CompactionRecords = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "compaction_removed_records_total",
		Help: "Records the log cleaner removed from compacted topics (superseded values, expired tombstones, aborted records).",
	}, []string{"topic"})
	CompactionBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "compaction_removed_bytes_total",
		Help: "Stored bytes the log cleaner removed from compacted topics' segments.",
	}, []string{"topic"})
	CompactionRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "compaction_runs_total",
		Help: "Partition cleanings of compacted topics.",
	}, []string{"topic"})
	CompactionDirtyRatio = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "compaction_dirty_ratio",
		Help: "A compacted partition's dirty ratio as the log cleaner last measured it: bytes of closed segments not cleaned yet over bytes of closed segments.",
	}, []string{"topic", "partition"})

	// ShareSessions is the share sessions (KIP-932) this gateway keeps;
	// ShareAcks counts share groups' acknowledgement batch lists of a
	// partition, by outcome ("ok" or the Kafka error).
	ShareSessions = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "share_sessions",
		Help: "Share sessions of share group members kept by this gateway.",
	})
	ShareAcks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "share_acknowledgements_total",
		Help: "Share group members' acknowledgements of a partition's records, by outcome.",
	}, []string{"outcome"})

	// ThrottleSeconds is the time clients were throttled by their quotas,
	// by quota type (produce, fetch) and principal, as Kafka's
	// kafka.server:type={Produce,Fetch},user=...,client-id=... throttle-time.
	ThrottleSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "throttle_seconds_total",
		Help: "Time clients were throttled for exceeding their client quotas, by quota type and principal.",
	}, []string{"type", "principal"})

	// ClientInstances is the client instances known to the gateway's
	// client metrics (KIP-714), as Kafka's client-metrics instance-count.
	ClientInstances = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "client_metrics_instances",
		Help: "Client instances known to this gateway's client metrics (KIP-714).",
	})
	// ClientPushes counts the client metrics pushes taken, and
	// ClientPushErrors those refused, by error.
	ClientPushes = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "client_metrics_pushes_total",
		Help: "Client metrics pushes (PushTelemetry) taken.",
	})
	ClientPushErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "client_metrics_push_errors_total",
		Help: "Client metrics requests refused, by Kafka error.",
	}, []string{"error"})
	// ClientSeriesDropped counts pushed series not kept: over the bounds,
	// or of a kind not served.
	ClientSeriesDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "client_metrics_series_dropped_total",
		Help: "Series pushed by clients and not kept (over the bounds, or not a gauge or sum).",
	})

	// RegistryRequests counts the schema registry's requests by route
	// (the API's pattern) and HTTP status; RegistryRequestSeconds times
	// them; RegistrySchemas is the schema ids it knows.
	RegistryRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "registry_requests_total",
		Help: "Schema registry requests, by route and HTTP status.",
	}, []string{"route", "code"})
	RegistryRequestSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "registry_request_seconds",
		Help:    "Schema registry request latency, by route.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9),
	}, []string{"route"})
	RegistrySchemas = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "registry_schemas",
		Help: "Schema ids the schema registry knows.",
	})

	// Iceberg tables: the records and seconds a topic's table is behind
	// its partitions this gateway leads, its commits by result, their
	// duration, and the records and data files they added.
	IcebergLagRecords = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "iceberg_lag_records",
		Help: "Records of a topic's partitions (those this gateway leads) not yet in its Iceberg table.",
	}, []string{"topic"})
	IcebergLagSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "iceberg_lag_seconds",
		Help: "Age of the oldest record of a topic's partitions (those this gateway leads) not yet in its Iceberg table.",
	}, []string{"topic"})
	IcebergCommits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "iceberg_commits_total",
		Help: "Commits to topics' Iceberg tables, by topic and result (ok, conflict, error).",
	}, []string{"topic", "result"})
	IcebergCommitSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "iceberg_commit_seconds",
		Help:    "Time to write a commit's data files and commit them to the catalog.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 12),
	})
	IcebergRecords = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "iceberg_records_total",
		Help: "Records committed to topics' Iceberg tables, by topic.",
	}, []string{"topic"})
	IcebergInvalid = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "iceberg_invalid_records_total",
		Help: "Records that are no rows of their topic's Iceberg table (no schema id, an unknown one, a schema that does not fit), by topic and action (dlq_table, drop).",
	}, []string{"topic", "action"})
	IcebergFiles = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "iceberg_files_total",
		Help: "Data files committed to topics' Iceberg tables, by topic.",
	}, []string{"topic"})

	// Topic links: the records and seconds a mirrored partition is
	// behind its source (set by the link's controller), what the pullers
	// wrote, their errors by kind, and each link's state.
	LinkLagRecords = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "link_lag_records",
		Help: "Records a mirrored partition is behind its source's end, by link, topic and partition (on the link's controller).",
	}, []string{"link", "topic", "partition"})
	LinkLagSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "link_lag_seconds",
		Help: "How long a mirrored partition has been behind its source's end without catching up, by link, topic and partition (on the link's controller).",
	}, []string{"link", "topic", "partition"})
	LinkRecords = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "link_records_total",
		Help: "Offsets a topic link wrote (records, and what its source's cleaner left out), by link and topic.",
	}, []string{"link", "topic"})
	LinkBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "link_bytes_total",
		Help: "Bytes of batches a topic link pulled from its source and wrote, by link.",
	}, []string{"link"})
	LinkErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "link_errors_total",
		Help: "Topic link errors, by link and kind (source: reaching the source; deleted: records deleted on the source before they were pulled; write: storing; sync: configs, groups, ACLs).",
	}, []string{"link", "kind"})
	LinkState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "link_state",
		Help: "1 for a topic link's state (active, paused, failed, source unreachable), by link (on its controller).",
	}, []string{"link", "state"})

	// AuditEvents counts the events the audit log recorded, AuditDropped
	// those it dropped (its buffer full, or the audit topic refusing).
	AuditEvents = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "audit_events_total",
		Help: "Events the audit log recorded.",
	})
	AuditDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "audit_dropped_total",
		Help: "Audit events dropped: the audit log's buffer was full, or the audit topic did not take them.",
	})

	// Rebalances counts completed rebalances (new generations), by group.
	Rebalances = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "group_rebalances_total",
		Help: "Consumer group rebalances (new generations), by group.",
	}, []string{"consumergroup"})
)

func init() {
	stats.Gather.MustRegister(Requests, RequestSeconds, Errors, BackendSeconds, BackendErrors,
		MessagesIn, BytesIn, MessagesOut, BytesOut, FollowerFetchBytes, ReplicaBytesOut, FetchBudgetShort, ProduceBatchRecords, FetchRecords, FetchSessions, FetchSessionEvictions,
		Connections, ConnectionsTotal, ConnectionsRefused, ConnectionsCut, ConnectionsThrottled, DecompressionWaits, Panics, RecordsSkipped, Rebalances,
		WALCommitSeconds, WALCommitBatches, WALCommitRecords, WALBytes, WALErrors, WALRepublished,
		SegmentsWritten, PartitionsDropped, PartitionsHeld, TailBytes, TailFull, TailWaits, GroupStateTooLarge,
		CompactionRecords, CompactionBytes, CompactionRuns, CompactionDirtyRatio, ShareSessions, ShareAcks,
		ThrottleSeconds, ClientInstances, ClientPushes, ClientPushErrors, ClientSeriesDropped,
		RegistryRequests, RegistryRequestSeconds, RegistrySchemas,
		IcebergLagRecords, IcebergLagSeconds, IcebergCommits, IcebergCommitSeconds, IcebergRecords, IcebergFiles, IcebergInvalid,
		LinkLagRecords, LinkLagSeconds, LinkRecords, LinkBytes, LinkErrors, LinkState, AuditEvents, AuditDropped)
}

// Register adds a collector of the gateway's to /metrics, until
// unregister takes it off (a node that closes).
func Register(c prometheus.Collector) (unregister func(), err error) {
	if err := stats.Gather.Register(c); err != nil {
		return func() {}, err
	}
	return func() { stats.Gather.Unregister(c) }, nil
}

// labels admits the first MaxLabelValues distinct values of a label.
type labels struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

func (l *labels) value(v string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[v]; ok {
		return v
	}
	if len(l.seen) >= MaxLabelValues {
		return "other"
	}
	if l.seen == nil {
		l.seen = map[string]struct{}{}
	}
	l.seen[v] = struct{}{}
	return v
}

func (l *labels) forget(v string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.seen, v)
}

var topics, groups, principals labels

// Principal is a principal's label value (bounded as topics are).
func Principal(p string) string { return principals.value(p) }

// ForgetTopic drops a deleted topic's series and its label value, so that
// topics created and deleted all along neither keep their series nor use
// up the label values others would get.
func ForgetTopic(name string) {
	topics.forget(name)
	for _, v := range []*prometheus.CounterVec{MessagesIn, BytesIn, MessagesOut, BytesOut, RecordsSkipped,
		CompactionRecords, CompactionBytes, CompactionRuns} {
		v.DeleteLabelValues(name)
	}
	CompactionDirtyRatio.DeletePartialMatch(prometheus.Labels{"topic": name})
}

// ForgetGroup drops a deleted group's label value.
func ForgetGroup(name string) { groups.forget(name) }

// Topic is the label value for a topic.
func Topic(name string) string { return topics.value(name) }

// Group is the label value for a consumer group.
func Group(name string) string { return groups.value(name) }

// The consumer group metrics, under kafka_exporter's names: collected at
// each scrape by the group coordinator (group.Coordinator.Metrics).
var (
	GroupsDesc       = prometheus.NewDesc(namespace+"_"+subsystem+"_groups", "Consumer groups this gateway coordinates.", nil, nil)
	GroupMembersDesc = prometheus.NewDesc("kafka_consumergroup_members", "Members of a consumer group.", []string{"consumergroup"}, nil)
	GroupOffsetDesc  = prometheus.NewDesc("kafka_consumergroup_current_offset", "Committed offset of a consumer group in a partition.",
		[]string{"consumergroup", "topic", "partition"}, nil)
	GroupLagDesc = prometheus.NewDesc("kafka_consumergroup_lag", "High watermark minus committed offset of a consumer group in a partition (share groups: records not yet acknowledged).",
		[]string{"consumergroup", "topic", "partition"}, nil)
	GroupLagSumDesc = prometheus.NewDesc("kafka_consumergroup_lag_sum", "Lag of a consumer group over a topic's partitions (classic, consumer, share and streams groups).",
		[]string{"consumergroup", "topic"}, nil)
)

// The partitions' log metrics (Kafka's kafka.log:type=Log), for the topics
// -metrics.partitions names: collected at each scrape by the gateway that
// leads each partition, MaxPartitionSeries partitions at most.
var (
	PartitionLogStartDesc = prometheus.NewDesc(namespace+"_"+subsystem+"_partition_log_start_offset", "A partition's log start offset (Kafka's LogStartOffset).",
		[]string{"topic", "partition"}, nil)
	PartitionLogEndDesc = prometheus.NewDesc(namespace+"_"+subsystem+"_partition_log_end_offset", "A partition's high watermark (Kafka's LogEndOffset).",
		[]string{"topic", "partition"}, nil)
	PartitionSizeDesc = prometheus.NewDesc(namespace+"_"+subsystem+"_partition_size_bytes", "The bytes of a partition's segments (Kafka's Size).",
		[]string{"topic", "partition"}, nil)
	PartitionsOmittedDesc = prometheus.NewDesc(namespace+"_"+subsystem+"_partition_metrics_omitted", "Partitions led here that -metrics.partitions names, past the cap of series, left out.",
		nil, nil)
)

// MaxPartitionSeries bounds the partitions whose log metrics one gateway
// exports.
const MaxPartitionSeries = 2000
