package protocol_test

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsMember heartbeats as a Kafka Streams thread does.
type streamsMember struct {
	t        *testing.T
	c        *rawConn
	group    string
	id       string
	process  string
	epoch    int32
	active   []kmsg.TaskIDs
	standby  []kmsg.TaskIDs
	topology *kmsg.StreamsGroupHeartbeatRequestTopology
}

// wordCountTopology is the topology of a word count: subtopology 0 reads
// the input and writes the repartition topic, subtopology 1 reads it and
// keeps its counts in a changelog.
func wordCountTopology(app, in string) *kmsg.StreamsGroupHeartbeatRequestTopology {
	top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	top.Epoch = 0
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{in}, []string{app + "-by-word-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	s1.RepartitionSourceTopics = []kmsg.TopicInfo{{Topic: app + "-by-word-repartition", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}}}}
	s1.StateChangelogTopics = []kmsg.TopicInfo{{Topic: app + "-counts-changelog", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}}
	top.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	return &top
}

func (m *streamsMember) heartbeat(version int16) *kmsg.StreamsGroupHeartbeatResponse {
	m.t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	req.RebalanceTimeoutMillis = -1
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis, req.Topology, req.ProcessID = 30000, m.topology, &m.process
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		req.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "app-" + m.process, Port: 8080}
	} else {
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = nonNilTasks(m.active), nonNilTasks(m.standby), []kmsg.TaskIDs{}
	}
	resp := m.c.do(req, version).(*kmsg.StreamsGroupHeartbeatResponse)
	if resp.ErrorCode != 0 {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		m.t.Fatalf("member %s: %v: %s", m.id, kerr.ErrorForCode(resp.ErrorCode), msg)
	}
	if resp.Status == nil {
		m.t.Fatalf("member %s: a null status list", m.id)
	}
	m.epoch = resp.MemberEpoch
	if resp.ActiveTasks != nil {
		m.active, m.standby = resp.ActiveTasks, resp.StandbyTasks
	}
	return resp
}

func nonNilTasks(ts []kmsg.TaskIDs) []kmsg.TaskIDs {
	if ts == nil {
		return []kmsg.TaskIDs{}
	}
	return ts
}

func countTasks(ts []kmsg.TaskIDs) int {
	n := 0
	for _, t := range ts {
		n += len(t.Partitions)
	}
	return n
}

type taskRef struct {
	sub  string
	part int32
}

func taskSet(ts []kmsg.TaskIDs) map[taskRef]bool {
	out := map[taskRef]bool{}
	for _, t := range ts {
		for _, p := range t.Partitions {
			out[taskRef{t.SubtopologyID, p}] = true
		}
	}
	return out
}

