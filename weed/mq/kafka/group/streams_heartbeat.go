package group

// StreamsGroupHeartbeat (KIP-1071) as Kafka's group coordinator answers
// it: the request's checks with Kafka's messages; joining (epoch 0, with
// the topology), heartbeating, leaving (-1; -2 for a static member); the
// topology kept as the first member sent it, resolved against the topics
// (the missing internal ones returned to be created), the group epoch
// moved by members and topology changes, the targets computed by the
// sticky task assignor after the initial rebalance delay, and each member
// reconciled towards its target (an active task is revoked before another
// member gets it). A heartbeat that changed the group is answered once
// its state is in the filer. Every method of group here runs on the
// group's goroutine.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
)

// StreamsHeartbeatError is the answer to a StreamsGroupHeartbeat that
// failed.
func StreamsHeartbeatError(req *kmsg.StreamsGroupHeartbeatRequest, e *kerr.Error, msg string) *kmsg.StreamsGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	resp.ErrorCode = e.Code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

// checkStreamsHeartbeat checks a request as Kafka does before it reaches
// the group.
func checkStreamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest) (*kerr.Error, string) {
	invalid := kerr.InvalidRequest
	lists := 0
	for _, l := range [][]kmsg.TaskIDs{req.ActiveTasks, req.StandbyTasks, req.WarmupTasks} {
		if l != nil {
			lists++
		}
	}
	switch {
	case strings.TrimSpace(req.MemberID) == "":
		return invalid, "MemberId can't be empty."
	case strings.TrimSpace(req.Group) == "":
		return invalid, "GroupId can't be empty."
	case blank(req.InstanceID):
		return invalid, "InstanceId can't be empty."
	case blank(req.RackID):
		return invalid, "RackId can't be empty."
	case lists != 0 && lists != 3:
		return invalid, "If one task-type is non-null, all must be non-null."
	case req.MemberEpoch < -2:
		return invalid, "MemberEpoch is invalid."
	case req.MemberEpoch == -2 && req.InstanceID == nil:
		return invalid, "InstanceId can't be null."
	case req.MemberEpoch != 0 && req.Topology != nil:
		return invalid, "Topology can only be provided when (re-)joining."
	}
	if req.MemberEpoch != 0 {
		return nil, ""
	}
	switch {
	case req.RebalanceTimeoutMillis == -1:
		return invalid, "RebalanceTimeoutMs must be provided in first request."
	case len(req.ActiveTasks) > 0 || len(req.StandbyTasks) > 0 || len(req.WarmupTasks) > 0:
		return invalid, "ActiveTasks, StandbyTasks and WarmupTasks must be empty when (re-)joining."
	case req.Topology == nil:
		return invalid, "Topology must be non-null when (re-)joining."
	}
	for _, st := range req.Topology.Subtopologies {
		if len(st.SourceTopicRegex) > 0 {
			return invalid, "Regular expressions for source topics are not supported yet."
		}
		for _, t := range st.StateChangelogTopics {
			if t.NumPartitions != 0 {
				return kerr.StreamsInvalidTopology, fmt.Sprintf("Changelog topic %s must have an undefined partition count, but it is set to %d.", t.Topic, t.NumPartitions)
			}
		}
		if len(st.SourceTopics) == 0 && len(st.RepartitionSourceTopics) == 0 {
			return kerr.StreamsInvalidTopology, fmt.Sprintf("Subtopology %s has no source topics.", st.SubtopologyID)
		}
	}
	return nil, ""
}

