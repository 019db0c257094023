package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/mq/topic"
	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/schema_pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// checkTopic reads the whole topic and checks it holds exactly the records
// produced so far, at dense offsets, with their values.
func checkTopic(t *testing.T, topic string, produced map[int32][]string) {
	t.Helper()
	total := 0
	for _, v := range produced {
		total += len(v)
	}
	got := consumeN(t, topic, total)
	perPart := map[int32][]string{}
	for _, r := range got {
		if r.Offset != int64(len(perPart[r.Partition])) {
			t.Fatalf("partition %d: offset %d after %d records", r.Partition, r.Offset, len(perPart[r.Partition]))
		}
		perPart[r.Partition] = append(perPart[r.Partition], string(r.Value))
	}
	for p, want := range produced {
		if len(perPart[p]) != len(want) {
			t.Fatalf("partition %d: %d records, want %d", p, len(perPart[p]), len(want))
		}
		for i := range want {
			if perPart[p][i] != want[i] {
				t.Fatalf("partition %d offset %d: %q, want %q", p, i, perPart[p][i], want[i])
			}
		}
	}
	ends, err := kadm.NewClient(newClient(t)).ListEndOffsets(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset != int64(len(produced[o.Partition])) {
			t.Errorf("partition %d: high watermark %d, want %d", o.Partition, o.Offset, len(produced[o.Partition]))
		}
	})
}

// TestRestarts restarts the gateway, then the whole SeaweedFS, and checks
// that every acknowledged record is still there and offsets go on densely.
func TestRestarts(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 2, nil)
	produced := map[int32][]string{}
	produceBatch(t, topic, 0, 3000, produced)

	restartGateway(t)
	checkTopic(t, topic, produced)
	produceBatch(t, topic, 3000, 1000, produced)

	// The broker recovers its offset counter from a checkpoint it saves
	// every two seconds; make it stale, as a restart right after a burst
	// does, so the gateway must move the counter past the stored records.
	// The broker saves its own every two seconds when it changed: let it,
	// then overwrite it once more.
	staleCheckpoints(t, topic)
	time.Sleep(2500 * time.Millisecond)
	ranges := staleCheckpoints(t, topic)
	if err := cluster.restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 120*time.Second, "cluster back", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cl, err := kgo.NewClient(kgo.SeedBrokers(gw.addr))
		if err != nil {
			return err
		}
		defer cl.Close()
		_, err = kadm.NewClient(cl).ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		return gw.waitReady(5 * time.Second)
	})
	// Another SeaweedMQ client asking for the partitions' offsets makes the
	// broker load its stale counter before the gateway can correct the
	// checkpoint; the gateway must then move the counter itself.
	touchOffsets(t, topic, ranges)
	checkTopic(t, topic, produced)
	produceBatch(t, topic, 4000, 500, produced)
	checkTopic(t, topic, produced)
}

