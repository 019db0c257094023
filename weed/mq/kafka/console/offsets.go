package console

import (
	"context"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's special timestamps of ListOffsets.
const (
	latest   = -1
	earliest = -2
)

// listOffsets lists the offsets of partitions at a timestamp (latest,
// earliest, or Unix ms) with one ListOffsets request per leader, by the
// client's metadata (kadm's listings ask for the topics' metadata first,
// which costs as much again with a thousand topics). A partition the
// listing has no answer for is left out.
func listOffsets(ctx context.Context, cl *kgo.Client, parts map[string][]int32, ts int64) (kadm.ListedOffsets, error) {
	out := kadm.ListedOffsets{}
	if len(parts) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.TimeoutMillis = 15000
	for t, ps := range parts {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = t
		for _, p := range ps {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, ts, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	var errs []error
	for _, shard := range cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			errs = append(errs, shard.Err)
			continue
		}
		resp := shard.Resp.(*kmsg.ListOffsetsResponse)
		for _, t := range resp.Topics {
			lt := out[t.Topic]
			if lt == nil {
				lt = map[int32]kadm.ListedOffset{}
				out[t.Topic] = lt
			}
			for _, p := range t.Partitions {
				lt[p.Partition] = kadm.ListedOffset{Topic: t.Topic, Partition: p.Partition, Timestamp: p.Timestamp,
					Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Err: kerr.ErrorForCode(p.ErrorCode)}
			}
		}
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// startsAndEnds lists partitions' log starts and ends side by side.
func startsAndEnds(ctx context.Context, cl *kgo.Client, parts map[string][]int32) (starts, ends kadm.ListedOffsets, err error) {
	var serr, eerr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); starts, serr = listOffsets(ctx, cl, parts, earliest) }()
	go func() { defer wg.Done(); ends, eerr = listOffsets(ctx, cl, parts, latest) }()
	wg.Wait()
	return starts, ends, errors.Join(serr, eerr)
}
