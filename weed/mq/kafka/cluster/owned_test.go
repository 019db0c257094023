package cluster

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership/membershiptest"
)

type releases struct {
	mu  sync.Mutex
	got []partition
}

func (r *releases) Release(topic string, index int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, partition{topic, index})
}

func (r *releases) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// A partition in use is released as soon as the membership announces that
// its leadership ended, without polling; one that comes back in a later
// term is released once more before use (another gateway wrote it since).
func TestOwnedReleasesAtTheAnnouncement(t *testing.T) {
	own := membershiptest.New(0)
	rel := &releases{}
	o := NewOwned(nil, rel, own.Serving(0), own.Changed)
	defer o.Close()
	if err := o.lead("t", 3); err != nil {
		t.Fatal(err)
	}
	own.Move(1)
	deadline := time.Now().Add(5 * time.Second)
	for rel.count() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("not released after the leadership moved")
		}
		time.Sleep(time.Millisecond)
	}
	if err := o.lead("t", 3); err != kerr.NotLeaderForPartition {
		t.Fatalf("use after the move: %v", err)
	}
	own.Move(0)
	if err := o.lead("t", 3); err != nil {
		t.Fatal(err)
	}
	if n := rel.count(); n != 1 || rel.got[0] != (partition{"t", 3}) {
		t.Fatalf("releases %v", rel.got)
	}
}

// A view that takes a partition away while lead is looking at it (after
// the membership said it leads, before the partition is noted as held) is
// not missed: the partition is released once the announcing sweep runs.
// (Asked outside the lock, the sweep of that view could pass before the
// partition was noted, and nothing released it until the next change.)
func TestOwnedViewChangeDuringLead(t *testing.T) {
	own := membershiptest.New(0)
	rel := &releases{}
	serving := own.Serving(0)
	var o *Owned
	swept := make(chan struct{}, 1)
	first := true
	moving := func(key string) (int64, bool) {
		term, ok := serving(key)
		if first && ok {
			// The view moves right after answering: let the sweep it
			// announces run before lead goes on, if it can.
			first = false
			own.Move(1)
			go func() {
				o.mu.Lock() // the sweep's lock: taken once lead lets go
				o.mu.Unlock()
				swept <- struct{}{}
			}()
			select {
			case <-swept:
			case <-time.After(200 * time.Millisecond):
			}
		}
		return term, ok
	}
	o = NewOwned(nil, rel, moving, own.Changed)
	defer o.Close()
	if err := o.lead("t", 3); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for rel.count() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the partition stayed held after a view that took it away")
		}
		time.Sleep(time.Millisecond)
	}
}
