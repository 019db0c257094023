package protocol

// DescribeConfigs, versions 1-4.
//
// Topics list every setting in topic_config.go with its source: set on the
// topic (DYNAMIC_TOPIC_CONFIG), inherited from a dynamic broker config
// (DYNAMIC_BROKER_CONFIG or DYNAMIC_DEFAULT_BROKER_CONFIG, the synonym
// named as the broker config) or the default (DEFAULT_CONFIG). Broker
// resources are answered in broker_configs.go;
// a group resource, its configs (group_configs.go); a client-metrics
// resource, its subscription's (client_metrics_configs.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
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
		// addAs adds a config whose value comes from the synonym
		// named synonym.
		addAs := func(name, synonym, value string, source kmsg.ConfigSource, typ kmsg.ConfigType, doc string) {
			if !want(name) {
				return
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value, c.Source, c.ConfigType = name, &value, source, typ
			c.IsDefault = source == kmsg.ConfigSourceDefaultConfig
			if req.IncludeSynonyms {
				s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				s.Name, s.Value, s.Source = synonym, &value, source
				c.ConfigSynonyms = append(c.ConfigSynonyms, s)
			}
			if req.IncludeDocumentation {
				c.Documentation = &doc
			}
			sr.Configs = append(sr.Configs, c)
		}
		add := func(name, value string, source kmsg.ConfigSource, typ kmsg.ConfigType, doc string, readOnly bool) {
			addAs(name, name, value, source, typ, doc)
			if readOnly && want(name) {
				sr.Configs[len(sr.Configs)-1].ReadOnly = true
			}
		}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if !h.allowedTopic(r, kmsg.ACLOperationDescribeConfigs, rr.ResourceName) {
				sr.ErrorCode = kerr.TopicAuthorizationFailed.Code
				break
			}
			if e := storage.ValidTopicName(rr.ResourceName); e != nil {
				sr.ErrorCode = e.Code
				break
			}
			info, err := h.describeTopic(ctx, rr.ResourceName)
			if err != nil {
				sr.ErrorCode = kafkaErr(err, kerr.RequestTimedOut).Code
				break
			}
			for _, tc := range topicConfigs {
				if v, ok := info.Inherited[tc.name]; ok {
					// From a dynamic broker config, named as
					// Kafka names the synonym.
					broker, source := h.inheritedSource(tc.name)
					addAs(tc.name, broker, v, source, tc.typ, tc.doc)
				} else if v, ok := info.Configs[tc.name]; ok {
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
			h.describeBroker(rr.ResourceName, want, req.IncludeSynonyms, req.IncludeDocumentation, &sr)
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
