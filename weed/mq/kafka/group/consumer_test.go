package group

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership/membershiptest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
)

// fixedTopics is a cluster of topics that do not change.
type fixedTopics map[string]Topic

func (f fixedTopics) Names(context.Context) ([]string, error) {
	var out []string
	for n := range f {
		out = append(out, n)
	}
	return out, nil
}

func (f fixedTopics) Topic(_ context.Context, name string) (Topic, bool, error) {
	t, ok := f[name]
	return t, ok, nil
}

func topicOf(name string, n int32) Topic {
	var id topicID
	copy(id[:], name)
	return Topic{Name: name, ID: id, Partitions: n}
}

func inputOf(topics []Topic, members map[string][]string, targets map[string]map[string][]int32) *assignInput {
	in := &assignInput{topics: map[topicID]Topic{}}
	byName := map[string]Topic{}
	for _, t := range topics {
		in.topics[t.ID] = t
		byName[t.Name] = t
	}
	ids := make([]string, 0, len(members))
	for id := range members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		a := &assignee{id: id, topics: map[topicID]bool{}, target: partitions{}}
		for _, n := range members[id] {
			a.topics[byName[n].ID] = true
		}
		for n, ps := range targets[id] {
			for _, p := range ps {
				a.target.add(byName[n].ID, p, 0)
			}
		}
		in.members = append(in.members, a)
	}
	return in
}

// checkAssignment checks that every subscribed partition is assigned once,
// to a subscriber, and returns each member's count.
func checkAssignment(t *testing.T, in *assignInput, out map[string]partitions) map[string]int {
	t.Helper()
	owner := map[string]string{}
	counts := map[string]int{}
	for _, m := range in.members {
		for tid, ps := range out[m.id] {
			if !m.topics[tid] {
				t.Fatalf("%s given %s, which it does not subscribe to", m.id, in.topics[tid].Name)
			}
			for p := range ps {
				k := fmt.Sprintf("%s/%d", in.topics[tid].Name, p)
				if o, ok := owner[k]; ok {
					t.Fatalf("%s given to %s and %s", k, o, m.id)
				}
				owner[k] = m.id
				counts[m.id]++
			}
		}
	}
	for _, tp := range in.topics {
		subscribed := slices.ContainsFunc(in.members, func(m *assignee) bool { return m.topics[tp.ID] })
		for p := int32(0); p < tp.Partitions; p++ {
			if _, ok := owner[fmt.Sprintf("%s/%d", tp.Name, p)]; subscribed && !ok {
				t.Fatalf("%s/%d assigned to nobody", tp.Name, p)
			}
		}
	}
	return counts
}

// The uniform assignor balances (counts differ by one at most) and is
// sticky: a member joining takes partitions only from the others' excess,
// one leaving gives only its own away.
func TestUniformAssignor(t *testing.T) {
	a, b := topicOf("a", 7), topicOf("b", 5)
	subs := map[string][]string{"m1": {"a", "b"}, "m2": {"a", "b"}, "m3": {"a", "b"}}
	in := inputOf([]Topic{a, b}, subs, nil)
	out := assign("uniform", in)
	counts := checkAssignment(t, in, out)
	for _, n := range counts {
		if n != 4 {
			t.Fatalf("12 partitions over 3 members: %v", counts)
		}
	}
	// m4 joins: each of the three gives one to it; nothing else moves.
	subs["m4"] = []string{"a", "b"}
	targets := map[string]map[string][]int32{}
	for id, ps := range out {
		targets[id] = map[string][]int32{}
		for tid, parts := range ps {
			targets[id][in.topics[tid].Name] = sortedPartitions(parts)
		}
	}
	in2 := inputOf([]Topic{a, b}, subs, targets)
	out2 := assign("uniform", in2)
	counts = checkAssignment(t, in2, out2)
	if counts["m4"] != 3 || counts["m1"] != 3 || counts["m2"] != 3 || counts["m3"] != 3 {
		t.Fatalf("after m4 joined: %v", counts)
	}
	for _, id := range []string{"m1", "m2", "m3"} {
		for tid, ps := range out2[id] {
			for p := range ps {
				if !out[id].has(tid, p) {
					t.Fatalf("%s was given %s/%d, which it did not have: not sticky", id, in.topics[tid].Name, p)
				}
			}
		}
	}

	// Different subscriptions: each topic goes to its subscribers only,
	// and no partition could move to a less loaded subscriber of its
	// topic to even the loads out (Kafka's balance of heterogeneous
	// subscriptions).
	c := topicOf("c", 6)
	het := inputOf([]Topic{a, b, c}, map[string][]string{"m1": {"a"}, "m2": {"a", "c"}, "m3": {"b", "c"}}, nil)
	hout := assign("uniform", het)
	counts = checkAssignment(t, het, hout)
	for _, x := range het.members {
		for tid := range hout[x.id] {
			for _, y := range het.members {
				if y.topics[tid] && counts[x.id]-counts[y.id] > 1 {
					t.Fatalf("%s (%d partitions) keeps %s while %s (%d) subscribes to it: %v", x.id, counts[x.id], het.topics[tid].Name, y.id, counts[y.id], counts)
				}
			}
		}
	}
}

