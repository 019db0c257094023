package protocol

// ListConfigResources (KIP-1000, renamed by KIP-1142), versions 0-1: v0
// (once ListClientMetricsResources) lists the client metrics
// subscriptions; v1 lists the resources of the types asked (every type
// served when none is asked): topics, the gateways as brokers, the client
// metrics subscriptions, and the groups that have configs. BROKER_LOGGER
// is a known type with nothing to list (no logger is configurable); a type
// Kafka does not list is UNSUPPORTED_VERSION. DESCRIBE_CONFIGS on the
// cluster is needed, as in Kafka.

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.ListConfigResources, 0, 1, (*Handler).handleListConfigResources)
}

var listedConfigTypes = []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker,
	kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics, kmsg.ConfigResourceTypeGroupConfig}

func (h *Handler) handleListConfigResources(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	resp.ConfigResources = []kmsg.ListConfigResourcesResponseConfigResource{}
	if !h.allowedCluster(r, kmsg.ACLOperationDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return now(resp)
	}
	types := []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeClientMetrics}
	if r.Version >= 1 {
		types = listedConfigTypes
		if len(req.ResourceTypes) > 0 {
			types = nil
			for _, t := range req.ResourceTypes {
				typ := kmsg.ConfigResourceType(t)
				if !slices.Contains(listedConfigTypes, typ) {
					resp.ErrorCode = kerr.UnsupportedVersion.Code
					return now(resp)
				}
				if !slices.Contains(types, typ) {
					types = append(types, typ)
				}
			}
		}
	}
	add := func(typ kmsg.ConfigResourceType, names ...string) {
		for _, n := range names {
			c := kmsg.NewListConfigResourcesResponseConfigResource()
			c.Name, c.Type = n, int8(typ)
			resp.ConfigResources = append(resp.ConfigResources, c)
		}
	}
	for _, typ := range types {
		switch typ {
		case kmsg.ConfigResourceTypeTopic:
			topics, err := h.backend.ListTopics(ctx)
			if err != nil {
				resp.ErrorCode = kafkaErr(err, kerr.UnknownServerError).Code
				return now(resp)
			}
			for _, t := range topics {
				add(typ, t.Name)
			}
		case kmsg.ConfigResourceTypeBroker:
			for _, m := range h.cluster.Members() {
				add(typ, strconv.Itoa(int(m.NodeID)))
			}
		case kmsg.ConfigResourceTypeClientMetrics:
			if h.cfg.ClientMetrics != nil {
				add(typ, h.cfg.ClientMetrics.Names()...)
			}
		case kmsg.ConfigResourceTypeGroupConfig:
			if h.shares == nil {
				continue
			}
			groups, err := h.shares.Configs().Groups(ctx)
			if err != nil {
				resp.ErrorCode = kerr.UnknownServerError.Code
				return now(resp)
			}
			add(typ, groups...)
		}
	}
	return now(resp)
}
