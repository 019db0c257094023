package seaweedmq

// Retention, as Kafka's log retention removes segments: the leader of a
// partition removes its oldest log segments, whole, that lie wholly below
// its log start (moved up by DeleteRecords), and, when its topic has the
// delete policy and sets retention.bytes, those beyond it: each while the
// others still hold at least retention.bytes. The newest segment always
// stays, as Kafka's active segment does (it holds the partition's end).
// The log start moves first, saved with the topic as DeleteRecords saves
// it, so that reads, the producer state and the transactions never look
// below it, even where a segment's removal fails; the segments go after
// it. retention.ms is not applied here.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/mq"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// RetentionOptions configure size-based retention.
type RetentionOptions struct {
	// Check is the pause between rounds over the partitions (Kafka's
	// log.retention.check.interval.ms).
	Check time.Duration
	// Leads tells whether this gateway leads a partition: only its
	// leader removes its segments.
	Leads func(topic string, index int32) bool
}

// StartRetention applies retention, in rounds, to the partitions this
// gateway leads, until Close.
func (c *Client) StartRetention(o RetentionOptions) {
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		t := time.NewTimer(o.Check)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
			}
			guard.Run("LogRetention", func() { c.retentionRound(o) }) //nolint:errcheck // logged; the next round tries again
			t.Reset(o.Check)
		}
	}()
}

// retentionRound applies retention to each partition this gateway leads
// whose topic sets retention.bytes or whose log start was moved up.
func (c *Client) retentionRound(o RetentionOptions) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	topics, err := c.ListTopics(ctx)
	if err != nil {
		glog.V(1).Infof("kafka log retention: listing topics: %v", err)
		return
	}
	for _, t := range topics {
		sized := retentionBytes(t.Configs) >= 0
		for i := int32(0); i < t.Partitions && ctx.Err() == nil; i++ {
			if !o.Leads(t.Name, i) || (!sized && c.logStartOf(ctx, t.Name, i) == 0) {
				continue
			}
			if _, err := c.RetainPartition(ctx, t, i); err != nil {
				glog.Warningf("kafka log retention: %s/%d: %v", t.Name, i, err)
			}
		}
	}
}

// retentionBytes is a topic's retention.bytes, -1 (no limit) unless it
// sets one and has the delete policy.
func retentionBytes(configs map[string]string) int64 {
	v, ok := configs["retention.bytes"]
	if !ok || !storage.Deletes(configs) {
		return -1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// beyondRetention is how many of a partition's oldest segments (their
// sizes, oldest first) retention removes: each while the others still
// hold at least limit bytes, never the newest.
func beyondRetention(sizes []int64, limit int64) int {
	var total int64
	for _, s := range sizes {
		total += s
	}
	n := 0
	for n < len(sizes)-1 && total-sizes[n] >= limit {
		total -= sizes[n]
		n++
	}
	return n
}

// RetainPartition removes a partition's oldest segments that retention
// removes: those wholly below its log start, then those beyond its
// topic's retention.bytes. It returns how many bytes went.
func (c *Client) RetainPartition(ctx context.Context, info storage.TopicInfo, index int32) (int64, error) {
	limit, logStart := retentionBytes(info.Configs), c.logStartOf(ctx, info.Name, index)
	if limit < 0 && logStart == 0 {
		return 0, nil
	}
	a, err := c.assignment(ctx, info.Name, index)
	if err != nil {
		return 0, err
	}
	dir := c.partitionDir(info.Name, a)
	segs, err := c.listSegments(ctx, dir, "")
	if err != nil {
		return 0, err
	}
	sizes := make([]int64, len(segs))
	for i, s := range segs {
		sizes[i] = int64(filer.FileSize(s.entry))
	}
	// start becomes one past the highest offset of the segments removed.
	n, start := 0, int64(0)
	for ; n < len(segs)-1; n++ {
		end, err := c.segmentEnd(ctx, dir, segs[n])
		if err != nil {
			return 0, err
		}
		if end > logStart {
			break
		}
		start = max(start, end)
	}
	if limit >= 0 {
		beyond := n + beyondRetention(sizes[n:], limit)
		for ; n < beyond; n++ {
			end, err := c.segmentEnd(ctx, dir, segs[n])
			if err != nil {
				return 0, err
			}
			start = max(start, end)
		}
	}
	if n == 0 {
		return 0, nil
	}
	if start > logStart {
		if _, err := c.DeleteRecords(ctx, info.Name, index, start); err != nil {
			return 0, fmt.Errorf("moving the log start to %d: %w", start, err)
		}
	}
	var removed int64
	defer c.segs.drop(dir) // the segments changed: every read lists them again
	for i, s := range segs[:n] {
		if err := c.removeRetained(ctx, dir, s); err != nil {
			return removed, err
		}
		removed += sizes[i]
	}
	glog.V(0).Infof("kafka partition %s/%d: retention removed %d segments (%d bytes) below offset %d (retention.bytes %d)", info.Name, index, n, removed, max(start, logStart), limit)
	return removed, nil
}

// removeRetained removes a segment beyond retention, only if it is as
// listed (its offset_max and cleaned base the same): one the log cleaner
// rewrote meanwhile may hold records it merged from a later segment, and
// is left for the next round.
func (c *Client) removeRetained(ctx context.Context, dir string, s segment) error {
	expect := map[string][]byte{
		mq.ExtendedAttrOffsetMax: s.entry.Extended[mq.ExtendedAttrOffsetMax],
		cleanedBaseAttr:          s.entry.Extended[cleanedBaseAttr],
	}
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		resp, err := fc.DeleteEntry(ctx, &filer_pb.DeleteEntryRequest{
			Directory: dir, Name: s.entry.Name, IsDeleteData: true, ExpectedExtended: expect,
		})
		if err != nil {
			return err
		}
		if resp.Error != "" {
			return errors.New(resp.Error)
		}
		return nil
	})
	if status.Code(err) == codes.FailedPrecondition {
		return fmt.Errorf("segment %s/%s changed since it was listed; left for the next round", dir, s.entry.Name)
	}
	if err != nil {
		return fmt.Errorf("%w: remove segment %s/%s: %v", ErrUnavailable, dir, s.entry.Name, err)
	}
	return nil
}
