package protocol

// DeleteShareGroupOffsets, version 0 (KIP-932): removes a share group's
// share-partitions of topics (all their partitions): a later subscription
// starts them afresh by share.auto.offset.reset. The group must be a share
// group (GROUP_ID_NOT_FOUND) without members (NON_EMPTY_GROUP); a topic the
// group has no share-partitions of is UNKNOWN_TOPIC_OR_PARTITION. Needs
// Delete on the group and Read on each topic.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DeleteShareGroupOffsets, 0, 0, (*Handler).handleDeleteShareGroupOffsets) }

func (h *Handler) handleDeleteShareGroupOffsets(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		fail := func(e *kerr.Error, msg string) (kmsg.Response, error) {
			resp.ErrorCode = e.Code
			if msg != "" {
				resp.ErrorMessage = &msg
			}
			resp.Topics = nil
			return resp, nil
		}
		switch {
		case h.shares == nil:
			return fail(kerr.UnsupportedVersion, "")
		case !h.allowedGroup(r, kmsg.ACLOperationDelete, req.GroupID):
			return fail(kerr.GroupAuthorizationFailed, "")
		case req.GroupID == "":
			return fail(kerr.InvalidGroupID, "")
		}
		if e, msg := h.emptyShareGroup(ctx, req.GroupID, false); e != nil {
			return fail(e, msg)
		}
		for _, rt := range req.Topics {
			st := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			st.Topic = rt.Topic
			if !h.allowedTopic(r, kmsg.ACLOperationRead, rt.Topic) {
				st.ErrorCode = kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, st)
				continue
			}
			info, err := h.backend.DescribeTopic(ctx, rt.Topic)
			if err != nil {
				st.ErrorCode = kafkaErr(err, kerr.UnknownTopicOrPartition).Code
				resp.Topics = append(resp.Topics, st)
				continue
			}
			st.TopicID = info.ID
			had, err := h.shares.DeleteTopic(ctx, req.GroupID, rt.Topic)
			switch {
			case err != nil:
				st.ErrorCode = kerr.CoordinatorNotAvailable.Code
			case !had:
				st.ErrorCode = kerr.UnknownTopicOrPartition.Code
				msg := "There is no offset information to delete."
				st.ErrorMessage = &msg
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
}
