package protocol

// ShareAcknowledge, versions 1-2 (KIP-932): a share group member's
// acknowledgements of records it acquired, in its share session (which it
// moves on one epoch; epoch -1 closes it after the acknowledgements,
// releasing what the member still holds; epoch 0 is
// INVALID_SHARE_SESSION_EPOCH). Each partition's batches are applied
// whole or not at all and saved before the answer (v2 adds renewals of
// the locks, and the lock duration in the answer). Needs Read on the group
// and on each topic.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
)

func init() { register(kmsg.ShareAcknowledge, 1, 2, (*Handler).handleShareAcknowledge) }

func (h *Handler) handleShareAcknowledge(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.ShareAcknowledgeRequest)
	fail := func(e *kerr.Error, msg string) Reply {
		resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return now(resp)
	}
	group, e, msg := h.checkShareRequest(r, req.GroupID, req.MemberID)
	if e != nil {
		return fail(e, msg)
	}
	key := shareSessionKey{group, *req.MemberID}
	var sess *shareSession
	switch req.ShareSessionEpoch {
	case 0:
		e = kerr.InvalidShareSessionEpoch
	case -1:
		sess, e = h.shareSessions.closing(key)
	default:
		sess, e = h.shareSessions.step(key, req.ShareSessionEpoch, nil)
	}
	if e != nil {
		return fail(e, "")
	}
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
		if r.Version >= 2 {
			settings, err := h.shares.Configs().Settings(ctx, group, false)
			if err != nil {
				resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
				return resp, nil
			}
			resp.AcquisitionLockTimeoutMillis = int32(settings.LockDuration.Milliseconds())
		}
		leaders := map[int32]bool{}
		for _, rt := range req.Topics {
			st := kmsg.NewShareAcknowledgeResponseTopic()
			st.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewShareAcknowledgeResponseTopicPartition()
				sp.Partition = rp.Partition
				acks := make([]share.Ack, len(rp.AcknowledgementBatches))
				for i, b := range rp.AcknowledgementBatches {
					acks[i] = share.Ack{First: b.FirstOffset, Last: b.LastOffset, Types: b.AcknowledgeTypes}
				}
				if ae, leader := h.acknowledge(ctx, r, group, key.member, rt.TopicID, rp.Partition, acks, r.Version, req.IsRenewAck); ae != nil {
					sp.ErrorCode = ae.Code
					if ae == kerr.NotLeaderForPartition && leader[0] >= 0 {
						sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leader[0], leader[1]
						leaders[leader[0]] = true
					}
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		for _, m := range h.brokers() {
			if leaders[m.NodeID] {
				ne := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
				ne.NodeID = m.NodeID
				ne.Host, ne.Port = m.Endpoint(r.Listener)
				resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
			}
		}
		if req.ShareSessionEpoch == -1 {
			h.shareSessions.end(sess)
			metrics.ShareSessions.Set(float64(h.shareSessions.count()))
		}
		return resp, nil
	}
}
