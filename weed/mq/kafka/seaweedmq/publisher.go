package seaweedmq

// A partition's publish stream to its broker, and what happens to a batch
// sent on it: the broker's acknowledgement, the write-ahead log's commit.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/schema_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
)

// maxPendingBatches bounds the batches sent on one stream and not yet
// acknowledged; appends wait when it is reached.
const maxPendingBatches = 4096

// publisher is one partition's publish stream to its leader broker. Sends
// happen under the partition's writeMu; acks are read by one goroutine and
// matched in order to the pending batches.
type publisher struct {
	c      *Client
	topic  string
	stream grpc.BidiStreamingClient[mq_pb.PublishMessageRequest, mq_pb.PublishMessageResponse]
	cancel context.CancelFunc
	leader string

	slots chan struct{} // one per batch sent and not yet acknowledged
	done  chan struct{} // closed when the ack reader has stopped

	mu    sync.Mutex
	err   error           // why the stream broke; nil while it works
	queue []*pendingBatch // batches sent and not yet acknowledged, in order

	// reused for every record: gRPC encodes a message before Send returns.
	req  mq_pb.PublishMessageRequest
	data mq_pb.DataMessage
	buf  []byte

	// verified is set once the broker's first acknowledged offset on this
	// stream was checked against the stored records (appendVerifying);
	// next is then the offset the next record will get. Under writeMu.
	verified bool
	next     int64
}

type pendingBatch struct {
	n       int
	got     int
	base    int64
	durable bool // done only once the records are in the write-ahead log
	app     *protocol.Appended
	part    *partition
	// log is set for records the write-ahead log takes (all but
	// fillers), wal holds them as the broker stores them. With deferLog
	// the batch goes into the log only once its offset is checked
	// (appendVerifying).
	log      bool
	deferLog bool
	wal      walRecords
	// expected is the first offset the batch was logged at when it was
	// sent (the stream's next offset), -1 if it was not: a verified
	// stream's batches go into the log as they are sent, beside the
	// broker, and the broker's offsets are checked against it.
	expected int64
	state    uint8 // batchAcked, batchLogged, batchFailed; under part.notifyMu
	logErr   error // under part.notifyMu
	once     sync.Once
}

const (
	batchAcked  = 1 << iota // the broker acknowledged it
	batchLogged             // the write-ahead log holds it
	batchFailed             // it is not for readers: failed, or a copy at a taken offset
)

// finish records the batch's outcome, once.
func (b *pendingBatch) finish(base int64, err error) {
	b.once.Do(func() { b.app.Finish(base, err) })
}

func (pub *publisher) broken() error {
	pub.mu.Lock()
	defer pub.mu.Unlock()
	return pub.err
}

// enqueue adds a batch about to be sent, unless the stream is broken.
func (pub *publisher) enqueue(ctx context.Context, b *pendingBatch) error {
	select {
	case pub.slots <- struct{}{}:
	case <-pub.done:
		return pub.broken()
	case <-ctx.Done():
		return ctx.Err()
	}
	pub.mu.Lock()
	defer pub.mu.Unlock()
	if pub.err != nil {
		<-pub.slots
		return pub.err
	}
	if b.log {
		b.part.sending(b)
	}
	pub.queue = append(pub.queue, b)
	return nil
}

// head returns the oldest pending batch, or nil.
func (pub *publisher) head() *pendingBatch {
	pub.mu.Lock()
	defer pub.mu.Unlock()
	if len(pub.queue) == 0 {
		return nil
	}
	return pub.queue[0]
}

// popHead removes b if it is still the oldest pending batch. A stream
// failure may have taken the queue since the ack reader looked (fail
// finished b already): then it returns false and b is left alone.
func (pub *publisher) popHead(b *pendingBatch) bool {
	pub.mu.Lock()
	if len(pub.queue) == 0 || pub.queue[0] != b {
		pub.mu.Unlock()
		return false
	}
	pub.queue[0] = nil
	pub.queue = pub.queue[1:]
	pub.mu.Unlock()
	<-pub.slots
	return true
}

