package protocol

// WriteTxnMarkers, versions 0-2: a transaction coordinator's markers, sent
// by the gateway coordinating a transaction to the gateways that lead its
// partitions and coordinate its groups (as Kafka's brokers send them to
// each other). A partition gets a commit or abort marker written to it; a
// group, named as the topic GroupMarkerTopic(group) (a name no Kafka topic
// can have), commits or drops the producer's pending offsets. A partition
// this gateway does not lead gets NOT_LEADER_OR_FOLLOWER, a group it does
// not coordinate NOT_COORDINATOR, and the coordinator sends it again to the
// right gateway. A marker of transaction version 2 (v2, KIP-1228) says its
// transaction's end raised the producer's epoch (storage.Marker.Bumped).

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

func init() { register(kmsg.WriteTxnMarkers, 0, 2, (*Handler).handleWriteTxnMarkers) }

// groupMarkerPrefix starts the topic names that stand for groups in
// WriteTxnMarkers; '/' is not allowed in Kafka topic names.
const groupMarkerPrefix = "__consumer_offsets/"

// GroupMarkerTopic is the topic name that carries a transaction's marker to
// a group's coordinator.
func GroupMarkerTopic(group string) string { return groupMarkerPrefix + group }

func (h *Handler) handleWriteTxnMarkers(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.WriteTxnMarkersRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
		// Markers come from the gateways' transaction coordinators.
		denied := !h.allowedCluster(r, kmsg.ACLOperationClusterAction)
		for _, m := range req.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			for _, t := range m.Topics {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					rp.Partition = p
					var e *kerr.Error
					if denied {
						e = kerr.ClusterAuthorizationFailed
					} else if group, ok := strings.CutPrefix(t.Topic, groupMarkerPrefix); ok {
						e = h.groups.EndTxnOffsets(ctx, group, m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed)
					} else if e = knownName(t.Topic); e == nil {
						mk := storage.Marker{ProducerID: m.ProducerID, Epoch: m.ProducerEpoch, CoordinatorEpoch: m.CoordinatorEpoch, Commit: m.Committed, Bumped: m.TransactionVersion >= 2}
						e = kafkaErr(h.backend.WriteMarker(ctx, t.Topic, p, mk), kerr.KafkaStorageError)
					}
					rp.ErrorCode = errCode(e)
					rt.Partitions = append(rt.Partitions, rp)
				}
				rm.Topics = append(rm.Topics, rt)
			}
			resp.Markers = append(resp.Markers, rm)
		}
		return resp, nil
	}
}
