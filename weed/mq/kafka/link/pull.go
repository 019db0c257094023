package link

// A link's fetcher copies the mirrored partitions this gateway leads: as a
// Kafka follower does, it sends each source broker one Fetch for all of
// them that it leads (read_uncommitted), from each mirror's end on, and
// stores the batches as they came (storage.Mirror), each at its own
// offset. Transactions, their markers and aborted records are copied as
// they are, and the mirror's last stable offset follows from them as the
// source's does. One Fetch per broker, not one per partition: fetches
// that wait for records on one connection would hold up the others'.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

const (
	// fetchWait is how long a source broker holds a fetch with nothing
	// new (shorter when there are several brokers: a round waits for
	// each).
	fetchWait      = 500 * time.Millisecond
	fetchWaitShort = 100 * time.Millisecond
	// fetchPartitionBytes and fetchBytes are how much a fetch asks for.
	fetchPartitionBytes = 8 << 20
	fetchBytes          = 64 << 20
	// retryAfter is the pause of a partition after an error (the source
	// down, the partition moving).
	retryAfter = time.Second
	// appendsInFlight bounds the fetches of a partition being stored at
	// once.
	appendsInFlight = 4
)

var (
	errDeleted = errors.New("records deleted on the source before the link pulled them")
	errWrite   = errors.New("storing mirrored batches")
)

// fetcher pulls a link's partitions led here.
type fetcher struct {
	link    string
	src     *kgo.Client
	backend storage.Backend
	mirror  storage.Mirror
	// failed is told of a partition whose source deleted records the
	// mirror had not pulled: nothing is skipped, the partition waits.
	failed func(partKey, error)

	mu    sync.Mutex
	parts map[partKey]*pulled // the set wanted; its states are the loop's

	cancel context.CancelFunc
	done   chan struct{}
}

// pulled is a partition's state in the fetcher's loop.
type pulled struct {
	key      partKey
	next     int64 // -1: read the mirror's end first
	leader   int32 // -1: unknown
	topicID  [16]byte
	inflight []*storage.Appended
	until    time.Time // paused after an error until then
	failing  bool      // its last attempt failed (logged once)
}

func newFetcher(link string, src *kgo.Client, backend storage.Backend, mirror storage.Mirror, failed func(partKey, error)) *fetcher {
	return &fetcher{link: link, src: src, backend: backend, mirror: mirror, failed: failed, parts: map[partKey]*pulled{}}
}

// set makes want the partitions pulled: new ones start from the mirror's
// end, gone ones stop (their stores under way end on their own).
func (f *fetcher) set(want map[partKey]bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.parts {
		if !want[k] {
			delete(f.parts, k)
		}
	}
	for k := range want {
		if f.parts[k] == nil {
			f.parts[k] = &pulled{key: k, next: -1, leader: -1}
		}
	}
}