// StreamsGroupHeartbeat answers a StreamsGroupHeartbeat, with the internal
// topics the group's topology lacks, for the caller to create.
func (c *Coordinator) StreamsGroupHeartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest, cl Client) (*kmsg.StreamsGroupHeartbeatResponse, []InternalTopic) {
	if e, msg := checkStreamsHeartbeat(req); e != nil {
		return StreamsHeartbeatError(req, e, msg), nil
	}
	leaving := req.MemberEpoch < 0
	g, e := c.lookup(ctx, req.Group, req.MemberEpoch == 0)
	if e != nil {
		return StreamsHeartbeatError(req, e, ""), nil
	}
	if g == nil {
		return StreamsHeartbeatError(req, kerr.GroupIDNotFound, fmt.Sprintf("Streams group %s not found.", req.Group)), nil
	}
	if !leaving {
		// The topics the topology reads are in the image before the group
		// looks at it.
		names, err := call(ctx, g, func() []string {
			if cg := g.consumer(); cg != nil && cg.streams != nil {
				return cg.streams.requiredTopics()
			}
			return nil
		})
		if err != nil {
			return StreamsHeartbeatError(req, goneErr(err), ""), nil
		}
		if req.Topology != nil {
			names = append(names, (&streamsState{topology: req.Topology}).requiredTopics()...)
		}
		if c.topics.ensure(ctx, req.Group, names, nil) {
			c.topicsChanged()
		}
	}
	type answer struct {
		resp   *kmsg.StreamsGroupHeartbeatResponse
		create []InternalTopic
	}
	a, err := await(ctx, g, func(reply func(answer)) {
		if leaving {
			g.streamsLeave(req, func(r *kmsg.StreamsGroupHeartbeatResponse) { reply(answer{resp: r}) })
			return
		}
		g.streamsHeartbeat(req, cl, func(r *kmsg.StreamsGroupHeartbeatResponse, create []InternalTopic) {
			reply(answer{r, create})
		})
	})
	if err != nil {
		return StreamsHeartbeatError(req, goneErr(err), ""), nil
	}
	return a.resp, a.create
}

// streamsGroupFor returns the streams group of a heartbeat, making an
// empty classic group one; or the error that refuses it.
func (g *group) streamsGroupFor(req *kmsg.StreamsGroupHeartbeatRequest) (*kerr.Error, string) {
	switch {
	case g.typ() == TypeStreams:
		if req.MemberEpoch > 0 && !g.exists() {
			return kerr.GroupIDNotFound, fmt.Sprintf("Streams group %s not found.", g.name)
		}
		return nil, ""
	case g.consumer() != nil, req.MemberEpoch != 0 && g.exists():
		return kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a streams group.", g.name)
	case req.MemberEpoch != 0:
		return kerr.GroupIDNotFound, fmt.Sprintf("Streams group %s not found.", g.name)
	case g.kind.hasMembers() || g.state != Empty:
		return kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a streams group: a classic group becomes one once it is empty.", g.name)
	}
	g.toStreams()
	return nil, ""
}

// ownedTasks is what a heartbeat says the member owns as active tasks, in
// the form reconciliation reads (nil: not said).
func ownedTasks(ts []kmsg.TaskIDs) owned {
	if ts == nil {
		return nil
	}
	o := owned{}
	for _, t := range ts {
		o = append(o, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: subtopologyKey(t.SubtopologyID), Partitions: t.Partitions})
	}
	return o
}

