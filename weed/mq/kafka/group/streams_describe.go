package group

// StreamsGroupDescribe: a streams group's state, epochs, topology (with
// the partitions resolved, once it is) and members with their tasks.

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"
)

// DescribeStreams answers StreamsGroupDescribe for one group.
func (c *Coordinator) DescribeStreams(ctx context.Context, name string) kmsg.StreamsGroupDescribeResponseGroup {
	d := kmsg.NewStreamsGroupDescribeResponseGroup()
	d.Group = name
	d.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
	fail := func(e *kerr.Error, msg string) kmsg.StreamsGroupDescribeResponseGroup {
		d.ErrorCode = e.Code
		if msg != "" {
			d.ErrorMessage = &msg
		}
		return d
	}
	g, e, msg := c.describing(ctx, name)
	if e != nil {
		return fail(e, msg)
	}
	type outcome struct {
		d   kmsg.StreamsGroupDescribeResponseGroup
		msg string
	}
	out, err := call(ctx, g, func() outcome {
		switch {
		case !g.exists():
			return outcome{msg: fmt.Sprintf("Group %s not found.", name)}
		case g.typ() != TypeStreams:
			return outcome{msg: fmt.Sprintf("Group %s is not a streams group.", name)}
		}
		cg, ss := g.consumer(), g.consumer().streams
		d.State = string(g.state)
		d.Epoch, d.AssignmentEpoch = cg.epoch, cg.assignmentEpoch
		assignor := "sticky"
		d.AssignorName = &assignor
		if ss.description != nil && !ss.wantsDescription() {
			desc := kmsg.StreamsGroupDescribeResponseGroupTopologyDescription{Subtopologies: ss.description.Subtopologies, GlobalStores: ss.description.GlobalStores}
			d.TopologyDescription = &desc
		}
		if top := ss.topology; top != nil {
			t := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
			t.Epoch = top.Epoch
			for _, st := range top.Subtopologies {
				s := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
				s.SubtopologyID = st.SubtopologyID
				s.SourceTopics, s.RepartitionSinkTopics = nonNil(st.SourceTopics), nonNil(st.RepartitionSinkTopics)
				s.StateChangelogTopics = resolvedInfos(st.StateChangelogTopics, ss.resolved, st.SubtopologyID)
				s.RepartitionSourceTopics = resolvedInfos(st.RepartitionSourceTopics, ss.resolved, "")
				t.Subtopologies = append(t.Subtopologies, s)
			}
			d.Topology = &t
		}
		for _, id := range slices.Sorted(maps.Keys(cg.members)) {
			m := cg.members[id]
			dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
			dm.MemberID, dm.MemberEpoch, dm.InstanceID, dm.RackID = m.id, m.epoch, m.instanceID, m.rackID
			dm.ClientID, dm.ClientHost, dm.TopologyEpoch, dm.ProcessID = m.clientID, m.clientHost, m.topologyEpoch, m.processID
			if m.endpoint != nil {
				dm.UserEndpoint = &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Host: m.endpoint.Host, Port: m.endpoint.Port}
			}
			dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
			for _, k := range slices.Sorted(maps.Keys(m.clientTags)) {
				dm.ClientTags = append(dm.ClientTags, kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{Key: k, Value: m.clientTags[k]})
			}
			dm.TaskOffsets, dm.TaskEndOffsets = []kmsg.TaskOffset{}, []kmsg.TaskOffset{}
			dm.Assignment = kmsg.StreamsAssignment{ActiveTasks: taskIDs(m.assigned, ss), StandbyTasks: taskIDs(m.standby, ss), WarmupTasks: []kmsg.TaskIDs{}}
			dm.TargetAssignment = kmsg.StreamsAssignment{ActiveTasks: taskIDs(m.target, ss), StandbyTasks: taskIDs(m.standbyTarget, ss), WarmupTasks: []kmsg.TaskIDs{}}
			d.Members = append(d.Members, dm)
		}
		return outcome{d: d}
	})
	if err != nil {
		return fail(goneErr(err), "")
	}
	if out.msg != "" {
		return fail(kerr.GroupIDNotFound, out.msg)
	}
	return out.d
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// resolvedInfos are a subtopology's internal topics with the partitions
// resolved (changelogs: their subtopology's tasks).
func resolvedInfos(ts []kmsg.TopicInfo, r *resolvedTopology, changelogOf string) []kmsg.TopicInfo {
	out := make([]kmsg.TopicInfo, 0, len(ts))
	for _, t := range ts {
		if r != nil {
			if changelogOf != "" {
				t.NumPartitions = r.tasks[changelogOf]
			} else if p := r.partitions[t.Topic]; p > 0 {
				t.NumPartitions = p
			}
		}
		if t.Configs == nil {
			t.Configs = []kmsg.TopicInfoConfig{}
		}
		out = append(out, t)
	}
	return out
}

// UpdateStreamsTopologyDescription keeps the description of a streams
// group's topology (StreamsGroupTopologyDescriptionUpdate, KIP-1331), sent
// by a member for the group's topology epoch.
func (c *Coordinator) UpdateStreamsTopologyDescription(ctx context.Context, req *kmsg.StreamsGroupTopologyDescriptionUpdateRequest) (*kerr.Error, string) {
	if n := len(req.AppendTo(nil)); n > MaxTopologyDescriptionBytes {
		return kerr.InvalidRequest, fmt.Sprintf("The topology description of %d bytes is larger than the %d kept.", n, MaxTopologyDescriptionBytes)
	}
	g, e := c.lookup(ctx, req.Group, false)
	if e != nil {
		return e, ""
	}
	if g == nil {
		return kerr.GroupIDNotFound, fmt.Sprintf("Streams group %s not found.", req.Group)
	}
	type outcome struct {
		e   *kerr.Error
		msg string
	}
	out, err := await(ctx, g, func(answer func(outcome)) {
		switch {
		case g.typ() != TypeStreams || !g.exists():
			answer(outcome{kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a streams group.", req.Group)})
			return
		case g.consumer().members[req.MemberID] == nil:
			answer(outcome{kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, req.Group)})
			return
		}
		ss := g.consumer().streams
		if ss.topology == nil || req.TopologyEpoch != ss.topology.Epoch {
			answer(outcome{kerr.StreamsInvalidTopologyEpoch, "The topology epoch of the description is not the group's."})
			return
		}
		desc := req.TopologyDescription
		ss.description, ss.describedEpoch = &desc, req.TopologyEpoch
		glog.V(1).Infof("kafka group %s: description of topology epoch %d kept (%d subtopologies)", g.name, req.TopologyEpoch, len(desc.Subtopologies))
		g.saveThen(func(err error) {
			if err != nil {
				answer(outcome{savedErr(err), ""})
				return
			}
			answer(outcome{})
		})
	})
	if err != nil {
		return goneErr(err), ""
	}
	return out.e, out.msg
}
