package protocol

// UpdateFeatures, versions 0-2 (KIP-584, KIP-778): moves the cluster's
// finalized feature levels, as `kafka-features.sh upgrade/downgrade` and
// the AdminClient's updateFeatures ask: transaction.version 0-2,
// group.version 0-1, share.version 0-1 (streams.version only 0: Streams
// groups are not served). The levels are kept in the filer and every
// gateway's ApiVersions answers them, one epoch further, within seconds
// (see the feature package). group.version 0 refuses ConsumerGroupHeartbeat
// and share.version 0 ShareGroupHeartbeat with UNSUPPORTED_VERSION, as
// Kafka does with the protocols off; transaction.version decides whether
// clients use transactions v2.
//
// As Kafka's controller: ALTER on the cluster is needed
// (CLUSTER_AUTHORIZATION_FAILED); an unknown feature, a level outside the
// supported range, a downgrade without a downgrade type (v0:
// allow_downgrade), an upgrade with one, a feature named twice are
// INVALID_UPDATE_VERSION with why, and then nothing is changed; the error
// is the response's (v0-1: each feature's too). validate_only (v1+) checks
// and changes nothing.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/feature"
)

func init() { register(kmsg.UpdateFeatures, 0, 2, (*Handler).handleUpdateFeatures) }

// features are the cluster's finalized levels.
func (h *Handler) features() feature.Levels {
	if h.cfg.Features != nil {
		return h.cfg.Features.Current()
	}
	return feature.Levels{Epoch: 1, Levels: map[string]int16{feature.Group: 1, feature.Share: 1, feature.Streams: 1, feature.Transaction: h.cfg.TransactionVersion}}
}

func (h *Handler) handleUpdateFeatures(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.UpdateFeaturesRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
		var e *kerr.Error
		var msg string
		switch {
		case !h.allowedCluster(r, kmsg.ACLOperationAlter):
			e = kerr.ClusterAuthorizationFailed
		case h.cfg.Features == nil:
			e, msg = kerr.InvalidRequest, "this gateway cannot change the cluster's features"
		default:
			var updates []feature.Update
			for _, u := range req.FeatureUpdates {
				typ := u.UpgradeType
				if r.Version == 0 {
					typ = feature.Upgrade
					if u.AllowDowngrade {
						typ = feature.SafeDowngrade
					}
				}
				updates = append(updates, feature.Update{Feature: u.Feature, Level: u.MaxVersionLevel, Type: typ})
			}
			_, err := h.cfg.Features.Update(ctx, updates, req.ValidateOnly)
			var refused *feature.Error
			switch {
			case errors.As(err, &refused):
				e, msg = kerr.InvalidUpdateVersion, refused.Msg
			case err != nil:
				e, msg = kerr.KafkaStorageError, err.Error()
			}
		}
		if e != nil {
			resp.ErrorCode = e.Code
			if msg != "" {
				resp.ErrorMessage = &msg
			}
		}
		for _, u := range req.FeatureUpdates {
			res := kmsg.NewUpdateFeaturesResponseResult()
			res.Feature = u.Feature
			res.ErrorCode, res.ErrorMessage = resp.ErrorCode, resp.ErrorMessage
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	}
}
