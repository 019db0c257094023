package protocol

// InitProducerId, versions 0-5. An idempotent producer gets a producer id no
// producer had before on any gateway of the cluster (ids are reserved in
// blocks through the filer), with epoch 0; as in Kafka, one asking again
// gets a new id. A transactional producer gets its transactional.id's
// producer id with the next epoch, which fences older producers of the id;
// the id's open transaction is aborted first. The transaction timeout may
// be up to 15 minutes (INVALID_TRANSACTION_TIMEOUT).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func init() { register(kmsg.InitProducerID, 0, 5, (*Handler).handleInitProducerID) }

func (h *Handler) handleInitProducerID(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		if req.TransactionalID != nil {
			if !h.allowedTxn(r, kmsg.ACLOperationWrite, *req.TransactionalID) {
				resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				return resp, nil
			}
			timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
			pid, epoch, e := h.txns.InitProducerID(ctx, *req.TransactionalID, timeout, req.ProducerID, req.ProducerEpoch)
			if e != nil {
				resp.ErrorCode = fenced(e, r.Version, 4).Code
				return resp, nil
			}
			resp.ProducerID, resp.ProducerEpoch = pid, epoch
			return resp, nil
		}
		// An idempotent producer needs IdempotentWrite on the cluster,
		// or Write on some topic (KIP-679).
		if a := h.cfg.Authorizer; a != nil && !a.Authorize(r.Principal, r.clientIP(), kmsg.ACLOperationIdempotentWrite, kmsg.ACLResourceTypeCluster, acl.ClusterName) &&
			!a.AuthorizeAny(r.Principal, r.clientIP(), kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp, nil
		}
		id, err := h.backend.NewProducerID(ctx)
		if err != nil {
			glog.Warningf("kafka conn cid:%d: InitProducerId: %v", r.ConnID, err)
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp, nil
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return resp, nil
	}
}
