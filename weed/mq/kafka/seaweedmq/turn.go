package seaweedmq

import (
	"context"
	"sync"
)

// turn is a mutex whose waiters give up when their context ends: held
// across calls to SeaweedFS, it holds up only the callers willing to
// wait for them, never one past its deadline. The zero value is free; a
// turn is not copied once used.
type turn struct {
	once sync.Once
	ch   chan struct{}
}

// take waits for the turn, or for ctx to end.
func (t *turn) take(ctx context.Context) error {
	t.once.Do(func() { t.ch = make(chan struct{}, 1) })
	select {
	case t.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// give ends the turn taken.
func (t *turn) give() { <-t.ch }
