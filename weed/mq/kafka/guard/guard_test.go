package guard

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

func TestRun(t *testing.T) {
	before := testutil.ToFloat64(metrics.Panics.WithLabelValues("TestLoop"))
	for round := 0; round < 3; round++ {
		err := Run("TestLoop", func() {
			var m map[string]int
			m["x"]++ // a nil map: the kind of bug a background loop may meet
		})
		if err == nil || !strings.Contains(err.Error(), "panic in TestLoop") {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if got := testutil.ToFloat64(metrics.Panics.WithLabelValues("TestLoop")) - before; got != 3 {
		t.Fatalf("%v panics counted, want 3", got)
	}
	if err := Run("TestLoop", func() {}); err != nil {
		t.Fatal(err)
	}
	failed := errors.New("filer gone")
	if err := Try("TestLoop", func() error { return failed }); err != failed {
		t.Fatalf("Try passes fn's error on: %v", err)
	}
	if err := Try("TestLoop", func() error { panic("boom") }); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("Try under a panic: %v", err)
	}
}
