package waitfor

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf notes the failure and ends its
// goroutine, as a test's does.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failure runs fn with a recorder in a goroutine of its own and returns
// how it failed the test ("" if it did not).
func failure(t *testing.T, fn func(testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r.failed
}

func TestUntil(t *testing.T) {
	n := 0
	Until(t, time.Second, "the third call", func() error {
		if n++; n < 3 {
			return errors.New("early")
		}
		return nil
	})
	if n != 3 {
		t.Fatalf("cond called %d times, want 3", n)
	}
	start := time.Now()
	got := failure(t, func(tb testing.TB) {
		Until(tb, 50*time.Millisecond, "never", func() error { return errors.New("no") })
	})
	if got != "never: not within 50ms: no" {
		t.Fatalf("a condition that never holds failed the test with %q", got)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Fatalf("gave up after %v, before its bound", waited)
	}
	got = failure(t, func(tb testing.TB) { True(tb, 20*time.Millisecond, "false", func() bool { return false }) })
	if got != "false: not within 20ms: not yet" {
		t.Fatalf("True of a false condition failed the test with %q", got)
	}
}
