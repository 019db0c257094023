package protocol

// DeleteRecords, versions 0-2: moves a partition's log start offset up to
// the given offset (-1: the high watermark). Records below it are no longer
// read (OFFSET_OUT_OF_RANGE), ListOffsets earliest and the fetch responses'
// log start offset move with it, on every gateway and across restarts.
// The records' space is freed by SeaweedMQ's retention, not at once. An
// offset past the high watermark gets OFFSET_OUT_OF_RANGE.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DeleteRecords, 0, 2, (*Handler).handleDeleteRecords) }

func (h *Handler) handleDeleteRecords(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DeleteRecordsRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewDeleteRecordsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewDeleteRecordsResponseTopicPartition()
				sp.Partition, sp.LowWatermark = rp.Partition, -1
				if !h.allowedTopic(r, kmsg.ACLOperationDelete, rt.Topic) {
					sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				} else if e := knownName(rt.Topic); e != nil {
					sp.ErrorCode = e.Code
				} else if low, err := h.backend.DeleteRecords(ctx, rt.Topic, rp.Partition, rp.Offset); err != nil {
					sp.ErrorCode = kafkaErr(err, kerr.KafkaStorageError).Code
				} else {
					sp.LowWatermark = low
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
}
