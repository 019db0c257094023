package command

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// Hostile clients, for `weed mq.kafka.bench -hostile=<pattern>`: loads a
// well-behaved client never makes, each bounded in time (-hostile.for, at
// most 10 minutes) and in connections (-hostile.conns), against a gateway
// on this machine only (127.0.0.0/8 or ::1). Each pattern prints what it
// sent and how the endpoint answered: error codes, connections closed.
var hostilePatterns = map[string]func(h *hostile, ctx context.Context) error{
	"empty-zstd": (*hostile).emptyZstd,
	"slow":       (*hostile).slow,
	"conn-flood": (*hostile).connFlood,
	"huge-fetch": (*hostile).hugeFetch,
	"join-flood": (*hostile).joinFlood,
}

type hostile struct {
	addr  string
	conns int
	until time.Time

	mu     sync.Mutex
	codes  map[string]int // answers by error name
	closed atomic.Int64   // connections the endpoint closed
	sent   atomic.Int64   // requests (or connections) sent
}

func (h *hostile) count(code int16) {
	name := "OK"
	if code != 0 {
		name = kerr.ErrorForCode(code).Error()
		if i := strings.IndexByte(name, ':'); i > 0 {
			name = name[:i]
		}
	}
	h.mu.Lock()
	h.codes[name]++
	h.mu.Unlock()
}

func (h *hostile) countErr(err error) {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		h.count(ke.Code)
	case err != nil:
		h.mu.Lock()
		h.codes["client error"]++
		h.mu.Unlock()
	}
}

// runHostile runs one pattern and prints its outcome.
func runHostile(bootstrap, pattern string, d time.Duration, conns int) bool {
	run, ok := hostilePatterns[pattern]
	if !ok {
		names := make([]string, 0, len(hostilePatterns))
		for n := range hostilePatterns {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "-hostile: one of %s\n", strings.Join(names, ", "))
		return false
	}
	host, _, err := net.SplitHostPort(bootstrap)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return false
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(os.Stderr, "-hostile runs against this machine only (127.0.0.0/8, ::1), not %s\n", host)
		return false
	}
	d = min(max(d, time.Second), 10*time.Minute)
	conns = min(max(conns, 1), 5000)
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	h := &hostile{addr: bootstrap, conns: conns, until: time.Now().Add(d), codes: map[string]int{}}
	start := time.Now()
	if err := run(h, ctx); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", pattern, err)
		return false
	}
	var answers []string
	for name, n := range h.codes {
		answers = append(answers, fmt.Sprintf("%s %d", name, n))
	}
	sort.Strings(answers)
	fmt.Printf("hostile %s: %d connections, %d sent in %v; answers: %s; connections closed by the endpoint: %d\n",
		pattern, conns, h.sent.Load(), time.Since(start).Round(time.Millisecond), strings.Join(answers, ", "), h.closed.Load())
	return true
}

func (h *hostile) client(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(h.addr), kgo.RequestRetries(0)}, opts...)...)
}

// topic creates a topic of one partition for the pattern and returns its
// id (requests of recent versions name topics by id).
func (h *hostile) topic(ctx context.Context, cl *kgo.Client, name string) ([16]byte, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, -1
	req.Topics, req.TimeoutMillis = append(req.Topics, rt), 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return [16]byte{}, err
	}
	if c := resp.Topics[0].ErrorCode; c != 0 && c != kerr.TopicAlreadyExists.Code {
		return [16]byte{}, kerr.ErrorForCode(c)
	}
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(name)
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(ctx, cl)
	if err != nil {
		return [16]byte{}, err
	}
	for _, t := range mresp.Topics {
		if t.Topic != nil && *t.Topic == name && t.ErrorCode == 0 {
			return t.TopicID, nil
		}
	}
	return [16]byte{}, fmt.Errorf("topic %s: not in the metadata", name)
}

// each runs fn on h.conns goroutines, each with a client of its own (a
// connection), until h.until.
func (h *hostile) each(ctx context.Context, fn func(ctx context.Context, cl *kgo.Client)) error {
	var wg sync.WaitGroup
	for range h.conns {
		cl, err := h.client()
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for time.Now().Before(h.until) && ctx.Err() == nil {
				fn(ctx, cl)
			}
		}()
	}
	wg.Wait()
	return nil
}

