package brokerconfig

// The broker configs Kafka 4 updates dynamically (DynamicBrokerConfig's
// AllDynamicConfigs), with their types, and which of them are per-broker
// only; the log.* ones with the topic config each is the default of.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Type is a config's type, as DescribeConfigs names it.
type Type int8

// The types (kmsg.ConfigType's values).
const (
	Boolean  Type = 1
	String   Type = 2
	Int      Type = 3
	Short    Type = 4
	Long     Type = 5
	Double   Type = 6
	List     Type = 7
	Class    Type = 8
	Password Type = 9
)

// Entry is one dynamic broker config.
type Entry struct {
	Name string
	Type Type
	// Def is Kafka's default ("" none).
	Def string
	// PerBroker: settable on a broker only, not as a cluster-wide
	// default.
	PerBroker bool
	// topic is the topic config this one is the default of ("" none).
	topic string
	// Applied says what it does here; "" it is kept and shown only.
	Applied string
}

// Topic is the topic config e is the default of, "" if none.
func (e Entry) Topic() string { return e.topic }

func logEntry(name, topic string, typ Type, def string) Entry {
	return Entry{Name: name, Type: typ, Def: def, topic: topic, Applied: "the default of topic config " + topic}
}

var catalog = []Entry{
	// The defaults of topic configs (ServerTopicConfigSynonyms).
	logEntry("log.segment.bytes", "segment.bytes", Int, "1073741824"),
	logEntry("log.roll.ms", "segment.ms", Long, "604800000"),
	logEntry("log.roll.jitter.ms", "segment.jitter.ms", Long, "0"),
	logEntry("log.index.size.max.bytes", "segment.index.bytes", Int, "10485760"),
	logEntry("log.flush.interval.messages", "flush.messages", Long, "9223372036854775807"),
	logEntry("log.flush.interval.ms", "flush.ms", Long, ""),
	logEntry("log.retention.bytes", "retention.bytes", Long, "-1"),
	logEntry("log.retention.ms", "retention.ms", Long, ""),
	logEntry("message.max.bytes", "max.message.bytes", Int, "1048588"),
	logEntry("log.index.interval.bytes", "index.interval.bytes", Int, "4096"),
	logEntry("log.cleaner.delete.retention.ms", "delete.retention.ms", Long, "86400000"),
	logEntry("log.cleaner.min.compaction.lag.ms", "min.compaction.lag.ms", Long, "0"),
	logEntry("log.cleaner.max.compaction.lag.ms", "max.compaction.lag.ms", Long, "9223372036854775807"),
	logEntry("log.segment.delete.delay.ms", "file.delete.delay.ms", Long, "60000"),
	logEntry("log.cleaner.min.cleanable.ratio", "min.cleanable.dirty.ratio", Double, "0.5"),
	logEntry("log.cleanup.policy", "cleanup.policy", List, "delete"),
	logEntry("unclean.leader.election.enable", "unclean.leader.election.enable", Boolean, "false"),
	logEntry("min.insync.replicas", "min.insync.replicas", Int, "1"),
	logEntry("compression.type", "compression.type", String, "producer"),
	logEntry("compression.gzip.level", "compression.gzip.level", Int, "-1"),
	logEntry("compression.lz4.level", "compression.lz4.level", Int, "9"),
	logEntry("compression.zstd.level", "compression.zstd.level", Int, "3"),
	logEntry("log.preallocate", "preallocate", Boolean, "false"),
	logEntry("log.message.timestamp.type", "message.timestamp.type", String, "CreateTime"),
	logEntry("log.message.timestamp.before.max.ms", "message.timestamp.before.max.ms", Long, "9223372036854775807"),
	logEntry("log.message.timestamp.after.max.ms", "message.timestamp.after.max.ms", Long, "3600000"),
	logEntry("log.local.retention.ms", "local.retention.ms", Long, "-2"),
	logEntry("log.local.retention.bytes", "local.retention.bytes", Long, "-2"),

	// The log cleaner.
	{Name: "log.cleaner.threads", Type: Int, Def: "1"},
	{Name: "log.cleaner.dedupe.buffer.size", Type: Long, Def: "134217728"},
	{Name: "log.cleaner.io.buffer.load.factor", Type: Double, Def: "0.9"},
	{Name: "log.cleaner.io.buffer.size", Type: Int, Def: "524288"},
	{Name: "log.cleaner.io.max.bytes.per.second", Type: Double, Def: "1.7976931348623157E308"},
	{Name: "log.cleaner.backoff.ms", Type: Long, Def: "15000"},

	// Threads.
	{Name: "num.io.threads", Type: Int, Def: "8"},
	{Name: "num.replica.fetchers", Type: Int, Def: "1"},
	{Name: "num.recovery.threads.per.data.dir", Type: Int, Def: "2"},
	{Name: "background.threads", Type: Int, Def: "10"},
	{Name: "num.network.threads", Type: Int, Def: "3"},

	// Connections.
	{Name: "max.connections", Type: Int, Def: "2147483647"},
	{Name: "max.connections.per.ip", Type: Int, Def: "2147483647"},
	{Name: "max.connections.per.ip.overrides", Type: String, Def: ""},
	{Name: "max.connection.creation.rate", Type: Int, Def: "2147483647"},

	// Metrics, producer ids, transactions, tiered storage.
	{Name: "metric.reporters", Type: List, Def: ""},
	{Name: "producer.id.expiration.ms", Type: Int, Def: "86400000"},
	{Name: "transaction.partition.verification.enable", Type: Boolean, Def: "true"},
	{Name: "remote.log.index.file.cache.total.size.bytes", Type: Long, Def: "1073741824"},
	{Name: "remote.fetch.max.wait.ms", Type: Int, Def: "500"},
	{Name: "remote.log.manager.copy.max.bytes.per.second", Type: Long, Def: "9223372036854775807"},
	{Name: "remote.log.manager.fetch.max.bytes.per.second", Type: Long, Def: "9223372036854775807"},
	{Name: "remote.list.offsets.request.timeout.ms", Type: Long, Def: "30000"},

	// Listeners and their security: per broker.
	{Name: "listeners", Type: String, PerBroker: true},
	{Name: "advertised.listeners", Type: String, PerBroker: true},
	{Name: "listener.security.protocol.map", Type: String, PerBroker: true},
	{Name: "principal.builder.class", Type: Class, PerBroker: true},
	{Name: "ssl.protocol", Type: String, Def: "TLSv1.3", PerBroker: true},
	{Name: "ssl.provider", Type: String, PerBroker: true},
	{Name: "ssl.cipher.suites", Type: List, PerBroker: true},
	{Name: "ssl.enabled.protocols", Type: List, Def: "TLSv1.2,TLSv1.3", PerBroker: true},
	{Name: "ssl.keymanager.algorithm", Type: String, Def: "SunX509", PerBroker: true},
	{Name: "ssl.trustmanager.algorithm", Type: String, Def: "PKIX", PerBroker: true},
	{Name: "ssl.endpoint.identification.algorithm", Type: String, Def: "https", PerBroker: true},
	{Name: "ssl.secure.random.implementation", Type: String, PerBroker: true},
	{Name: "ssl.client.auth", Type: String, Def: "none", PerBroker: true},
	{Name: "ssl.engine.factory.class", Type: Class, PerBroker: true},
	{Name: "sasl.mechanism.inter.broker.protocol", Type: String, Def: "GSSAPI", PerBroker: true},
	{Name: "sasl.jaas.config", Type: Password, PerBroker: true},
	{Name: "sasl.enabled.mechanisms", Type: List, Def: "GSSAPI", PerBroker: true},
	{Name: "sasl.kerberos.service.name", Type: String, PerBroker: true},
	{Name: "sasl.kerberos.kinit.cmd", Type: String, Def: "/usr/bin/kinit", PerBroker: true},
	{Name: "sasl.kerberos.ticket.renew.window.factor", Type: Double, Def: "0.8", PerBroker: true},
	{Name: "sasl.kerberos.ticket.renew.jitter", Type: Double, Def: "0.05", PerBroker: true},
	{Name: "sasl.kerberos.min.time.before.relogin", Type: Long, Def: "60000", PerBroker: true},
	{Name: "sasl.kerberos.principal.to.local.rules", Type: List, Def: "DEFAULT", PerBroker: true},
	{Name: "sasl.login.refresh.window.factor", Type: Double, Def: "0.8", PerBroker: true},
	{Name: "sasl.login.refresh.window.jitter", Type: Double, Def: "0.05", PerBroker: true},
	{Name: "sasl.login.refresh.min.period.seconds", Type: Short, Def: "60", PerBroker: true},
	{Name: "sasl.login.refresh.buffer.seconds", Type: Short, Def: "300", PerBroker: true},
}

