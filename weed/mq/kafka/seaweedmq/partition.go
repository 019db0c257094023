package seaweedmq

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"
)

// partition is this gateway's state for one Kafka partition: its publish
// stream, and the high watermark it knows with a signal for waiting fetches.
type partition struct {
	c     *Client
	topic string
	index int32
	dir   string // in the filer; set when a publisher is first opened

	// writeMu serializes appends, so that a batch's records are sent
	// together and batches keep the order in which they were appended.
	writeMu  sync.Mutex
	pub      *publisher
	lastTsNs int64 // ts_ns of the last record sent; see nextTs
	// storedEnd is the end of the records in the filer when the current
	// stream was opened; the broker must assign offsets from there on.
	storedEnd int64

	producers producerState // idempotent producers; under writeMu

	notifyMu sync.Mutex
	hw       int64         // highest high watermark seen, -1 if unknown
	changed  chan struct{} // closed when hw moves; nil until someone waits
	// inflight are the batches sent on the stream and not yet both
	// acknowledged by the broker and in the write-ahead log, in order;
	// while there are any, readers see records only up to loggedEnd (or
	// the highest high watermark they saw). mislogged is set when a
	// batch went into the log at offsets the broker did not give it.
	inflight  []*pendingBatch
	loggedEnd int64
	mislogged bool
}

type partKey struct {
	topic string
	index int32
}

type partitions struct {
	mu sync.Mutex
	m  map[partKey]*partition
}

func (ps *partitions) init() { ps.m = map[partKey]*partition{} }

func (ps *partitions) get(c *Client, topic string, index int32) *partition {
	k := partKey{topic, index}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.m[k]
	if p == nil {
		p = &partition{c: c, topic: topic, index: index, hw: -1}
		ps.m[k] = p
	}
	return p
}

// closeTopic ends the publish streams of a topic's partitions and forgets
// them, as when the topic is deleted or re-created.
func (ps *partitions) closeTopic(topic string) {
	ps.mu.Lock()
	var victims []*partition
	for k, p := range ps.m {
		if k.topic == topic {
			victims = append(victims, p)
			delete(ps.m, k)
		}
	}
	ps.mu.Unlock()
	for _, p := range victims {
		p.closePublisher()
	}
}

// Release implements gateway.Releaser: the partition's stream ends (the
// broker flushes what it holds), its producers' state is saved, and the
// partition is forgotten, to be read afresh if this gateway leads it again.
// Fetches waiting on it wake up.
func (c *Client) Release(topic string, index int32) {
	k := partKey{topic, index}
	c.parts.mu.Lock()
	p := c.parts.m[k]
	delete(c.parts.m, k)
	c.parts.mu.Unlock()
	if p == nil {
		return
	}
	p.closePublisher()
	c.saveProducers(p, true)
	p.notifyMu.Lock()
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
	p.notifyMu.Unlock()
}

func (ps *partitions) closeAll() {
	ps.mu.Lock()
	all := ps.m
	ps.m = map[partKey]*partition{}
	ps.mu.Unlock()
	// Each partition's stream ends and its producers are saved on their
	// own: a gateway that wrote hundreds of partitions stops in about the
	// time of one, not of all of them one after the other.
	var wg sync.WaitGroup
	sem := make(chan struct{}, closeParallel)
	for _, p := range all {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			p.closePublisher()
			p.c.saveProducers(p, true)
		}()
	}
	wg.Wait()
}

// closeParallel is how many partitions are closed at once when the client
// closes: enough that many partitions close in the time of a few, few
// enough not to flood the brokers and the filer.
const closeParallel = 32

// closePublisher ends the partition's stream gracefully, so the broker
// flushes what it holds.
func (p *partition) closePublisher() {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if p.pub != nil {
		p.pub.close(closeTimeout)
		p.pub = nil
	}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// advance records that the high watermark is at least hw and wakes waiters.
func (p *partition) advance(hw int64) {
	p.notifyMu.Lock()
	defer p.notifyMu.Unlock()
	if hw <= p.hw {
		return
	}
	p.hw = hw
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// sending notes a batch about to be sent on the stream; it is not for
// readers until the broker and the write-ahead log hold it.
func (p *partition) sending(b *pendingBatch) {
	p.notifyMu.Lock()
	p.inflight = append(p.inflight, b)
	p.notifyMu.Unlock()
}

// mark adds flag to a batch's state; the batches at the head of the
// partition's in-flight ones that are done leave it, and the high
// watermark moves past those that succeeded. It returns the batch's state
// and the log's error for it.
func (p *partition) mark(b *pendingBatch, flag uint8) (uint8, error) {
	p.notifyMu.Lock()
	b.state |= flag
	state, logErr := b.state, b.logErr
	moved := false
	for len(p.inflight) > 0 {
		h := p.inflight[0]
		if h.state&batchFailed == 0 {
			if h.state&(batchAcked|batchLogged) != batchAcked|batchLogged {
				break
			}
			p.loggedEnd = max(p.loggedEnd, h.base+int64(h.n))
			moved = true
		}
		p.inflight[0] = nil
		p.inflight = p.inflight[1:]
	}
	end := p.loggedEnd
	p.notifyMu.Unlock()
	if moved {
		p.advance(end)
	}
	return state, logErr
}

// streamOpened notes where the stored records end as a new stream starts.
func (p *partition) streamOpened(end int64) {
	p.notifyMu.Lock()
	p.loggedEnd = max(p.loggedEnd, end)
	p.notifyMu.Unlock()
}

// visibleEnd is where what readers may see ends while batches wait for the
// log, or -1 if none does.
func (p *partition) visibleEnd() int64 {
	p.notifyMu.Lock()
	defer p.notifyMu.Unlock()
	if len(p.inflight) == 0 {
		return -1
	}
	return max(p.loggedEnd, p.hw)
}

// knownHW is the highest high watermark seen, or -1.
func (p *partition) knownHW() int64 {
	p.notifyMu.Lock()
	defer p.notifyMu.Unlock()
	return p.hw
}

// waitPast returns a channel closed once the high watermark passes hw.
func (p *partition) waitPast(hw int64) <-chan struct{} {
	p.notifyMu.Lock()
	defer p.notifyMu.Unlock()
	if p.hw > hw {
		return closedChan
	}
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	return p.changed
}

// Changed implements protocol.Backend.
func (c *Client) Changed(topic string, index int32, hw int64) <-chan struct{} {
	return c.parts.get(c, topic, index).waitPast(hw)
}

// assignment returns a partition's SeaweedMQ partition and leader broker.
func (c *Client) assignment(ctx context.Context, topic string, index int32) (*mq_pb.BrokerPartitionAssignment, error) {
	e, err := c.topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	if index < 0 || int(index) >= len(e.parts) {
		return nil, kerr.UnknownTopicOrPartition
	}
	return e.parts[index], nil
}
