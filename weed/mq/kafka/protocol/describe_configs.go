package protocol

// DescribeConfigs, versions 1-4.
//
// Topics list every setting in topic_config.go with its source: set on the
// topic (DYNAMIC_TOPIC_CONFIG) or the default (DEFAULT_CONFIG). The broker
// resource (this gateway, by its node id) lists the settings clients read;
// a group resource, its configs (group_configs.go); a client-metrics
// resource, its subscription's (client_metrics_configs.go).

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeConfigs, 1, 4, (*Handler).handleDescribeConfigs) }

func (h *Handler) handleDescribeConfigs(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		want := func(name string) bool {
			if len(rr.ConfigNames) == 0 { // null or empty: every one, as Kafka
				return true
			}
			for _, n := range rr.ConfigNames {
				if n == name {
					return true
				}
			}
			return false
		}
		add := func(name, value string, source kmsg.ConfigSource, typ kmsg.ConfigType, doc string, readOnly bool) {
			if !want(name) {
				return
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value, c.Source, c.ConfigType, c.ReadOnly = name, &value, source, typ, readOnly
			c.IsDefault = source == kmsg.ConfigSourceDefaultConfig
			if req.IncludeSynonyms {
				s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				s.Name, s.Value, s.Source = name, &value, source
				c.ConfigSynonyms = append(c.ConfigSynonyms, s)
			}
			if req.IncludeDocumentation {
				c.Documentation = &doc
			}
			sr.Configs = append(sr.Configs, c)
		}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if !h.allowedTopic(r, kmsg.ACLOperationDescribeConfigs, rr.ResourceName) {
				sr.ErrorCode = kerr.TopicAuthorizationFailed.Code
				break
			}
			if e := validTopicName(rr.ResourceName); e != nil {
				sr.ErrorCode = e.Code
				break
			}
			info, err := h.describeTopic(ctx, rr.ResourceName)
			if err != nil {
				sr.ErrorCode = kafkaErr(err, kerr.RequestTimedOut).Code
				break
			}
			for _, tc := range topicConfigs {
				if v, ok := info.Configs[tc.name]; ok {
					add(tc.name, v, kmsg.ConfigSourceDynamicTopicConfig, tc.typ, tc.doc, false)
				} else {
					add(tc.name, tc.def, kmsg.ConfigSourceDefaultConfig, tc.typ, tc.doc, false)
				}
			}
		case kmsg.ConfigResourceTypeBroker:
			if !h.allowedCluster(r, kmsg.ACLOperationDescribeConfigs) {
				sr.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				break
			}
			if rr.ResourceName != "" && rr.ResourceName != strconv.Itoa(int(h.cfg.NodeID)) {
				sr.ErrorCode = kerr.InvalidRequest.Code
				break
			}
			static := kmsg.ConfigSourceStaticBrokerConfig
			add("broker.id", strconv.Itoa(int(h.cfg.NodeID)), static, kmsg.ConfigTypeInt, "This gateway's node id.", true)
			add("auto.create.topics.enable", strconv.FormatBool(h.cfg.AutoCreateTopics), static, kmsg.ConfigTypeBoolean, "Whether Metadata creates missing topics.", true)
			add("num.partitions", strconv.Itoa(int(h.cfg.DefaultPartitions)), static, kmsg.ConfigTypeInt, "Partitions of auto-created topics (-default-partitions).", true)
			add("default.replication.factor", strconv.Itoa(int(h.cfg.DefaultReplicationFactor)), static, kmsg.ConfigTypeShort,
				"Replication factor of topics created with the default (-default.replication.factor; -1: the cluster's default replication): the copies SeaweedFS keeps.", true)
			add("message.max.bytes", strconv.Itoa(int(h.cfg.MaxMessageBytes)), static, kmsg.ConfigTypeInt, "Default max.message.bytes of topics.", true)
			add("log.retention.ms", "-1", static, kmsg.ConfigTypeLong, "Records are kept unless a topic sets retention.ms.", true)
			add("min.insync.replicas", "1", static, kmsg.ConfigTypeInt, "Default min.insync.replicas of topics.", true)
		case kmsg.ConfigResourceTypeGroupConfig:
			h.describeGroupConfigs(ctx, r, rr.ResourceName, &sr, add)
		case kmsg.ConfigResourceTypeClientMetrics:
			h.describeClientMetricsConfigs(r, rr.ResourceName, &sr, add)
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return now(resp)
}
