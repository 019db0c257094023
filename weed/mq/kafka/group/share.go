package group

// Share groups (KIP-932): members heartbeat with ShareGroupHeartbeat and
// are assigned partitions by the simple assignor, several members to a
// partition once there are more members than partitions; there is no
// revocation (a share-partition's records are acquired record by record,
// by whoever fetches), so a member goes straight to its target. A share
// group is kept as consumer groups are (its members in its state file,
// moved with its coordinator) and never turns into another type; its
// share-partitions are kept by the partitions' leaders (package share).
// Every method of group here runs on the group's goroutine.

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

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
)

// TypeShare is a share group's type, as ListGroups names it.
const TypeShare = "share"

// DefaultShareMaxSize is group.share.max.size.
const DefaultShareMaxSize = 200

// ShareHeartbeatError is the answer to a ShareGroupHeartbeat that failed.
func ShareHeartbeatError(req *kmsg.ShareGroupHeartbeatRequest, e *kerr.Error, msg string) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.ErrorCode = e.Code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

// checkShareHeartbeat checks a request as Kafka does before it reaches the
// group.
func checkShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) string {
	switch {
	case strings.TrimSpace(req.MemberID) == "" || len(req.MemberID) > 36:
		return "MemberId can't be empty."
	case strings.TrimSpace(req.GroupID) == "":
		return "GroupId can't be empty."
	case req.RackID != nil && strings.TrimSpace(*req.RackID) == "":
		return "RackId can't be empty."
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return "SubscribedTopicNames must be set in first request."
	case req.MemberEpoch < -1:
		return "MemberEpoch is invalid."
	}
	return ""
}

// ShareGroupHeartbeat answers a ShareGroupHeartbeat.
func (c *Coordinator) ShareGroupHeartbeat(ctx context.Context, req *kmsg.ShareGroupHeartbeatRequest, cl Client) *kmsg.ShareGroupHeartbeatResponse {
	if msg := checkShareHeartbeat(req); msg != "" {
		return ShareHeartbeatError(req, kerr.InvalidRequest, msg)
	}
	settings := share.DefaultLimits.Settings(nil)
	if c.opts.ShareConfigs != nil {
		var err error
		if settings, err = c.opts.ShareConfigs.Settings(ctx, req.GroupID, false); err != nil {
			glog.Warningf("kafka group %s: its configs: %v", req.GroupID, err)
			return ShareHeartbeatError(req, kerr.CoordinatorNotAvailable, "")
		}
	}
	leaving := req.MemberEpoch < 0
	g, e := c.lookup(ctx, req.GroupID, req.MemberEpoch == 0)
	if e != nil {
		return ShareHeartbeatError(req, e, "")
	}
	if g == nil {
		return ShareHeartbeatError(req, kerr.GroupIDNotFound, fmt.Sprintf("Share group %s not found.", req.GroupID))
	}
	if !leaving && c.topics.ensure(ctx, req.GroupID, req.SubscribedTopicNames, nil) {
		c.topicsChanged()
	}
	resp, err := await(ctx, g, func(answer func(*kmsg.ShareGroupHeartbeatResponse)) {
		g.shareHeartbeat(req, cl, settings, answer)
	})
	if err != nil {
		return ShareHeartbeatError(req, goneErr(err), "")
	}
	return resp
}

// shareGroupFor returns the share group of a heartbeat, making a new group
// one; or the error that refuses it.
func (g *group) shareGroupFor(req *kmsg.ShareGroupHeartbeatRequest) (*kerr.Error, string) {
	switch {
	case g.typ() == TypeShare && (g.exists() || req.MemberEpoch == 0):
		return nil, ""
	case !g.exists() && req.MemberEpoch == 0:
		g.kind, g.state = newConsumerGroup(TypeShare), Empty
		return nil, ""
	case !g.exists():
		return kerr.GroupIDNotFound, fmt.Sprintf("Share group %s not found.", g.name)
	}
	return kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a share group.", g.name)
}

