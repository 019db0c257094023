package feature

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
)

var defaults = map[string]int16{Group: 1, Share: 1, Transaction: 2}

// Two gateways updating different features at once: both updates are
// kept, each write one epoch further, and a third gateway reads them.
func TestConcurrentUpdates(t *testing.T) {
	ctx := context.Background()
	files := filerfstest.New()
	a, b := New(files, defaults), New(files, defaults)
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			level := int16(i%2 + 1)
			typ := int8(Upgrade)
			if level == 1 {
				typ = SafeDowngrade
			}
			if _, err := a.Update(ctx, []Update{{Feature: Transaction, Level: level, Type: typ}}, false); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := b.Update(ctx, []Update{{Feature: Share, Level: 1, Type: Upgrade}}, false); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
	}
	c := New(files, defaults)
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.Current(); got.Epoch != 21 || got.Level(Transaction) != 2 || got.Level(Share) != 1 || got.Level(Group) != 1 {
		t.Errorf("after 20 updates: %+v", got)
	}
}

// Kafka's refusals, and a level 0 turning a feature off.
func TestUpdateChecks(t *testing.T) {
	ctx := context.Background()
	s := New(filerfstest.New(), defaults)
	var refused *Error
	for _, u := range [][]Update{
		{{Feature: "metadata.version", Level: 1, Type: Upgrade}},
		{{Feature: Streams, Level: 2, Type: Upgrade}},
		{{Feature: Transaction, Level: 1, Type: Upgrade}},
		{{Feature: Transaction, Level: -1, Type: UnsafeDowngrade}},
		{{Feature: Group, Level: 0, Type: 7}},
		{{Feature: Share, Level: 0, Type: SafeDowngrade}, {Feature: Share, Level: 0, Type: SafeDowngrade}},
	} {
		if _, err := s.Update(ctx, u, false); !errors.As(err, &refused) {
			t.Errorf("%+v: %v, want a refusal", u, err)
		}
	}
	if s.Current().Epoch != 1 {
		t.Fatalf("refused updates moved the epoch to %d", s.Current().Epoch)
	}
	l, err := s.Update(ctx, []Update{{Feature: Group, Level: 0, Type: UnsafeDowngrade}}, false)
	if err != nil || l.Level(Group) != 0 || l.Epoch != 2 {
		t.Fatalf("group.version off: %+v %v", l, err)
	}
	if _, on := s.Current().Levels[Group]; on {
		t.Error("a feature at level 0 is still finalized")
	}
}
