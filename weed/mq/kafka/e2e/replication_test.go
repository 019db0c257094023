package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/master_pb"
)

// TestReplicatedTopic: a SeaweedFS of three volume servers (each process
// apart) and three gateways. Replication factor 3 is SeaweedFS's 002:
// every volume of the topic's files has three copies, and Metadata lists
// three replicas, all in sync; factor 4 is refused, as Kafka refuses more
// replicas than brokers. Under an idempotent and a plain acks=all load, a
// volume server is SIGKILLed and its disk deleted for good: produce goes
// on (with the copies the two left can hold, min.insync.replicas being 1)
// and every acknowledged record is read back, the idempotent producer's
// once each. With a third volume server again (its disk new), Kafka's
// kafka-topics creates a topic of factor 3 and describes it so, a
// Connect worker runs with its default factors (ReplicatedClusterTest),
// and so does MirrorMaker 2 (MirrorMakerTest).
func TestReplicatedTopic(t *testing.T) {
	t.Parallel() // alone on a cluster of its own: beside the others, at the end
	c := startSplitClusterWith(t, splitOptions{brokers: 1, volumes: 3})
	var gws [3]*gatewayProc
	for i := range gws {
		chaosGateway(t, fmt.Sprintf("replicated-gateway%d", i+1), c.master, &gws[i])
	}
	seeds := []string{gws[0].addr, gws[1].addr, gws[2].addr}
	waitGateways(t, seeds)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	if r, _ := adm.CreateTopic(ctxT(t), 1, 4, nil, newTopic(t)); !errors.Is(r.Err, kerr.InvalidReplicationFactor) {
		t.Errorf("replication factor 4 on three volume servers: %v, want INVALID_REPLICATION_FACTOR", r.Err)
	}
	topic := newTopic(t)
	created, err := adm.CreateTopic(ctxT(t), 2, 3, nil, topic)
	if err != nil || created.Err != nil || created.ReplicationFactor != 3 {
		t.Fatalf("create with replication factor 3: %v %+v", err, created)
	}
	eventually(t, time.Minute, "three replicas of each partition, all in sync", func() error {
		md, err := adm.Metadata(ctxT(t), topic)
		if err != nil {
			return err
		}
		for p, pd := range md.Topics[topic].Partitions {
			if len(pd.Replicas) != 3 || len(pd.ISR) != 3 || pd.Replicas[0] != pd.Leader {
				return fmt.Errorf("partition %d: leader %d, replicas %v, isr %v", p, pd.Leader, pd.Replicas, pd.ISR)
			}
		}
		return nil
	})

	acks, stopLoad := mixedLoad(t, seeds, topic, 40000)
	acks.progress(t, 2, 1500, "the start")
	eventually(t, time.Minute, "segments written", func() error {
		if copies := topicCopies(t, c); copies != 3 {
			return fmt.Errorf("the topics' volumes have %d copies, want 3 (replication 002)", copies)
		}
		return nil
	})
	c.kill("volume2")
	if err := os.RemoveAll(filepath.Join(c.dir, "volume2")); err != nil {
		t.Fatal(err)
	}
	t.Logf("volume2's disk deleted")
	acks.progress(t, 2, 1500, "a volume server lost for good")
	stopLoad()
	t.Logf("%d records acknowledged, %d failed; longest time without an acknowledgement %v", acks.count(), acks.failed, acks.longestGap())
	checkAcknowledged(t, gws[0].addr, topic, acks, map[int32]bool{0: true})

	// Kafka's kafka-topics and Connect with its default factors, on the
	// two volume servers left and a third one new: factor 3 again.
	if err := os.MkdirAll(filepath.Join(c.dir, "volume2"), 0o755); err != nil {
		t.Fatal(err)
	}
	c.start("volume2")
	eventually(t, time.Minute, "three volume servers again", func() error {
		if n := volumeServers(t, c); n != 3 {
			return fmt.Errorf("%d volume servers", n)
		}
		return nil
	})
	if n := runJavaTests(t, "java", "-Dtest=ReplicatedClusterTest", "-Dkafka.bootstrap="+gws[0].addr); n != 2 {
		t.Errorf("%d tests of ReplicatedClusterTest ran, want 2", n)
	}
	if n := runJavaTests(t, "java/mirrormaker", "-Dtest=MirrorMakerTest", "-Dkafka.bootstrap="+gws[0].addr); n != 1 {
		t.Errorf("%d tests of MirrorMakerTest ran, want 1", n)
	}
}

// volumeServers counts the volume servers the masters know.
func volumeServers(t *testing.T, c *splitCluster) int {
	t.Helper()
	n := 0
	withMaster(t, c, func(ctx context.Context, mc master_pb.SeaweedClient) error {
		resp, err := mc.VolumeList(ctx, &master_pb.VolumeListRequest{TopologyOnly: true})
		for _, dc := range resp.GetTopologyInfo().GetDataCenterInfos() {
			for _, r := range dc.GetRackInfos() {
				n += len(r.GetDataNodeInfos())
			}
		}
		return err
	})
	return n
}

// withMaster runs fn with a client of the cluster's master.
func withMaster(t *testing.T, c *splitCluster, fn func(context.Context, master_pb.SeaweedClient) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := pb.WithMasterClient(ctx, false, pb.ServerAddress(c.master), grpc.WithTransportCredentials(insecure.NewCredentials()), false,
		func(mc master_pb.SeaweedClient) error { return fn(ctx, mc) })
	if err != nil {
		t.Fatal(err)
	}
}

// topicCopies is the fewest copies the cluster keeps of a volume of the
// topics' collection, by the masters' count of each volume's locations.
func topicCopies(t *testing.T, c *splitCluster) int {
	t.Helper()
	fewest := 0
	withMaster(t, c, func(ctx context.Context, mc master_pb.SeaweedClient) error {
		resp, err := mc.VolumeList(ctx, &master_pb.VolumeListRequest{Collection: "topics"})
		if err != nil {
			return err
		}
		locations := map[uint32]int{}
		for _, dc := range resp.TopologyInfo.GetDataCenterInfos() {
			for _, r := range dc.GetRackInfos() {
				for _, n := range r.GetDataNodeInfos() {
					for _, d := range n.GetDiskInfos() {
						for _, v := range d.GetVolumeInfos() {
							if v.Collection == "topics" {
								locations[v.Id]++
							}
						}
					}
				}
			}
		}
		for _, n := range locations {
			if fewest == 0 || n < fewest {
				fewest = n
			}
		}
		return nil
	})
	return fewest
}
