package protocol

// Fetching from the nearest gateway (KIP-392). Every gateway can read
// every partition's segments in SeaweedFS, so each gateway with a rack
// (-rack) serves as a follower of the partitions others lead, for the
// consumers in its rack:
//
//   - The leader answers a Fetch v11+ from a consumer in another rack
//     (its client.rack, or a "zone=" element of its client id) with no
//     records and PreferredReadReplica naming a gateway of that rack, one
//     per partition, spread by the partition's key.
//   - That gateway reads what the segments hold for the consumer and asks
//     the leader only for the partition's offsets: high watermark, last
//     stable offset, log start and the aborted transactions from the
//     fetch offset on. It never serves past the leader's high watermark
//     (last stable offset for read_committed).
//   - The tail the segments do not hold yet (the last seconds,
//     tailFlushAge) it reads from the leader, as the leader's own answer.
//
// The gateways' requests to one another are Fetches with the asking
// gateway's ReplicaID, allowed with ClusterAction on the cluster: one
// with a partition's max bytes 0 asks for its offsets only, and waits, as
// a consumer's fetch does, until the leader has records past the offset.

import (
	"context"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// ReplicaReader reads partitions another gateway leads (cluster.Replica).
type ReplicaReader interface {
	ReadReplica(ctx context.Context, f ReplicaFetch) (ReplicaRead, error)
}

// ReplicaFetch is one partition of a consumer's fetch, read by a gateway
// that does not lead it.
type ReplicaFetch struct {
	Topic         string
	TopicID       [16]byte
	Partition     int32
	Offset        int64
	MaxBytes      int
	ReadCommitted bool
	// Wait bounds how long Changed waits for the leader.
	Wait time.Duration
}

// ReplicaRead is what a follower read: batches from the segments, with the
// leader's offsets, or the leader's own answer for its tail.
type ReplicaRead struct {
	// Result holds the stored batches; its offsets are the leader's.
	Result storage.ReadResult
	// LastStable is the leader's last stable offset, Aborted the aborted
	// transactions with records from the fetch offset on.
	LastStable int64
	Aborted    []storage.AbortedTxn
	// Leader is the leader's answer, when the fetch offset is past the
	// segments.
	Leader *kmsg.FetchResponseTopicPartition
	// Changed, when nothing was read, is closed once the leader has
	// records past the fetch offset, or after Wait.
	Changed <-chan struct{}
}

// fetchFrom is who sent a fetch, as it decides where it is read.
type fetchFrom struct {
	// rack is the consumer's: Fetch's RackID (v11+), else its client id's
	// "zone=" element.
	rack string
	// replica is a gateway's fetch for a consumer of its rack: a
	// partition's max bytes 0 asks for its offsets only.
	replica bool
	// gateways are the live gateways, with their racks (a consumer's
	// with a rack only).
	gateways gatewaySet
}

// fetchReplicaID is the ReplicaID a fetch carries (-1 for consumers).
func fetchReplicaID(req *kmsg.FetchRequest, version int16) int32 {
	if version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

func (h *Handler) fetchFrom(r *Request, req *kmsg.FetchRequest) fetchFrom {
	var f fetchFrom
	if fetchReplicaID(req, r.Version) >= 0 {
		// Kafka's followers need ClusterAction; a consumer that sets a
		// replica id without it is read as a consumer.
		f.replica = h.allowedCluster(r, kmsg.ACLOperationClusterAction)
	}
	if r.Version >= 11 {
		f.rack = req.Rack
		if f.rack == "" {
			f.rack = ClientZone(r.ClientID)
		}
	}
	if f.rack != "" && !f.replica {
		f.gateways = h.gateways()
	}
	return f
}

// ClientZone is the zone a client id names with a "zone=" element
// ("my-app,zone=eu-1a"), as Bufstream and WarpStream take it: the rack of
// a client that cannot set client.rack. "" when it names none.
func ClientZone(clientID string) string {
	for el := range strings.SplitSeq(clientID, ",") {
		if z, ok := strings.CutPrefix(strings.TrimSpace(el), "zone="); ok {
			return z
		}
	}
	return ""
}

// rack is this gateway's rack as the cluster's view has it.
func (h *Handler) rack() string {
	for _, m := range h.cluster.Members() {
		if m.NodeID == h.cfg.NodeID {
			return m.Rack
		}
	}
	return ""
}

// redirect answers a consumer's fetch of a partition led here with the
// gateway of the consumer's rack to read it from, and no records, as
// Kafka's leader does; false if it should be read here.
func (h *Handler) redirect(ctx context.Context, req *kmsg.FetchRequest, topic string, rp *fetchPart, sp *kmsg.FetchResponseTopicPartition, from fetchFrom) bool {
	if from.rack == "" || len(from.gateways.racks) == 0 {
		return false
	}
	id := from.gateways.reader(topic, rp.partition, h.cfg.NodeID, from.rack)
	if id < 0 {
		return false
	}
	offs, err := h.backend.Offsets(ctx, topic, rp.partition)
	if err != nil {
		return false // not led here: read as any fetch is
	}
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = offs.HighWatermark, offs.HighWatermark, offs.LogStart
	if req.IsolationLevel == 1 {
		txns, err := h.backend.Transactions(ctx, topic, rp.partition, 1, 0)
		if err != nil {
			return false
		}
		if txns.FirstUnstable >= 0 && txns.FirstUnstable < sp.LastStableOffset {
			sp.LastStableOffset = txns.FirstUnstable
		}
	}
	sp.PreferredReadReplica = id
	return true
}

// replicaBounds answers a follower's request for a partition's offsets:
// its high watermark, last stable offset, log start, and the aborted
// transactions with records from the fetch offset on. It returns the
// channel that signals new records when there are none past the offset.
func (h *Handler) replicaBounds(ctx context.Context, req *kmsg.FetchRequest, topic string, rp *fetchPart, sp *kmsg.FetchResponseTopicPartition) <-chan struct{} {
	offs, err := h.backend.Offsets(ctx, topic, rp.partition)
	if err != nil {
		sp.ErrorCode = kafkaErr(err, kerr.KafkaStorageError).Code
		return nil
	}
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = offs.HighWatermark, offs.HighWatermark, offs.LogStart
	txns, err := h.backend.Transactions(ctx, topic, rp.partition, rp.offset, offs.HighWatermark-1)
	if err != nil {
		sp.ErrorCode = kafkaErr(err, kerr.KafkaStorageError).Code
		return nil
	}
	if txns.FirstUnstable >= 0 && txns.FirstUnstable < sp.LastStableOffset {
		sp.LastStableOffset = txns.FirstUnstable
	}
	sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	for _, a := range txns.Aborted {
		if a.LastOffset >= rp.offset && a.FirstOffset < sp.LastStableOffset {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
			sp.AbortedTransactions = append(sp.AbortedTransactions, at)
		}
	}
	if replicaNews(req, rp, sp) {
		return nil
	}
	return h.backend.Changed(topic, rp.partition, offs.HighWatermark)
}

// replicaNews says whether an offsets-only answer has records past the
// fetch offset for the follower to read.
func replicaNews(req *kmsg.FetchRequest, rp *fetchPart, sp *kmsg.FetchResponseTopicPartition) bool {
	bound := sp.HighWatermark
	if req.IsolationLevel == 1 {
		bound = sp.LastStableOffset
	}
	return sp.ErrorCode == 0 && bound > rp.offset
}

// fetchFollower reads a partition another gateway leads, for a consumer
// of this gateway's rack. It returns the channel that signals new records
// when there were none.
func (h *Handler) fetchFollower(ctx context.Context, req *kmsg.FetchRequest, version int16, info storage.TopicInfo, rp *fetchPart, sp *kmsg.FetchResponseTopicPartition, b *record.Builder, limit int, first bool) <-chan struct{} {
	rd, err := h.cfg.Replicas.ReadReplica(ctx, ReplicaFetch{Topic: info.Name, TopicID: info.ID, Partition: rp.partition, Offset: rp.offset,
		MaxBytes: max(limit, 1), ReadCommitted: req.IsolationLevel == 1, Wait: min(time.Duration(req.MaxWaitMillis)*time.Millisecond, ExternalWriteRecheck)})
	if err != nil {
		sp.ErrorCode = kafkaErr(err, kerr.NotLeaderForPartition).Code
		return nil
	}
	if l := rd.Leader; l != nil {
		sp.ErrorCode, sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = l.ErrorCode, l.HighWatermark, l.LastStableOffset, l.LogStartOffset
		sp.AbortedTransactions = l.AbortedTransactions
		if len(l.RecordBatches) == 0 {
			return rd.Changed
		}
		var count int
		sp.RecordBatches, count = wholeBatches(l.RecordBatches, limit, first)
		metrics.FollowerFetchBytes.WithLabelValues("leader").Add(float64(len(sp.RecordBatches)))
		countFetched(info.Name, count, len(sp.RecordBatches))
		return nil
	}
	res := rd.Result
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, rd.LastStable, res.LogStart
	if rp.offset < res.LogStart || rp.offset > res.HighWatermark {
		sp.ErrorCode = kerr.OffsetOutOfRange.Code
		return nil
	}
	if req.IsolationLevel == 1 {
		keepCommitted(sp, &res, storage.PartitionTxns{FirstUnstable: rd.LastStable, Aborted: rd.Aborted})
	} else {
		sp.LastStableOffset = res.HighWatermark
		keepBelow(&res, res.HighWatermark)
	}
	if len(res.Records) == 0 && len(res.Raw) == 0 {
		// Stored, but past the leader's bound (an open transaction
		// holds the last stable offset back): looked at again after a
		// while, not at once.
		return afterWait(rd.Changed, ExternalWriteRecheck)
	}
	count := h.fillPartition(b, sp, version, info, rp, &res, limit, first)
	metrics.FollowerFetchBytes.WithLabelValues("segments").Add(float64(len(sp.RecordBatches)))
	countFetched(info.Name, count, len(sp.RecordBatches))
	return nil
}

// afterWait is changed, or when there is none a channel closed after d: a
// fetch with nothing to read waits before it looks again.
func afterWait(changed <-chan struct{}, d time.Duration) <-chan struct{} {
	if changed != nil {
		return changed
	}
	ch := make(chan struct{})
	time.AfterFunc(d, func() { close(ch) })
	return ch
}
