package seaweedmq

import (
	"testing"
	"time"
)

// TestNextTs checks which timestamps ts_ns carries exactly: increasing ones,
// and repeats within the same millisecond; not ones that go back, are
// negative or lie far ahead. ts_ns itself always increases.
func TestNextTs(t *testing.T) {
	now := time.Now().UnixMilli()
	p := &partition{}
	last := int64(0)
	for i, tc := range []struct {
		ts    int64
		exact bool
	}{
		{now - 1000, true},
		{now - 1000, true}, // same millisecond again
		{now - 1000, true},
		{now - 999, true},
		{now - 5000, false}, // goes back
		{now - 500, false},  // behind ts_ns, which moved to the clock after the step back
		{-1, false},
		{now + int64(2*time.Hour/time.Millisecond), false}, // far ahead
		{now + 1, true},
	} {
		ts, exact := p.nextTs(tc.ts)
		if ts <= last {
			t.Fatalf("step %d: ts_ns %d not after %d", i, ts, last)
		}
		last = ts
		if exact != tc.exact {
			t.Fatalf("step %d: timestamp %d exact %v, want %v", i, tc.ts, exact, tc.exact)
		}
		if exact && ts/int64(time.Millisecond) != tc.ts {
			t.Fatalf("step %d: ts_ns %d does not carry %d", i, ts, tc.ts)
		}
	}
}

func TestTopicIDStable(t *testing.T) {
	a, b := topicID("orders", 42), topicID("orders", 42)
	if a != b || a == [16]byte{} {
		t.Fatalf("ids %x %x", a, b)
	}
	if topicID("orders", 43) == a || topicID("orders2", 42) == a {
		t.Fatal("different topics share an id")
	}
}
