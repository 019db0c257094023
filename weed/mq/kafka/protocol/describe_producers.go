package protocol

// DescribeProducers, version 0: a partition's idempotent and transactional
// producers: id, epoch, last sequence number, when it last wrote, and the
// first offset of its open transaction (-1 if none). The coordinator epoch
// is not kept (-1).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

func init() { register(kmsg.DescribeProducers, 0, 0, (*Handler).handleDescribeProducers) }

func (h *Handler) handleDescribeProducers(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DescribeProducersRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewDescribeProducersResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewDescribeProducersResponseTopicPartition()
				sp.Partition = p
				var producers []storage.ProducerInfo
				if !h.allowedTopic(r, kmsg.ACLOperationRead, rt.Topic) {
					sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				} else if e := knownName(rt.Topic); e != nil {
					sp.ErrorCode = e.Code
				} else if ps, err := h.backend.Producers(ctx, rt.Topic, p); err != nil {
					sp.ErrorCode = kafkaErr(err, kerr.KafkaStorageError).Code
				} else {
					producers = ps
				}
				for _, pi := range producers {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = pi.ProducerID, int32(pi.Epoch), pi.LastSequence
					ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = pi.LastTimestamp, -1, pi.TxnStartOffset
					sp.ActiveProducers = append(sp.ActiveProducers, ap)
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
}
