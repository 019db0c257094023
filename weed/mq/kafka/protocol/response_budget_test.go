package protocol

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// Fetch responses hold the gateway's response budget from when they are
// read until written: a fetch gets what is left of it (at least its
// first batch, KIP-74), and the budget is whole again once the
// responses are written. Connections times 55 MiB was unbounded.
func TestFetchResponseBudget(t *testing.T) {
	h, b := testHandler(t, nil)
	ctx := context.Background()
	if _, err := b.CreateTopic(ctx, storage.TopicSpec{Name: "rb", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		appendValues(t, b, "rb", 0, nil, string(make([]byte, 1000+i)))
		appendValues(t, b, "rb", 1, nil, string(make([]byte, 1000+i)))
	}
	budget := NewResponseBudget(40 << 10)
	fetch := func() (*Request, map[int32]kmsg.FetchResponseTopicPartition) {
		req := fetchReq("rb", [16]byte{}, map[int32]int64{0: 0, 1: 0})
		req.SetVersion(12)
		r, err := Decode(requestFrame(req, 9))
		if err != nil {
			t.Fatal(err)
		}
		r.Principal, r.ClientHost, r.Listener, r.Responses = anonymous, "/127.0.0.1", "PLAINTEXT", budget
		resp, err := h.Handle(ctx, r)()
		if err != nil {
			t.Fatal(err)
		}
		return r, fetched(t, resp)
	}
	bytesOf := func(parts map[int32]kmsg.FetchResponseTopicPartition) int {
		n := 0
		for _, p := range parts {
			n += len(p.RecordBatches)
		}
		return n
	}
	short := testutil.ToFloat64(metrics.FetchBudgetShort)
	first, parts := fetch()
	n1 := bytesOf(parts)
	if n1 == 0 || n1 > 42<<10 || budget.Held() != int64(n1) {
		t.Fatalf("the first fetch: %d record bytes (its one batch may pass the budget), the budget holds %d", n1, budget.Held())
	}
	// The budget is spent: the next fetch gets its first batch only
	// (partition 0's; partition 1 none).
	second, parts := fetch()
	if n := bytesOf(parts); n == 0 || len(parts[1].RecordBatches) != 0 || budget.Held() != int64(n1+n) {
		t.Fatalf("a fetch while the budget is held: %d record bytes, %d of partition 1; the budget holds %d", n, len(parts[1].RecordBatches), budget.Held())
	}
	if batches, _ := batchesOf(t, parts[0].RecordBatches); len(batches) != 1 {
		t.Fatalf("a fetch while the budget is held: %d batches, want the first only", len(batches))
	}
	if testutil.ToFloat64(metrics.FetchBudgetShort) <= short {
		t.Error("a fetch short of the budget was not counted")
	}
	first.ReleaseResponse()
	second.ReleaseResponse()
	if budget.Held() != 0 {
		t.Fatalf("the budget holds %d once every response was written", budget.Held())
	}
}