// streamsHeartbeat handles a heartbeat of epoch 0 or more.
func (g *group) streamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest, cl Client, answer func(*kmsg.StreamsGroupHeartbeatResponse, []InternalTopic)) {
	fail := func(e *kerr.Error, msg string) { answer(StreamsHeartbeatError(req, e, msg), nil) }
	if e, msg := g.streamsGroupFor(req); e != nil {
		fail(e, msg)
		return
	}
	cg, ss := g.consumer(), g.consumer().streams
	old := cg.members[req.MemberID]
	switch {
	case old == nil && req.MemberEpoch != 0:
		fail(kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.name))
		return
	case old == nil && g.c.opts.StreamsMaxSize > 0 && len(cg.members) >= g.c.opts.StreamsMaxSize:
		fail(kerr.GroupMaxSizeReached, fmt.Sprintf("The streams group has reached its maximum capacity of %d members.", g.c.opts.StreamsMaxSize))
		return
	case old != nil && req.MemberEpoch > old.epoch:
		fail(kerr.FencedMemberEpoch, fmt.Sprintf("The streams group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its tasks and rejoin.", req.MemberEpoch, old.epoch))
		return
	case old != nil && req.MemberEpoch > 0 && req.MemberEpoch < old.epoch &&
		!(req.MemberEpoch == old.prevEpoch && req.ActiveTasks != nil && ownedTasks(req.ActiveTasks).within(old.assigned)):
		fail(kerr.FencedMemberEpoch, fmt.Sprintf("The streams group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its tasks and rejoin.", req.MemberEpoch, old.epoch))
		return
	}
	bump := false
	if req.Topology != nil {
		switch {
		case ss.topology == nil:
			if r := resolve(req.Topology, g.c.topics.current()); r.invalid != "" {
				fail(kerr.StreamsInvalidTopology, r.invalid)
				return
			}
			ss.topology, ss.resolved, bump = req.Topology, nil, true
		case req.Topology.Epoch < ss.topology.Epoch:
			// An older instance of the application: it runs what it can
			// and is told its topology is stale.
		case !sameTopology(req.Topology, ss.topology):
			fail(kerr.InvalidRequest, "Topology updates are not supported yet.")
			return
		}
	}

	var m *cmember
	if old != nil {
		m = old.copyMember()
	} else {
		m = &cmember{id: req.MemberID, prevEpoch: -1, assigned: partitions{}, revoking: partitions{}, target: partitions{},
			standby: partitions{}, standbyTarget: partitions{}, session: g.c.opts.StreamsSessionTimeout}
		bump = true
		if len(cg.members) == 0 && g.c.opts.StreamsInitialDelay > 0 {
			ss.delayUntil = time.Now().Add(g.c.opts.StreamsInitialDelay)
		}
	}
	if req.MemberEpoch == 0 {
		// Rejoining: it has given up what it had.
		m.assigned, m.revoking, m.standby = partitions{}, partitions{}, partitions{}
		m.state, m.epoch = memberStable, 0
	}
	m.clientID, m.clientHost = cl.ID, cl.Host
	if req.Topology != nil {
		m.topologyEpoch = req.Topology.Epoch
	}
	if req.InstanceID != nil {
		m.instanceID = req.InstanceID
	}
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	if req.RebalanceTimeoutMillis >= 0 {
		m.rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.ProcessID != nil && *req.ProcessID != m.processID {
		m.processID, bump = *req.ProcessID, true
	}
	endpointChanged := false
	if req.UserEndpoint != nil && endpoint(req.UserEndpoint) != endpoint(m.endpoint) {
		ep := *req.UserEndpoint
		m.endpoint, endpointChanged = &ep, true
	}
	if req.ClientTags != nil {
		tags := map[string]string{}
		for _, t := range req.ClientTags {
			tags[t.Key] = t.Value
		}
		if !maps.Equal(tags, m.clientTags) {
			m.clientTags, bump = tags, true
		}
	}
	if req.ShutdownApplication && !ss.shutdown {
		glog.V(0).Infof("kafka group %s: member %s asks the application to shut down", g.name, m.id)
		ss.shutdown = true
	}

	// Installed; the topology resolved, the epochs moved, the member
	// reconciled.
	epochs := [2]int32{cg.epoch, cg.assignmentEpoch}
	cg.members[m.id] = m
	if ss.resolved == nil {
		g.resolveStreams()
		bump = true
	} else if g.resolveStreams() {
		bump = true
	}
	if bump {
		cg.epoch++
	}
	delayed := false
	if cg.epoch > cg.assignmentEpoch {
		if time.Now().Before(ss.delayUntil) {
			delayed = true
			g.after(time.Until(ss.delayUntil), func() { g.assignDelayed() })
		} else {
			g.computeStreamsTargets()
		}
	}
	before := old
	activeBefore, standbyBefore := partitions{}, partitions{}
	if before != nil && req.MemberEpoch != 0 {
		activeBefore, standbyBefore = before.assigned, before.standby
	}
	if m.state != memberStable || m.epoch != cg.assignmentEpoch {
		g.reconcile(m, ownedTasks(req.ActiveTasks), ss.subtopologyIDs(), false)
		if m.epoch == cg.assignmentEpoch {
			m.standby = partitions{}
			for t, parts := range m.standbyTarget {
				for p, e := range parts {
					if !m.assigned.has(t, p) {
						m.standby.add(t, p, e)
					}
				}
			}
		}
	}
	tasksChanged := req.MemberEpoch == 0 || !samePartitions(activeBefore, m.assigned) || !samePartitions(standbyBefore, m.standby)
	if endpointChanged || (tasksChanged && m.endpoint != nil) {
		ss.endpointEpoch++
	}
	changed := before == nil || !sameSaved(before, m)
	if m.state == memberUnrevoked {
		if changed {
			g.armRebalance(m)
		}
	} else {
		m.rebalanceT = 0
	}
	g.touchConsumer(m)
	g.updateConsumerState()
	if before == nil || req.Topology != nil {
		g.tellSubscriptions()
	}

	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	resp.MemberID, resp.MemberEpoch = m.id, m.epoch
	resp.HeartbeatIntervalMillis = int32(g.c.opts.StreamsHeartbeatInterval.Milliseconds())
	resp.TaskOffsetIntervalMillis = int32(StreamsTaskOffsetInterval.Milliseconds())
	resp.AcceptableRecoveryLag = StreamsAcceptableRecoveryLag
	resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	status := func(code int8, detail string) {
		resp.Status = append(resp.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: code, StatusDetail: detail})
	}
	if ss.topology != nil && m.topologyEpoch < ss.topology.Epoch {
		status(StatusStaleTopology, fmt.Sprintf("The member's topology epoch %d is behind the group's topology epoch %d.", m.topologyEpoch, ss.topology.Epoch))
	}
	if delayed {
		status(StatusAssignmentDelayed, "Assignment delayed due to the configured initial rebalance delay.")
	}
	var create []InternalTopic
	if r := ss.resolved; r != nil {
		for _, s := range r.statuses {
			status(s.Code, s.Detail)
		}
		create = r.create
		if r.invalid != "" {
			fail(kerr.StreamsInvalidTopology, r.invalid)
			return
		}
	}
	if ss.shutdown {
		status(StatusShutdownApplication, "A KafkaStreams instance encountered a fatal error and requested a shutdown for the entire application.")
	}
	if tasksChanged {
		resp.ActiveTasks, resp.StandbyTasks, resp.WarmupTasks = taskIDs(m.assigned, ss), taskIDs(m.standby, ss), []kmsg.TaskIDs{}
	}
	// Unlike Kafka, which asks only with a description plugin configured,
	// the description is always asked for once, for StreamsGroupDescribe.
	resp.TopologyDescriptionRequired = ss.wantsDescription() && m.topologyEpoch == ss.topology.Epoch
	resp.EndpointInformationEpoch = ss.endpointEpoch
	if req.EndpointInformationEpoch != ss.endpointEpoch {
		resp.PartitionsByUserEndpoint = g.endpointPartitions()
	}
	if !changed && epochs == [2]int32{cg.epoch, cg.assignmentEpoch} && !endpointChanged {
		answer(resp, create)
		return
	}
	g.saveThen(func(err error) {
		if err != nil {
			answer(StreamsHeartbeatError(req, savedErr(err), ""), nil)
			return
		}
		answer(resp, create)
	})
}

