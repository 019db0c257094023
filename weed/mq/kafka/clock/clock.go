// Package clock is the wall clock of the gateway: the time it stamps on
// what it stores (record and segment times, transaction and offset commit
// times, file times) and compares with such stamps (timeouts, expiry,
// retention). It is the system's, plus a skew that fault tests set to see
// a gateway whose clock is off or jumps. Durations the gateway measures on
// its own (leases, sessions, waits) use time.Now's monotonic reading, as a
// real clock's skew does not move them.
package clock

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"
)

var skew atomic.Int64

// Now is the gateway's wall clock.
func Now() time.Time {
	return time.Now().Add(time.Duration(skew.Load()))
}

// Skew is what Now adds to the system's clock.
func Skew() time.Duration { return time.Duration(skew.Load()) }

// SetSkew sets what Now adds to the system's clock.
func SetSkew(d time.Duration) { skew.Store(int64(d)) }

// Follow sets the skew from the file at path (a Go duration: 30s, -30s;
// absent or empty: none) now and every interval until ctx ends, logging
// each change.
func Follow(ctx context.Context, path string, interval time.Duration) {
	read := func() {
		d := time.Duration(0)
		if data, err := os.ReadFile(path); err == nil {
			if s := strings.TrimSpace(string(data)); s != "" {
				var perr error
				if d, perr = time.ParseDuration(s); perr != nil {
					glog.Warningf("kafka gateway: clock skew file %s: %v", path, perr)
					return
				}
			}
		}
		if d != Skew() {
			glog.V(0).Infof("kafka gateway: wall clock skewed by %v (was %v)", d, Skew())
			SetSkew(d)
		}
	}
	read()
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				read()
			}
		}
	}()
}
