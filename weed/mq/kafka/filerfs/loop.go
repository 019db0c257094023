package filerfs

import (
	"context"
	"sync"
	"time"
)

// StepTimeout bounds one step of a Loop.
const StepTimeout = 10 * time.Second

// Loop runs a step now and then every interval until Close: how each
// gateway reads again what the filer keeps for the cluster (ACLs, quotas,
// features, client metrics subscriptions) and sweeps what expired in it.
// A step's context ends after StepTimeout; the step logs its own errors.
type Loop struct {
	every time.Duration
	step  func(ctx context.Context)

	stop, done chan struct{}
	startOnce  sync.Once
	stopOnce   sync.Once
}

// NewLoop returns a loop of step every interval, not started.
func NewLoop(every time.Duration, step func(ctx context.Context)) *Loop {
	return &Loop{every: every, step: step, stop: make(chan struct{}), done: make(chan struct{})}
}

// Start begins the loop (once).
func (l *Loop) Start() {
	l.startOnce.Do(func() {
		go func() {
			defer close(l.done)
			t := time.NewTicker(l.every)
			defer t.Stop()
			for {
				ctx, cancel := context.WithTimeout(context.Background(), StepTimeout)
				l.step(ctx)
				cancel()
				select {
				case <-l.stop:
					return
				case <-t.C:
				}
			}
		}()
	})
}

// Close stops the loop and waits for a step under way; a loop never
// started is closed at once.
func (l *Loop) Close() {
	l.stopOnce.Do(func() { close(l.stop) })
	l.startOnce.Do(func() { close(l.done) })
	<-l.done
}
