package protocol

import (
	"sync"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// ResponseBudget bounds the record bytes that fetch responses hold across
// the gateway, from when a fetch reads them until its response is
// written: past it, fetches answer with what fits (each at least its
// first batch, KIP-74), however many connections fetch at once.
type ResponseBudget struct {
	mu   sync.Mutex
	held int64
	max  int64
}

// NewResponseBudget returns a budget of max bytes.
func NewResponseBudget(max int64) *ResponseBudget { return &ResponseBudget{max: max} }

// take grants up to want bytes, what is left of the budget.
func (b *ResponseBudget) take(want int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	grant := int64(want)
	if left := b.max - b.held; grant > left {
		grant = max(left, 0)
		metrics.FetchBudgetShort.Inc()
	}
	b.held += grant
	return int(grant)
}

// force holds n bytes past what was granted: a fetch's first batch goes
// out whatever the budget says.
func (b *ResponseBudget) force(n int) {
	b.mu.Lock()
	b.held += int64(n)
	b.mu.Unlock()
}

func (b *ResponseBudget) release(n int64) {
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
}

// Held is what the budget holds now.
func (b *ResponseBudget) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// takeResponse takes up to want bytes of the gateway's response budget
// for r's response (all of them without a budget).
func (r *Request) takeResponse(want int) int {
	if r.Responses == nil {
		return want
	}
	grant := r.Responses.take(want)
	r.responseHeld += int64(grant)
	return grant
}

// settleResponse makes what r holds of the budget the n bytes its
// response carries.
func (r *Request) settleResponse(n int) {
	if r.Responses == nil {
		return
	}
	if d := int64(n) - r.responseHeld; d > 0 {
		r.Responses.force(int(d))
	} else {
		r.Responses.release(-d)
	}
	r.responseHeld = int64(n)
}

// ReleaseResponse gives back what r's response held of the budget, once
// it is written (or will not be).
func (r *Request) ReleaseResponse() {
	if r.Responses != nil && r.responseHeld > 0 {
		r.Responses.release(r.responseHeld)
		r.responseHeld = 0
	}
}
