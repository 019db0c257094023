package seaweedmq

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/glog"
)

// Durable appends (produce with acks=all) are acknowledged only once their
// records are in the filer. The broker acknowledges a record as soon as it
// holds it in memory and flushes every -logFlushInterval; it has no flush
// call and does not flush when it is stopped, so a record it only held is
// lost when it stops. What it does do is flush a partition before it ends
// the partition's last publish stream. The flusher uses that: when durable
// batches wait, it ends the stream gracefully (new appends wait meanwhile),
// confirms in the filer's log segments that their offsets are there, and
// only then acknowledges them. One flush serves every batch waiting, so it
// costs a round of broker and filer calls per flush, not per batch.

const (
	// closeTimeout bounds a graceful stream end (the broker's flush).
	closeTimeout = 30 * time.Second
	// flushConfirmTimeout bounds how long the filer may take to show a
	// flush; past it the batches fail with a retriable error.
	flushConfirmTimeout = 15 * time.Second
	// flushPoll is how often the filer is looked at while confirming.
	flushPoll = 100 * time.Millisecond
)

// flushState is a partition's batches acknowledged in memory and waiting
// to be flushed, and the goroutine that flushes them.
type flushState struct {
	mu      sync.Mutex
	waiting []*pendingBatch
	running bool
}

// awaitFlush hands a batch the broker holds to the partition's flusher.
func (p *partition) awaitFlush(b *pendingBatch) {
	p.flush.mu.Lock()
	p.flush.waiting = append(p.flush.waiting, b)
	start := !p.flush.running
	p.flush.running = true
	p.flush.mu.Unlock()
	if start {
		go p.flushLoop()
	}
}

// flushLoop flushes until no batch waits.
func (p *partition) flushLoop() {
	for {
		p.flush.mu.Lock()
		batches := p.flush.waiting
		p.flush.waiting = nil
		if len(batches) == 0 {
			p.flush.running = false
			p.flush.mu.Unlock()
			return
		}
		p.flush.mu.Unlock()
		err := p.flushAndConfirm(batches)
		for _, b := range batches {
			if err != nil {
				b.app.Finish(-1, err)
			} else {
				b.app.Finish(b.base, nil)
			}
		}
	}
}

// flushAndConfirm makes the broker flush the partition and waits until the
// filer holds every offset of batches.
func (p *partition) flushAndConfirm(batches []*pendingBatch) error {
	last := int64(-1)
	for _, b := range batches {
		last = max(last, b.base+int64(b.n)-1)
	}
	start := time.Now()
	p.writeMu.Lock()
	if p.pub != nil {
		p.pub.close(closeTimeout)
		p.pub = nil
	}
	p.writeMu.Unlock()

	deadline := time.Now().Add(flushConfirmTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err := p.c.flushed(ctx, p.dir, true)
		cancel()
		if err == nil && st.end > last {
			glog.V(2).Infof("kafka partition %s/%d: flushed %d batches up to offset %d in %v", p.topic, p.index, len(batches), last, time.Since(start))
			return nil
		}
		if time.Now().After(deadline) {
			glog.Warningf("kafka partition %s/%d: records up to offset %d not in the filer after %v (%v)", p.topic, p.index, last, flushConfirmTimeout, err)
			return fmt.Errorf("%w: records not flushed to the filer", kerr.RequestTimedOut)
		}
		time.Sleep(flushPoll)
	}
}
