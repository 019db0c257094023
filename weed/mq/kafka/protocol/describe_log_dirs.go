package protocol

// DescribeLogDirs, versions 0-5: one log directory, SeaweedMQ's
// /topics/kafka in the filer, with each partition's size (its log segments
// in the filer; records the broker holds unflushed are not counted). Its
// total and usable bytes are SeaweedFS's, not known here (-1, as Kafka
// answers for an unknown volume); it is never cordoned (v5). A gateway
// reports the partitions it leads, as a Kafka broker reports the replicas
// it holds, so that a tool asking every broker counts each partition once.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
)

func init() { register(kmsg.DescribeLogDirs, 0, 5, (*Handler).handleDescribeLogDirs) }

// LogDir is the one log directory DescribeLogDirs reports, unless
// Config.LogDir names the cluster's.
const LogDir = "/topics/kafka"

func (h *Handler) handleDescribeLogDirs(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DescribeLogDirsRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
		dir := kmsg.NewDescribeLogDirsResponseDir()
		dir.Dir, dir.TotalBytes, dir.UsableBytes = h.cfg.LogDir, -1, -1
		if !h.allowedCluster(r, kmsg.ACLOperationDescribe) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code // v3+; older versions get no directories
			return resp, nil
		}
		topics := req.Topics
		if topics == nil {
			all, err := h.backend.ListTopics(ctx)
			if err != nil {
				dir.ErrorCode = kafkaErr(err, kerr.KafkaStorageError).Code
				resp.Dirs = append(resp.Dirs, dir)
				return resp, nil
			}
			for _, t := range all {
				rt := kmsg.NewDescribeLogDirsRequestTopic()
				rt.Topic = t.Name
				for p := int32(0); p < t.Partitions; p++ {
					rt.Partitions = append(rt.Partitions, p)
				}
				topics = append(topics, rt)
			}
		}
		for _, rt := range topics {
			info, err := h.describeTopic(ctx, rt.Topic)
			if err != nil {
				continue // Kafka leaves out what it does not have
			}
			dt := kmsg.NewDescribeLogDirsResponseDirTopic()
			dt.Topic = info.Name
			for _, p := range rt.Partitions {
				if p < 0 || p >= info.Partitions {
					continue
				}
				if leader, _, ok := h.cluster.Owner(membership.PartitionKey(info.Name, p)); !ok || leader.NodeID != h.cfg.NodeID {
					continue
				}
				size, err := h.backend.PartitionSize(ctx, info.Name, p)
				if err != nil {
					continue
				}
				dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
				dp.Partition, dp.Size = p, size
				dt.Partitions = append(dt.Partitions, dp)
			}
			dir.Topics = append(dir.Topics, dt)
		}
		resp.Dirs = append(resp.Dirs, dir)
		return resp, nil
	}
}
