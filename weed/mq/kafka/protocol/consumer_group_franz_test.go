package protocol_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// owners tracks which member owns which partition, from franz-go's
// assign and revoke callbacks: a partition given to a member while another
// still owns it is an overlap.
type owners struct {
	mu       sync.Mutex
	owner    map[int32]string
	overlaps []string
}

func (o *owners) assigned(member string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if cur, ok := o.owner[p]; ok && cur != member {
			o.overlaps = append(o.overlaps, fmt.Sprintf("partition %d given to %s while %s owns it", p, member, cur))
		}
		o.owner[p] = member
	}
}

func (o *owners) released(member string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if o.owner[p] == member {
			delete(o.owner, p)
		}
	}
}

func (o *owners) of(member string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, m := range o.owner {
		if m == member {
			n++
		}
	}
	return n
}

// Three franz-go members of a consumer group of the KIP-848 protocol
// (kgo.ServerSideBalancer) share six partitions two each; one leaves and
// the other two take its partitions; no partition is ever owned by two
// members at once, every record is consumed, and the commits end at the
// partitions' ends.
func TestConsumerGroupFranz(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	const topic, group, parts = "cg-franz", "cg-franz-group", 6
	g.topic(t, topic, parts, nil)
	for p := int32(0); p < parts; p++ {
		vals := make([]string, 50)
		for i := range vals {
			vals[i] = fmt.Sprintf("%d-%d", p, i)
		}
		g.write(t, topic, p, 0, vals...)
	}
	own := &owners{owner: map[int32]string{}}
	var mu sync.Mutex
	seen := map[string]int{}
	start := func(name string) (*kgo.Client, context.CancelFunc) {
		cl := client(t, g.addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID(name),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { own.assigned(name, m[topic]) }),
			kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
				cl.CommitMarkedOffsets(ctx) //nolint:errcheck // checked by the commits at the end
				own.released(name, m[topic])
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { own.released(name, m[topic]) }),
			kgo.AutoCommitMarks(), kgo.AutoCommitInterval(100*time.Millisecond), kgo.BlockRebalanceOnPoll())
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)]++
					mu.Unlock()
				})
				cl.MarkCommitRecords(fs.Records()...)
				cl.AllowRebalance()
			}
		}()
		return cl, cancel
	}
	_, stop1 := start("m1")
	defer stop1()
	_, stop2 := start("m2")
	defer stop2()
	c3, stop3 := start("m3")
	defer stop3()
	eventually(t, "two partitions each", func() bool {
		return own.of("m1") == 2 && own.of("m2") == 2 && own.of("m3") == 2
	})
	eventually(t, "every record consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == parts*50
	})

	// m3 leaves: m1 and m2 take its partitions, three each.
	stop3()
	c3.Close()
	eventually(t, "three partitions each after m3 left", func() bool {
		return own.of("m1") == 3 && own.of("m2") == 3
	})
	adm := kadm.NewClient(client(t, g.addr))
	eventually(t, "the commits at the partitions' ends", func() bool {
		offs, err := adm.FetchOffsets(context.Background(), group)
		if err != nil {
			return false
		}
		for p := int32(0); p < parts; p++ {
			o, ok := offs.Lookup(topic, p)
			if !ok || o.At != 50 {
				return false
			}
		}
		return true
	})
	// ConsumerGroupDescribe shows the two members, each assigned what it
	// consumes, the group at its target.
	eventually(t, "the group Stable with two members of three partitions", func() bool {
		ds, err := adm.DescribeConsumerGroups(context.Background(), group)
		if err != nil || ds.Error() != nil {
			return false
		}
		d := ds[group]
		if d.State != "Stable" || len(d.Members) != 2 || d.AssignorName != "uniform" || d.Epoch != d.AssignmentEpoch {
			return false
		}
		for _, m := range d.Members {
			if len(m.Assignment[topic]) != 3 || len(m.TargetAssignment[topic]) != 3 || m.MemberEpoch != d.Epoch || m.MemberType != 1 {
				return false
			}
		}
		return true
	})
	own.mu.Lock()
	defer own.mu.Unlock()
	for _, o := range own.overlaps {
		t.Error(o)
	}
	mu.Lock()
	defer mu.Unlock()
	for v, n := range seen {
		if n > 1 {
			t.Errorf("%s consumed %d times", v, n)
		}
	}
}
