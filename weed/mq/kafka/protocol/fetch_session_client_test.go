package protocol_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchSizes records the bytes of every Fetch request a client writes.
type fetchSizes struct {
	mu    sync.Mutex
	sizes []int
}

func (f *fetchSizes) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key == kmsg.Fetch.Int16() && err == nil {
		f.mu.Lock()
		f.sizes = append(f.sizes, n)
		f.mu.Unlock()
	}
}

func (f *fetchSizes) get() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.sizes...)
}

var _ kgo.HookBrokerWrite = (*fetchSizes)(nil)

// A consumer of 100 partitions sends one full fetch and then incremental
// ones, naming only the partitions it moved on: without sessions each
// fetch named all 100 (and each answer held all 100).
func TestFetchSessionsShrinkRequests(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "many", 100, nil)
	for p := int32(0); p < 100; p++ {
		g.write(t, "many", p, 1, "v")
	}
	sizes := &fetchSizes{}
	cl := client(t, g.addr, kgo.ConsumeTopics("many"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.WithHooks(sizes), kgo.FetchMaxWait(50*time.Millisecond))
	ctx := ctxFor(t)
	got := 0
	for got < 100 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of 100 records consumed", got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		got += fs.NumRecords()
	}
	// A few more fetches with nothing new, and one record more.
	g.write(t, "many", 42, 2, "w")
	more, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if fs := cl.PollFetches(more); fs.NumRecords() != 1 {
		t.Fatalf("%d records after one more was written", fs.NumRecords())
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(sizes.get()) < 6 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	all := sizes.get()
	if len(all) < 6 {
		t.Fatalf("only %d fetch requests", len(all))
	}
	largest := 0
	for _, n := range all {
		largest = max(largest, n)
	}
	t.Logf("fetch request bytes: %v", all)
	if largest < 100*8 {
		t.Fatalf("the largest fetch is %d bytes: none names the 100 partitions", largest)
	}
	// The full fetch names all 100, and so does the one after the first
	// records came (every partition moved on); afterwards each names the
	// few that moved, or none.
	for _, n := range all[len(all)-2:] {
		if n >= largest/4 {
			t.Fatalf("fetch request sizes %v: the last ones should be a fraction of the full fetch (%d)", all, largest)
		}
	}
}
