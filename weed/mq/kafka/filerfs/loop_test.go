package filerfs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A loop steps at once and then every interval, each step with a deadline;
// Close waits for it and stops it; a loop never started closes at once.
func TestLoop(t *testing.T) {
	var steps atomic.Int32
	ran := make(chan struct{}, 10)
	l := NewLoop(10*time.Millisecond, func(ctx context.Context) {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("a step without a deadline")
		}
		steps.Add(1)
		ran <- struct{}{}
	})
	l.Start()
	l.Start() // once
	for range 3 {
		select {
		case <-ran:
		case <-time.After(5 * time.Second):
			t.Fatalf("%d steps in 5 s", steps.Load())
		}
	}
	l.Close()
	n := steps.Load()
	time.Sleep(50 * time.Millisecond)
	if steps.Load() != n {
		t.Errorf("steps after Close: %d, then %d", n, steps.Load())
	}
	l.Close() // twice

	idle := NewLoop(time.Hour, func(context.Context) { t.Error("a step of a loop never started") })
	done := make(chan struct{})
	go func() { idle.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close of a loop never started waits")
	}
}
