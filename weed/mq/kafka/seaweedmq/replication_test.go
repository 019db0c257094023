package seaweedmq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/pb/master_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/wal"
)

// topology is a cluster of data centers of racks of n servers each.
func topology(dcs ...[]int) *master_pb.TopologyInfo {
	t := &master_pb.TopologyInfo{}
	for _, racks := range dcs {
		dc := &master_pb.DataCenterInfo{}
		for _, n := range racks {
			r := &master_pb.RackInfo{}
			for range n {
				r.DataNodeInfos = append(r.DataNodeInfos, &master_pb.DataNodeInfo{})
			}
			dc.RackInfos = append(dc.RackInfos, r)
		}
		t.DataCenterInfos = append(t.DataCenterInfos, dc)
	}
	return t
}

// A factor is its replication string at the spread asked for, and is
// placed where SeaweedFS would place its copies.
func TestReplicationFactorPlacement(t *testing.T) {
	for _, c := range []struct {
		factor      int16
		spread      string
		replication string
	}{{1, SpreadServer, "000"}, {3, SpreadServer, "002"}, {3, SpreadRack, "020"}, {2, SpreadDataCenter, "100"}} {
		if got := replicationFor(c.factor, c.spread); got != c.replication || copiesOf(got) != c.factor {
			t.Errorf("factor %d spread %s: %s (%d copies), want %s", c.factor, c.spread, got, copiesOf(got), c.replication)
		}
	}
	if copiesOf("") != 1 || copiesOf("011") != 3 {
		t.Errorf("copies of \"\" and 011: %d %d", copiesOf(""), copiesOf("011"))
	}
	for _, c := range []struct {
		topo        *master_pb.TopologyInfo
		replication string
		fits        bool
	}{
		{topology([]int{3}), "002", true},
		{topology([]int{3}), "003", false},
		{topology([]int{2, 2}), "002", false}, // no rack holds 3
		{topology([]int{2, 2}), "011", true},
		{topology([]int{1, 1, 1}), "020", true},
		{topology([]int{3}), "020", false},
		{topology([]int{1}, []int{1}), "100", true},
		{topology([]int{1}, []int{0}), "100", false}, // a data center without servers
		{topology([]int{1}), "000", true},
	} {
		if got := placeable(c.topo, c.replication); got != c.fits {
			t.Errorf("%s on %v: placeable %v, want %v", c.replication, c.topo, got, c.fits)
		}
	}
}

// While the cluster cannot place a topic's copies (a volume server lost),
// its chunks are written with as many as it can place, down to
// min.insync.replicas; fewer is NOT_ENOUGH_REPLICAS.
func TestReplicationWhileServersAreLost(t *testing.T) {
	c := &Client{}
	for _, x := range []struct {
		servers int
		min     int
		want    string
		err     error
	}{{3, 1, "002", nil}, {2, 1, "001", nil}, {2, 2, "001", nil}, {2, 3, "", kerr.NotEnoughReplicas}, {1, 1, "000", nil}} {
		c.view.topology, c.view.read = topology([]int{x.servers}), time.Now()
		got, err := c.replicationNow(context.Background(), wal.Replication{Want: "002", Min: x.min})
		if got != x.want || !errors.Is(err, x.err) && (err != nil || x.err != nil) {
			t.Errorf("%d servers, min %d: %q %v; want %q %v", x.servers, x.min, got, err, x.want, x.err)
		}
	}
	if n := narrower("020"); n != "010" {
		t.Errorf("narrower than 020: %s", n)
	}
	if n := narrower("110"); n != "100" {
		t.Errorf("narrower than 110: %s", n)
	}
}
