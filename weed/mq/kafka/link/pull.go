package link

// A puller copies one mirrored partition that this gateway leads: it
// fetches from the source's leader of the partition, from the mirror's
// end on, and stores the batches as they came (storage.Mirror), each at
// its own offset. It reads uncommitted records too: transactions, their
// markers and aborted records are copied as they are, and the mirror's
// last stable offset follows from them as the source's does.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

const (
	// fetchWait is how long the source holds a fetch with nothing new.
	fetchWait = 500 * time.Millisecond
	// fetchPartitionBytes is how much a fetch asks for.
	fetchPartitionBytes = 8 << 20
	// retryAfter is the pause after an error, before the puller tries
	// again (the source down, the partition moving).
	retryAfter = time.Second
	// appendsInFlight bounds the fetches being stored at once by one
	// puller.
	appendsInFlight = 4
)

type puller struct {
	link      string
	topic     string
	partition int32
	src       *kgo.Client
	backend   storage.Backend
	mirror    storage.Mirror
	// failed is told the partition's source deleted records the mirror
	// had not pulled: nothing is skipped, the puller waits.
	failed func(err error)

	cancel context.CancelFunc
	done   chan struct{}

	leader  int32
	topicID [16]byte
}

func (p *puller) start(ctx context.Context) {
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			err := p.pull(ctx)
			if ctx.Err() != nil {
				return
			}
			kind := "source"
			switch {
			case errors.Is(err, errDeleted):
				kind = "deleted"
				p.failed(err)
			case errors.Is(err, errWrite):
				kind = "write"
			}
			metrics.LinkErrors.WithLabelValues(p.link, kind).Inc()
			if errors.Is(err, errWrite) || errors.Is(err, errDeleted) {
				glog.Warningf("kafka link %s: %s/%d: %v", p.link, p.topic, p.partition, err)
			} else {
				glog.V(1).Infof("kafka link %s: %s/%d: %v", p.link, p.topic, p.partition, err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(retryAfter):
			}
		}
	}()
}

func (p *puller) stop() {
	p.cancel()
	<-p.done
}

var (
	errDeleted = errors.New("records deleted on the source before the link pulled them")
	errWrite   = errors.New("storing mirrored batches")
)

// pull copies from the mirror's end on until an error.
func (p *puller) pull(ctx context.Context) error {
	offs, err := p.backend.Offsets(ctx, p.topic, p.partition)
	if err != nil {
		return fmt.Errorf("%w: the mirror's end: %v", errWrite, err)
	}
	next := offs.HighWatermark
	// Up to appendsInFlight fetches' batches are being stored while the
	// next fetch is made; they are stored in their order, and one that
	// fails fails those after it (the next pull starts again from what
	// is stored).
	var inflight []*storage.Appended
	wait := func(keep int) error {
		for len(inflight) > keep {
			a := inflight[0]
			select {
			case <-a.Done:
			case <-ctx.Done():
				return ctx.Err()
			}
			inflight = inflight[1:]
			if a.Err != nil {
				return fmt.Errorf("%w: %v", errWrite, a.Err)
			}
		}
		return nil
	}
	defer wait(0) //nolint:errcheck // the next pull starts from what is stored
	for {
		if p.leader < 0 {
			if err := p.findLeader(ctx); err != nil {
				return err
			}
		}
		rp, err := p.fetch(ctx, next)
		if err != nil {
			return err
		}
		switch code := kerr.ErrorForCode(rp.ErrorCode); {
		case code == nil:
		case errors.Is(code, kerr.OffsetOutOfRange):
			if rp.LogStartOffset > next || rp.LogStartOffset < 0 {
				return fmt.Errorf("%w: the mirror ends at %d, the source's log starts at %d", errDeleted, next, rp.LogStartOffset)
			}
			return fmt.Errorf("the mirror ends at %d, past the source's end %d (the source lost records)", next, rp.HighWatermark)
		default:
			p.leader = -1
			return fmt.Errorf("fetching from the source: %w", code)
		}
		batches, end, err := splitBatches(rp.RecordBatches)
		if err != nil {
			return err
		}
		if len(batches) == 0 {
			if err := wait(0); err != nil {
				return err
			}
			continue
		}
		if err := wait(appendsInFlight - 1); err != nil {
			return err
		}
		inflight = append(inflight, p.mirror.AppendMirrored(ctx, p.topic, p.partition, batches))
		metrics.LinkRecords.WithLabelValues(p.link, metrics.Topic(p.topic)).Add(float64(end - next))
		metrics.LinkBytes.WithLabelValues(p.link).Add(float64(len(rp.RecordBatches)))
		next = max(next, end)
	}
}

