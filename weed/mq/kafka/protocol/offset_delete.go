package protocol

// OffsetDelete, version 0: removes a group's committed offsets of some
// partitions. Refused for topics the members of a non-empty consumer group
// are subscribed to (GROUP_SUBSCRIBED_TO_TOPIC), and for a non-empty group
// of another protocol type (NON_EMPTY_GROUP).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.OffsetDelete, 0, 0, (*Handler).handleOffsetDelete) }

func (h *Handler) handleOffsetDelete(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.OffsetDeleteRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		if !h.allowedGroup(r, kmsg.ACLOperationDelete, req.Group) {
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		parts := map[string][]int32{}
		codes := map[string]int16{}
		partitions := map[string]int32{} // of the topics found
		for _, rt := range req.Topics {
			info, err := h.lookupTopic(ctx, r, kmsg.ACLOperationRead, false, rt.Topic, [16]byte{})
			if err != nil {
				codes[rt.Topic] = err.Code
				continue
			}
			partitions[rt.Topic] = info.Partitions
			for _, rp := range rt.Partitions {
				if rp.Partition >= 0 && rp.Partition < info.Partitions {
					parts[rt.Topic] = append(parts[rt.Topic], rp.Partition)
				}
			}
		}
		topicErrs, groupErr := h.groups.DeleteOffsets(ctx, req.Group, parts)
		if groupErr != nil {
			resp.ErrorCode = groupErr.Code
			return resp, nil
		}
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetDeleteResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetDeleteResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = codes[rt.Topic]
				if n, found := partitions[rt.Topic]; found && (rp.Partition < 0 || rp.Partition >= n) {
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code // as Kafka: a partition the topic does not have
				}
				if e := topicErrs[rt.Topic]; e != nil && sp.ErrorCode == 0 {
					sp.ErrorCode = e.Code
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
}