// touchOffsets asks the broker for the offsets of each partition range.
func touchOffsets(t *testing.T, topicName string, ranges [][2]int32) {
	t.Helper()
	opt := grpc.WithTransportCredentials(insecure.NewCredentials())
	err := pb.WithBrokerGrpcClient(false, "127.0.0.1:"+strconv.Itoa(cluster.brokerPort), opt, func(mc mq_pb.SeaweedMessagingClient) error {
		for _, r := range ranges {
			resp, err := mc.GetPartitionRangeInfo(ctxT(t), &mq_pb.GetPartitionRangeInfoRequest{
				Topic:     &schema_pb.Topic{Namespace: "kafka", Name: topicName},
				Partition: &schema_pb.Partition{RingSize: 2520, RangeStart: r[0], RangeStop: r[1]},
			})
			if err != nil {
				return err
			}
			if resp.Error != "" {
				return fmt.Errorf("%s", resp.Error)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// staleCheckpoints sets every partition's broker checkpoint of topic to
// offset 10, and returns the partitions' ring ranges.
func staleCheckpoints(t *testing.T, topic string) [][2]int32 {
	t.Helper()
	var ranges [][2]int32
	addr := pb.ServerAddress("127.0.0.1:" + strconv.Itoa(cluster.filerPort))
	opt := grpc.WithTransportCredentials(insecure.NewCredentials())
	err := pb.WithGrpcFilerClient(false, 0, addr, opt, func(fc filer_pb.SeaweedFilerClient) error {
		ctx := ctxT(t)
		topicDir := "/topics/kafka/" + topic
		var versions, parts []string
		if err := filer_pb.SeaweedList(ctx, fc, topicDir, "v", func(e *filer_pb.Entry, _ bool) error {
			if e.IsDirectory {
				versions = append(versions, topicDir+"/"+e.Name)
			}
			return nil
		}, "", false, math.MaxInt32); err != nil {
			return err
		}
		for _, v := range versions {
			if err := filer_pb.SeaweedList(ctx, fc, v, "", func(e *filer_pb.Entry, _ bool) error {
				if e.IsDirectory {
					parts = append(parts, v+"/"+e.Name)
					var r [2]int32
					if _, err := fmt.Sscanf(e.Name, "%d-%d", &r[0], &r[1]); err == nil {
						ranges = append(ranges, r)
					}
				}
				return nil
			}, "", false, math.MaxInt32); err != nil {
				return err
			}
		}
		if len(parts) == 0 {
			return fmt.Errorf("no partition directories under %s", topicDir)
		}
		for _, dir := range parts {
			if err := filer.SaveInsideFiler(ctx, fc, dir, "checkpoint.offset", binary.BigEndian.AppendUint64(nil, 10)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ranges
}

// A log segment is never named before the newest one of its partition:
// readers take name order for offset order, and list a partition from its
// newest segment on. Records keep the times they were stamped with, and
// those written back from the write-ahead log after a crash can be older
// than the segment before them: that segment written by another leader,
// or stamped by a gateway whose clock ran ahead. A fault run (seed
// 1796540009207329391) lost 120 acknowledged records so: the records one
// leader wrote back sorted before the segment of the leader before it,
// consumers skipped them, and the leader's producers' state missed them
// (their producers' retries were stored twice). Here the segment before
// is renamed to a year ahead, the gateway is killed with records only in
// its write-ahead log, and they are read back after its restart within
// 40 s, before the minute after which a partition is listed whole again.
func TestRecoveredAfterASegmentNamedAhead(t *testing.T) {
	name := newTopic(t)
	createTopic(t, name, 1, nil)
	cl := newClient(t)
	produce := func(values ...string) {
		for _, v := range values {
			produceSync(t, cl, &kgo.Record{Topic: name, Value: []byte(v)})
		}
	}
	produce("early-0", "early-1")
	var dir, first string
	eventually(t, 30*time.Second, "the first records in a segment", func() error {
		for d, names := range partitionSegments(t, cluster.filerPort, name) {
			if len(names) > 0 {
				dir, first = d, names[0]
				return nil
			}
		}
		return errors.New("no segment yet")
	})
	ahead := time.Now().AddDate(1, 0, 0).UTC().Format(topic.TIME_FORMAT)
	withFilerAt(t, cluster.filerPort, func(ctx context.Context, fc filer_pb.SeaweedFilerClient) error {
		_, err := fc.AtomicRenameEntry(ctx, &filer_pb.AtomicRenameEntryRequest{OldDirectory: dir, OldName: first, NewDirectory: dir, NewName: ahead})
		return err
	})
	// Acknowledged, in the write-ahead log, and not yet in a segment (a
	// tail waits 5 s) when the gateway dies.
	produce("late-0", "late-1", "late-2")
	gw.kill()
	g, err := startGateway(cluster.master, gw.port)
	if err != nil {
		t.Fatal(err)
	}
	gw = g

	reader := newClient(t, kgo.ConsumeTopics(name), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var got []string
	for len(got) < 5 && ctx.Err() == nil {
		reader.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%d:%s", r.Offset, r.Value)) })
	}
	want := []string{"0:early-0", "1:early-1", "2:late-0", "3:late-1", "4:late-2"}
	if !slices.Equal(got, want) {
		t.Fatalf("read %v within 40 s of the restart, want %v (segments: %v)", got, want, partitionSegments(t, cluster.filerPort, name))
	}
}
