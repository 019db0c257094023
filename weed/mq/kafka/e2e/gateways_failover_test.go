package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// epochsFrom gives topic's leader epochs as one gateway tells them.
func epochsFrom(t *testing.T, p *gatewayProc, topic string) map[int32]int32 {
	out := map[int32]int32{}
	for _, mt := range metadataFrom(t, p, topic).Topics {
		for _, mp := range mt.Partitions {
			out[mp.Partition] = mp.LeaderEpoch
		}
	}
	return out
}

// failover runs an idempotent producer and a two-member consumer group on
// three gateways while one gateway is killed (SIGKILL) and later started
// again, or (paused) stopped with SIGSTOP for 8 s, long enough for the
// others to take over what it led, and then let go on with what it was
// doing: the group's coordinator if coordinatorDies, otherwise one that
// leads partitions but not the group. Every acknowledged record is stored
// exactly once at dense offsets, and in the topic's Iceberg table once
// (its partitions' leaders commit to it every 200 ms meanwhile), the
// group consumes everything, and its commits never go backwards nor past
// what was consumed.
func failover(t *testing.T, coordinatorDies, paused bool) {
	g := threeGateways(t)
	const partitions = 6
	procs := g.all()
	topic := spreadTopic(t, procs[0], partitions)
	// The topic is a table too, its partitions committed by their
	// leaders every 200 ms: the fault strikes while they commit.
	keepAsTable(t, topic)

	// A group coordinated by an added gateway if it is to die, by the
	// package's gateway otherwise.
	var group string
	victim := -1
	_, leaders := leadersFrom(t, procs[0], topic)
	for i := 0; i < 500 && group == ""; i++ {
		name := fmt.Sprintf("%s-g%d", topic, i)
		idx, _ := g.byAddr(coordinatorFrom(t, procs[0], 0, name))
		switch {
		case coordinatorDies && idx != 0:
			group, victim = name, idx
		case !coordinatorDies && idx == 0:
			group = name
			for p := int32(0); p < partitions; p++ {
				if j, _ := g.byAddr(leaders[p]); j != 0 {
					victim = j
				}
			}
		}
	}
	if group == "" || victim < 0 {
		t.Fatalf("no group and gateway to kill found (leaders %v)", leaders)
	}
	t.Logf("group %s; killing %s", group, procs[victim].addr)
	epochs := epochsFrom(t, procs[0], topic)

	seeds := kgo.SeedBrokers(g.seeds()...)
	log := &consumedLog{}
	startMember(t, "m1", group, topic, log, seeds)
	startMember(t, "m2", group, topic, log, seeds)

	// Watch the group's commits while it runs.
	adm := kadm.NewClient(newClient(t, seeds))
	watchCtx, stopWatch := context.WithCancel(context.Background())
	var watchErr error
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		last := map[int32]int64{}
		for watchCtx.Err() == nil {
			time.Sleep(250 * time.Millisecond)
			ctx, cancel := context.WithTimeout(watchCtx, 5*time.Second)
			c, err := committed(ctx, adm, group, topic)
			cancel()
			if err != nil {
				continue // coordinator moving
			}
			consumed := map[int32]int64{}
			for _, r := range log.snapshot() {
				consumed[r.partition] = max(consumed[r.partition], r.offset+1)
			}
			for p, o := range c {
				if o < last[p] {
					watchErr = fmt.Errorf("partition %d: commit went back from %d to %d", p, last[p], o)
					return
				}
				if o > consumed[p] {
					watchErr = fmt.Errorf("partition %d: commit %d past the %d records consumed", p, o, consumed[p])
					return
				}
				last[p] = o
			}
		}
	}()

	cl := newClient(t, seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RetryTimeout(2*time.Minute))
	produced := produceIdempotent(t, cl, topic, partitions, 1200, func(<-chan struct{}) {
		time.Sleep(time.Second)
		if paused {
			p := g.all()[victim]
			t.Logf("SIGSTOP %s", p.addr)
			p.signal(syscall.SIGSTOP)
			time.Sleep(8 * time.Second)
			t.Logf("SIGCONT %s", p.addr)
			p.signal(syscall.SIGCONT)
			return
		}
		g.all()[victim].kill()
		time.Sleep(8 * time.Second)
		if err := g.restart(victim); err != nil {
			t.Error(err)
		}
	})
	exactlyOnce(t, topic, produced)
	tableExactlyOnce(t, topic, produced)
	waitConsumed(t, log, produced)
	hwm := highWatermarks(t, topic, produced)
	waitCommitted(t, group, topic, hwm)
	stopWatch()
	<-watched
	if watchErr != nil {
		t.Fatal(watchErr)
	}

	// The victim's partitions moved away and back: their leader epochs
	// grew; the others kept their leaders and epochs.
	eventually(t, 20*time.Second, "leaders as before the kill", func() error {
		_, now := leadersFrom(t, g.all()[0], topic)
		for p, l := range leaders {
			if now[p] != l {
				return fmt.Errorf("partition %d led by %s, before by %s", p, now[p], l)
			}
		}
		return nil
	})
	after := epochsFrom(t, g.all()[0], topic)
	for p, l := range leaders {
		moved := l == procs[victim].addr
		if moved && after[p] <= epochs[p] || !moved && after[p] != epochs[p] {
			t.Errorf("partition %d (led by %s, the victim %v): leader epoch %d, before %d", p, l, moved, after[p], epochs[p])
		}
	}
}

