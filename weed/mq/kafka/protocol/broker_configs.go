package protocol

// Dynamic broker configs: AlterConfigs and IncrementalAlterConfigs on
// BROKER resources (the cluster-wide defaults, named "", or this gateway's
// own, named by its node id), and DescribeConfigs of them, as a Kafka
// broker answers. The configs are kept by package brokerconfig; the log.*
// ones are the defaults of their topic configs, which topics that set
// none inherit (DescribeConfigs of a topic shows them with the broker
// config's source). The gateway's flags are the static broker configs.

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/brokerconfig"
)

// alterBroker changes a BROKER resource's configs with change, checked,
// saved unless validateOnly.
func (h *Handler) alterBroker(ctx context.Context, name string, validateOnly bool, change func(map[string]string) error) (*kerr.Error, string) {
	if h.brokerConfigs == nil {
		return kerr.InvalidRequest, "broker configs are not kept by this gateway"
	}
	var changeErr error
	err := h.brokerConfigs.Alter(ctx, name, validateOnly, func(configs map[string]string) error {
		changeErr = change(configs)
		return changeErr
	})
	var invalidReq *brokerconfig.InvalidRequest
	var invalid *brokerconfig.InvalidConfig
	var unknown unknownListConfig
	switch {
	case err == nil:
		return nil, ""
	case errors.As(changeErr, &unknown):
		return kerr.UnknownServerError, "" // as Kafka's broker answers it
	case changeErr != nil:
		return kerr.InvalidConfig, changeErr.Error()
	case errors.As(err, &invalidReq):
		return kerr.InvalidRequest, invalidReq.Reason
	case errors.As(err, &invalid):
		return kerr.InvalidConfig, invalid.Reason
	}
	return kafkaErr(err, kerr.KafkaStorageError), err.Error()
}

// unknownListConfig: APPEND or SUBTRACT of a name Kafka does not know,
// which its broker answers with UNKNOWN_SERVER_ERROR.
type unknownListConfig string

func (e unknownListConfig) Error() string { return "unknown config " + string(e) }

// applyBrokerConfigOp applies one IncrementalAlterConfigs operation to a
// BROKER resource's configs. DELETE of a config not set succeeds, as
// Kafka's.
func applyBrokerConfigOp(configs map[string]string, c kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	value := ""
	if c.Value != nil {
		value = *c.Value
	}
	switch c.Op {
	case kmsg.IncrementalAlterConfigOpSet:
		configs[c.Name] = value
	case kmsg.IncrementalAlterConfigOpDelete:
		delete(configs, c.Name)
	case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
		e, ok := brokerconfig.Lookup(c.Name)
		if !ok {
			return unknownListConfig(c.Name)
		}
		if e.Type != brokerconfig.List {
			verb := "append"
			if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
				verb = "subtract"
			}
			return configError("Config value " + verb + " is not allowed for config key: " + c.Name)
		}
		applyListOpTo(configs, c.Name, e.Def, c.Op, value)
	default:
		return configError("unknown operation")
	}
	return nil
}

