package protocol

// OffsetCommit, versions 0-10. A commit is acknowledged only once it is in
// the filer. Members commit with their generation (members of a consumer
// group of KIP-848 with their member epoch, v9+: STALE_MEMBER_EPOCH for an
// epoch ahead, or behind for a partition given since; UNSUPPORTED_VERSION
// before v9; GROUP_ID_NOT_FOUND for no group); a group-less consumer
// commits with generation -1 and no member id (v0 has neither), which
// Kafka allows while the group has no members. Partitions of unknown
// topics get UNKNOWN_TOPIC_OR_PARTITION, metadata over 4096 bytes
// OFFSET_METADATA_TOO_LARGE. v1's commit timestamp and v2-4's retention
// time are accepted and not used: offsets are kept until the group is
// deleted. v10 names topics by id.

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

func init() { register(kmsg.OffsetCommit, 0, 10, (*Handler).handleOffsetCommit) }

// offsetCommitTimeout is how long an offset commit waits to be stored:
// Kafka's offsets.commit.timeout.ms.
const offsetCommitTimeout = 5 * time.Second

func (h *Handler) handleOffsetCommit(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.OffsetCommitRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		who := group.Committer{Generation: req.Generation, MemberID: req.MemberID, InstanceID: req.InstanceID, Version: r.Version}
		if r.Version == 0 {
			who.Generation = -1
		}
		// Codes set before the commit (unknown topics, metadata too
		// large); the rest take the commit's result.
		codes := make([][]int16, len(req.Topics))
		offsets := offset.Topics{}
		groupDenied := !h.allowedGroup(r, kmsg.ACLOperationRead, req.Group)
		// As Kafka's coordinator: NOT_COORDINATOR at once, without
		// looking the topics up (which a gateway cut off from the filer
		// could not do in time).
		notCoordinator := !groupDenied && req.Group != "" && !h.groups.Coordinates(req.Group)
		for i, rt := range req.Topics {
			codes[i] = make([]int16, len(rt.Partitions))
			if groupDenied || notCoordinator {
				code := kerr.GroupAuthorizationFailed.Code
				if notCoordinator {
					code = kerr.NotCoordinator.Code
				}
				for j := range codes[i] {
					codes[i][j] = code
				}
				continue
			}
			info, err := h.lookupTopic(ctx, r, kmsg.ACLOperationRead, r.Version >= 10, rt.Topic, rt.TopicID)
			if err != nil {
				for j := range codes[i] {
					codes[i][j] = err.Code
				}
				continue
			}
			for j, rp := range rt.Partitions {
				codes[i][j] = addCommit(offsets, info, rp.Partition, offset.Committed{Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch, Metadata: rp.Metadata})
			}
		}
		var commitErr int16
		if len(offsets) > 0 {
			// Answered REQUEST_TIMED_OUT if not stored within Kafka's
			// offsets.commit.timeout.ms (a coordinator cut off from
			// the filer; it stops coordinating within its view lease,
			// and the client commits again where the group is then).
			ctx, cancel := context.WithTimeout(ctx, offsetCommitTimeout)
			defer cancel()
			if e := h.groups.CommitOffsets(ctx, req.Group, who, offsets); e != nil {
				commitErr = e.Code
			}
		} else if req.Group == "" {
			commitErr = kerr.InvalidGroupID.Code
		}
		for i, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for j, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = codes[i][j]
				if sp.ErrorCode == 0 {
					sp.ErrorCode = commitErr
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
}

// addCommit adds a partition's commit to offsets, or returns the Kafka
// error that refuses it: a partition the topic does not have, or metadata
// over offset.metadata.max.bytes.
func addCommit(offsets offset.Topics, info storage.TopicInfo, partition int32, c offset.Committed) int16 {
	switch {
	case partition < 0 || partition >= info.Partitions:
		return kerr.UnknownTopicOrPartition.Code
	case c.Metadata != nil && len(*c.Metadata) > group.MaxMetadataBytes:
		return kerr.OffsetMetadataTooLarge.Code
	}
	if offsets[info.Name] == nil {
		offsets[info.Name] = map[int32]offset.Committed{}
	}
	c.TopicID = hex.EncodeToString(info.ID[:])
	offsets[info.Name][partition] = c
	return 0
}