func (f *fetcher) start(ctx context.Context) {
	ctx, f.cancel = context.WithCancel(ctx)
	f.done = make(chan struct{})
	go func() {
		defer close(f.done)
		for ctx.Err() == nil {
			if !f.round(ctx) {
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
}

func (f *fetcher) stop() {
	f.cancel()
	<-f.done
}

// round fetches once from every source broker leading a partition that is
// ready; it reports whether any was.
func (f *fetcher) round(ctx context.Context) bool {
	f.mu.Lock()
	parts := make([]*pulled, 0, len(f.parts))
	for _, p := range f.parts {
		parts = append(parts, p)
	}
	f.mu.Unlock()
	now := time.Now()
	var unknown []*pulled
	byLeader := map[int32][]*pulled{}
	for _, p := range parts {
		if err := p.settle(); err != nil {
			f.fail(p, err)
			continue
		}
		if now.Before(p.until) || len(p.inflight) >= appendsInFlight {
			continue
		}
		if p.next < 0 {
			offs, err := f.backend.Offsets(ctx, p.key.topic, p.key.partition)
			if err != nil {
				f.fail(p, fmt.Errorf("%w: the mirror's end: %v", errWrite, err))
				continue
			}
			p.next = offs.HighWatermark
		}
		if p.leader < 0 {
			unknown = append(unknown, p)
			continue
		}
		byLeader[p.leader] = append(byLeader[p.leader], p)
	}
	if len(unknown) > 0 {
		f.findLeaders(ctx, unknown)
	}
	if len(byLeader) == 0 {
		return false
	}
	wait := fetchWait
	if len(byLeader) > 1 {
		wait = fetchWaitShort
	}
	var wg sync.WaitGroup
	for leader, ps := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.fetch(ctx, leader, ps, wait)
		}()
	}
	wg.Wait()
	return true
}

// settle takes the partition's stores that ended; one that failed fails
// the partition (its later ones fail too), which starts again from what
// is stored.
func (p *pulled) settle() error {
	for len(p.inflight) > 0 {
		a := p.inflight[0]
		select {
		case <-a.Done:
		default:
			return nil
		}
		p.inflight = p.inflight[1:]
		if a.Err != nil {
			p.inflight = nil
			return fmt.Errorf("%w: %v", errWrite, a.Err)
		}
	}
	return nil
}

// fail pauses a partition after an error, to start again from the
// mirror's end, and reports it.
func (f *fetcher) fail(p *pulled, err error) {
	p.next, p.leader, p.until = -1, -1, time.Now().Add(retryAfter)
	kind := "source"
	switch {
	case errors.Is(err, errDeleted):
		kind = "deleted"
		p.until = time.Now().Add(5 * retryAfter)
		f.failed(p.key, err)
	case errors.Is(err, errWrite):
		kind = "write"
	}
	metrics.LinkErrors.WithLabelValues(f.link, kind).Inc()
	if !p.failing || kind != "source" {
		glog.Warningf("kafka link %s: %s/%d: %v", f.link, p.key.topic, p.key.partition, err)
	} else {
		glog.V(1).Infof("kafka link %s: %s/%d: %v", f.link, p.key.topic, p.key.partition, err)
	}
	p.failing = true
}

// fetch sends leader one Fetch for its partitions ps and stores what came.
func (f *fetcher) fetch(ctx context.Context, leader int32, ps []*pulled, wait time.Duration) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(wait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = fetchBytes
	req.IsolationLevel = 0 // everything: transactions are copied with their markers
	req.SessionEpoch = -1
	topics := map[string]int{}
	for _, p := range ps {
		i, ok := topics[p.key.topic]
		if !ok {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = p.key.topic, p.topicID
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
			topics[p.key.topic] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.key.partition
		rp.FetchOffset = p.next
		rp.CurrentLeaderEpoch = -1
		rp.LogStartOffset = -1
		rp.PartitionMaxBytes = fetchPartitionBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	raw, err := f.src.Broker(int(leader)).Request(ctx, req)
	if err == nil {
		err = kerr.ErrorForCode(raw.(*kmsg.FetchResponse).ErrorCode)
	}
	if err != nil {
		if ctx.Err() == nil {
			for _, p := range ps {
				f.fail(p, fmt.Errorf("fetching from the source: %w", err))
			}
		}
		return
	}
	resp := raw.(*kmsg.FetchResponse)
	byKey := make(map[partKey]*pulled, len(ps))
	for _, p := range ps {
		byKey[p.key] = p
	}
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			p := byKey[partKey{rt.Topic, rp.Partition}]
			if p == nil {
				for _, q := range ps {
					if q.topicID == rt.TopicID && q.key.partition == rp.Partition {
						p = q
					}
				}
			}
			if p == nil {
				continue
			}
			if err := f.take(ctx, p, rp); err != nil {
				f.fail(p, err)
				continue
			}
			p.failing = false
		}
	}
}

// take stores a partition's part of a fetch response.
func (f *fetcher) take(ctx context.Context, p *pulled, rp *kmsg.FetchResponseTopicPartition) error {
	switch code := kerr.ErrorForCode(rp.ErrorCode); {
	case code == nil:
	case errors.Is(code, kerr.OffsetOutOfRange):
		if rp.LogStartOffset > p.next || rp.LogStartOffset < 0 {
			return fmt.Errorf("%w: the mirror ends at %d, the source's log starts at %d", errDeleted, p.next, rp.LogStartOffset)
		}
		return fmt.Errorf("the mirror ends at %d, past the source's end %d (the source lost records)", p.next, rp.HighWatermark)
	default:
		return fmt.Errorf("fetching from the source: %w", code)
	}
	batches, end, err := splitBatches(rp.RecordBatches)
	if err != nil {
		return err
	}
	if len(batches) == 0 {
		return nil
	}
	p.inflight = append(p.inflight, f.mirror.AppendMirrored(ctx, p.key.topic, p.key.partition, batches))
	metrics.LinkRecords.WithLabelValues(f.link, metrics.Topic(p.key.topic)).Add(float64(end - p.next))
	metrics.LinkBytes.WithLabelValues(f.link).Add(float64(len(rp.RecordBatches)))
	p.next = max(p.next, end)
	return nil
}

// findLeaders reads the partitions' leaders and their topics' ids from the
// source, in one request.
func (f *fetcher) findLeaders(ctx context.Context, ps []*pulled) {
	req := kmsg.NewPtrMetadataRequest()
	seen := map[string]bool{}
	for _, p := range ps {
		if !seen[p.key.topic] {
			seen[p.key.topic] = true
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(p.key.topic)
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := req.RequestWith(ctx, f.src)
	if err != nil {
		for _, p := range ps {
			f.fail(p, fmt.Errorf("the source's metadata: %w", err))
		}
		return
	}
	type place struct {
		leader int32
		id     [16]byte
		err    error
	}
	found := map[partKey]place{}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		for _, part := range t.Partitions {
			found[partKey{*t.Topic, part.Partition}] = place{part.Leader, t.TopicID, kerr.ErrorForCode(part.ErrorCode)}
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			for _, p := range ps {
				if p.key.topic == *t.Topic {
					found[p.key] = place{-1, t.TopicID, err}
				}
			}
		}
	}
	for _, p := range ps {
		pl, ok := found[p.key]
		switch {
		case !ok:
			f.fail(p, fmt.Errorf("the source has no partition %s/%d", p.key.topic, p.key.partition))
		case pl.leader < 0:
			f.fail(p, fmt.Errorf("the source's partition %s/%d has no leader: %v", p.key.topic, p.key.partition, pl.err))
		default:
			p.leader, p.topicID = pl.leader, pl.id
		}
	}
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
