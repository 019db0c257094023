package protocol

// CreatePartitions, versions 0-3: refused. A SeaweedMQ topic's partitions
// are ranges of a fixed ring; changing their number re-divides the ring, so
// records would no longer be in the partition they were written to. Every
// topic gets INVALID_PARTITIONS saying so (UNKNOWN_TOPIC_OR_PARTITION for
// an unknown one). Create a topic with more partitions instead.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.CreatePartitions, 0, 3, (*Handler).handleCreatePartitions) }

func (h *Handler) handleCreatePartitions(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic = rt.Topic
			info, e := h.authorizedTopic(ctx, r, kmsg.ACLOperationAlter, rt.Topic)
			var msg string
			switch {
			case e != nil:
				st.ErrorCode = e.Code
			case rt.Count <= info.Partitions:
				st.ErrorCode = kerr.InvalidPartitions.Code
				msg = fmt.Sprintf("topic %s has %d partitions; the count can only grow", rt.Topic, info.Partitions)
			default:
				st.ErrorCode = kerr.InvalidPartitions.Code
				msg = fmt.Sprintf("topic %s keeps its %d partitions: SeaweedMQ partitions are ranges of a fixed ring, and more of them would move stored records to other partitions; create a new topic with %d partitions instead",
					rt.Topic, info.Partitions, rt.Count)
			}
			if msg != "" {
				st.ErrorMessage = &msg
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
}
