package protocol

// DescribeClientQuotas, versions 0-1 (KIP-546): the quotas of the
// entities a filter selects (users, client ids, IPs, by name, default or
// any), as `kafka-configs.sh --describe --entity-type users/clients/ips`
// asks. DESCRIBE_CONFIGS on the cluster is needed
// (CLUSTER_AUTHORIZATION_FAILED); a filter Kafka refuses (an entity type
// twice, an unknown one, IP with users or client ids) is INVALID_REQUEST
// with why.

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/quota"
)

func init() {
	register(kmsg.DescribeClientQuotas, 0, 1, (*Handler).handleDescribeClientQuotas)
}

func (h *Handler) handleDescribeClientQuotas(_ context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !h.allowedCluster(r, kmsg.ACLOperationDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return now(resp)
	}
	var fs []quota.Filter
	for _, c := range req.Components {
		fs = append(fs, quota.Filter{Type: c.EntityType, Match: int8(c.MatchType), Name: c.Match})
	}
	if msg := quota.ValidateFilters(fs); msg != "" {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, &msg
		return now(resp)
	}
	// Null entries mean an error to Kafka's clients: none found is empty.
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, e := range h.cfg.Quotas.Describe(fs, req.Strict) {
		re := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, c := range e.Entity {
			rc := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			rc.Type, rc.Name = c.Type, c.Name
			re.Entity = append(re.Entity, rc)
		}
		for _, k := range slices.Sorted(maps.Keys(e.Values)) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, e.Values[k]
			re.Values = append(re.Values, v)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return now(resp)
}