// describeBroker answers DescribeConfigs of a BROKER resource: this
// gateway's configs (static: its flags; dynamic: set for it, set for the
// cluster, or Kafka's default), or for "" the cluster-wide dynamic ones
// set.
func (h *Handler) describeBroker(name string, want func(string) bool, synonyms, docs bool, sr *kmsg.DescribeConfigsResponseResource) {
	self := strconv.Itoa(int(h.cfg.NodeID))
	if name != "" && name != self {
		msg := "Unexpected broker id, expected " + self + " or empty string, but received " + name
		if _, err := strconv.ParseInt(name, 10, 32); err != nil {
			msg = "Broker id must be an integer, but it is: " + name
		}
		sr.ErrorCode, sr.ErrorMessage = kerr.InvalidRequest.Code, &msg
		return
	}
	var cur brokerconfig.Configs
	if h.brokerConfigs != nil {
		cur = h.brokerConfigs.Current()
	}
	type source struct {
		kind  kmsg.ConfigSource
		value *string
	}
	add := func(cname string, typ kmsg.ConfigType, readOnly, sensitive bool, doc string, sources []source) {
		if !want(cname) {
			return
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.ConfigType, c.ReadOnly, c.IsSensitive = cname, typ, readOnly, sensitive
		c.Source = kmsg.ConfigSourceDefaultConfig
		if len(sources) > 0 {
			c.Source, c.Value = sources[0].kind, sources[0].value
		}
		c.IsDefault = c.Source == kmsg.ConfigSourceDefaultConfig
		if sensitive {
			c.Value = nil
		}
		if synonyms {
			for _, s := range sources {
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = cname, s.value, s.kind
				if sensitive {
					syn.Value = nil
				}
				c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
			}
		}
		if docs {
			c.Documentation = &doc
		}
		sr.Configs = append(sr.Configs, c)
	}
	str := func(s string) *string { return &s }
	if name == "" {
		// The cluster-wide defaults set, and nothing else.
		for _, n := range slices.Sorted(maps.Keys(cur.Default)) {
			typ, sensitive := brokerConfigType(n)
			add(n, typ, false, sensitive, "", []source{{kmsg.ConfigSourceDynamicDefaultBrokerConfig, str(cur.Default[n])}})
		}
		return
	}

	static := map[string]string{
		"message.max.bytes":   strconv.Itoa(int(h.cfg.MaxMessageBytes)),
		"log.retention.ms":    "-1",
		"min.insync.replicas": "1",
	}
	staticSource := kmsg.ConfigSourceStaticBrokerConfig
	readOnly := func(n, value string, typ kmsg.ConfigType, doc string) {
		add(n, typ, true, false, doc, []source{{staticSource, str(value)}})
	}
	readOnly("broker.id", self, kmsg.ConfigTypeInt, "This gateway's node id.")
	readOnly("auto.create.topics.enable", strconv.FormatBool(h.cfg.AutoCreateTopics), kmsg.ConfigTypeBoolean, "Whether Metadata creates missing topics.")
	readOnly("num.partitions", strconv.Itoa(int(h.cfg.DefaultPartitions)), kmsg.ConfigTypeInt, "Partitions of auto-created topics (-default-partitions).")
	readOnly("default.replication.factor", strconv.Itoa(int(h.cfg.DefaultReplicationFactor)), kmsg.ConfigTypeShort,
		"Replication factor of topics created with the default (-default.replication.factor; -1: the cluster's default replication): the copies SeaweedFS keeps.")
	own := cur.Of(self)
	listed := map[string]bool{}
	for _, e := range brokerconfig.Entries() {
		listed[e.Name] = true
		var sources []source
		if v, ok := own[e.Name]; ok {
			sources = append(sources, source{kmsg.ConfigSourceDynamicBrokerConfig, str(v)})
		}
		if v, ok := cur.Default[e.Name]; ok {
			sources = append(sources, source{kmsg.ConfigSourceDynamicDefaultBrokerConfig, str(v)})
		}
		if v, ok := static[e.Name]; ok {
			sources = append(sources, source{staticSource, str(v)})
		}
		if e.Def != "" {
			sources = append(sources, source{kmsg.ConfigSourceDefaultConfig, str(e.Def)})
		}
		doc := e.Applied
		if doc == "" {
			doc = "Accepted and kept, no effect here."
		}
		add(e.Name, kmsg.ConfigType(e.Type), false, e.Type == brokerconfig.Password, doc, sources)
	}
	// Listener-prefixed and custom configs set.
	for _, n := range slices.Sorted(maps.Keys(own)) {
		if listed[n] {
			continue
		}
		typ, sensitive := brokerConfigType(n)
		add(n, typ, false, sensitive, "", []source{{kmsg.ConfigSourceDynamicBrokerConfig, str(own[n])}})
	}
	for _, n := range slices.Sorted(maps.Keys(cur.Default)) {
		if listed[n] || own[n] != "" {
			continue
		}
		typ, sensitive := brokerConfigType(n)
		add(n, typ, false, sensitive, "", []source{{kmsg.ConfigSourceDynamicDefaultBrokerConfig, str(cur.Default[n])}})
	}
}

// brokerConfigType is a broker config's type and whether its value is
// hidden, as Kafka shows them: a name Kafka does not know has no type and
// is hidden.
func brokerConfigType(name string) (kmsg.ConfigType, bool) {
	e, ok := brokerconfig.Lookup(name)
	if !ok {
		return kmsg.ConfigTypeUnknown, true
	}
	return kmsg.ConfigType(e.Type), e.Type == brokerconfig.Password
}

// inheritedSource is where a topic's inherited config comes from: the
// broker config it is the default of, set for this gateway or for the
// cluster.
func (h *Handler) inheritedSource(topicConfig string) (string, kmsg.ConfigSource) {
	if h.brokerConfigs == nil {
		return "", kmsg.ConfigSourceDynamicDefaultBrokerConfig
	}
	for _, e := range brokerconfig.Entries() {
		if e.Topic() != topicConfig {
			continue
		}
		if _, perBroker, ok := h.brokerConfigs.Inherited(topicConfig); ok && perBroker {
			return e.Name, kmsg.ConfigSourceDynamicBrokerConfig
		}
		return e.Name, kmsg.ConfigSourceDynamicDefaultBrokerConfig
	}
	return "", kmsg.ConfigSourceDynamicDefaultBrokerConfig
}
