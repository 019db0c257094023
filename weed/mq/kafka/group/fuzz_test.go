package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/util/fla9"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
)

// FuzzGroupRequests feeds the coordinator group requests (classic,
// consumer and streams groups') decoded from
// arbitrary bytes, as a client could send them: every one must be answered
// (or time out waiting for a rebalance) without a crash.
func FuzzGroupRequests(f *testing.F) {
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 9, "g", 50, 50
	join.ProtocolType = "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1}}}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version, sync.Group, sync.Generation = 5, "g", 1
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 9, "g", -1
	for i, req := range []kmsg.Request{join, sync, commit} {
		f.Add(uint8(i), req.AppendTo(nil))
	}
	cgJoin := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgJoin.Version, cgJoin.Group, cgJoin.MemberID, cgJoin.RebalanceTimeoutMillis = 1, "g", "m", 50
	cgJoin.SubscribedTopicNames, cgJoin.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	f.Add(uint8(6), cgJoin.AppendTo(nil))
	cgRegex := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgRegex.Version, cgRegex.Group, cgRegex.MemberID, cgRegex.MemberEpoch = 1, "g", "r", 1
	cgRegex.SubscribedTopicRegex, cgRegex.Topics = kmsg.StringPtr("t.*"), []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: topicOf("t", 3).ID, Partitions: []int32{0, 2}}}
	f.Add(uint8(6), cgRegex.AppendTo(nil))
	sJoin := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	sJoin.Version, sJoin.Group, sJoin.MemberID, sJoin.RebalanceTimeoutMillis = 1, "g", "s", 50
	sJoin.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{"t"}, RepartitionSinkTopics: []string{"r"}},
		{SubtopologyID: "1", RepartitionSourceTopics: []kmsg.TopicInfo{{Topic: "r"}}, StateChangelogTopics: []kmsg.TopicInfo{{Topic: "c"}},
			CopartitionGroups: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{RepartitionSourceTopics: []int16{0, 5}}}},
	}}
	sJoin.ActiveTasks, sJoin.StandbyTasks, sJoin.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	f.Add(uint8(7), sJoin.AppendTo(nil))
	// Only errors reach stderr: the fuzzing engine stops reading a
	// worker's output, and a worker blocked writing logs looks hung.
	fla9.Set("alsologtostderr", "false") //nolint:errcheck // a known flag
	c := New(Options{
		Store:                  offset.NewStore(filerfstest.New()),
		InitialRebalanceDelay:  time.Millisecond,
		MinSessionTimeout:      time.Millisecond,
		Topics:                 fixedTopics{"t": topicOf("t", 3), "u": topicOf("u", 1)},
		TopicRefresh:           10 * time.Millisecond,
		ConsumerSessionTimeout: 20 * time.Millisecond,
		StreamsSessionTimeout:  20 * time.Millisecond, StreamsInitialDelay: -1, StreamsNumStandbyReplicas: 1,
	})
	c.Start()
	defer c.Close()
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		cl := Client{ID: "fuzz", Host: "/127.0.0.1"}
		switch kind % 8 {
		case 0:
			req := kmsg.NewPtrJoinGroupRequest()
			req.Version = 9
			if req.ReadFrom(body) == nil {
				c.JoinGroup(ctx, req, cl) //nolint:errcheck // a timeout is fine
			}
		case 1:
			req := kmsg.NewPtrSyncGroupRequest()
			req.Version = 5
			if req.ReadFrom(body) == nil {
				c.SyncGroup(ctx, req) //nolint:errcheck // a timeout is fine
			}
		case 2:
			req := kmsg.NewPtrHeartbeatRequest()
			req.Version = 4
			if req.ReadFrom(body) == nil {
				c.Heartbeat(ctx, req)
			}
		case 3:
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Version = 5
			if req.ReadFrom(body) == nil {
				var ls []Leaving
				for _, m := range req.Members {
					ls = append(ls, Leaving{m.MemberID, m.InstanceID, m.Reason})
				}
				c.LeaveGroup(ctx, req.Group, ls)
			}
		case 4:
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Version = 9
			if req.ReadFrom(body) == nil {
				offs := offset.Topics{}
				for _, t := range req.Topics {
					offs[t.Topic] = map[int32]offset.Committed{}
					for _, p := range t.Partitions {
						offs[t.Topic][p.Partition] = offset.Committed{Offset: p.Offset, Metadata: p.Metadata}
					}
				}
				c.CommitOffsets(ctx, req.Group, Committer{req.Generation, req.MemberID, req.InstanceID, req.Version}, offs)
			}
		case 5:
			if len(body) > 0 {
				name := string(body[1:])
				c.Describe(ctx, name, 6)
				c.FetchOffsets(ctx, name, nil) //nolint:errcheck // any answer is fine
				if body[0]%2 == 0 {
					c.DeleteGroup(ctx, name)
				}
				c.List(ctx) //nolint:errcheck // any answer is fine
				c.DescribeConsumer(ctx, name)
			}
		case 6:
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Version = 1
			if req.ReadFrom(body) == nil {
				if resp := c.ConsumerGroupHeartbeat(ctx, req, cl, "User:fuzz"); resp == nil {
					t.Fatal("no answer")
				}
			}
		case 7:
			req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
			req.Version = 1
			if req.ReadFrom(body) == nil {
				if resp, _ := c.StreamsGroupHeartbeat(ctx, req, cl); resp == nil {
					t.Fatal("no answer")
				}
				c.DescribeStreams(ctx, req.Group)
			}
		}
	})
}
