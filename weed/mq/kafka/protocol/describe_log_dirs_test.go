package protocol_test

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
)

// logDirSizes are the partitions DescribeLogDirs reports, but the internal
// topics'.
func logDirSizes(t *testing.T, resp *kmsg.DescribeLogDirsResponse) map[string]int64 {
	t.Helper()
	if len(resp.Dirs) != 1 {
		t.Fatalf("%d log directories", len(resp.Dirs))
	}
	out := map[string]int64{}
	for _, dt := range resp.Dirs[0].Topics {
		if internal(dt.Topic) {
			continue
		}
		for _, p := range dt.Partitions {
			out[dt.Topic+"/"+strconv.Itoa(int(p.Partition))] = p.Size
		}
	}
	return out
}

// DescribeLogDirs v0-5: one directory, SeaweedMQ's, with every partition
// this gateway leads and its size (all topics with a null list); total and
// usable bytes unknown (-1, v4+); never cordoned (v5). Partitions and
// topics that do not exist are left out.
func TestDescribeLogDirsVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrDescribeLogDirsRequest(), 0, 5)
	g.topic(t, "dld-a", 2, nil)
	g.topic(t, "dld-b", 1, nil)
	g.write(t, "dld-a", 1, 0, "12345", "678")
	for v := int16(0); v <= 5; v++ {
		resp := roundTrip(t, g.addr, kmsg.NewPtrDescribeLogDirsRequest(), v).(*kmsg.DescribeLogDirsResponse)
		sizes := logDirSizes(t, resp)
		if len(sizes) != 3 || sizes["dld-a/0"] != 0 || sizes["dld-a/1"] != 8 || sizes["dld-b/0"] != 0 {
			t.Errorf("v%d: sizes %v", v, sizes)
		}
		d := resp.Dirs[0]
		if d.Dir != protocol.LogDir || d.ErrorCode != 0 || (v >= 4 && (d.TotalBytes != -1 || d.UsableBytes != -1)) || d.IsCordoned {
			t.Errorf("v%d: dir %q %s total %d usable %d cordoned %v", v, d.Dir, errName(d.ErrorCode), d.TotalBytes, d.UsableBytes, d.IsCordoned)
		}
	}
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Topics = []kmsg.DescribeLogDirsRequestTopic{{Topic: "dld-a", Partitions: []int32{1, 5}}, {Topic: "dld-none", Partitions: []int32{0}}}
	if sizes := logDirSizes(t, roundTrip(t, g.addr, req, 4).(*kmsg.DescribeLogDirsResponse)); len(sizes) != 1 || sizes["dld-a/1"] != 8 {
		t.Errorf("named: %v", sizes)
	}
}

// With an authorizer it needs Describe on the cluster: from v3
// CLUSTER_AUTHORIZATION_FAILED, before no directories.
func TestDescribeLogDirsAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true})
	g.topic(t, "dlda", 1, nil)
	for v := int16(0); v <= 5; v++ {
		resp := roundTrip(t, g.addr, kmsg.NewPtrDescribeLogDirsRequest(), v).(*kmsg.DescribeLogDirsResponse)
		if v >= 3 {
			code(t, "without Describe on the cluster", resp.ErrorCode, kerr.ClusterAuthorizationFailed)
		}
		if len(resp.Dirs) != 0 {
			t.Errorf("v%d: %d directories shown", v, len(resp.Dirs))
		}
	}
	g.allow(t, binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, acl.ClusterName))
	if sizes := logDirSizes(t, roundTrip(t, g.addr, kmsg.NewPtrDescribeLogDirsRequest(), 5).(*kmsg.DescribeLogDirsResponse)); len(sizes) != 1 {
		t.Errorf("with Describe: %v", sizes)
	}
}

// In a cluster of gateways each reports only the partitions it leads, so
// that a tool asking every broker counts each partition once.
func TestDescribeLogDirsLeaders(t *testing.T) {
	fc := newFakeCluster(0, map[string]fakeOwner{
		membership.PartitionKey("dll", 0): {0, 0},
		membership.PartitionKey("dll", 1): {1, 0},
	})
	g := startGateway(t, gatewayOptions{cluster: fc})
	g.topic(t, "dll", 3, nil)
	g.write(t, "dll", 0, 0, "xy")
	if sizes := logDirSizes(t, roundTrip(t, g.addr, kmsg.NewPtrDescribeLogDirsRequest(), 4).(*kmsg.DescribeLogDirsResponse)); len(sizes) != 1 || sizes["dll/0"] != 2 {
		t.Errorf("sizes %v, want only partition 0 (led here)", sizes)
	}
}
