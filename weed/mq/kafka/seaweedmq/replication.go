package seaweedmq

// Kafka's replication factor is the number of copies SeaweedFS keeps of a
// topic's files: its segments and its batches in the write-ahead log. A
// factor n is the replication string whose copies are n, spread at the
// level Options.Spread says (-replication.spread): n-1 other servers in
// the rack (00z), other racks in the data center (0y0), or other data
// centers (x00). A topic created with the default (-1), and topics made
// before factors were kept, have the cluster's own default replication
// (weed master -defaultReplication). A factor the cluster cannot place
// now is refused, as Kafka refuses more replicas than brokers.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/master_pb"
	"github.com/seaweedfs/seaweedfs/weed/storage/super_block"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/wal"
)

// The levels copies are spread at (-replication.spread).
const (
	SpreadServer     = "server"
	SpreadRack       = "rack"
	SpreadDataCenter = "datacenter"
)

// ParseSpread checks a -replication.spread value ("" is server).
func ParseSpread(s string) (string, error) {
	switch s {
	case "", SpreadServer:
		return SpreadServer, nil
	case SpreadRack, SpreadDataCenter:
		return s, nil
	}
	return "", fmt.Errorf("-replication.spread: %q is not server, rack or datacenter", s)
}

// MaxReplicationFactor is the most copies a replication string holds at
// one level (a digit) plus the first.
const MaxReplicationFactor = 10

// replicationFor is the replication string of factor copies spread at
// spread.
func replicationFor(factor int16, spread string) string {
	extra := strconv.Itoa(int(factor) - 1)
	switch spread {
	case SpreadRack:
		return "0" + extra + "0"
	case SpreadDataCenter:
		return extra + "00"
	}
	return "00" + extra
}

// copiesOf is the number of copies a replication string keeps (1 for
// "" and what does not parse).
func copiesOf(replication string) int16 {
	rp, err := super_block.NewReplicaPlacementFromString(replication)
	if err != nil {
		return 1
	}
	return int16(rp.GetCopyCount())
}

// clusterView is what the masters said last of the cluster's default
// replication and its servers. The masters are asked outside mu (two
// lookers at once may both ask), so that a slow master never holds up a
// topic's read, which takes the default replication.
type clusterView struct {
	defaultReplication atomic.Pointer[string]

	mu       sync.Mutex
	topology *master_pb.TopologyInfo
	read     time.Time
	warned   time.Time // last underReplicated warning
}

// defaultRepl is the default replication as last read ("" before).
func (v *clusterView) defaultRepl() string {
	if def := v.defaultReplication.Load(); def != nil {
		return *def
	}
	return ""
}

// clusterViewTTL bounds how old the servers looked at may be.
const clusterViewTTL = 10 * time.Second

// cluster returns the masters' default replication and topology, read
// again once older than clusterViewTTL.
func (c *Client) cluster(ctx context.Context) (string, *master_pb.TopologyInfo, error) {
	v := &c.view
	v.mu.Lock()
	topo, fresh := v.topology, time.Since(v.read) < clusterViewTTL
	v.mu.Unlock()
	if topo != nil && fresh {
		return v.defaultRepl(), topo, nil
	}
	var lastErr error = fmt.Errorf("%w: no master given", ErrUnavailable)
	for _, m := range c.opts.Masters {
		var def string
		err := pb.WithMasterClient(ctx, false, m, c.opts.Security.DialOption, false, func(mc master_pb.SeaweedClient) error {
			conf, err := mc.GetMasterConfiguration(ctx, &master_pb.GetMasterConfigurationRequest{})
			if err != nil {
				return err
			}
			list, err := mc.VolumeList(ctx, &master_pb.VolumeListRequest{TopologyOnly: true})
			if err != nil {
				return err
			}
			def, topo = conf.DefaultReplication, list.TopologyInfo
			return nil
		})
		if err == nil {
			v.defaultReplication.Store(&def)
			v.mu.Lock()
			v.topology, v.read = topo, time.Now()
			v.mu.Unlock()
			return def, topo, nil
		}
		lastErr = fmt.Errorf("%w: master %s: %v", ErrUnavailable, m, err)
	}
	return "", nil, lastErr
}

// lookAgain makes the next look at the cluster ask the masters: an
// assignment failed, perhaps for a server lost since.
func (c *Client) lookAgain() {
	c.view.mu.Lock()
	c.view.read = time.Time{}
	c.view.mu.Unlock()
}

// placeable reports whether the cluster's servers can hold replication's
// copies as SeaweedFS places them: one rack with z+1 servers, y other
// racks of its data center and x other data centers with a server each.
func placeable(topo *master_pb.TopologyInfo, replication string) bool {
	rp, err := super_block.NewReplicaPlacementFromString(replication)
	if err != nil {
		return false
	}
	dcs := 0
	fits := false
	for _, dc := range topo.GetDataCenterInfos() {
		racks, most := 0, 0
		for _, r := range dc.GetRackInfos() {
			if n := len(r.GetDataNodeInfos()); n > 0 {
				racks++
				most = max(most, n)
			}
		}
		if racks > 0 {
			dcs++
		}
		fits = fits || racks >= rp.DiffRackCount+1 && most >= rp.SameRackCount+1
	}
	return fits && dcs >= rp.DiffDataCenterCount+1
}