// fail marks the stream broken and fails every pending batch with a
// retriable error. Records of a failed batch may have been stored; a
// producer's retry may then store them again.
func (pub *publisher) fail(err error) {
	pub.mu.Lock()
	if pub.err == nil {
		pub.err = err
	}
	q := pub.queue
	pub.queue = nil
	pub.mu.Unlock()
	wrapped := fmt.Errorf("%w (%v)", kerr.NotLeaderForPartition, err)
	for _, b := range q {
		if b.log {
			b.part.mark(b, batchFailed)
		}
		<-pub.slots // before its answer, as popHead: answered, it holds none
		b.finish(-1, wrapped)
	}
}

var errPublisherClosed = errors.New("publisher closed")

// closeTimeout bounds a graceful stream end (the broker answers every record
// sent first).
const closeTimeout = 30 * time.Second

// close ends the stream gracefully: the broker answers every record sent,
// ends the stream, and (with no other publisher on the partition) flushes
// the partition to the filer before it does. After timeout the stream is
// cancelled.
func (pub *publisher) close(timeout time.Duration) {
	pub.stream.CloseSend() //nolint:errcheck // the reader sees the end
	select {
	case <-pub.done:
	case <-time.After(timeout):
	}
	pub.fail(errPublisherClosed)
	pub.cancel()
	<-pub.done
}

// openStream opens the publish stream itself.
func (c *Client) openStream(ctx context.Context, p *partition, a *mq_pb.BrokerPartitionAssignment) (*publisher, error) {
	pub, err := c.startStream(ctx, p, a)
	if err != nil {
		c.brokerUnreachable(p.topic, a.LeaderBroker, err)
	}
	return pub, err
}

func (c *Client) startStream(ctx context.Context, p *partition, a *mq_pb.BrokerPartitionAssignment) (*publisher, error) {
	cc, err := c.conn(ctx, a.LeaderBroker)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.Background())
	stream, err := mq_pb.NewSeaweedMessagingClient(cc).PublishMessage(sctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%w: open publish stream to %s: %v", ErrUnavailable, a.LeaderBroker, err)
	}
	init := &mq_pb.PublishMessageRequest{Message: &mq_pb.PublishMessageRequest_Init{Init: &mq_pb.PublishMessageRequest_InitMessage{
		Topic:         &schema_pb.Topic{Namespace: Namespace, Name: p.topic},
		Partition:     a.Partition,
		AckInterval:   1,
		PublisherName: "kafka-gateway",
	}}}
	if err := stream.Send(init); err != nil {
		cancel()
		return nil, fmt.Errorf("%w: publish init to %s: %v", ErrUnavailable, a.LeaderBroker, err)
	}
	hello, err := stream.Recv()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%w: publish init to %s: %v", ErrUnavailable, a.LeaderBroker, err)
	}
	if hello.Error != "" || hello.ErrorCode != 0 {
		cancel()
		c.topics.forget(p.topic)
		glog.V(0).Infof("kafka partition %s/%d: broker %s refused the publish stream: %s", p.topic, p.index, a.LeaderBroker, hello.Error)
		c.askBalancer(p.topic, a.LeaderBroker, errors.New(hello.Error))
		return nil, kerr.NotLeaderForPartition
	}
	pub := &publisher{
		c:      c,
		topic:  p.topic,
		stream: stream,
		cancel: cancel,
		leader: a.LeaderBroker,
		slots:  make(chan struct{}, maxPendingBatches),
		done:   make(chan struct{}),
	}
	pub.req.Message = &mq_pb.PublishMessageRequest_Data{Data: &pub.data}
	go pub.readAcks()
	glog.V(1).Infof("kafka partition %s/%d: publishing to %s", p.topic, p.index, a.LeaderBroker)
	return pub, nil
}

