package protocol

// Client metrics configs (the CLIENT_METRICS config resource of KIP-714):
// a subscription's metrics, interval.ms and match, kept by package
// telemetry. IncrementalAlterConfigs sets and deletes them (APPEND and
// SUBTRACT for the lists, metrics and match), AlterConfigs replaces them,
// and a subscription left with none is removed; DescribeConfigs shows the
// three with their source, set (CLIENT_METRICS_CONFIG) or the default. As
// in Kafka: ALTER_CONFIGS or DESCRIBE_CONFIGS on the cluster is needed, an
// unknown config name is INVALID_REQUEST and a bad value INVALID_CONFIG.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/telemetry"
)

// alterClientMetrics changes a subscription's configs with change, checked,
// saved unless validateOnly.
func (h *Handler) alterClientMetrics(ctx context.Context, r *Request, name string, validateOnly bool, change func(map[string]string) error) (*kerr.Error, string) {
	switch {
	case !h.allowedCluster(r, kmsg.ACLOperationAlterConfigs):
		return kerr.ClusterAuthorizationFailed, ""
	case h.cfg.ClientMetrics == nil:
		return kerr.InvalidRequest, "client metrics are not kept by this gateway"
	}
	err := h.cfg.ClientMetrics.Alter(ctx, name, validateOnly, change)
	var unknown *telemetry.UnknownConfig
	var invalid *telemetry.InvalidConfig
	var bad configError
	switch {
	case err == nil:
		return nil, ""
	case errors.As(err, &unknown):
		return kerr.InvalidRequest, err.Error()
	case errors.As(err, &invalid), errors.As(err, &bad):
		return kerr.InvalidConfig, err.Error()
	}
	return kerr.KafkaStorageError, err.Error()
}

// applyClientMetricsOp applies one IncrementalAlterConfigs operation to a
// subscription's configs.
func applyClientMetricsOp(configs map[string]string, c kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	if !telemetry.Known(c.Name) {
		return &telemetry.UnknownConfig{Names: []string{c.Name}}
	}
	switch c.Op {
	case kmsg.IncrementalAlterConfigOpSet:
		configs[c.Name] = *c.Value
	case kmsg.IncrementalAlterConfigOpDelete:
		delete(configs, c.Name)
	case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
		if !telemetry.IsList(c.Name) {
			return configError(c.Name + " is not a list: only SET and DELETE apply")
		}
		applyListOpTo(configs, c.Name, telemetry.Defaults[c.Name], c.Op, *c.Value)
	default:
		return configError("unknown operation")
	}
	return nil
}

// describeClientMetricsConfigs adds a subscription's configs to a
// DescribeConfigs answer: every one, set or default, as Kafka lists them
// (a name with no subscription shows the defaults).
func (h *Handler) describeClientMetricsConfigs(r *Request, name string, sr *kmsg.DescribeConfigsResponseResource,
	add func(name, value string, source kmsg.ConfigSource, typ kmsg.ConfigType, doc string, readOnly bool)) {
	switch {
	case !h.allowedCluster(r, kmsg.ACLOperationDescribeConfigs):
		sr.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return
	case name == "":
		sr.ErrorCode = kerr.InvalidRequest.Code
		msg := "a client metrics resource needs the subscription's name"
		sr.ErrorMessage = &msg
		return
	}
	var set map[string]string
	if h.cfg.ClientMetrics != nil {
		set = h.cfg.ClientMetrics.Configs(name)
	}
	for _, c := range []struct {
		name string
		typ  kmsg.ConfigType
		doc  string
	}{
		{telemetry.IntervalConfig, kmsg.ConfigTypeInt, "How often a matching client pushes its metrics, in milliseconds."},
		{telemetry.MatchConfig, kmsg.ConfigTypeList, "The key=regex patterns a client must all match (empty: every client)."},
		{telemetry.MetricsConfig, kmsg.ConfigTypeList, "The metric name prefixes asked for (* for every metric)."},
	} {
		if v, ok := set[c.name]; ok {
			add(c.name, v, kmsg.ConfigSourceClientMetricsConfig, c.typ, c.doc, false)
		} else {
			add(c.name, telemetry.Defaults[c.name], kmsg.ConfigSourceDefaultConfig, c.typ, c.doc, false)
		}
	}
}
