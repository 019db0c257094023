// Package membershiptest stands in for the gateways' membership in unit
// tests of what it drives: which of several gateways owns every key, the
// term of that ownership, and the announcement of each change, as
// membership.Membership's Serving and Changed give them.
package membershiptest

import "sync"

// Owners says that one gateway, by index, owns every key.
type Owners struct {
	mu      sync.Mutex
	owner   int
	term    int64
	changed chan struct{}
}

// New returns Owners where gateway owner owns everything, in term 1.
func New(owner int) *Owners { return &Owners{owner: owner, term: 1, changed: make(chan struct{})} }

// Serving is gateway i's membership.Serving.
func (o *Owners) Serving(i int) func(key string) (term int64, ok bool) {
	return func(string) (int64, bool) {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.term, o.owner == i
	}
}

// Move gives everything to gateway to, in a new term, and announces it.
func (o *Owners) Move(to int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.owner, o.term = to, o.term+1
	close(o.changed)
	o.changed = make(chan struct{})
}

// Changed is membership.Changed: closed at the next Move.
func (o *Owners) Changed() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changed
}
