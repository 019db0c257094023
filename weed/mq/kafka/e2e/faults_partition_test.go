package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPartitionedGateway: a gateway cut off from SeaweedFS and the other
// gateways, while its clients still reach it (the minority side of a
// split), stops answering as a leader and a coordinator: its produce and
// offset commit requests get NOT_LEADER_OR_FOLLOWER and NOT_COORDINATOR;
// the other two take its partition and group over and serve them; and
// nothing it acknowledged after the cut is missing from what they serve.
// The times measured are logged (they are in docs/faults.md).
func TestPartitionedGateway(t *testing.T) {
	t.Parallel()
	c := startFaultCluster(t)
	seeds := c.seeds()
	topic := createTopicAt(t, seeds, 6)
	// The gateway cut off (g1, "the cut gateway") is the leader of the
	// topic's partition 0; g2 is another.
	var partition int32
	var g1, g2 *gatewayProc
	var victim string
	var others []string
	eventually(t, 30*time.Second, "partition 0's leader", func() error {
		_, leaders := leadersFrom(t, c.gateway("gw1"), topic)
		for _, node := range gatewayNodes {
			if g := c.gateway(node); g.addr == leaders[partition] {
				g1, victim = g, node
			}
		}
		if g1 == nil {
			return fmt.Errorf("leaders %v", leaders)
		}
		return nil
	})
	for _, node := range gatewayNodes {
		if node != victim {
			others = append(others, node)
		}
	}
	g2 = c.gateway(others[0])
	group := ""
	for i := 0; group == ""; i++ {
		if g := "partitioned-" + strconv.Itoa(i); coordinatorFrom(t, g1, 0, g) == g1.addr {
			group = g
		}
	}
	tp := fmt.Sprintf("%s/%d", topic, partition)
	t.Logf("%s leads %s and coordinates group %s", victim, tp, group)

	produce := func(addr, value string) (int16, int64) {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 9, -1, 3000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = partition, batchOf([]byte(value))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r := askOne[*kmsg.ProduceResponse](t, addr, req).Topics[0].Partitions[0]
		return r.ErrorCode, r.BaseOffset
	}
	commit := func(addr string) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation = 7, group, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = partition, 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return askOne[*kmsg.OffsetCommitResponse](t, addr, req).Topics[0].Partitions[0].ErrorCode
	}
	if code, _ := produce(g1.addr, "before"); code != 0 {
		t.Fatalf("produce to the cut gateway before the cut: %v", kerr.ErrorForCode(code))
	}
	if code := commit(g1.addr); code != 0 {
		t.Fatalf("commit to the cut gateway before the cut: %v", kerr.ErrorForCode(code))
	}

	c.net.isolate(victim, append(append([]string{}, seaweedNodes...), others...)...)
	cut := time.Now()
	acked := map[int64]string{} // what g1 acknowledged after the cut
	var notLeader, notCoordinator time.Duration
	codes := map[string]int{}
	for i := 0; notLeader == 0 || notCoordinator == 0; i++ {
		if time.Since(cut) > time.Minute {
			t.Fatalf("the cut gateway still answers as leader or coordinator a minute after the cut: %v", codes)
		}
		if notLeader == 0 {
			v := "after-" + strconv.Itoa(i)
			code, offset := produce(g1.addr, v)
			codes["produce "+kerr.ErrorForCode(code).Error()]++
			switch {
			case code == 0:
				acked[offset] = v
			case code == kerr.NotLeaderForPartition.Code:
				notLeader = time.Since(cut)
			}
		}
		if notCoordinator == 0 {
			code := commit(g1.addr)
			codes["commit "+kerr.ErrorForCode(code).Error()]++
			if code == kerr.NotCoordinator.Code {
				notCoordinator = time.Since(cut)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the cut gateway: NOT_LEADER_OR_FOLLOWER after %v, NOT_COORDINATOR after %v; answers meanwhile: %v",
		notLeader.Round(100*time.Millisecond), notCoordinator.Round(100*time.Millisecond), codes)

	var served, coordinated time.Duration
	var end int64
	for served == 0 || coordinated == 0 {
		if time.Since(cut) > 2*time.Minute {
			t.Fatal("the others do not serve the cut gateway's partition and group two minutes after the cut")
		}
		if served == 0 {
			if _, leaders := leadersFrom(t, g2, topic); leaders[partition] != "" && leaders[partition] != g1.addr {
				if code, offset := produce(leaders[partition], "moved"); code == 0 {
					served, end = time.Since(cut), offset
				}
			}
		}
		if coordinated == 0 {
			if addr := coordinatorFrom(t, g2, 0, group); addr != g1.addr && len(addr) > 0 && addr[0] != 'e' && commit(addr) == 0 {
				coordinated = time.Since(cut)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the others serve %s after %v and group %s after %v", tp, served.Round(100*time.Millisecond), group, coordinated.Round(100*time.Millisecond))

	// The new leader takes writes; then the cut heals, and g1, which
	// may still hold what it took during the cut, leads the partition
	// again (the view gives it back) and takes writes too.
	acks := map[int64]string{}
	for i := 0; i < 20; i++ {
		_, leaders := leadersFrom(t, g2, topic)
		v := "new-leader-" + strconv.Itoa(i)
		if code, offset := produce(leaders[partition], v); code == 0 {
			acks[offset] = v
		}
	}
	c.net.heal()
	healed := time.Now()
	eventually(t, time.Minute, "the cut gateway leading its partition again", func() error {
		if _, leaders := leadersFrom(t, g2, topic); leaders[partition] != g1.addr {
			return fmt.Errorf("led by %s", leaders[partition])
		}
		if code, offset := produce(g1.addr, "back"); code != 0 {
			return kerr.ErrorForCode(code)
		} else {
			acks[offset] = "back"
		}
		return nil
	})
	t.Logf("the cut gateway leads %s again %v after the heal", tp, time.Since(healed).Round(100*time.Millisecond))
	for i := 0; i < 5; i++ {
		v := "after-heal-" + strconv.Itoa(i)
		if code, offset := produce(g1.addr, v); code == 0 {
			acks[offset] = v
		}
	}
	for off, v := range acked {
		acks[off] = v
	}

	// Everything acknowledged, by g1 after the cut and by either leader
	// since, is where it was said to be, once.
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for off := range acks {
		end = max(end, off)
	}
	got := map[int64]string{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	last := int64(-1)
	for last < end && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[r.Offset], last = string(r.Value), r.Offset })
	}
	for off, v := range acks {
		if got[off] != v {
			t.Errorf("%q acknowledged at offset %d; offset %d holds %q", v, off, off, got[off])
		}
	}
	at := map[string]int64{}
	for off, v := range got {
		if prev, dup := at[v]; dup {
			t.Errorf("%q at offsets %d and %d", v, prev, off)
		}
		at[v] = off
	}
	t.Logf("%d records acknowledged (%d by the cut gateway while cut off), all at their offsets", len(acks), len(acked))
}
