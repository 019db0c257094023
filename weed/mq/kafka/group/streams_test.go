package group

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func imageOf(topics map[string]int32) *topicImage {
	im := &topicImage{byName: map[string]Topic{}, byID: map[[16]byte]Topic{}}
	i := byte(0)
	for name, n := range topics {
		i++
		im.byName[name] = Topic{Name: name, ID: [16]byte{i}, Partitions: n}
	}
	return im
}

// A topology is resolved as Kafka's InternalTopicManager resolves it.
func TestResolveTopology(t *testing.T) {
	top := &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{"clicks", "views"}, RepartitionSinkTopics: []string{"app-rekey"},
			CopartitionGroups: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{SourceTopics: []int16{0, 1}}}},
		{SubtopologyID: "1", RepartitionSourceTopics: []kmsg.TopicInfo{{Topic: "app-rekey"}},
			StateChangelogTopics: []kmsg.TopicInfo{{Topic: "app-store-changelog"}}},
	}}

	// Sources missing: not ready, nothing to create.
	r := resolve(top, imageOf(map[string]int32{"clicks": 4}))
	if r.ready || len(r.create) != 0 || len(r.statuses) != 1 || r.statuses[0].Code != StatusMissingSourceTopics {
		t.Errorf("sources missing: %+v", r)
	}
	// Sources copartitioned wrongly.
	r = resolve(top, imageOf(map[string]int32{"clicks": 4, "views": 3}))
	if r.ready || !slices.ContainsFunc(r.statuses, func(s Status) bool { return s.Code == StatusIncorrectlyPartitionedTopics }) {
		t.Errorf("copartitioning: %+v", r)
	}
	// Internal topics missing: the repartition topic and the changelog
	// get the sources' 4 partitions.
	r = resolve(top, imageOf(map[string]int32{"clicks": 4, "views": 4}))
	if r.ready || len(r.create) != 2 || r.create[0].Partitions != 4 || r.create[1].Partitions != 4 || r.tasks["0"] != 4 || r.tasks["1"] != 4 {
		t.Errorf("internal topics missing: %+v", r)
	}
	// All there: ready.
	r = resolve(top, imageOf(map[string]int32{"clicks": 4, "views": 4, "app-rekey": 4, "app-store-changelog": 4}))
	if !r.ready || !r.stateful["1"] || r.stateful["0"] {
		t.Errorf("all there: %+v", r)
	}
	// A changelog of another partition count.
	r = resolve(top, imageOf(map[string]int32{"clicks": 4, "views": 4, "app-rekey": 4, "app-store-changelog": 2}))
	if r.ready || !slices.ContainsFunc(r.statuses, func(s Status) bool { return s.Code == StatusIncorrectlyPartitionedTopics }) {
		t.Errorf("wrong changelog: %+v", r)
	}
	// Copartition indexes out of range are ignored.
	bad := &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{"clicks"},
			CopartitionGroups: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{SourceTopics: []int16{-1, 0, 7}, RepartitionSourceTopics: []int16{-3, 2}}}},
	}}
	if r := resolve(bad, imageOf(map[string]int32{"clicks": 2})); !r.ready || r.tasks["0"] != 2 {
		t.Errorf("copartition indexes out of range: %+v", r)
	}
	// Too many tasks.
	many := &kmsg.StreamsGroupHeartbeatRequestTopology{}
	for i := range 50 {
		many.Subtopologies = append(many.Subtopologies, kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			SubtopologyID: string(rune('a' + i)), RepartitionSourceTopics: []kmsg.TopicInfo{{Topic: "r" + string(rune('a'+i)), NumPartitions: 2520}}})
	}
	if r := resolve(many, imageOf(nil)); r.invalid == "" {
		t.Errorf("126,000 tasks: %+v", r.invalid)
	}
	// A repartition topic no subtopology writes cannot be resolved.
	orphan := &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		{SubtopologyID: "0", RepartitionSourceTopics: []kmsg.TopicInfo{{Topic: "nobody-writes-it"}}},
	}}
	if r := resolve(orphan, imageOf(nil)); r.invalid == "" {
		t.Errorf("orphan repartition topic: %+v", r)
	}
}
