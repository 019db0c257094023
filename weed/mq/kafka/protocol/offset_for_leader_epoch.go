package protocol

// OffsetForLeaderEpoch, versions 0-4. A partition's leader epoch is the
// epoch of the gateways' membership view since which its leader has led it
// (as Metadata says). A partition is
// never truncated when its leader changes - every leader writes after what
// SeaweedMQ holds - so every epoch up to the current one ends at the
// partition's end; a later epoch is unknown (-1, -1), as Kafka answers for
// an epoch it never had. A client that believes in a newer current epoch
// (v2+) gets UNKNOWN_LEADER_EPOCH, an older one FENCED_LEADER_EPOCH.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
)

func init() { register(kmsg.OffsetForLeaderEpoch, 0, 4, (*Handler).handleOffsetForLeaderEpoch) }

func (h *Handler) handleOffsetForLeaderEpoch(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.OffsetForLeaderEpochRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetForLeaderEpochResponseTopic()
			st.Topic = rt.Topic
			info, e := h.authorizedTopic(ctx, r, kmsg.ACLOperationDescribe, rt.Topic)
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, -1, -1
				switch {
				case e != nil:
					sp.ErrorCode = e.Code
				case rp.Partition < 0 || rp.Partition >= info.Partitions:
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				}
				if sp.ErrorCode != 0 {
					st.Partitions = append(st.Partitions, sp)
					continue
				}
				_, epoch, _ := h.cluster.Owner(membership.PartitionKey(info.Name, rp.Partition))
				switch {
				case r.Version >= 2 && int64(rp.CurrentLeaderEpoch) > epoch:
					sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
				case r.Version >= 2 && rp.CurrentLeaderEpoch >= 0 && int64(rp.CurrentLeaderEpoch) < epoch:
					sp.ErrorCode = kerr.FencedLeaderEpoch.Code
				case rp.LeaderEpoch >= 0 && int64(rp.LeaderEpoch) <= epoch:
					offs, err := h.backend.Offsets(ctx, info.Name, rp.Partition)
					if err != nil {
						sp.ErrorCode = kafkaErr(err, kerr.KafkaStorageError).Code
						break
					}
					sp.LeaderEpoch, sp.EndOffset = rp.LeaderEpoch, offs.HighWatermark
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
}
