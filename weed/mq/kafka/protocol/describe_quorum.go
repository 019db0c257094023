package protocol

// DescribeQuorum, versions 0-2: what kafka-metadata-quorum.sh describes,
// told as it is of the gateways. The cluster has no KRaft log: its
// metadata is the filer's, and its one agreed state is the gateways' view
// (package membership), written by the lowest node id among them. So the
// quorum of __cluster_metadata's partition 0 is the view: its leader is the
// gateway that writes it (Metadata's controller), its leader epoch and high
// watermark the view's epoch, its voters the gateways in it, each at the
// view's epoch (a gateway is in the view only while it holds its filer
// lock, so each was heard from within the lock's lifetime; the answer says
// now), and no observers. DESCRIBE on the cluster is needed, as in Kafka.

import (
	"context"
	"net"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
)

func init() { register(kmsg.DescribeQuorum, 0, 2, (*Handler).handleDescribeQuorum) }

// metadataTopic is KRaft's metadata log, the one topic DescribeQuorum
// describes.
const metadataTopic = "__cluster_metadata"

func (h *Handler) handleDescribeQuorum(_ context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if !h.allowedCluster(r, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return now(resp)
	}
	epoch := int64(0)
	if v, ok := h.cluster.(interface{ Epoch() int64 }); ok {
		epoch = v.Epoch()
	}
	members := h.brokers()
	nowMs := clock.Now().UnixMilli()
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeQuorumResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDescribeQuorumResponseTopicPartition()
			sp.Partition = rp.Partition
			if rt.Topic != metadataTopic || rp.Partition != 0 {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if r.Version >= 2 {
					msg := "only " + metadataTopic + "'s partition 0 has a quorum"
					sp.ErrorMessage = &msg
				}
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			sp.LeaderID, sp.LeaderEpoch, sp.HighWatermark = h.cluster.Controller(), int32(epoch), epoch
			for _, m := range members {
				v := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
				v.ReplicaID, v.LogEndOffset = m.NodeID, epoch
				v.LastFetchTimestamp, v.LastCaughtUpTimestamp = nowMs, nowMs
				sp.CurrentVoters = append(sp.CurrentVoters, v)
			}
			sp.Observers = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if r.Version >= 2 {
		for _, m := range members {
			n := kmsg.NewDescribeQuorumResponseNode()
			n.NodeID = m.NodeID
			n.Listeners = quorumListeners(m, r.Listener)
			resp.Nodes = append(resp.Nodes, n)
		}
	}
	return now(resp)
}

// quorumListeners are a gateway's advertised listeners by name; one named
// as the request's listener for a gateway with a single one.
func quorumListeners(m membership.Member, listener string) []kmsg.DescribeQuorumResponseNodeListener {
	var out []kmsg.DescribeQuorumResponseNodeListener
	for l := range strings.SplitSeq(m.Listeners, ",") {
		name, addr, ok := strings.Cut(l, "://")
		host, port, err := net.SplitHostPort(addr)
		p, perr := strconv.ParseUint(port, 10, 16)
		if !ok || err != nil || perr != nil {
			continue
		}
		out = append(out, kmsg.DescribeQuorumResponseNodeListener{Name: name, Host: host, Port: uint16(p)})
	}
	if len(out) == 0 {
		if listener == "" {
			listener = "PLAINTEXT"
		}
		out = append(out, kmsg.DescribeQuorumResponseNodeListener{Name: listener, Host: m.Host, Port: uint16(m.Port)})
	}
	return out
}
