package group

// SyncGroup: the leader hands out the assignments of a generation; members
// that do not sync within the rebalance timeout are removed. Every function
// here runs on the group's goroutine.

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"
)

// startSyncTimer removes the members that have not sent SyncGroup within
// the rebalance timeout, and rebalances without them.
func (g *classicGroup) startSyncTimer() {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalance)
	}
	id := g.nextSeq()
	g.syncSeq = id
	gen := g.generation
	g.after(d, func() {
		if g.syncSeq != id || g.generation != gen || (g.state != CompletingRebalance && g.state != Stable) {
			return
		}
		var late []*member
		for mid := range g.pendingSync {
			if m := g.members[mid]; m != nil {
				late = append(late, m)
			}
		}
		g.pendingSync = nil
		if len(late) == 0 {
			return
		}
		for _, m := range late {
			glog.V(0).Infof("kafka group %s: member %s left the group: no SyncGroup within the rebalance timeout", g.name, m.id)
			g.dropMember(m)
		}
		g.afterRemoval("members did not sync")
	})
}

// SyncError is the answer to a SyncGroup that failed with e.
func SyncError(req *kmsg.SyncGroupRequest, e *kerr.Error) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	resp.ErrorCode = e.Code
	return resp
}

// sync handles a SyncGroup: the leader's brings every member's assignment.
func (g *classicGroup) sync(req *kmsg.SyncGroupRequest, reply chan *kmsg.SyncGroupResponse) {
	answer := func(e *kerr.Error) { reply <- SyncError(req, e) }
	if g.fenced(req.MemberID, req.InstanceID) {
		answer(kerr.FencedInstanceID)
		return
	}
	m := g.members[req.MemberID]
	if m == nil {
		answer(kerr.UnknownMemberID)
		return
	}
	if req.Generation != g.generation {
		answer(kerr.IllegalGeneration)
		return
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) || (req.Protocol != nil && *req.Protocol != g.protocol) {
		answer(kerr.InconsistentGroupProtocol)
		return
	}
	switch g.state {
	case PreparingRebalance:
		answer(kerr.RebalanceInProgress)
	case Stable:
		delete(g.pendingSync, m.id)
		g.touch(m)
		reply <- g.syncResponse(req, m)
	case CompletingRebalance:
		delete(g.pendingSync, m.id)
		if m.syncing != nil {
			m.syncing.reply <- SyncError(m.syncing.req, kerr.RebalanceInProgress)
		}
		m.syncing = &pendingSync{req: req, reply: reply}
		g.touch(m)
		if m.id != g.leader {
			return
		}
		assigned := map[string][]byte{}
		for _, a := range req.GroupAssignment {
			assigned[a.MemberID] = a.MemberAssignment
		}
		for _, o := range g.members {
			o.assignment = assigned[o.id]
		}
		// Nobody gets the assignment before it is saved: the state
		// is saved as Stable, and becomes so once that is done.
		gen := g.generation
		g.state = Stable
		g.saveThen(func(err error) {
			if g.state != CompletingRebalance || g.generation != gen {
				return // a later sync or rebalance took over
			}
			if err != nil {
				// Not saved: nobody gets it, and everyone
				// joins again.
				code := kerr.CoordinatorNotAvailable
				if errors.Is(err, errStateTooLarge) {
					code = kerr.UnknownServerError // as Kafka: its record too large
				}
				for _, o := range g.members {
					if o.syncing != nil {
						o.syncing.reply <- SyncError(o.syncing.req, code)
						o.syncing = nil
					}
					o.assignment = nil
				}
				g.prepareRebalance("saving the assignment failed")
				return
			}
			g.state = Stable
			glog.V(1).Infof("kafka group %s: generation %d is stable", g.name, g.generation)
			for _, o := range g.members {
				if o.syncing != nil {
					o.syncing.reply <- g.syncResponse(o.syncing.req, o)
					o.syncing = nil
				}
			}
		})
		g.state = CompletingRebalance
	default:
		answer(kerr.UnknownMemberID)
	}
}

func (g *classicGroup) syncResponse(req *kmsg.SyncGroupRequest, m *member) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	pt, p := g.protocolType, g.protocol
	resp.ProtocolType, resp.Protocol = &pt, &p
	resp.MemberAssignment = m.assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return resp
}
