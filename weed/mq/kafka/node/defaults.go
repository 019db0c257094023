package node

import (
	"strings"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/console"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/quota"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/txn"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// Defaults is the Config of the command's flags left unset (Kafka's
// broker defaults where Kafka has the setting), but for the advertised
// address, which the command detects: the flags' defaults are taken from
// it, and so are the tests' gateways.
// DefaultMaxConnectionsPerIP is max.connections.per.ip.
const DefaultMaxConnectionsPerIP = 1000

func Defaults() Config {
	ms := func(d time.Duration) int { return int(d / time.Millisecond) }
	sl := share.DefaultLimits
	return Config{
		Port:    9092,
		NodeID:  -1,
		Masters: "localhost:9333",
		PprofIP: "127.0.0.1",

		VolumeServerAccess:       "direct",
		DefaultReplicationFactor: -1,
		ReplicationSpread:        "server",

		DefaultPartitions:  4,
		AutoCreateTopics:   true,
		MaxRequestBytes:    protocol.DefaultMaxRequestSize,
		MaxIdleMs:          ms(protocol.DefaultMaxIdle),
		FetchMaxBytes:      protocol.DefaultFetchMaxBytes,
		FetchSessionSlots:  protocol.DefaultFetchSessionSlots,
		FetchBatchCache:    protocol.DefaultFetchBatchCacheBytes,
		DecompressMaxBytes: protocol.DefaultDecompressionMaxBytes,
		// Kafka's is unbounded; a laptop's clients never open this
		// many from one address, a flood does.
		MaxConnectionsPerIP: DefaultMaxConnectionsPerIP,
		FetchResponseBytes:  protocol.DefaultFetchResponseBudget,
		TransactionVersion:  2,
		CleanerBackoffMs:    15000,
		// Kafka's log.retention.check.interval.ms.
		LogRetentionCheckMs: 300000,
		TxnIDExpirationMs:   ms(txn.DefaultIDExpiration),

		GroupInitialDelayMs: ms(group.DefaultInitialRebalanceDelay),
		GroupMinSessionMs:   ms(group.DefaultMinSessionTimeout),
		GroupMaxSessionMs:   ms(group.DefaultMaxSessionTimeout),
		ClassicMaxSize:      group.DefaultClassicMaxSize,
		OffsetsRetentionMin: int(group.DefaultOffsetsRetention / time.Minute),
		RetentionCheckMs:    ms(group.DefaultRetentionCheck),
		ConsumerSessionMs:   ms(group.DefaultConsumerSessionTimeout),
		ConsumerHeartbeatMs: ms(group.DefaultConsumerHeartbeatInterval),
		ConsumerAssignors:   strings.Join(group.DefaultConsumerAssignors, ","),
		StreamsSessionMs:    ms(group.DefaultStreamsSessionTimeout),
		StreamsHeartbeatMs:  ms(group.DefaultStreamsHeartbeatInterval),
		StreamsDelayMs:      ms(group.DefaultStreamsInitialDelay),
		ShareSessionMs:      ms(sl.SessionTimeout),
		ShareMinSessionMs:   ms(sl.MinSessionTimeout),
		ShareHeartbeatMs:    ms(sl.HeartbeatInterval),
		ShareMinHeartbeatMs: ms(sl.MinHeartbeatInterval),
		ShareLockMs:         ms(sl.LockDuration),
		ShareMinLockMs:      ms(sl.MinLockDuration),
		ShareDeliveryLimit:  int(sl.DeliveryLimit),
		ShareMaxLocks:       sl.MaxRecordLocks,
		ShareMaxSize:        group.DefaultShareMaxSize,
		ShareSessions:       protocol.DefaultShareSessions,

		QuotaSamples:       quota.DefaultSamples,
		QuotaWindowSeconds: int(quota.DefaultWindow / time.Second),
		TokenMaxLifetimeMs: user.DefaultTokenMaxLifetime.Milliseconds(),
		TokenExpiryMs:      user.DefaultTokenRenewTime.Milliseconds(),
		TokenCheckMs:       user.DefaultTokenCheckEvery.Milliseconds(),
		SASLMechanisms:     "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		OAuthSubClaim:      "sub",

		SSLClientAuth:     "none",
		SSLPrincipalRules: "DEFAULT",

		IcebergWarehouse:     "kafka",
		LinkRefreshMs:        2000,
		ConsoleReadOnly:      true,
		ConsoleExport:        true,
		AuditTopic:           "_audit_log",
		AuditRetentionMs:     7 * 24 * 3600 * 1000,
		ConsoleMaxRecords:    console.DefaultMaxRecords,
		ConsoleMaxBytes:      console.DefaultMaxBytes,
		LinkIntervalMs:       5000,
		IcebergMaintenanceMs: 3600000,
	}
}
