package protocol

// OffsetFetch, versions 0-10. v2+ fetches every committed topic when no
// topics are named; v8+ fetches for several groups at once; v10 names
// topics by id. A partition without a commit has offset -1. With
// RequireStable (v7+), a partition whose offset an open transaction commits
// gets UNSTABLE_OFFSET_COMMIT, which clients retry. The
// member id and epoch of v9+ are checked against a consumer group's
// (KIP-848) members: UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH; classic groups
// ignore them, as Kafka does.

import (
	"context"
	"encoding/hex"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
)

func init() { register(kmsg.OffsetFetch, 0, 10, (*Handler).handleOffsetFetch) }

// fetchedTopic is one topic of an answer, in the shape of the v8+ response.
type fetchedTopic = kmsg.OffsetFetchResponseGroupTopic

func (h *Handler) handleOffsetFetch(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.OffsetFetchRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		if r.Version >= 8 {
			for _, rg := range req.Groups {
				g := kmsg.NewOffsetFetchResponseGroup()
				g.Group = rg.Group
				var topics []kmsg.OffsetFetchRequestTopic // nil: all
				if rg.Topics != nil {
					topics = []kmsg.OffsetFetchRequestTopic{}
					for _, t := range rg.Topics {
						name := t.Topic
						if r.Version >= 10 {
							// An unknown id is answered as a topic
							// with no commits.
							info, _ := h.lookupTopic(ctx, r, kmsg.ACLOperationDescribe, true, "", t.TopicID)
							name = info.Name
						}
						topics = append(topics, kmsg.OffsetFetchRequestTopic{Topic: name, Partitions: t.Partitions})
					}
				}
				var code int16
				if r.Version >= 9 && h.allowedGroup(r, kmsg.ACLOperationDescribe, rg.Group) {
					if e := h.groups.CheckFetcher(ctx, rg.Group, rg.MemberID, rg.MemberEpoch); e != nil {
						g.ErrorCode = e.Code
						resp.Groups = append(resp.Groups, g)
						continue
					}
				}
				g.Topics, code = h.fetchOffsets(ctx, r, rg.Group, topics, r.Version >= 10, req.RequireStable)
				g.ErrorCode = code
				if r.Version >= 10 && rg.Topics != nil {
					for i := range g.Topics {
						g.Topics[i].TopicID = rg.Topics[i].TopicID
					}
				}
				resp.Groups = append(resp.Groups, g)
			}
			return resp, nil
		}
		topics := req.Topics
		if r.Version < 2 && topics == nil {
			topics = []kmsg.OffsetFetchRequestTopic{}
		}
		fetched, code := h.fetchOffsets(ctx, r, req.Group, topics, false, req.RequireStable)
		if r.Version >= 2 {
			resp.ErrorCode = code
		}
		for _, ft := range fetched {
			t := kmsg.NewOffsetFetchResponseTopic()
			t.Topic = ft.Topic
			for _, fp := range ft.Partitions {
				p := kmsg.NewOffsetFetchResponseTopicPartition()
				p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = fp.Partition, fp.Offset, fp.LeaderEpoch, fp.Metadata, fp.ErrorCode
				if r.Version < 2 && code != 0 {
					p.ErrorCode = code
				}
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil
	}
}

// fetchOffsets answers one group's fetch: the partitions asked for (every
// committed one if topics is nil), and the group's error code. withIDs
// fills in topic ids.
//
// A group the principal may not describe gets GROUP_AUTHORIZATION_FAILED;
// topics it may not describe are left out of "every committed one" and get
// TOPIC_AUTHORIZATION_FAILED when named.
func (h *Handler) fetchOffsets(ctx context.Context, r *Request, groupName string, topics []kmsg.OffsetFetchRequestTopic, withIDs, requireStable bool) ([]fetchedTopic, int16) {
	if !h.allowedGroup(r, kmsg.ACLOperationDescribe, groupName) {
		var out []fetchedTopic
		for _, rt := range topics {
			t := kmsg.NewOffsetFetchResponseGroupTopic()
			t.Topic = rt.Topic
			for _, p := range rt.Partitions {
				fp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				fp.Partition, fp.Offset, fp.LeaderEpoch, fp.ErrorCode = p, -1, -1, kerr.GroupAuthorizationFailed.Code
				t.Partitions = append(t.Partitions, fp)
			}
			out = append(out, t)
		}
		return out, kerr.GroupAuthorizationFailed.Code
	}
	var names []string
	if topics != nil {
		names = []string{}
		for _, t := range topics {
			names = append(names, t.Topic)
		}
	}
	committed, e := h.groups.FetchOffsets(ctx, groupName, names)
	code := int16(0)
	if e != nil {
		code = e.Code
		committed = offset.Topics{}
	}
	committed = h.currentCommits(ctx, committed)
	partition := func(topic string, p int32) kmsg.OffsetFetchResponseGroupTopicPartition {
		fp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		fp.Partition, fp.Offset, fp.LeaderEpoch = p, -1, -1
		empty := ""
		fp.Metadata = &empty
		if c, ok := committed[topic][p]; ok {
			fp.Offset, fp.LeaderEpoch = c.Offset, c.LeaderEpoch
			if c.Metadata != nil {
				fp.Metadata = c.Metadata
			}
		}
		if requireStable && h.groups.PendingTxnOffsets(ctx, groupName, topic, p) {
			// An open transaction commits this partition's offset.
			fp.ErrorCode = kerr.UnstableOffsetCommit.Code
		}
		return fp
	}
	var out []fetchedTopic
	if topics == nil {
		if code != 0 {
			return nil, code
		}
		for _, name := range slices.Sorted(maps.Keys(committed)) {
			if !h.allowedTopic(r, kmsg.ACLOperationDescribe, name) {
				continue
			}
			t := kmsg.NewOffsetFetchResponseGroupTopic()
			t.Topic = name
			if withIDs {
				info, err := h.lookupTopic(ctx, r, kmsg.ACLOperationDescribe, false, name, [16]byte{})
				if err != nil {
					continue // deleted since: no id to name it by
				}
				t.TopicID = info.ID
			}
			for _, p := range slices.Sorted(maps.Keys(committed[name])) {
				t.Partitions = append(t.Partitions, partition(name, p))
			}
			out = append(out, t)
		}
		return out, 0
	}
	for _, rt := range topics {
		t := kmsg.NewOffsetFetchResponseGroupTopic()
		t.Topic = rt.Topic
		for _, p := range rt.Partitions {
			fp := partition(rt.Topic, p)
			if code != 0 {
				fp.ErrorCode = code
			} else if !h.allowedTopic(r, kmsg.ACLOperationDescribe, rt.Topic) {
				fp.Offset, fp.LeaderEpoch, fp.Metadata = -1, -1, nil
				fp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			}
			t.Partitions = append(t.Partitions, fp)
		}
		out = append(out, t)
	}
	return out, code
}

// currentCommits leaves out the commits made for a topic that is gone, or
// for an earlier topic of the same name (deleted and created again), as
// Kafka removes a deleted topic's offsets from its groups.
func (h *Handler) currentCommits(ctx context.Context, committed offset.Topics) offset.Topics {
	out := make(offset.Topics, len(committed))
	for topic, parts := range committed {
		info, err := h.describeTopic(ctx, topic)
		if kafkaErr(err, nil) == kerr.UnknownTopicOrPartition {
			continue
		}
		id := hex.EncodeToString(info.ID[:])
		kept := make(map[int32]offset.Committed, len(parts))
		for p, c := range parts {
			if err != nil || c.TopicID == "" || c.TopicID == id {
				kept[p] = c
			}
		}
		if len(kept) > 0 {
			out[topic] = kept
		}
	}
	return out
}
