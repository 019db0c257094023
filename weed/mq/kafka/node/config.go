package node

// Config is everything a gateway is told at start, in the units and under
// the names of the command's flags (Kafka's broker settings where Kafka
// has one: times in milliseconds, -1 for never). The command parses its
// flags into one Config; New builds every part from it.
type Config struct {
	// Where the gateway is.
	IP     string // advertised to clients in Metadata
	IPBind string // listened on (default IP)
	Port   int    // of the PLAINTEXT listener without Listeners
	// NodeID is the broker id in Metadata; negative: derived from the
	// first listener's address.
	NodeID int
	// Rack is this gateway's rack or zone (Kafka's broker.rack), shown
	// to clients in Metadata and DescribeCluster.
	Rack string
	// Masters are the SeaweedFS masters, comma-separated; FilerGroup the
	// cluster's filer group.
	Masters    string
	FilerGroup string
	// ClusterName names the Kafka cluster among those the filer holds
	// ("": the default one; see seaweedmq's layout.go).
	ClusterName string
	// VolumeServerAccess is how volume servers are reached: direct,
	// publicUrl or filerProxy (seaweedmq.Access*).
	VolumeServerAccess string
	// DefaultReplicationFactor is the factor of topics created with -1
	// (-1: the cluster's default replication); ReplicationSpread where a
	// topic's copies go (seaweedmq.Spread*).
	DefaultReplicationFactor int
	ReplicationSpread        string
	// Storage is where the records and files are kept instead of the
	// SeaweedMQ at Masters: the in-process tests' in-memory storage; nil
	// (always, in the command) for SeaweedMQ.
	Storage Storage

	// Topics and requests.
	DefaultPartitions   int
	AutoCreateTopics    bool
	MaxRequestBytes     int
	MaxIdleMs           int
	MaxConnections      int
	MaxConnectionsPerIP int
	// FetchResponseBytes bounds the record bytes fetch responses hold
	// until written, over all connections (0: the default).
	FetchResponseBytes  int64
	FetchMaxBytes       int
	FetchSessionSlots   int
	FetchBatchCache     int64
	DecompressMaxBytes  int64
	TransactionVersion  int
	CleanerBackoffMs    int // -1: compacted topics are not cleaned
	LogRetentionCheckMs int // how often retention removes log segments
	TxnIDExpirationMs   int

	// Groups.
	GroupInitialDelayMs int
	GroupMinSessionMs   int
	GroupMaxSessionMs   int
	OffsetsRetentionMin int
	RetentionCheckMs    int
	ConsumerSessionMs   int
	ConsumerHeartbeatMs int
	ConsumerAssignors   string // comma-separated
	ConsumerMaxSize     int
	ClassicMaxSize      int
	StreamsSessionMs    int
	StreamsHeartbeatMs  int
	StreamsDelayMs      int
	StreamsStandbys     int
	StreamsMaxSize      int
	ShareSessionMs      int
	ShareMinSessionMs   int
	ShareHeartbeatMs    int
	ShareMinHeartbeatMs int
	ShareLockMs         int
	ShareMinLockMs      int
	ShareDeliveryLimit  int
	ShareMaxLocks       int
	ShareMaxSize        int
	ShareSessions       int

	// Clients: quotas, logins, ACLs.
	QuotaSamples       int
	QuotaWindowSeconds int
	TokenSecret        string
	// ClusterSecretFile holds the cluster's secret (cluster.Secret*):
	// "" to keep one in the filer's key-value store.
	ClusterSecretFile  string
	TokenMaxLifetimeMs int64
	TokenExpiryMs      int64
	TokenCheckMs       int64
	MaxReauthMs        int
	SASLMechanisms     string // comma-separated
	SASLUsersFile      string
	OAuthJWKS          string
	OAuthUnsecured     bool
	OAuthIssuer        string
	OAuthAudience      string
	OAuthSubClaim      string
	Authorizer         bool
	SuperUsers         string // semicolon-separated
	AllowIfNoACL       bool

	// Listeners, TLS, and the HTTP servers beside them.
	Listeners           string
	AdvertisedListeners string
	SSLCert             string
	SSLKey              string
	SSLClientCA         string
	SSLClientAuth       string
	SSLPrincipalRules   string
	RegistryListeners   string // "none": no registry
	RegistryBasicAuth   bool
	// ConsoleListeners serve the web console and the gateway's HTTP API
	// (topic links) on http(s)://host:port ("" or "none": off).
	ConsoleListeners string
	// ConsoleReadOnly refuses the console's changes; ConsoleExport
	// allows its exports of records; ConsoleMask hides fields of records
	// ("topic-regexp=field,field;..."); ConsoleMaxRecords and
	// ConsoleMaxBytes bound one browse; ConsoleAdminURL and
	// ConsoleGrafanaURL are linked from its cluster page.
	ConsoleReadOnly                    bool
	ConsoleExport                      bool
	ConsoleMask                        string
	ConsoleMaxRecords, ConsoleMaxBytes int
	ConsoleAdminURL, ConsoleGrafanaURL string

	// The audit log: on with AuditEnabled, to AuditTopic (kept
	// AuditRetentionMs) and AuditFile ("-": stdout; "": none), without
	// the events of AuditExcludePrincipals and of AuditExcludeTopics
	// (comma-separated).
	AuditEnabled           bool
	AuditTopic             string
	AuditRetentionMs       int64
	AuditFile              string
	AuditExcludePrincipals string
	AuditExcludeTopics     string

	// PartitionMetrics is a regexp of the topics whose partitions' log
	// start, end and size each gateway exports for those it leads (""
	// none).
	PartitionMetrics string

	// Topic links: how often every gateway reads them, how often a
	// link's controller syncs.
	LinkRefreshMs  int
	LinkIntervalMs int

	// Iceberg tables: no catalog, no tables.
	IcebergCatalog       string
	IcebergWarehouse     string
	IcebergS3            string
	IcebergMaintenanceMs int

	// Metrics, health and readiness; profiles (port 0: off).
	MetricsIP   string
	MetricsPort int
	PprofIP     string
	PprofPort   int
}