// assignDelayed computes the targets once the initial rebalance delay is
// over, if the group still waits for them.
func (g *group) assignDelayed() {
	cg := g.consumer()
	if cg == nil || cg.streams == nil || cg.epoch <= cg.assignmentEpoch || time.Now().Before(cg.streams.delayUntil) {
		return
	}
	g.computeStreamsTargets()
	g.updateConsumerState()
	g.saveThen(nil)
}

// computeStreamsTargets runs the task assignor and moves the assignment
// epoch to the group epoch.
func (g *group) computeStreamsTargets() {
	g.assignStreams(g.c.opts.StreamsNumStandbyReplicas)
	metrics.Rebalances.WithLabelValues(metrics.Group(g.name)).Inc()
	cg := g.consumer()
	glog.V(1).Infof("kafka group %s: streams target assignment of epoch %d for %d members", g.name, cg.epoch, len(cg.members))
}

// taskIDs lists tasks as a response carries them.
func taskIDs(ps partitions, ss *streamsState) []kmsg.TaskIDs {
	ids := ss.subtopologyIDs()
	out := []kmsg.TaskIDs{}
	for _, key := range slices.SortedFunc(maps.Keys(ps), func(a, b topicID) int { return strings.Compare(ids[a], ids[b]) }) {
		if id, ok := ids[key]; ok && len(ps[key]) > 0 {
			out = append(out, kmsg.TaskIDs{SubtopologyID: id, Partitions: sortedPartitions(ps[key])})
		}
	}
	return out
}