func (g *group) shareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest, cl Client, settings share.Settings, answer func(*kmsg.ShareGroupHeartbeatResponse)) {
	fail := func(e *kerr.Error, msg string) { answer(ShareHeartbeatError(req, e, msg)) }
	if e, msg := g.shareGroupFor(req); e != nil {
		fail(e, msg)
		return
	}
	cg := g.consumer()
	old := cg.members[req.MemberID]
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.MemberID = &req.MemberID
	if req.MemberEpoch == -1 {
		if old == nil {
			fail(kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.name))
			return
		}
		glog.V(1).Infof("kafka share group %s: member %s leaves", g.name, old.id)
		g.fenceMembers([]*cmember{old})
		resp.MemberEpoch = -1
		g.saveThen(func(err error) {
			if err != nil {
				fail(savedErr(err), "")
				return
			}
			answer(resp)
		})
		return
	}
	if max := g.c.opts.ShareMaxSize; old == nil && len(cg.members) >= max {
		fail(kerr.GroupMaxSizeReached, fmt.Sprintf("The share group has reached its maximum capacity of %d members.", max))
		return
	}
	switch {
	case old == nil && req.MemberEpoch != 0:
		fail(kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.name))
		return
	case old != nil && req.MemberEpoch > old.epoch:
		fail(kerr.FencedMemberEpoch, fmt.Sprintf("The share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, old.epoch))
		return
	case old != nil && req.MemberEpoch != 0 && req.MemberEpoch < old.epoch && req.MemberEpoch != old.prevEpoch:
		fail(kerr.FencedMemberEpoch, fmt.Sprintf("The share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, old.epoch))
		return
	}
	var m *cmember
	if old != nil {
		m = old.copyMember()
	} else {
		m = &cmember{id: req.MemberID, prevEpoch: -1, assigned: partitions{}, revoking: partitions{}, target: partitions{}}
	}
	m.clientID, m.clientHost, m.session = cl.ID, cl.Host, settings.SessionTimeout
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	subChanged := false
	if req.SubscribedTopicNames != nil {
		names := slices.Compact(slices.Sorted(slices.Values(req.SubscribedTopicNames)))
		subChanged = !slices.Equal(names, m.names)
		m.names = names
	}
	epochs := [2]int32{cg.epoch, cg.assignmentEpoch}
	cg.members[m.id] = m
	targets := g.advanceEpochs(subChanged, g.computeShareTargets)
	// No revocation: the member takes its target (of the topics it
	// subscribes to) at once.
	if m.epoch != cg.assignmentEpoch || subChanged {
		subscribed := g.memberTopics(m, g.c.topics.current())
		next := partitions{}
		for t, ps := range m.target {
			if _, ok := subscribed[t]; ok {
				for p := range ps {
					next.add(t, p, cg.assignmentEpoch)
				}
			}
		}
		if m.epoch != cg.assignmentEpoch {
			m.prevEpoch, m.epoch = m.epoch, cg.assignmentEpoch
		}
		m.assigned = next
	}
	changed := old == nil || !sameSaved(old, m)
	g.touchConsumer(m)
	g.updateConsumerState()
	if subChanged || old == nil {
		g.tellSubscriptions()
	}
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(settings.HeartbeatInterval.Milliseconds())
	if req.MemberEpoch == 0 || req.SubscribedTopicNames != nil || old == nil || !samePartitions(old.assigned, m.assigned) {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
		for _, at := range assignmentOf(m.assigned).Topics {
			a.TopicPartitions = append(a.TopicPartitions, kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{TopicID: at.TopicID, Partitions: at.Partitions})
		}
		resp.Assignment = &a
	}
	if !changed && !targets && epochs == [2]int32{cg.epoch, cg.assignmentEpoch} {
		answer(resp)
		return
	}
	g.saveThen(func(err error) {
		if err != nil {
			answer(ShareHeartbeatError(req, savedErr(err), ""))
			return
		}
		answer(resp)
	})
}

// computeShareTargets runs the simple assignor over every member.
func (g *group) computeShareTargets() {
	cg := g.consumer()
	im := g.c.topics.current()
	in := &assignInput{topics: im.byID}
	for _, id := range slices.Sorted(maps.Keys(cg.members)) {
		m := cg.members[id]
		a := &assignee{id: m.id, topics: map[topicID]bool{}, target: m.target}
		for t := range g.memberTopics(m, im) {
			a.topics[t] = true
		}
		in.members = append(in.members, a)
	}
	for id, ps := range assignSimple(in) {
		cg.members[id].target = ps
	}
	cg.assignmentEpoch = cg.epoch
	glog.V(1).Infof("kafka share group %s: target assignment of epoch %d for %d members", g.name, cg.epoch, len(cg.members))
}

// assignSimple is Kafka's simple share assignor, topic by topic: with no
// more members than partitions each partition has one member, otherwise
// each has the members divided by the partitions (rounded up); members get
// their share of the slots evenly (one apart at most) and keep what they
// had where they may.
func assignSimple(in *assignInput) map[string]partitions {
	out := map[string]partitions{}
	all := map[topicID]bool{}
	for _, m := range in.members {
		out[m.id] = partitions{}
		for t := range m.topics {
			all[t] = true
		}
	}
	for _, t := range in.topicOrder(all) {
		var subs []*assignee
		for _, m := range in.members {
			if m.topics[t] {
				subs = append(subs, m)
			}
		}
		n := int(in.topics[t].Partitions)
		if n == 0 || len(subs) == 0 {
			continue
		}
		sharing := (len(subs) + n - 1) / n
		slots := sharing * n
		want := make([]int, len(subs))
		for i := range subs {
			want[i] = (slots*(i+1)+len(subs)-1)/len(subs) - (slots*i+len(subs)-1)/len(subs)
		}
		holders := make([][]int, n) // partition -> member indexes
		has := make([]map[int32]bool, len(subs))
		for i, m := range subs {
			has[i] = map[int32]bool{}
			for _, p := range sortedPartitions(m.target[t]) {
				if int(p) < n && len(has[i]) < want[i] && len(holders[p]) < sharing {
					has[i][p] = true
					holders[p] = append(holders[p], i)
				}
			}
		}
		next := 0
		for p := 0; p < n; p++ {
			for len(holders[p]) < sharing {
				found := -1
				for k := range subs {
					if i := (next + k) % len(subs); len(has[i]) < want[i] && !has[i][int32(p)] {
						found = i
						break
					}
				}
				if found < 0 {
					break
				}
				has[found][int32(p)] = true
				holders[p] = append(holders[p], found)
				next = (found + 1) % len(subs)
			}
		}
		for i, m := range subs {
			for p := range has[i] {
				out[m.id].add(t, p, 0)
			}
		}
	}
	return out
}

// DescribeShare answers ShareGroupDescribe for one group.
func (c *Coordinator) DescribeShare(ctx context.Context, name string) kmsg.ShareGroupDescribeResponseGroup {
	d := kmsg.NewShareGroupDescribeResponseGroup()
	d.GroupID = name
	fail := func(e *kerr.Error, msg string) kmsg.ShareGroupDescribeResponseGroup {
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
	msg, err := call(ctx, g, func() string {
		switch {
		case !g.exists():
			return fmt.Sprintf("Group %s not found.", name)
		case g.typ() != TypeShare:
			return fmt.Sprintf("Group %s is not a share group.", name)
		}
		cg := g.consumer()
		im := c.topics.current()
		d.GroupState = string(g.state)
		d.GroupEpoch, d.AssignmentEpoch, d.Assignor = cg.epoch, cg.assignmentEpoch, "simple"
		for _, id := range slices.Sorted(maps.Keys(cg.members)) {
			m := cg.members[id]
			dm := kmsg.NewShareGroupDescribeResponseGroupMember()
			dm.MemberID, dm.RackID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.id, m.rackID, m.epoch, m.clientID, m.clientHost
			dm.SubscribedTopicNames = append([]string{}, m.names...)
			for _, tp := range describeAssignment(m.assigned, im).TopicPartitions {
				dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions,
					kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{TopicID: tp.TopicID, Topic: tp.Topic, Partitions: tp.Partitions})
			}
			d.Members = append(d.Members, dm)
		}
		return ""
	})
	if err != nil {
		return fail(goneErr(err), "")
	}
	if msg != "" {
		return fail(kerr.GroupIDNotFound, msg)
	}
	return d
}

// sessionOf is a member's session timeout: its group's, or the
// coordinator's default for consumer groups.
func (c *Coordinator) sessionOf(m *cmember) time.Duration {
	if m.session > 0 {
		return m.session
	}
	return c.opts.ConsumerSessionTimeout
}

// ShareGroup reports whether a group is a share group and how many members
// it has, for the share offsets' admin calls: with create, a group that
// does not exist is made an empty share group (AlterShareGroupOffsets).
// A group that does not exist (and is not made) is GROUP_ID_NOT_FOUND.
func (c *Coordinator) ShareGroup(ctx context.Context, name string, create bool) (isShare bool, members int, e *kerr.Error) {
	if name == "" {
		return false, 0, kerr.InvalidGroupID
	}
	g, e := c.lookup(ctx, name, create)
	if e != nil {
		return false, 0, e
	}
	if g == nil {
		return false, 0, kerr.GroupIDNotFound
	}
	type outcome struct {
		share   bool
		members int
		e       *kerr.Error
	}
	out, err := await(ctx, g, func(answer func(outcome)) {
		switch {
		case !g.exists() && !create:
			answer(outcome{e: kerr.GroupIDNotFound})
		case !g.exists():
			g.kind, g.state = newConsumerGroup(TypeShare), Empty
			g.saveThen(func(err error) {
				if err != nil {
					answer(outcome{e: savedErr(err)})
					return
				}
				answer(outcome{share: true})
			})
		case g.typ() != TypeShare:
			answer(outcome{})
		default:
			answer(outcome{share: true, members: len(g.consumer().members)})
		}
	})
	if err != nil {
		return false, 0, goneErr(err)
	}
	return out.share, out.members, out.e
}