// securityConfigs are updated only per listener, with the
// listener.name.<listener>. prefix (SslConfigs.RECONFIGURABLE_CONFIGS).
var securityConfigs = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
	"ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates",
}

// clusterLevelListenerConfigs may be set for every broker at once, with or
// without a listener prefix.
var clusterLevelListenerConfigs = []string{"max.connections", "max.connection.creation.rate", "num.network.threads"}

// staticConfigs are Kafka broker configs that are not dynamic (a change
// is refused as Kafka refuses it): the ones the gateway's flags stand for
// and the usual others. A name Kafka does not know at all is kept, as
// Kafka keeps custom configs.
var staticConfigs = []string{
	"broker.id", "node.id", "process.roles", "log.dirs", "log.dir", "metadata.log.dir",
	"controller.listener.names", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
	"inter.broker.listener.name", "security.inter.broker.protocol", "broker.rack",
	"auto.create.topics.enable", "num.partitions", "default.replication.factor", "delete.topic.enable",
	"offsets.topic.replication.factor", "offsets.topic.num.partitions", "offsets.retention.minutes",
	"transaction.state.log.replication.factor", "transaction.state.log.num.partitions", "transaction.state.log.min.isr",
	"group.initial.rebalance.delay.ms", "group.min.session.timeout.ms", "group.max.session.timeout.ms", "group.max.size",
	"authorizer.class.name", "super.users", "allow.everyone.if.no.acl.found",
	"log.retention.hours", "log.retention.minutes", "log.roll.hours", "log.roll.jitter.hours",
	"log.flush.scheduler.interval.ms", "log.message.format.version", "log.retention.check.interval.ms",
	"replica.fetch.max.bytes", "replica.lag.time.max.ms", "socket.send.buffer.bytes", "socket.receive.buffer.bytes",
	"socket.request.max.bytes", "queued.max.requests", "request.timeout.ms", "zookeeper.connect",
}

