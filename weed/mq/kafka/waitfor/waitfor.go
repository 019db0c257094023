// Package waitfor is the tests' one way to wait for something to happen:
// a condition polled until it holds, within a bound, the test failed with
// what did not happen and the condition's last reason. Only tests import
// it.
package waitfor

import (
	"errors"
	"testing"
	"time"
)

// Until polls cond until it returns nil, failing t (with cond's last
// error) if within passes first. It polls about a thousand times within
// the bound, between every millisecond and every 200 ms.
func Until(t testing.TB, within time.Duration, what string, cond func() error) {
	t.Helper()
	every := min(max(within/1000, time.Millisecond), 200*time.Millisecond)
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, within, err)
		}
		time.Sleep(every)
	}
}

// True is Until of a condition that gives no reason.
func True(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	Until(t, within, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

var errNotYet = errors.New("not yet")
