package protocol

// InitProducerId, versions 0-5, for idempotent producers: each gets a
// producer id no producer had before on any gateway of the cluster (ids
// are reserved in blocks through the filer), with epoch 0. As in Kafka, an
// idempotent producer asking again (v3+, after UNKNOWN_PRODUCER_ID or a
// sequence error) gets a new id. Transactional producers (a
// transactional.id) are not served yet: they get
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which clients report as fatal.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"
)

func init() { register(kmsg.InitProducerID, 0, 5, (*Handler).handleInitProducerID) }

func (h *Handler) handleInitProducerID(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		if req.TransactionalID != nil {
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return resp, nil
		}
		id, err := h.backend.NewProducerID(ctx)
		if err != nil {
			glog.Warningf("kafka conn: InitProducerId: %v", err)
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp, nil
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return resp, nil
	}
}