// readAcks matches the broker's acks, one per record and in order, to the
// pending batches. A batch is done when its last record is acknowledged.
func (pub *publisher) readAcks() {
	defer close(pub.done)
	// A panic here breaks this stream only: its batches fail with a
	// retriable error and the next write opens a new stream.
	defer func() {
		if v := recover(); v != nil {
			metrics.Recovered("PublishAckReader", fmt.Sprintf("publish to %s, topic %s", pub.leader, pub.topic), v)
			pub.fail(fmt.Errorf("%w: panic in the ack reader: %v", ErrUnavailable, v))
		}
	}()
	for {
		resp, err := pub.stream.Recv()
		if err == io.EOF && pub.head() == nil {
			pub.fail(errPublisherClosed) // closed by us, every ack read
			return
		}
		if err == nil && (resp.Error != "" || resp.ErrorCode != 0) {
			err = fmt.Errorf("broker %s: %s (code %d)", pub.leader, resp.Error, resp.ErrorCode)
		}
		if err != nil {
			if pub.broken() == nil && status.Code(err) == codes.Unavailable {
				pub.c.brokerUnreachable(pub.topic, pub.leader, err)
			}
			pub.fail(fmt.Errorf("%w: %v", ErrUnavailable, err))
			return
		}
		cur := pub.head()
		if cur == nil {
			glog.Errorf("kafka publish to %s: an ack with no record pending (offset %d)", pub.leader, resp.AssignedOffset)
			continue
		}
		if cur.got == 0 {
			cur.base = resp.AssignedOffset
		} else if resp.AssignedOffset != cur.base+int64(cur.got) {
			glog.Errorf("kafka partition %s/%d: broker assigned offset %d, expected %d: offsets of one batch are not contiguous",
				cur.part.topic, cur.part.index, resp.AssignedOffset, cur.base+int64(cur.got))
		}
		cur.got++
		if cur.got == cur.n && pub.popHead(cur) {
			cur.part.acknowledged(cur)
		}
	}
}

// acknowledged takes a batch the broker acknowledged. A durable one is done
// once the write-ahead log holds it too, any other at once. Readers see it
// once both hold it, as Kafka's see a record once its replicas have it (the
// high watermark). Runs on the stream's ack reader.
func (p *partition) acknowledged(b *pendingBatch) {
	switch {
	case !b.log:
		p.advance(b.base + int64(b.n))
		b.finish(b.base, nil)
		return
	case b.deferLog:
		b.finish(b.base, nil) // appendVerifying decides
		return
	case b.base != b.expected:
		// Someone else writes this partition: the log holds the batch
		// at offsets it did not get.
		glog.Errorf("kafka partition %s/%d: broker assigned offset %d to a batch logged at offset %d; another writer? refusing writes until the stream is reopened and the log repaired",
			p.topic, p.index, b.base, b.expected)
		p.notifyMu.Lock()
		p.mislogged = true
		p.notifyMu.Unlock()
		p.mark(b, batchFailed)
		b.finish(-1, fmt.Errorf("%w: offsets not as expected", kerr.NotLeaderForPartition))
		go b.part.failStream(fmt.Errorf("broker assigned offset %d, expected %d", b.base, b.expected))
		return
	}
	state, logErr := p.mark(b, batchAcked)
	switch {
	case !b.durable:
		b.finish(b.base, nil)
	case state&batchLogged != 0 && logErr != nil:
		b.finish(-1, logErr)
	case state&batchLogged != 0:
		b.finish(b.base, nil)
	}
}

// walDone takes the write-ahead log's outcome for a batch.
func (p *partition) walDone(b *pendingBatch, err error) {
	p.notifyMu.Lock()
	b.logErr = err
	p.notifyMu.Unlock()
	flag := uint8(batchLogged)
	if err != nil {
		flag |= batchFailed
	}
	state, _ := p.mark(b, flag)
	if !b.durable || state&batchAcked == 0 || b.deferLog {
		return
	}
	if err != nil {
		b.finish(-1, err)
	} else {
		b.finish(b.base, nil)
	}
}

// failStream breaks the partition's current stream, so that the next write
// opens a new one (and recovers the partition first).
func (p *partition) failStream(err error) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if p.pub != nil {
		p.pub.fail(err)
	}
}