// endpointPartitions maps each member's endpoint to the partitions of its
// tasks' input topics (Interactive Queries find keys by them).
func (g *group) endpointPartitions() []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	ss := g.consumer().streams
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	if ss.resolved == nil {
		return out
	}
	ids := ss.subtopologyIDs()
	topicParts := func(ps partitions) map[string][]int32 {
		byTopic := map[string][]int32{}
		for key, parts := range ps {
			sub := ids[key]
			for _, topic := range ss.resolved.inputs[sub] {
				for p := range parts {
					if p < ss.resolved.partitions[topic] {
						byTopic[topic] = append(byTopic[topic], p)
					}
				}
			}
		}
		return byTopic
	}
	for _, id := range slices.Sorted(maps.Keys(g.consumer().members)) {
		m := g.consumer().members[id]
		if m.endpoint == nil {
			continue
		}
		e := kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{UserEndpoint: kmsg.Endpoint{Host: m.endpoint.Host, Port: m.endpoint.Port},
			ActivePartitions: []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{}, StandbyPartitions: []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{}}
		active := topicParts(m.assigned)
		for _, t := range slices.Sorted(maps.Keys(active)) {
			e.ActivePartitions = append(e.ActivePartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{Topic: t, Partitions: slices.Sorted(slices.Values(active[t]))})
		}
		standby := topicParts(m.standby)
		for _, t := range slices.Sorted(maps.Keys(standby)) {
			e.StandbyPartitions = append(e.StandbyPartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{Topic: t, Partitions: slices.Sorted(slices.Values(standby[t]))})
		}
		out = append(out, e)
	}
	return out
}

// streamsLeave handles a heartbeat of epoch -1 (leaving) or -2 (a static
// member leaving for a while: it keeps its tasks until it comes back or
// its session ends).
func (g *group) streamsLeave(req *kmsg.StreamsGroupHeartbeatRequest, answer func(*kmsg.StreamsGroupHeartbeatResponse)) {
	fail := func(e *kerr.Error, msg string) { answer(StreamsHeartbeatError(req, e, msg)) }
	switch {
	case !g.exists():
		fail(kerr.GroupIDNotFound, fmt.Sprintf("Group %s not found.", g.name))
		return
	case g.typ() != TypeStreams:
		fail(kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a streams group.", g.name))
		return
	}
	cg := g.consumer()
	m := cg.members[req.MemberID]
	if m == nil {
		fail(kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.name))
		return
	}
	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	resp.MemberID, resp.MemberEpoch, resp.Status = m.id, req.MemberEpoch, []kmsg.StreamsGroupHeartbeatResponseStatus{}
	if req.MemberEpoch == -2 {
		glog.V(1).Infof("kafka group %s: static member %s leaves for now, keeping its tasks", g.name, m.id)
		m.epoch, m.revoking = -2, partitions{}
	} else {
		glog.V(1).Infof("kafka group %s: streams member %s leaves", g.name, m.id)
		g.fenceMembers([]*cmember{m})
	}
	if len(cg.members) == 0 {
		cg.streams.shutdown = false
	}
	g.updateConsumerState()
	g.saveThen(func(err error) {
		if err != nil {
			fail(savedErr(err), "")
			return
		}
		answer(resp)
	})
}

// validateStreamsCommit checks a commit to a streams group: with no
// members, anyone may commit; otherwise a member, with OffsetCommit v9+,
// at its epoch, or at an older epoch for the partitions of tasks it has
// had since then at least.
func (g *group) validateStreamsCommit(who Committer, offsets offset.Topics) *kerr.Error {
	cg := g.consumer()
	if who.Generation < 0 && len(cg.members) == 0 {
		return nil
	}
	m := cg.members[who.MemberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case who.Version < 9:
		return kerr.UnsupportedVersion
	case who.Generation > m.epoch:
		return kerr.StaleMemberEpoch
	case who.Generation < m.epoch:
		r := cg.streams.resolved
		if r == nil {
			return kerr.StaleMemberEpoch
		}
		for topic, parts := range offsets {
			for p := range parts {
				ok := false
				for sub, inputs := range r.inputs {
					if !slices.Contains(inputs, topic) {
						continue
					}
					key := subtopologyKey(sub)
					if e, has := m.assigned[key][p]; has && who.Generation >= e {
						ok = true
					} else if e, has := m.revoking[key][p]; has && who.Generation >= e {
						ok = true
					}
				}
				if !ok {
					return kerr.StaleMemberEpoch
				}
			}
		}
	}
	return nil
}
