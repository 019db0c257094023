package protocol

// ListOffsets, versions 1-11 (v0 was removed in Kafka 4 as well).
//
// Timestamps -2 (earliest) and -4 (earliest local) give the log start
// offset, -1 (latest) the high watermark (read_committed: the last stable
// offset), -3 the first record with the largest timestamp, -5 (latest
// tiered) and -6 (earliest pending upload) offset -1 as on a broker
// without tiered storage; any other timestamp finds the first record at or
// after it (read_committed: below the last stable offset, -1 otherwise).
// As Kafka, a special timestamp before the version that brought it, or
// one Kafka does not know, is UNSUPPORTED_VERSION, and an offset found
// comes with the partition's leader epoch.

import (
	"context"
	"sync"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ListOffsets, 1, 11, (*Handler).handleListOffsets) }

const (
	timestampLatest        = -1
	timestampEarliest      = -2
	timestampMax           = -3
	timestampEarliestLocal = -4
	timestampLatestTiered  = -5
	timestampPendingUpload = -6
)

// sinceVersion is the ListOffsets version that brought each special
// timestamp (KIP-734, KIP-405, KIP-1023).
var sinceVersion = map[int64]int16{timestampMax: 7, timestampEarliestLocal: 8, timestampLatestTiered: 9, timestampPendingUpload: 11}

func (h *Handler) handleListOffsets(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	// The partitions to look up, by where their answer goes: looked up
	// side by side once every answer has its place.
	type lookup struct {
		topic string
		ts    int64
		sp    *kmsg.ListOffsetsResponseTopicPartition
	}
	var lookups []lookup
	resp.Topics = make([]kmsg.ListOffsetsResponseTopic, 0, len(req.Topics))
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ListOffsetsResponseTopicPartition, 0, len(rt.Partitions))
		info, e := h.authorizedTopic(ctx, r, kmsg.ACLOperationDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			since, special := sinceVersion[rp.Timestamp]
			switch {
			case e != nil:
				sp.ErrorCode = e.Code
			case rp.Partition < 0 || rp.Partition >= info.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.Timestamp < timestampEarliest && (!special || r.Version < since):
				sp.ErrorCode = kerr.UnsupportedVersion.Code
			}
			st.Partitions = append(st.Partitions, sp)
			if sp.ErrorCode == 0 {
				lookups = append(lookups, lookup{info.Name, rp.Timestamp, &st.Partitions[len(st.Partitions)-1]})
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	readCommitted := req.IsolationLevel == 1
	one := func(l lookup) {
		if err := h.listOffset(ctx, l.topic, l.sp.Partition, l.ts, readCommitted, l.sp); err != nil {
			l.sp.ErrorCode = kafkaErr(err, kerr.KafkaStorageError).Code
		} else if l.sp.Offset >= 0 {
			_, epoch, _ := h.cluster.Owner(membership.PartitionKey(l.topic, l.sp.Partition))
			l.sp.LeaderEpoch = int32(epoch)
		}
	}
	if len(lookups) == 1 {
		one(lookups[0])
		return now(resp)
	}
	// A partition's lookup may wait on the filer (its segments'
	// listing): many partitions, as an admin's lag listing asks for,
	// are looked up ListOffsetsParallelism at a time.
	var wg sync.WaitGroup
	sem := make(chan struct{}, ListOffsetsParallelism)
	for _, l := range lookups {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			one(l)
		}()
	}
	wg.Wait()
	return now(resp)
}

func (h *Handler) listOffset(ctx context.Context, topic string, partition int32, ts int64, readCommitted bool, sp *kmsg.ListOffsetsResponseTopicPartition) error {
	switch ts {
	case timestampLatest, timestampEarliest, timestampEarliestLocal:
		offs, err := h.backend.Offsets(ctx, topic, partition)
		if err != nil {
			return err
		}
		sp.Offset = offs.HighWatermark
		if ts != timestampLatest {
			sp.Offset = offs.LogStart
		} else if readCommitted {
			// The last stable offset: before the earliest open
			// transaction.
			txns, err := h.backend.Transactions(ctx, topic, partition, 1, 0)
			if err != nil {
				return err
			}
			if txns.FirstUnstable >= 0 && txns.FirstUnstable < sp.Offset {
				sp.Offset = txns.FirstUnstable
			}
		}
	case timestampLatestTiered, timestampPendingUpload:
	default:
		var off, t int64
		var err error
		if ts == timestampMax {
			off, t, err = h.backend.MaxTimestamp(ctx, topic, partition)
		} else {
			off, t, err = h.backend.OffsetForTime(ctx, topic, partition, ts)
		}
		if err != nil {
			return err
		}
		if readCommitted && off >= 0 {
			// Nothing at or past the last stable offset, as Kafka.
			txns, err := h.backend.Transactions(ctx, topic, partition, 1, 0)
			if err != nil {
				return err
			}
			if txns.FirstUnstable >= 0 && off >= txns.FirstUnstable {
				off, t = -1, -1
			}
		}
		sp.Offset, sp.Timestamp = off, t
	}
	return nil
}
