package protocol

// ElectLeaders, versions 0-2: there is nothing to elect, each partition has
// the one leader that writes it, so every partition asked for (all of them
// with a null list) gets ELECTION_NOT_NEEDED, as Kafka answers for a
// partition already led by its preferred replica.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ElectLeaders, 0, 2, (*Handler).handleElectLeaders) }

func (h *Handler) handleElectLeaders(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.ElectLeadersRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		topics := req.Topics
		denied := !h.allowedCluster(r, kmsg.ACLOperationAlter)
		if denied && r.Version >= 1 {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp, nil
		}
		if topics == nil && !denied {
			all, err := h.backend.ListTopics(ctx)
			if err != nil {
				resp.ErrorCode = kafkaErr(err, kerr.KafkaStorageError).Code
				return resp, nil
			}
			for _, t := range all {
				rt := kmsg.NewElectLeadersRequestTopic()
				rt.Topic = t.Name
				for p := int32(0); p < t.Partitions; p++ {
					rt.Partitions = append(rt.Partitions, p)
				}
				topics = append(topics, rt)
			}
		}
		for _, rt := range topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = rt.Topic
			info, err := h.describeTopic(ctx, rt.Topic)
			for _, p := range rt.Partitions {
				sp := kmsg.NewElectLeadersResponseTopicPartition()
				sp.Partition = p
				switch {
				case denied:
					sp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				case err != nil:
					sp.ErrorCode = kafkaErr(err, kerr.KafkaStorageError).Code
				case p < 0 || p >= info.Partitions:
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					sp.ErrorCode = kerr.ElectionNotNeeded.Code
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
}
