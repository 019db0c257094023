package txn

// What DescribeTransactions and ListTransactions report.

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Described is a transaction as DescribeTransactions and ListTransactions
// show it.
type Described struct {
	ID         string
	State      State
	ProducerID int64
	Epoch      int16
	TimeoutMs  int32
	StartMs    int64 // -1 unless open
	Partitions map[string][]int32
}

// Describe returns the transactional id's state, or false if unknown.
func (c *Coordinator) Describe(id string) (Described, bool, *kerr.Error) {
	t, _, e := c.get(context.Background(), id)
	if e != nil || t == nil {
		return Described{}, false, e
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.describe(), true, nil
}

func (t *txn) describe() Described {
	d := Described{ID: t.st.ID, State: t.st.State, ProducerID: t.st.ProducerID, Epoch: t.st.Epoch, TimeoutMs: t.st.TimeoutMs, StartMs: -1, Partitions: t.st.Partitions}
	if t.st.State == Ongoing || t.st.State == PrepareCommit || t.st.State == PrepareAbort {
		d.StartMs = t.st.StartMs
	}
	return d
}

// List returns every transactional id's state.
func (c *Coordinator) List() ([]Described, *kerr.Error) {
	c.mu.Lock()
	if !c.ready {
		c.mu.Unlock()
		return nil, kerr.CoordinatorLoadInProgress
	}
	all := make([]*txn, 0, len(c.txns))
	for _, t := range c.txns {
		all = append(all, t)
	}
	c.mu.Unlock()
	out := make([]Described, 0, len(all))
	for _, t := range all {
		t.mu.Lock()
		out = append(out, t.describe())
		t.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
