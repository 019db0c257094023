package protocol

// AlterClientQuotas, versions 0-1 (KIP-546): sets and removes the quotas
// of users, client ids and IPs (and of their defaults), as
// `kafka-configs.sh --alter --entity-type users/clients/ips --add-config
// producer_byte_rate=...` asks; kept in the filer and applied by every
// gateway within seconds (see the quota package). ALTER_CONFIGS on the
// cluster is needed (CLUSTER_AUTHORIZATION_FAILED for every entry); an
// entity or change Kafka refuses (an unknown key, a fractional byte rate,
// a value not above 0, an IP combined with a user) is INVALID_REQUEST with
// why, and none of that entry's changes is made. validate_only checks and
// changes nothing.
//
// Measured and enforced: producer_byte_rate (Produce), consumer_byte_rate
// (Fetch) and controller_mutation_rate (CreateTopics, CreatePartitions,
// DeleteTopics; see quotas.go). request_percentage and
// connection_creation_rate are kept and described but not enforced.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/quota"
)

func init() {
	register(kmsg.AlterClientQuotas, 0, 1, (*Handler).handleAlterClientQuotas)
}

func (h *Handler) handleAlterClientQuotas(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.AlterClientQuotasRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
		allowed := h.allowedCluster(r, kmsg.ACLOperationAlterConfigs)
		for _, entry := range req.Entries {
			re := kmsg.NewAlterClientQuotasResponseEntry()
			var entity quota.Entity
			for _, c := range entry.Entity {
				rc := kmsg.NewAlterClientQuotasResponseEntryEntity()
				rc.Type, rc.Name = c.Type, c.Name
				re.Entity = append(re.Entity, rc)
				entity = append(entity, quota.Component{Type: c.Type, Name: c.Name})
			}
			var ops []quota.Op
			msg := entity.Validate()
			for _, op := range entry.Ops {
				o := quota.Op{Key: op.Key, Value: op.Value, Remove: op.Remove}
				if msg == "" {
					msg = entity.ValidateOp(o)
				}
				ops = append(ops, o)
			}
			var e *kerr.Error
			switch {
			case !allowed:
				e = kerr.ClusterAuthorizationFailed
			case msg != "":
				e = kerr.InvalidRequest
			case !req.ValidateOnly && len(ops) > 0:
				if err := h.cfg.Quotas.Alter(ctx, entity, ops); err != nil {
					e, msg = kerr.KafkaStorageError, err.Error()
				}
			}
			if e != nil {
				re.ErrorCode = e.Code
				if msg != "" {
					re.ErrorMessage = &msg
				}
			}
			resp.Entries = append(resp.Entries, re)
		}
		return resp, nil
	}
}
