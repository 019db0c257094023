package seaweedmq

import (
	"testing"
)

// A client given no write-ahead log name takes "default" for the log and
// for everything that names its owner (topic locks, the capability
// probe): the name was defaulted after the options were copied, and the
// locks carried the owner "".
func TestDefaultWALName(t *testing.T) {
	c := New(Options{}) // no master: it reaches nothing
	defer c.Close()
	if c.opts.WALName != "default" {
		t.Fatalf("the client's WALName is %q", c.opts.WALName)
	}
}