// Lookup returns the dynamic config of that name; a listener-prefixed
// name (listener.name.<listener>.<config>) is its config's.
func Lookup(name string) (Entry, bool) {
	base := unprefixed(name)
	for _, e := range catalog {
		if e.Name == base {
			return e, true
		}
	}
	if base != name && slices.Contains(securityConfigs, base) {
		typ := String
		if strings.HasSuffix(base, ".password") || base == "ssl.keystore.key" {
			typ = Password
		}
		return Entry{Name: base, Type: typ, PerBroker: true}, true
	}
	return Entry{}, false
}

// Entries lists the dynamic configs in the catalog's order.
func Entries() []Entry { return slices.Clone(catalog) }

// unprefixed strips listener.name.<listener>. from a name.
func unprefixed(name string) string {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return name
	}
	_, base, ok := strings.Cut(rest, ".")
	if !ok {
		return name
	}
	return base
}

// Check validates a resource's configs as Kafka's broker does before it
// stores them (clusterDefault: the resource named ""): names that are not
// dynamic, security configs without a listener prefix, values of the
// wrong type, per-broker configs as cluster-wide defaults: each an
// *InvalidRequest with Kafka's message.
func Check(clusterDefault bool, configs map[string]string) error {
	var static, unprefixedSecurity, perBroker []string
	for name := range configs {
		switch {
		case slices.Contains(staticConfigs, name):
			static = append(static, name)
		case slices.Contains(securityConfigs, name):
			unprefixedSecurity = append(unprefixedSecurity, name)
		}
	}
	if len(static) > 0 {
		return &InvalidRequest{"Cannot update these configs dynamically: " + scalaSet(static)}
	}
	if len(unprefixedSecurity) > 0 {
		return &InvalidRequest{"These security configs can be dynamically updated only per-listener using the listener prefix: " + scalaSet(unprefixedSecurity)}
	}
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		e, ok := Lookup(name)
		if !ok {
			continue // a custom config, kept as it is
		}
		if err := checkType(name, e.Type, configs[name]); err != nil {
			return err
		}
		if clusterDefault && (e.PerBroker || name != e.Name && !slices.Contains(clusterLevelListenerConfigs, e.Name)) {
			perBroker = append(perBroker, name)
		}
	}
	if len(perBroker) > 0 {
		return &InvalidRequest{"Cannot update these configs at default cluster level, broker id must be specified: " + scalaSet(perBroker)}
	}
	return nil
}

// checkType refuses a value that does not parse as its type, with Kafka's
// message.
func checkType(name string, typ Type, value string) error {
	bad := func(what string) error {
		return &InvalidRequest{fmt.Sprintf("Invalid value %s for configuration %s: %s", value, name, what)}
	}
	v := strings.TrimSpace(value)
	switch typ {
	case Int:
		if _, err := strconv.ParseInt(v, 10, 32); err != nil {
			return bad("Not a number of type INT")
		}
	case Short:
		if _, err := strconv.ParseInt(v, 10, 16); err != nil {
			return bad("Not a number of type SHORT")
		}
	case Long:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return bad("Not a number of type LONG")
		}
	case Double:
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return bad("Not a number of type DOUBLE")
		}
	case Boolean:
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			return bad("Expected value to be either true or false")
		}
	}
	return nil
}

// scalaSet prints names as Kafka's messages do: Set(a, b).
func scalaSet(names []string) string {
	slices.Sort(names)
	return "Set(" + strings.Join(names, ", ") + ")"
}