// replicationOf maps a CreateTopics replication factor (-1 or 0: the
// default)
// onto the replication string a new topic's files are written with ("":
// the cluster's default), refusing a factor the cluster cannot place
// with INVALID_REPLICATION_FACTOR.
func (c *Client) replicationOf(ctx context.Context, factor int16) (string, error) {
	if factor == -1 || factor == 0 {
		factor = c.opts.DefaultReplicationFactor
	}
	if factor == -1 {
		return "", nil
	}
	if factor < 1 || factor > MaxReplicationFactor {
		return "", fmt.Errorf("%w: the replication factor is between 1 and %d, or -1 for the default", kerr.InvalidReplicationFactor, MaxReplicationFactor)
	}
	replication := replicationFor(factor, c.opts.Spread)
	_, topo, err := c.cluster(ctx)
	if err != nil {
		return "", err
	}
	if !placeable(topo, replication) {
		where := map[string]string{SpreadServer: "volume servers in one rack", SpreadRack: "racks with volume servers in one data center", SpreadDataCenter: "data centers with volume servers"}[c.opts.Spread]
		return "", fmt.Errorf("%w: replication factor %d is SeaweedFS replication %s, which needs %d %s (-replication.spread=%s); the cluster has fewer",
			kerr.InvalidReplicationFactor, factor, replication, factor, where, c.opts.Spread)
	}
	return replication, nil
}

// replicationFactor is the factor a topic's replication string reports
// ("": the cluster's default, as last read; 1 if never read).
func (c *Client) replicationFactor(replication string) int16 {
	if replication == "" {
		replication = c.view.defaultRepl()
	}
	return copiesOf(replication)
}

// replication is the topic's copies: its files' replication, and at
// least min.insync.replicas of them.
func (c *Client) replicationOfTopic(e *topicEntry) wal.Replication {
	min, err := strconv.Atoi(c.infoOf(e).Configs["min.insync.replicas"])
	if err != nil || min < 1 {
		min = 1
	}
	return wal.Replication{Want: e.replicationWant, Min: min}
}

// dirReplication is the replication of the topic a partition directory is
// of (the cluster's default for a topic gone).
func (c *Client) dirReplication(ctx context.Context, dir string) (wal.Replication, error) {
	e, err := c.topic(ctx, c.l.topicOf(dir))
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return wal.Replication{Min: 1}, nil
	}
	if err != nil {
		return wal.Replication{}, err
	}
	return c.replicationOfTopic(e), nil
}

// replicationNow is the replication to write a topic's chunks with now:
// the one it wants, or, while the cluster cannot place that many copies
// (a volume server lost, for good or for a while), the widest it can
// place of at least r.Min copies, as Kafka goes on writing to the
// replicas left in sync down to min.insync.replicas. The chunks written
// meanwhile keep their fewer copies (Kafka's replicas catch up; SeaweedFS
// does not add copies to a volume of another replication). Fewer than
// r.Min is NOT_ENOUGH_REPLICAS. When the masters cannot be asked, the
// one wanted.
func (c *Client) replicationNow(ctx context.Context, r wal.Replication) (string, error) {
	if r.Want == "" || copiesOf(r.Want) <= 1 {
		return r.Want, nil
	}
	_, topo, err := c.cluster(ctx)
	if err != nil {
		return r.Want, nil
	}
	for repl := r.Want; int(copiesOf(repl)) >= max(r.Min, 1); repl = narrower(repl) {
		if placeable(topo, repl) {
			if repl != r.Want {
				c.underReplicated(r.Want, repl)
			}
			return repl, nil
		}
		if copiesOf(repl) == 1 {
			break
		}
	}
	return "", fmt.Errorf("%w: the cluster cannot place %d copies (min.insync.replicas) of replication %s", kerr.NotEnoughReplicas, r.Min, r.Want)
}

// narrower is a replication of one copy fewer: one server of the rack,
// else a rack, else a data center less.
func narrower(replication string) string {
	rp, err := super_block.NewReplicaPlacementFromString(replication)
	if err != nil {
		return "000"
	}
	switch {
	case rp.SameRackCount > 0:
		rp.SameRackCount--
	case rp.DiffRackCount > 0:
		rp.DiffRackCount--
	case rp.DiffDataCenterCount > 0:
		rp.DiffDataCenterCount--
	}
	return rp.String()
}

// underReplicated logs, once a minute at most, that chunks are written
// with fewer copies than their topic's factor.
func (c *Client) underReplicated(want, got string) {
	c.view.mu.Lock()
	defer c.view.mu.Unlock()
	if time.Since(c.view.warned) < time.Minute {
		return
	}
	c.view.warned = time.Now()
	glog.Warningf("kafka gateway: the cluster cannot place replication %s now (%d copies): writing with %s (%d copies), as min.insync.replicas allows, until it can", want, copiesOf(want), got, copiesOf(got))
}