// TestGatewayKilled: a gateway leading partitions dies without a goodbye
// and comes back.
func TestGatewayKilled(t *testing.T) { failover(t, false, false) }

// TestGatewayCoordinatorKilled: the gateway coordinating the group dies
// without a goodbye and comes back.
func TestGatewayCoordinatorKilled(t *testing.T) { failover(t, true, false) }

// TestGatewayCoordinatorPaused: the gateway coordinating the group (and
// leading partitions) stops for 8 s (SIGSTOP) while the others take its
// group and partitions over, then goes on (SIGCONT) with what it had under
// way, acting on what it owned before: no committed offset goes back, no
// offset is written twice, no idempotent batch is stored twice.
func TestGatewayCoordinatorPaused(t *testing.T) { failover(t, true, true) }

// TestGatewaysTransactions: a consume-transform-produce session on three
// gateways whose transaction coordinator, group coordinator and partition
// leaders are on different gateways: markers and the group's offsets go
// from gateway to gateway. The transaction coordinator's gateway is killed
// (SIGKILL) after two commits and started again; every input is output
// exactly once read_committed, and the group's commits reach the input's
// end.
func TestGatewaysTransactions(t *testing.T) {
	g := threeGateways(t)
	in := newTopic(t)
	createTopic(t, in, 4, nil)
	createTopic(t, in+"-out", 3, nil)
	procs := g.all()
	group := in + "-group"
	groupAt, _ := g.byAddr(coordinatorFrom(t, procs[0], 0, group))
	var txnID string
	txnAt := -1
	for i := 0; i < 200 && txnID == ""; i++ {
		id := fmt.Sprintf("%s-txn%d", in, i)
		at, _ := g.byAddr(coordinatorFrom(t, procs[0], 1, id))
		if at != groupAt && at != 0 {
			txnID, txnAt = id, at
		}
	}
	if txnID == "" {
		t.Fatal("no transactional id coordinated apart from the group and the package's gateway")
	}
	_, leaders := leadersFrom(t, procs[0], in+"-out")
	t.Logf("group at %s, transactions at %s, output leaders %v", procs[groupAt].addr, procs[txnAt].addr, leaders)
	transactSession(t, in, group, txnID, []kgo.Opt{kgo.SeedBrokers(g.seeds()...)}, func() {
		g.all()[txnAt].kill()
		if err := g.restart(txnAt); err != nil {
			t.Fatal(err)
		}
	})
}
