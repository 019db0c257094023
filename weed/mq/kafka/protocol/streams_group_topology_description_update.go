package protocol

// StreamsGroupTopologyDescriptionUpdate, version 0 (KIP-1331): a member of
// a streams group sends the description of its topology (its processors,
// stores and sinks) when the heartbeat asks for it; the group keeps it
// with its state and StreamsGroupDescribe v1 shows it. Kafka asks for it
// only when a description plugin is configured; the gateway asks once for
// each topology epoch, so that kafka-streams-groups and the AdminClient
// see it. Needs Read on the group; a description over 1 MiB is
// INVALID_REQUEST.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/feature"
)

func init() {
	register(kmsg.StreamsGroupTopologyDescriptionUpdate, 0, 0, (*Handler).handleStreamsGroupTopologyDescriptionUpdate)
}

func (h *Handler) handleStreamsGroupTopologyDescriptionUpdate(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.StreamsGroupTopologyDescriptionUpdateRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
		var e *kerr.Error
		var msg string
		switch {
		case h.features().Level(feature.Streams) < 1:
			e, msg = kerr.UnsupportedVersion, "The streams group protocol is off: streams.version is 0."
		case !h.allowedGroup(r, kmsg.ACLOperationRead, req.Group):
			e = kerr.GroupAuthorizationFailed
		default:
			e, msg = h.groups.UpdateStreamsTopologyDescription(ctx, req)
		}
		if e != nil {
			resp.ErrorCode = e.Code
			if msg != "" {
				resp.ErrorMessage = &msg
			}
		}
		return resp, nil
	}
}
