package protocol

// AddPartitionsToTxn, versions 0-5: adds partitions to a producer's
// transaction before it writes to them. v4+ (sent by brokers in Kafka)
// carries several transactions; VerifyOnly checks without adding. A
// partition of an unknown topic gets UNKNOWN_TOPIC_OR_PARTITION and the
// others OPERATION_NOT_ATTEMPTED; otherwise every partition gets the
// coordinator's answer (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
// CONCURRENT_TRANSACTIONS while the last one ends, ...). A partition of an
// internal topic gets TOPIC_AUTHORIZATION_FAILED, as Kafka answers clients.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.AddPartitionsToTxn, 0, 5, (*Handler).handleAddPartitionsToTxn) }

type txnTopic struct {
	topic      string
	partitions []int32
}

// addPartitions answers one transaction's partitions: a code per topic and
// partition, in request order.
func (h *Handler) addPartitions(ctx context.Context, r *Request, id string, pid int64, epoch int16, verifyOnly bool, topics []txnTopic) [][]int16 {
	codes := make([][]int16, len(topics))
	want := map[string][]int32{}
	var unknown bool
	txnDenied := !h.allowedTxn(r, kmsg.ACLOperationWrite, id)
	for i, t := range topics {
		codes[i] = make([]int16, len(t.partitions))
		if txnDenied {
			for j := range codes[i] {
				codes[i][j] = kerr.TransactionalIDAuthorizationFailed.Code
			}
			continue
		}
		info, topicErr := h.authorizedTopic(ctx, r, kmsg.ACLOperationWrite, t.topic)
		if internalTopic(t.topic) {
			topicErr = kerr.TopicAuthorizationFailed
		}
		for j, p := range t.partitions {
			if topicErr == kerr.TopicAuthorizationFailed {
				codes[i][j] = topicErr.Code
				unknown = true
				continue
			}
			if topicErr != nil || p < 0 || p >= info.Partitions {
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
				unknown = true
				continue
			}
			want[t.topic] = append(want[t.topic], p)
		}
	}
	if txnDenied {
		return codes
	}
	var code int16
	switch {
	case unknown:
		code = kerr.OperationNotAttempted.Code
	case verifyOnly:
		d, ok, e := h.txns.Describe(id)
		switch {
		case e != nil:
			code = e.Code
		case !ok || d.ProducerID != pid:
			code = kerr.InvalidProducerIDMapping.Code
		case d.Epoch != epoch:
			code = kerr.ProducerFenced.Code
		default:
			for i, t := range topics {
				for j, p := range t.partitions {
					if d.State != "Ongoing" || !containsPartition(d.Partitions[t.topic], p) {
						codes[i][j] = kerr.InvalidTxnState.Code
					}
				}
			}
			return codes
		}
	default:
		if e := h.txns.AddPartitions(ctx, id, pid, epoch, want); e != nil {
			code = fenced(e, r.Version, 2).Code
		}
	}
	for i := range codes {
		for j := range codes[i] {
			if codes[i][j] == 0 {
				codes[i][j] = code
			}
		}
	}
	return codes
}

func containsPartition(s []int32, p int32) bool {
	for _, x := range s {
		if x == p {
			return true
		}
	}
	return false
}

func (h *Handler) handleAddPartitionsToTxn(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.AddPartitionsToTxnRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		if r.Version < 4 {
			topics := make([]txnTopic, len(req.Topics))
			for i, t := range req.Topics {
				topics[i] = txnTopic{t.Topic, t.Partitions}
			}
			codes := h.addPartitions(ctx, r, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, topics)
			for i, t := range req.Topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTopic()
				rt.Topic = t.Topic
				for j, p := range t.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, codes[i][j]
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}
		// v4+ is sent by the gateways of the cluster to one another, as
		// between Kafka's brokers.
		if !h.allowedCluster(r, kmsg.ACLOperationClusterAction) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp, nil
		}
		for _, tx := range req.Transactions {
			topics := make([]txnTopic, len(tx.Topics))
			for i, t := range tx.Topics {
				topics[i] = txnTopic{t.Topic, t.Partitions}
			}
			codes := h.addPartitions(ctx, r, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly, topics)
			rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rtx.TransactionalID = tx.TransactionalID
			for i, t := range tx.Topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				rt.Topic = t.Topic
				for j, p := range t.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					rp.Partition, rp.ErrorCode = p, codes[i][j]
					rt.Partitions = append(rt.Partitions, rp)
				}
				rtx.Topics = append(rtx.Topics, rt)
			}
			resp.Transactions = append(resp.Transactions, rtx)
		}
		return resp, nil
	}
}
