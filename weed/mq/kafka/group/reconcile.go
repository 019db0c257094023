package group

// Reconciliation: how a consumer group member moves from what it owns to
// its target assignment, one heartbeat at a time, as Kafka's
// CurrentAssignmentBuilder does. Partitions the member must give up are
// revoked first, the member keeping its epoch until a heartbeat reports
// them gone; partitions another member still owns are withheld until that
// member has revoked them, so that no partition is ever owned by two
// members. Every function here runs on the group's goroutine.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// owned is what a heartbeat says the member owns (nil: not said, which
// counts as still owning everything it was asked to revoke).
type owned []kmsg.ConsumerGroupHeartbeatRequestTopic

// ownsAny reports whether the member may still own one of ps.
func (o owned) ownsAny(ps partitions) bool {
	if o == nil {
		return true
	}
	for _, t := range o {
		for _, p := range t.Partitions {
			if ps.has(t.TopicID, p) {
				return true
			}
		}
	}
	return false
}

// within reports whether every partition the heartbeat reports is among
// ps (a heartbeat at the member's previous epoch is accepted when so).
func (o owned) within(ps partitions) bool {
	for _, t := range o {
		for _, p := range t.Partitions {
			if !ps.has(t.TopicID, p) {
				return false
			}
		}
	}
	return true
}

// owners maps each partition some member owns or is revoking to it.
func (cg *consumerGroup) owners() map[topicID]map[int32]string {
	out := map[topicID]map[int32]string{}
	for _, m := range cg.members {
		for _, ps := range []partitions{m.assigned, m.revoking} {
			for t, parts := range ps {
				if out[t] == nil {
					out[t] = map[int32]string{}
				}
				for p := range parts {
					out[t][p] = m.id
				}
			}
		}
	}
	return out
}

// reconcile moves m towards its target. subscribed are the topics it
// subscribes to; changed says its subscription changed with this
// heartbeat. It changes m in place.
func (g *group) reconcile(m *cmember, o owned, subscribed map[topicID]string, changed bool) {
	te := g.consumer().assignmentEpoch
	switch m.state {
	case memberStable:
		switch {
		case m.epoch != te:
			g.computeNext(m, o, subscribed, m.epoch)
		case changed:
			updateCurrent(m, o, subscribed)
		}
	case memberUnrevoked:
		if o.ownsAny(m.revoking) {
			if changed {
				updateCurrent(m, o, subscribed)
			}
			return
		}
		g.computeNext(m, o, subscribed, m.epoch)
	case memberUnreleased:
		g.computeNext(m, o, subscribed, m.epoch)
	}
}

// updateCurrent drops the partitions of topics the member no longer
// subscribes to, to be revoked; its epoch stays.
func updateCurrent(m *cmember, o owned, subscribed map[topicID]string) {
	var moved bool
	if len(subscribed) == 0 && len(m.revoking) == 0 {
		moved = len(m.assigned) > 0
		m.revoking, m.assigned = m.assigned, partitions{}
	} else {
		for t, parts := range m.assigned {
			if _, ok := subscribed[t]; ok {
				continue
			}
			for p, e := range parts {
				m.revoking.add(t, p, e)
			}
			delete(m.assigned, t)
			moved = true
		}
	}
	if moved && len(m.revoking) > 0 && o.ownsAny(m.revoking) {
		m.state = memberUnrevoked
	}
}

// computeNext computes the member's next assignment towards the target of
// the assignment epoch.
func (g *group) computeNext(m *cmember, o owned, subscribed map[topicID]string, epoch int32) {
	te := g.consumer().assignmentEpoch
	owners := g.consumer().owners()
	keep, revoke, add := partitions{}, partitions{}, partitions{}
	unreleased := false
	topics := map[topicID]bool{}
	for t := range m.target {
		topics[t] = true
	}
	for t := range m.assigned {
		topics[t] = true
	}
	for t := range topics {
		target := m.target[t]
		if _, ok := subscribed[t]; !ok {
			target = nil // no longer subscribed: nothing of it is wanted
		}
		for p, e := range m.assigned[t] {
			if _, ok := target[p]; ok {
				keep.add(t, p, e)
			} else {
				revoke.add(t, p, e)
			}
		}
		for p := range target {
			if keep.has(t, p) {
				continue
			}
			// Given if free, or the member's own that it was revoking.
			if _, ok := owners[t][p]; ok && !m.revoking.has(t, p) {
				unreleased = true
				continue
			}
			add.add(t, p, te)
		}
	}
	switch {
	case len(revoke) > 0 && o.ownsAny(revoke):
		// Revoke first: the member keeps its epoch until it has.
		m.state = memberUnrevoked
		m.prevEpoch, m.epoch = epoch, epoch
		m.assigned, m.revoking = keep, revoke
	default:
		for t, parts := range add {
			for p, e := range parts {
				keep.add(t, p, e)
			}
		}
		m.state = memberStable
		if unreleased {
			m.state = memberUnreleased
		}
		m.prevEpoch, m.epoch = m.epoch, te
		m.assigned, m.revoking = keep, partitions{}
	}
}

// assignmentOf is a member's assignment as the heartbeat response carries
// it.
func assignmentOf(ps partitions) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for t, parts := range ps {
		if len(parts) == 0 {
			continue
		}
		at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		at.TopicID, at.Partitions = t, sortedPartitions(parts)
		a.Topics = append(a.Topics, at)
	}
	return &a
}
