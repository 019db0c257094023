// Package guard keeps a bug met once from costing the process: work run
// through it turns a panic into an error, logged with its stack and
// counted in the metrics.
package guard

import (
	"fmt"
	"runtime/debug"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// Run runs fn and turns a panic in it into an error: logged with its stack
// and what was running (where: a bounded name, the metric's label), and
// counted in Panics. Background loops run each round of their work through
// it, so that a bug met once costs that round, not the process and every
// client's connection.
func Run(where string, fn func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = Recovered(where, "", v)
		}
	}()
	fn()
	return nil
}

// Try is Run for work that can fail: fn's error, or the panic as one.
func Try(where string, fn func() error) (err error) {
	if perr := Run(where, func() { err = fn() }); perr != nil {
		return perr
	}
	return err
}

// Recovered logs and counts a panic recovered under where, for callers that
// recover themselves; about (a connection, a partition) goes into the log
// line only. It gives the panic back as an error.
func Recovered(where, about string, v any) error {
	metrics.Panics.WithLabelValues(where).Inc()
	if about != "" {
		about = " (" + about + ")"
	}
	glog.Errorf("kafka: panic in %s%s: %v\n%s", where, about, v, debug.Stack())
	return fmt.Errorf("panic in %s: %v", where, v)
}