// A streams group of the word count: the first member's heartbeat finds
// the internal topics missing and the gateway creates them (the changelog
// compacted, both with the input's partitions); the member is then given
// every task. A second member (another process) gets half of them only
// once the first has revoked them, never a task both own; with one
// standby replica each stateful task has a standby on the other process.
// The group lists as a streams group, describes its members and topology,
// and a member leaving hands its tasks to the other.
func TestStreamsGroup(t *testing.T) {
	g := startGateway(t, gatewayOptions{streamsStandbys: 1})
	adm := kadm.NewClient(client(t, g.addr))
	ctx := ctxFor(t)
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, "wc-in"); err != nil {
		t.Fatal(err)
	}
	top := wordCountTopology("wc", "wc-in")
	a := &streamsMember{t: t, c: dial(t, g.addr), group: "wc", id: "member-a", process: "p1", topology: top}
	b := &streamsMember{t: t, c: dial(t, g.addr), group: "wc", id: "member-b", process: "p2", topology: top}

	first := a.heartbeat(1)
	if first.MemberEpoch < 1 || !slices.ContainsFunc(first.Status, func(s kmsg.StreamsGroupHeartbeatResponseStatus) bool { return s.StatusCode == 3 }) {
		t.Fatalf("first heartbeat: epoch %d, statuses %+v", first.MemberEpoch, first.Status)
	}
	deadline := time.Now().Add(15 * time.Second)
	for countTasks(a.active) < 8 {
		if time.Now().After(deadline) {
			t.Fatalf("member a has %v after 15 s", a.active)
		}
		time.Sleep(100 * time.Millisecond)
		a.heartbeat(1)
	}
	topics, err := adm.ListTopics(ctx, "wc-counts-changelog", "wc-by-word-repartition")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"wc-counts-changelog", "wc-by-word-repartition"} {
		if td, ok := topics[name]; !ok || len(td.Partitions) != 4 {
			t.Errorf("internal topic %s: %+v", name, td)
		}
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "wc-counts-changelog")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := rc.On("wc-counts-changelog", nil); err != nil || !slices.ContainsFunc(c.Configs, func(c kadm.Config) bool {
		return c.Key == "cleanup.policy" && c.Value != nil && *c.Value == "compact"
	}) {
		t.Errorf("changelog configs: %+v %v", c, err)
	}

	// b joins: a revokes half before b gets them.
	b.heartbeat(1)
	deadline = time.Now().Add(15 * time.Second)
	for countTasks(a.active) != 4 || countTasks(b.active) != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("after 15 s: a %v, b %v", a.active, b.active)
		}
		for ta := range taskSet(a.active) {
			if taskSet(b.active)[ta] {
				t.Fatalf("task %v active on both members", ta)
			}
		}
		time.Sleep(50 * time.Millisecond)
		a.heartbeat(1)
		b.heartbeat(1)
	}
	// Standbys of the stateful subtopology (1) on the other process.
	for time.Now().Before(deadline) && countTasks(a.standby)+countTasks(b.standby) < 4 {
		time.Sleep(50 * time.Millisecond)
		a.heartbeat(1)
		b.heartbeat(1)
	}
	for _, m := range []*streamsMember{a, b} {
		for ts := range taskSet(m.standby) {
			if ts.sub != "1" || taskSet(m.active)[ts] {
				t.Errorf("member %s has standby %v (active %v)", m.id, ts, m.active)
			}
		}
	}
	if n := countTasks(a.standby) + countTasks(b.standby); n != 4 {
		t.Errorf("%d standby tasks, want 4 (one per task of the stateful subtopology)", n)
	}

	// The topology's description is asked for once, kept and described.
	if !a.heartbeat(1).TopologyDescriptionRequired {
		t.Error("the topology description is not asked for")
	}
	upd := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
	upd.Group, upd.MemberID, upd.TopologyEpoch = "wc", a.id, 5
	upd.TopologyDescription.Subtopologies = []kmsg.TopologyDescriptionSubtopology{{SubtopologyID: "0"}, {SubtopologyID: "1"}}
	code(t, "description of another epoch", a.c.do(upd, 0).(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse).ErrorCode, kerr.StreamsInvalidTopologyEpoch)
	upd.TopologyEpoch, upd.MemberID = 0, "stranger"
	code(t, "description from a stranger", a.c.do(upd, 0).(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse).ErrorCode, kerr.UnknownMemberID)
	upd.MemberID = a.id
	code(t, "description", a.c.do(upd, 0).(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse).ErrorCode, nil)
	if a.heartbeat(1).TopologyDescriptionRequired {
		t.Error("the topology description is asked for again")
	}

	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := listed["wc"]; !ok || l.ProtocolType != "streams" {
		t.Errorf("listed %+v", listed)
	}
	dreq := kmsg.NewPtrStreamsGroupDescribeRequest()
	dreq.Groups, dreq.IncludeTopologyDescription = []string{"wc", "nope"}, true
	dresp := roundTrip(t, g.addr, dreq, 1).(*kmsg.StreamsGroupDescribeResponse)
	d := dresp.Groups[0]
	if d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 2 || d.Topology == nil || len(d.Topology.Subtopologies) != 2 ||
		d.Topology.Subtopologies[1].StateChangelogTopics[0].NumPartitions != 4 ||
		d.TopologyDescriptionStatus != 3 || d.TopologyDescription == nil || len(d.TopologyDescription.Subtopologies) != 2 {
		t.Errorf("described %+v", d)
	}
	code(t, "describe of a missing group", dresp.Groups[1].ErrorCode, kerr.GroupIDNotFound)

	// b leaves; a gets every task back.
	b.epoch = -1
	leave := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = "wc", b.id, -1
	if resp := b.c.do(leave, 1).(*kmsg.StreamsGroupHeartbeatResponse); resp.ErrorCode != 0 || resp.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", resp)
	}
	deadline = time.Now().Add(15 * time.Second)
	for countTasks(a.active) != 8 {
		if time.Now().After(deadline) {
			t.Fatalf("a has %v after b left", a.active)
		}
		time.Sleep(50 * time.Millisecond)
		a.heartbeat(1)
	}
}

// Kafka's checks of a heartbeat.
func TestStreamsGroupHeartbeatChecks(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	c := dial(t, g.addr)
	hb := func(mod func(*kmsg.StreamsGroupHeartbeatRequest)) *kmsg.StreamsGroupHeartbeatResponse {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "checks", "m", 30000
		req.Topology = wordCountTopology("checks", "checks-in")
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		mod(req)
		return c.do(req, 0).(*kmsg.StreamsGroupHeartbeatResponse)
	}
	for name, tc := range map[string]struct {
		mod  func(*kmsg.StreamsGroupHeartbeatRequest)
		want *kerr.Error
	}{
		"no member id":         {func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		"no topology on join":  {func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Topology = nil }, kerr.InvalidRequest},
		"no rebalance timeout": {func(r *kmsg.StreamsGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest},
		"tasks on join": {func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0}}}
		}, kerr.InvalidRequest},
		"some task lists null": {func(r *kmsg.StreamsGroupHeartbeatRequest) { r.StandbyTasks = nil }, kerr.InvalidRequest},
		"changelog partitions": {func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.Topology.Subtopologies[1].StateChangelogTopics[0].NumPartitions = 3
		}, kerr.StreamsInvalidTopology},
		"source regex": {func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.Topology.Subtopologies[0].SourceTopicRegex = []string{"in.*"}
		}, kerr.InvalidRequest},
		"unknown member": {func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberEpoch, r.Topology = 3, nil }, kerr.GroupIDNotFound},
		"internal topic": {func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.Topology.Subtopologies[0].SourceTopics = []string{"__consumer_offsets"}
		}, kerr.StreamsInvalidTopology},
	} {
		code(t, name, hb(tc.mod).ErrorCode, tc.want)
	}
	// A member of another topology than the group's is refused.
	code(t, "join", hb(func(*kmsg.StreamsGroupHeartbeatRequest) {}).ErrorCode, nil)
	code(t, "another topology", hb(func(r *kmsg.StreamsGroupHeartbeatRequest) {
		r.MemberID = "other"
		r.Topology.Subtopologies[0].SourceTopics = []string{"elsewhere"}
	}).ErrorCode, kerr.InvalidRequest)
	// A consumer group heartbeat to it is refused.
	creq := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	creq.Group, creq.MemberID, creq.RebalanceTimeoutMillis, creq.SubscribedTopicNames = "checks", "c", 30000, []string{"x"}
	creq.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	code(t, "consumer heartbeat to a streams group", c.do(creq, 1).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.GroupIDNotFound)
}
