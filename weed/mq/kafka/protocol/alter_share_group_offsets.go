package protocol

// AlterShareGroupOffsets, version 0 (KIP-932): sets where share-partitions
// of a share group start, their records in flight and delivery counts
// forgotten (the leaders' copies are read again). The group must have no
// members (NON_EMPTY_GROUP); one that does not exist is made an empty
// share group, one of another type is GROUP_ID_NOT_FOUND. An offset before
// the log's start becomes the log's start at the next fetch. Needs Read on
// the group and on each topic.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

func init() { register(kmsg.AlterShareGroupOffsets, 0, 0, (*Handler).handleAlterShareGroupOffsets) }

func (h *Handler) handleAlterShareGroupOffsets(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		fail := func(e *kerr.Error, msg string) (kmsg.Response, error) {
			resp.ErrorCode = e.Code
			if msg != "" {
				resp.ErrorMessage = &msg
			}
			return resp, nil
		}
		switch {
		case h.shares == nil:
			return fail(kerr.UnsupportedVersion, "")
		case !h.allowedGroup(r, kmsg.ACLOperationRead, req.GroupID):
			return fail(kerr.GroupAuthorizationFailed, "")
		case req.GroupID == "":
			return fail(kerr.InvalidGroupID, "")
		}
		// Topics first: their errors are answered whatever the group.
		infos := make([]*storage.TopicInfo, len(req.Topics))
		codes := make([]int16, len(req.Topics))
		for i, rt := range req.Topics {
			if !h.allowedTopic(r, kmsg.ACLOperationRead, rt.Topic) {
				codes[i] = kerr.TopicAuthorizationFailed.Code
				continue
			}
			info, err := h.backend.DescribeTopic(ctx, rt.Topic)
			if err != nil {
				codes[i] = kafkaErr(err, kerr.UnknownTopicOrPartition).Code
				continue
			}
			infos[i] = &info
		}
		if e, msg := h.emptyShareGroup(ctx, req.GroupID, true); e != nil {
			return fail(e, msg)
		}
		for i, rt := range req.Topics {
			st := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			st.Topic = rt.Topic
			if infos[i] != nil {
				st.TopicID = infos[i].ID
			}
			for _, rp := range rt.Partitions {
				sp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, codes[i]
				switch {
				case sp.ErrorCode != 0:
				case rp.Partition < 0 || rp.Partition >= infos[i].Partitions:
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					key := share.Key{Group: req.GroupID, Topic: rt.Topic, Partition: rp.Partition}
					if err := h.shares.SetStart(ctx, key, rp.StartOffset); err != nil {
						sp.ErrorCode = kerr.CoordinatorNotAvailable.Code
					}
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
}

// emptyShareGroup checks that group is a share group without members, as
// AlterShareGroupOffsets and DeleteShareGroupOffsets require (create: the
// first makes a group that does not exist an empty share group); else it
// returns the error, and its message, to answer.
func (h *Handler) emptyShareGroup(ctx context.Context, group string, create bool) (*kerr.Error, string) {
	isShare, members, e := h.groups.ShareGroup(ctx, group, create)
	switch {
	case e != nil:
		return e, ""
	case !isShare:
		return kerr.GroupIDNotFound, "Group " + group + " is not a share group."
	case members > 0:
		return kerr.NonEmptyGroup, "The group is not empty."
	}
	return nil, ""
}
