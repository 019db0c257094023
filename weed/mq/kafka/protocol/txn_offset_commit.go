package protocol

// TxnOffsetCommit, versions 0-6, sent to the group's coordinator: offsets a
// transaction commits for a group it added with AddOffsetsToTxn. The group
// holds them (saved with its state) until the transaction's coordinator
// sends its marker: they become the group's committed offsets when the
// transaction commits, and are dropped if it aborts. v3+ names the
// committing member, checked like an OffsetCommit's (ILLEGAL_GENERATION,
// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID). v5+ (transaction.version 2)
// adds the group to the transaction itself, with the transaction's
// coordinator (KIP-890). v6 may name topics by id.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

func init() { register(kmsg.TxnOffsetCommit, 0, 6, (*Handler).handleTxnOffsetCommit) }

func (h *Handler) handleTxnOffsetCommit(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.TxnOffsetCommitRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		codes := make([][]int16, len(req.Topics))
		offsets := offset.Topics{}
		var denied *kerr.Error
		switch {
		case !h.allowedTxn(r, kmsg.ACLOperationWrite, req.TransactionalID):
			denied = kerr.TransactionalIDAuthorizationFailed
		case !h.allowedGroup(r, kmsg.ACLOperationRead, req.Group):
			denied = kerr.GroupAuthorizationFailed
		}
		for i, rt := range req.Topics {
			codes[i] = make([]int16, len(rt.Partitions))
			var info storage.TopicInfo
			e := denied
			if e == nil {
				info, e = h.lookupTopic(ctx, r, kmsg.ACLOperationRead, rt.Topic == "" && rt.TopicID != [16]byte{}, rt.Topic, rt.TopicID)
			}
			for j, rp := range rt.Partitions {
				if e != nil {
					codes[i][j] = e.Code
					continue
				}
				codes[i][j] = addCommit(offsets, info, rp.Partition, offset.Committed{Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch, Metadata: rp.Metadata})
			}
		}
		var code int16
		if req.Group == "" {
			code = kerr.InvalidGroupID.Code
		} else if len(offsets) > 0 && r.Version >= 5 {
			// transaction.version 2: no AddOffsetsToTxn came first
			// (KIP-890); the group joins the transaction here.
			if e := h.addTxnGroup(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group); e != nil {
				code = txnGroupErr(e).Code
			}
		}
		if code == 0 && len(offsets) > 0 {
			who := group.Committer{Generation: req.Generation, MemberID: req.MemberID, InstanceID: req.InstanceID}
			if r.Version < 3 {
				who = group.Committer{Generation: -1}
			}
			if e := h.groups.AddTxnOffsets(ctx, req.Group, who, req.ProducerID, req.ProducerEpoch, offsets); e != nil {
				code = e.Code
			}
		}
		for i, rt := range req.Topics {
			st := kmsg.NewTxnOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for j, rp := range rt.Partitions {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = codes[i][j]
				if sp.ErrorCode == 0 {
					sp.ErrorCode = code
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
}

// txnGroupErr is the error a TxnOffsetCommit gets when its group could not
// join the transaction: a coordinator moving or loading is
// COORDINATOR_LOAD_IN_PROGRESS (the client retries), the coordinator's
// other errors stay (CONCURRENT_TRANSACTIONS is retried, PRODUCER_FENCED
// is fatal).
func txnGroupErr(e *kerr.Error) *kerr.Error {
	switch e {
	case kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.NotEnoughReplicas:
		return kerr.CoordinatorLoadInProgress
	}
	return e
}