// emptyZstd sends valid zstd batches of 220,000 empty records each: small
// on the wire, large decoded.
func (h *hostile) emptyZstd(ctx context.Context) error {
	admin, err := h.client()
	if err != nil {
		return err
	}
	defer admin.Close()
	topic := fmt.Sprintf("hostile-empty-%d", time.Now().UnixNano())
	id, err := h.topic(ctx, admin, topic)
	if err != nil {
		return err
	}
	var b record.Builder
	b.Reset(0)
	now := time.Now().UnixMilli()
	for range 220_000 {
		b.Add(&record.Record{Timestamp: now})
	}
	batch, err := b.AppendCompressedTo(nil, record.CodecZstd)
	if err != nil {
		return err
	}
	fmt.Printf("hostile empty-zstd: batches of 220,000 empty records, %d bytes each\n", len(batch))
	return h.each(ctx, func(ctx context.Context, cl *kgo.Client) {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batch}}
		req.Topics = append(req.Topics, rt)
		h.sent.Add(1)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			h.countErr(err)
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				h.count(p.ErrorCode)
			}
		}
	})
}

// slow opens connections that announce a 1 MiB request and send it a
// byte a second.
func (h *hostile) slow(ctx context.Context) error {
	var wg sync.WaitGroup
	for range h.conns {
		nc, err := net.DialTimeout("tcp", h.addr, 5*time.Second)
		if err != nil {
			h.countErr(err)
			continue
		}
		h.sent.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer nc.Close()
			var size [4]byte
			binary.BigEndian.PutUint32(size[:], 1<<20)
			if _, err := nc.Write(size[:]); err != nil {
				h.closed.Add(1)
				return
			}
			gone := make(chan struct{})
			go func() { // the endpoint's close shows as the end of reads
				io.Copy(io.Discard, nc) //nolint:errcheck
				close(gone)
			}()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for time.Now().Before(h.until) {
				select {
				case <-gone:
					h.closed.Add(1)
					return
				case <-ctx.Done():
					return
				case <-t.C:
					if _, err := nc.Write([]byte{0}); err != nil {
						h.closed.Add(1)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

// connFlood opens h.conns connections as fast as it can and holds them;
// those the endpoint closes at accept are counted.
func (h *hostile) connFlood(ctx context.Context) error {
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for range h.conns {
		nc, err := net.DialTimeout("tcp", h.addr, 5*time.Second)
		if err != nil {
			h.countErr(err)
			continue
		}
		h.sent.Add(1)
		open = append(open, nc)
	}
	// A connection closed at accept reads EOF at once; one kept blocks.
	var wg sync.WaitGroup
	for _, nc := range open {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc.SetReadDeadline(time.Now().Add(2 * time.Second)) //nolint:errcheck
			var b [1]byte
			if _, err := nc.Read(b[:]); err != nil {
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					h.closed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-time.After(time.Until(h.until)):
	case <-ctx.Done():
	}
	return nil
}

// hugeFetch fetches 55 MiB at a time, from h.conns connections, a topic
// of 64 MiB of records.
func (h *hostile) hugeFetch(ctx context.Context) error {
	admin, err := h.client(kgo.ProducerBatchMaxBytes(1 << 20))
	if err != nil {
		return err
	}
	defer admin.Close()
	topic := fmt.Sprintf("hostile-fetch-%d", time.Now().UnixNano())
	id, err := h.topic(ctx, admin, topic)
	if err != nil {
		return err
	}
	value := make([]byte, 64<<10)
	var recs []*kgo.Record
	for range 1024 {
		recs = append(recs, &kgo.Record{Topic: topic, Value: value})
	}
	if err := admin.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return err
	}
	var bytes atomic.Int64
	err = h.each(ctx, func(ctx context.Context, cl *kgo.Client) {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MaxBytes = 500, 55<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = 0, 55<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		h.sent.Add(1)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			h.countErr(err)
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				h.count(p.ErrorCode)
				bytes.Add(int64(len(p.RecordBatches)))
			}
		}
	})
	fmt.Printf("hostile huge-fetch: %d MiB of records fetched\n", bytes.Load()>>20)
	return err
}

// joinFlood joins one classic group with h.conns members at once, again
// and again.
func (h *hostile) joinFlood(ctx context.Context) error {
	group := fmt.Sprintf("hostile-group-%d", time.Now().UnixNano())
	return h.each(ctx, func(ctx context.Context, cl *kgo.Client) {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 3 // no MEMBER_ID_REQUIRED: each join is a member at once
		req.Group, req.ProtocolType = group, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 5000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: make([]byte, 512)}}
		h.sent.Add(1)
		jctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(jctx, cl)
		if err != nil {
			h.countErr(err)
			return
		}
		h.count(resp.ErrorCode)
	})
}