// fetch asks the partition's source leader for what follows offset.
func (p *puller) fetch(ctx context.Context, offset int64) (*kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(fetchWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = fetchPartitionBytes
	req.IsolationLevel = 0 // everything: transactions are copied with their markers
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = p.topic, p.topicID
	rpart := kmsg.NewFetchRequestTopicPartition()
	rpart.Partition = p.partition
	rpart.FetchOffset = offset
	rpart.CurrentLeaderEpoch = -1
	rpart.LogStartOffset = -1
	rpart.PartitionMaxBytes = fetchPartitionBytes
	rt.Partitions = append(rt.Partitions, rpart)
	req.Topics = append(req.Topics, rt)
	raw, err := p.src.Broker(int(p.leader)).Request(ctx, req)
	if err != nil {
		p.leader = -1
		return nil, fmt.Errorf("fetching from the source: %w", err)
	}
	resp := raw.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		p.leader = -1
		return nil, fmt.Errorf("fetching from the source: %w", err)
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if rp := &resp.Topics[i].Partitions[j]; rp.Partition == p.partition {
				return rp, nil
			}
		}
	}
	p.leader = -1
	return nil, errors.New("the source's fetch response has no such partition")
}

// findLeader reads the partition's leader and its topic's id from the
// source.
func (p *puller) findLeader(ctx context.Context) error {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(p.topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, p.src)
	if err != nil {
		return fmt.Errorf("the source's metadata: %w", err)
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != p.topic {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("the source's topic %s: %w", p.topic, err)
		}
		for _, part := range t.Partitions {
			if part.Partition == p.partition {
				if err := kerr.ErrorForCode(part.ErrorCode); err != nil && part.Leader < 0 {
					return fmt.Errorf("the source's partition %s/%d: %w", p.topic, p.partition, err)
				}
				p.leader, p.topicID = part.Leader, t.TopicID
				return nil
			}
		}
	}
	return fmt.Errorf("the source has no partition %s/%d", p.topic, p.partition)
}

// splitBatches cuts a fetched record set into its whole v2 batches (the
// last may be cut short by the fetch's size), and returns one past the
// last offset they take.
func splitBatches(data []byte) ([][]byte, int64, error) {
	var out [][]byte
	end := int64(-1)
	for len(data) >= 17 {
		n := 12 + int(int32(binary.BigEndian.Uint32(data[8:12])))
		if n < 17 || n > len(data) {
			break // a batch cut short: the next fetch gets it
		}
		if magic := data[16]; magic != 2 {
			return nil, 0, fmt.Errorf("a batch of message format v%d (magic %d) at offset %d: a link copies v2 batches (Kafka 0.11 on) only", magic, magic, int64(binary.BigEndian.Uint64(data)))
		}
		if n < 61 {
			return nil, 0, fmt.Errorf("a batch of %d bytes", n)
		}
		b := data[:n:n]
		out = append(out, b)
		end = int64(binary.BigEndian.Uint64(b)) + int64(int32(binary.BigEndian.Uint32(b[23:27]))) + 1
		data = data[n:]
	}
	return out, end, nil
}

// partitionLabel is a partition's metric label.
func partitionLabel(p int32) string { return strconv.Itoa(int(p)) }
