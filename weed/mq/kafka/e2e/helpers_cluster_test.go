package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Helpers the tests share about the cluster: three gateways on it, what one
// gateway alone says of brokers, leaders and coordinators, and the filer's
// files.

// gateways is the package's gateway and two more on the same cluster.
type gateways struct {
	t     *testing.T
	mu    sync.Mutex
	procs []*gatewayProc // procs[0] is gw
}

// threeGateways starts two gateways beside the package's one and waits
// until all three see each other. At cleanup the two stop and the
// package's gateway serves everything again.
func threeGateways(t *testing.T) *gateways {
	t.Helper()
	g := &gateways{t: t, procs: []*gatewayProc{gw}}
	for i := 2; i <= 3; i++ {
		p, err := startNamedGateway("gateway"+strconv.Itoa(i), cluster.master, 0)
		if err != nil {
			t.Fatal(err)
		}
		g.procs = append(g.procs, p)
	}
	t.Cleanup(func() {
		g.mu.Lock()
		extra := g.procs[1:]
		g.mu.Unlock()
		for _, p := range extra {
			p.stop()
		}
		// The package's gateway sees them gone, then serves what they
		// owned once it has held that view for the settle time.
		eventually(t, 30*time.Second, "the package's gateway alone again", func() error {
			if n := len(g.brokers(t, gw)); n != 1 {
				return fmt.Errorf("%d brokers", n)
			}
			return nil
		})
		time.Sleep(4 * time.Second)
	})
	eventually(t, 30*time.Second, "three gateways in every gateway's metadata", func() error {
		for _, p := range g.all() {
			if n := len(g.brokers(t, p)); n != 3 {
				return fmt.Errorf("%s lists %d brokers", p.addr, n)
			}
		}
		return nil
	})
	return g
}

func (g *gateways) all() []*gatewayProc {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.procs)
}

func (g *gateways) seeds() []string {
	var out []string
	for _, p := range g.all() {
		out = append(out, p.addr)
	}
	return out
}

// byAddr returns the gateway at a broker's address.
func (g *gateways) byAddr(addr string) (int, *gatewayProc) {
	for i, p := range g.all() {
		if p.addr == addr {
			return i, p
		}
	}
	g.t.Fatalf("no gateway at %s", addr)
	return -1, nil
}

// restart starts gateway i again on its port after it was killed.
func (g *gateways) restart(i int) error {
	g.mu.Lock()
	old := g.procs[i]
	g.mu.Unlock()
	name := "gateway" + strconv.Itoa(i+1)
	if i == 0 {
		name = "gateway"
	}
	p, err := startNamedGateway(name, cluster.master, old.port)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.procs[i] = p
	g.mu.Unlock()
	if i == 0 {
		gw = p
	}
	return nil
}

// metadata asks one gateway, and only it, about topic.
func metadataFrom(t *testing.T, p *gatewayProc, topic string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	if topic != "" {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	} else {
		req.Topics = []kmsg.MetadataRequestTopic{}
	}
	return askOne[*kmsg.MetadataResponse](t, p.addr, req)
}

func (g *gateways) brokers(t *testing.T, p *gatewayProc) []string {
	var out []string
	for _, b := range metadataFrom(t, p, "").Brokers {
		out = append(out, fmt.Sprintf("%d@%s:%d", b.NodeID, b.Host, b.Port))
	}
	slices.Sort(out)
	return out
}

// quorumFrom describes the quorum one gateway tells (DescribeQuorum v2):
// leader, voters, epoch.
func quorumFrom(t *testing.T, p *gatewayProc) string {
	t.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = 2
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}
	req.Topics = append(req.Topics, rt)
	resp := askOne[*kmsg.DescribeQuorumResponse](t, p.addr, req)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("DescribeQuorum from %s: %+v", p.addr, resp)
	}
	qp := resp.Topics[0].Partitions[0]
	var voters []int32
	for _, v := range qp.CurrentVoters {
		if v.LogEndOffset != qp.HighWatermark {
			return fmt.Sprintf("voter %d at %d of %d", v.ReplicaID, v.LogEndOffset, qp.HighWatermark)
		}
		voters = append(voters, v.ReplicaID)
	}
	slices.Sort(voters)
	return fmt.Sprintf("leader %d, %d voters %v, epoch %d, %d nodes", qp.LeaderID, len(voters), voters, qp.LeaderEpoch, len(resp.Nodes))
}

// leaders describes topic's leaders and epochs as one gateway tells them.
func leadersFrom(t *testing.T, p *gatewayProc, topic string) (string, map[int32]string) {
	resp := metadataFrom(t, p, topic)
	addr := map[int32]string{}
	for _, b := range resp.Brokers {
		addr[b.NodeID] = fmt.Sprintf("%s:%d", b.Host, b.Port)
	}
	var desc []string
	leaders := map[int32]string{}
	for _, mt := range resp.Topics {
		for _, mp := range mt.Partitions {
			desc = append(desc, fmt.Sprintf("p%d:%d@%d(err %d)", mp.Partition, mp.Leader, mp.LeaderEpoch, mp.ErrorCode))
			leaders[mp.Partition] = addr[mp.Leader]
		}
	}
	slices.Sort(desc)
	return fmt.Sprintf("controller %d, %s", resp.ControllerID, strings.Join(desc, " ")), leaders
}

// spreadTopic creates a topic whose partitions are led by two gateways at
// least, as p tells. The leaders follow from the topic's name (rendezvous
// hashing over the view, served once it has settled): with three gateways
// one in about 250 topics of six partitions has them all on one gateway,
// so such a topic is left for another.
func spreadTopic(t *testing.T, p *gatewayProc, partitions int32) string {
	t.Helper()
	for attempt := 0; ; attempt++ {
		topic := newTopic(t) + "-" + strconv.Itoa(attempt)
		createTopic(t, topic, partitions, nil)
		spread := map[string]bool{}
		var leaders map[int32]string
		for wait := 0; wait < 20 && len(spread) < 2; wait++ {
			if wait > 0 {
				time.Sleep(500 * time.Millisecond)
			}
			_, leaders = leadersFrom(t, p, topic)
			clear(spread)
			for _, l := range leaders {
				spread[l] = true
			}
		}
		if len(spread) >= 2 {
			return topic
		}
		if attempt == 4 {
			t.Fatalf("%d partitions led by %d gateway(s) for five topics: %v", partitions, len(spread), leaders)
		}
	}
}

// coordinatorFrom asks one gateway which gateway coordinates key.
func coordinatorFrom(t *testing.T, p *gatewayProc, typ int8, key string) string {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 3
	req.CoordinatorType, req.CoordinatorKey = typ, key
	resp := askOne[*kmsg.FindCoordinatorResponse](t, p.addr, req)
	if resp.ErrorCode != 0 {
		return "error " + kerr.ErrorForCode(resp.ErrorCode).Error()
	}
	return fmt.Sprintf("%s:%d", resp.Host, resp.Port)
}

// withFilerAt runs fn with a client of the filer at 127.0.0.1:port.
func withFilerAt(t *testing.T, port int, fn func(context.Context, filer_pb.SeaweedFilerClient) error) {
	t.Helper()
	addr := pb.ServerAddress("127.0.0.1:" + strconv.Itoa(port))
	opt := grpc.WithTransportCredentials(insecure.NewCredentials())
	if err := pb.WithGrpcFilerClient(false, 0, addr, opt, func(fc filer_pb.SeaweedFilerClient) error {
		return fn(ctxT(t), fc)
	}); err != nil {
		t.Fatal(err)
	}
}
