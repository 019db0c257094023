package metrics

import (
	"fmt"
	"runtime/debug"

	"github.com/seaweedfs/seaweedfs/weed/glog"
)

// Guard runs fn and turns a panic in it into an error: logged with its stack
// and what was running (where: a bounded name, the metric's label), and
// counted in Panics. Background loops run each round of their work through
// it, so that a bug met once costs that round, not the process and every
// client's connection.
func Guard(where string, fn func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = Recovered(where, "", v)
		}
	}()
	fn()
	return nil
}

// Try is Guard for work that can fail: fn's error, or the panic as one.
func Try(where string, fn func() error) (err error) {
	if perr := Guard(where, func() { err = fn() }); perr != nil {
		return perr
	}
	return err
}

// Recovered logs and counts a panic recovered under where, for callers that
// recover themselves; about (a connection, a partition) goes into the log
// line only. It gives the panic back as an error.
func Recovered(where, about string, v any) error {
	Panics.WithLabelValues(where).Inc()
	if about != "" {
		about = " (" + about + ")"
	}
	glog.Errorf("kafka: panic in %s%s: %v\n%s", where, about, v, debug.Stack())
	return fmt.Errorf("panic in %s: %v", where, v)
}