// The range assignor gives each member the same partitions of topics of
// equal size (co-partitioning), static members first.
func TestRangeAssignor(t *testing.T) {
	a, b := topicOf("a", 5), topicOf("b", 5)
	in := inputOf([]Topic{a, b}, map[string][]string{"x": {"a", "b"}, "y": {"a", "b"}}, nil)
	inst := "first"
	in.members[1].instanceID = &inst // y is static: it comes first
	out := assign("range", in)
	checkAssignment(t, in, out)
	for _, want := range []struct {
		member string
		parts  []int32
	}{{"y", []int32{0, 1, 2}}, {"x", []int32{3, 4}}} {
		for _, tp := range []Topic{a, b} {
			if got := sortedPartitions(out[want.member][tp.ID]); !slices.Equal(got, want.parts) {
				t.Fatalf("%s of %s: %v, want %v", want.member, tp.Name, got, want.parts)
			}
		}
	}
}

func heartbeatAt(c *Coordinator, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	req.Version = 1
	return c.ConsumerGroupHeartbeat(context.Background(), req, Client{ID: "test", Host: "/127.0.0.1"}, "User:ANONYMOUS")
}

// A consumer group moves to another coordinator with its state: members
// heartbeat on at their epoch with their assignment, and commit.
func TestConsumerGroupMovesBetweenCoordinators(t *testing.T) {
	files := filerfstest.New()
	own := membershiptest.New(0)
	topics := fixedTopics{"t": topicOf("t", 4)}
	var cs []*Coordinator
	for i := 0; i < 2; i++ {
		c := New(Options{Store: offset.NewStore(files), Topics: topics, Serving: own.Serving(i), Changed: own.Changed})
		c.Start()
		t.Cleanup(c.Close)
		cs = append(cs, c)
	}
	join := func(c *Coordinator, member string) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "moving", member, 60000
		req.SubscribedTopicNames, req.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		return heartbeatAt(c, req)
	}
	beat := func(c *Coordinator, member string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = "moving", member, epoch
		return heartbeatAt(c, req)
	}
	r := join(cs[0], "m")
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || len(r.Assignment.Topics[0].Partitions) != 4 {
		t.Fatalf("join: %+v", r)
	}
	tid := topics["t"].ID
	offs := offset.Topics{"t": {0: {Offset: 7, TopicID: fmt.Sprintf("%x", tid[:])}}}
	if e := cs[0].CommitOffsets(context.Background(), "moving", Committer{Generation: 1, MemberID: "m", Version: 9}, offs); e != nil {
		t.Fatal(e)
	}
	if r := beat(cs[1], "m", 1); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("at the gateway that does not coordinate it: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	own.Move(1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := beat(cs[1], "m", 1)
		if r.ErrorCode == 0 {
			if r.MemberEpoch != 1 || r.Assignment != nil {
				t.Fatalf("at the new coordinator: epoch %d, assignment %+v; want epoch 1, unchanged", r.MemberEpoch, r.Assignment)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("at the new coordinator: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if e := cs[1].CommitOffsets(context.Background(), "moving", Committer{Generation: 1, MemberID: "m", Version: 9}, offs); e != nil {
		t.Fatalf("a commit at the new coordinator: %v", e)
	}
	d := cs[1].DescribeConsumer(context.Background(), "moving")
	if d.ErrorCode != 0 || d.State != "Stable" || d.Epoch != 1 || len(d.Members) != 1 || len(d.Members[0].Assignment.TopicPartitions) != 1 {
		t.Fatalf("described at the new coordinator: %+v", d)
	}
	// A second member joins there, and the group goes on.
	if r := join(cs[1], "n"); r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("a second member at the new coordinator: %+v", r)
	}
}
