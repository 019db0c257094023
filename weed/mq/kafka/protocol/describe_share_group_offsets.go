package protocol

// DescribeShareGroupOffsets, versions 0-1 (KIP-932): each share-partition's
// start offset (the first record not yet done by the group) as saved, its
// leader epoch and, v1+, its lag: the partition's end less the start less
// the records done after it. Every share-partition of the group when no
// topics are named (those of topics the principal may not describe left
// out); a partition without one has start offset -1. A group of another
// type is GROUP_ID_NOT_FOUND, one that does not exist has no
// share-partitions (as Kafka 4.2). Needs Describe on the group and topics.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
)

func init() {
	register(kmsg.DescribeShareGroupOffsets, 0, 1, (*Handler).handleDescribeShareGroupOffsets)
}

func (h *Handler) handleDescribeShareGroupOffsets(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
		for _, rg := range req.Groups {
			resp.Groups = append(resp.Groups, h.describeShareOffsets(ctx, r, rg))
		}
		return resp, nil
	}
}

func (h *Handler) describeShareOffsets(ctx context.Context, r *Request, rg kmsg.DescribeShareGroupOffsetsRequestGroup) kmsg.DescribeShareGroupOffsetsResponseGroup {
	g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
	g.GroupID = rg.GroupID
	switch {
	case h.shares == nil:
		g.ErrorCode = kerr.UnsupportedVersion.Code
		return g
	case !h.allowedGroup(r, kmsg.ACLOperationDescribe, rg.GroupID):
		g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return g
	}
	isShare, _, e := h.groups.ShareGroup(ctx, rg.GroupID, false)
	switch {
	case e == kerr.GroupIDNotFound:
		if rg.Topics == nil {
			g.Topics = []kmsg.DescribeShareGroupOffsetsResponseGroupTopic{}
			return g
		}
	case e != nil:
		g.ErrorCode = e.Code
		return g
	case !isShare:
		g.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "Group " + rg.GroupID + " is not a share group."
		g.ErrorMessage = &msg
		return g
	}
	type want struct {
		topic string
		parts []int32 // nil: every share-partition of the topic
	}
	var wants []want
	if rg.Topics == nil {
		topics, err := h.shares.GroupTopics(ctx, rg.GroupID)
		if err != nil {
			g.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return g
		}
		slices.Sort(topics)
		for _, t := range topics {
			if h.allowedTopic(r, kmsg.ACLOperationDescribe, t) {
				wants = append(wants, want{topic: t})
			}
		}
	} else {
		for _, t := range rg.Topics {
			wants = append(wants, want{t.Topic, append([]int32{}, t.Partitions...)})
		}
	}
	g.Topics = []kmsg.DescribeShareGroupOffsetsResponseGroupTopic{}
	for _, w := range wants {
		st := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		st.Topic = w.topic
		unknown := func(code int16) {
			for _, p := range w.parts {
				sp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				sp.Partition, sp.StartOffset, sp.ErrorCode = p, -1, code
				st.Partitions = append(st.Partitions, sp)
			}
		}
		if !h.allowedTopic(r, kmsg.ACLOperationDescribe, w.topic) {
			unknown(kerr.TopicAuthorizationFailed.Code)
			g.Topics = append(g.Topics, st)
			continue
		}
		info, err := h.backend.DescribeTopic(ctx, w.topic)
		if err != nil {
			unknown(0) // as Kafka: no error, no start offset
			g.Topics = append(g.Topics, st)
			continue
		}
		st.TopicID = info.ID
		saved, err := h.shares.TopicOffsets(ctx, rg.GroupID, w.topic)
		if err != nil {
			g.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return g
		}
		byPart := map[int32]share.Offsets{}
		for _, o := range saved {
			byPart[o.Partition] = o
		}
		parts := w.parts
		if parts == nil {
			for _, o := range saved {
				parts = append(parts, o.Partition)
			}
			slices.Sort(parts)
		}
		for _, p := range parts {
			sp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			sp.Partition, sp.StartOffset = p, -1
			if o, ok := byPart[p]; ok {
				sp.StartOffset, sp.LeaderEpoch = o.StartOffset, int32(o.LeaderEpoch)
				if r.Version >= 1 && o.StartOffset >= 0 {
					if hw, err := h.cfg.HighWatermark(ctx, w.topic, p); err == nil {
						sp.Lag = max(hw-o.StartOffset-o.DeliveryComplete, 0)
					} else {
						sp.ErrorCode = kafkaErr(err, kerr.KafkaStorageError).Code
					}
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		g.Topics = append(g.Topics, st)
	}
	return g
}
