package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// Replica reads partitions other gateways lead, for the consumers of this
// gateway's rack (KIP-392, see protocol/fetch_replica.go): what the
// partition's segments hold from SeaweedFS, bounded by the offsets its
// leader gives, and the tail the segments do not hold yet from the
// leader itself.
type Replica struct {
	Stored  storage.Stored
	Members *membership.Membership
	Peers   *Peers
}

var _ protocol.ReplicaReader = (*Replica)(nil)

// ReadReplica implements protocol.ReplicaReader.
func (r *Replica) ReadReplica(ctx context.Context, f protocol.ReplicaFetch) (protocol.ReplicaRead, error) {
	owner, _, ok := r.Members.Owner(membership.PartitionKey(f.Topic, f.Partition))
	if !ok || owner.NodeID == r.Members.Self().NodeID {
		// Led here once this gateway serves it, or by no one yet.
		return protocol.ReplicaRead{}, kerr.NotLeaderForPartition
	}
	stored, err := r.Stored.ReadStored(ctx, f.Topic, f.Partition, f.Offset, f.MaxBytes)
	if err != nil {
		return protocol.ReplicaRead{}, err
	}
	if len(stored.Raw) == 0 && len(stored.Records) == 0 {
		// Past the segments: the leader's tail, as it answers it.
		sp, err := peerFetch(ctx, r.Peers, r.Members.Self().NodeID, owner, f, f.MaxBytes, 0)
		if err != nil {
			return protocol.ReplicaRead{}, err
		}
		out := protocol.ReplicaRead{Leader: sp}
		if sp.ErrorCode == 0 && len(sp.RecordBatches) == 0 {
			out.Changed = r.watch(ctx, owner, f)
		}
		return out, nil
	}
	// The leader's offsets, after the read: a batch the segments held
	// is below the high watermark asked for afterwards.
	sp, err := peerFetch(ctx, r.Peers, r.Members.Self().NodeID, owner, f, 0, 0)
	if err != nil {
		return protocol.ReplicaRead{}, err
	}
	if sp.ErrorCode != 0 {
		return protocol.ReplicaRead{}, kerr.ErrorForCode(sp.ErrorCode)
	}
	if len(sp.RecordBatches) > 0 {
		// Records in an offsets-only answer: the leader read this
		// fetch as a consumer's (its ACLs did not grant this
		// gateway ClusterAction), and its aborted transactions are
		// those of what it returned, not of what the segments hold.
		return protocol.ReplicaRead{}, fmt.Errorf("%w: %s answered a follower's fetch as a consumer's", kerr.NotLeaderForPartition, owner.Addr())
	}
	out := protocol.ReplicaRead{Result: stored, LastStable: sp.LastStableOffset}
	out.Result.Offsets = storage.Offsets{LogStart: sp.LogStartOffset, HighWatermark: sp.HighWatermark}
	for _, a := range sp.AbortedTransactions {
		// The leader sent those with records from the offset on, whose
		// end it does not say: the last stable offset bounds it.
		out.Aborted = append(out.Aborted, storage.AbortedTxn{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset, LastOffset: sp.LastStableOffset})
	}
	return out, nil
}

// watch returns a channel closed once the leader has records past the
// fetch offset, or after f.Wait.
func (r *Replica) watch(ctx context.Context, owner membership.Member, f protocol.ReplicaFetch) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		ctx, cancel := context.WithTimeout(ctx, f.Wait+5*time.Second)
		defer cancel()
		peerFetch(ctx, r.Peers, r.Members.Self().NodeID, owner, f, 0, f.Wait) //nolint:errcheck // the consumer's fetch reads again either way
	}()
	return ch
}

// peerFetch sends a partition's leader, owner, gateway self's fetch of
// it as a follower: its records up to maxBytes, or with maxBytes 0 its
// offsets only, waiting up to wait for records past the offset.
func peerFetch(ctx context.Context, peers *Peers, self int32, owner membership.Member, f protocol.ReplicaFetch, maxBytes int, wait time.Duration) (*kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.ReplicaState.ID = self, self
	req.MaxWaitMillis = int32(wait / time.Millisecond)
	if wait > 0 {
		req.MinBytes = 1
	}
	req.MaxBytes = int32(max(maxBytes, 1))
	if f.ReadCommitted {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = f.Topic, f.TopicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = f.Partition, f.Offset, int32(maxBytes)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := peers.Request(ctx, owner.Addr(), req)
	if err != nil {
		return nil, fmt.Errorf("fetch of %s-%d from its leader %s: %w", f.Topic, f.Partition, owner.Addr(), err)
	}
	fr := resp.(*kmsg.FetchResponse)
	if fr.ErrorCode != 0 {
		return nil, kerr.ErrorForCode(fr.ErrorCode)
	}
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return nil, fmt.Errorf("fetch of %s-%d from its leader %s: malformed answer", f.Topic, f.Partition, owner.Addr())
	}
	return &fr.Topics[0].Partitions[0], nil
}
