package group

// A member's lifetime in a classic group: its id, its session (Heartbeat),
// static members' fencing (KIP-345), leaving and removal. Every function
// here runs on the group's goroutine.

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"
)

// Client is who sent a request: for member ids and DescribeGroups.
type Client struct {
	ID   string // client.id from the request header
	Host string // the connection's remote host
}

func newMemberID(clientID string) string {
	var b [16]byte
	rand.Read(b[:]) //nolint:errcheck // crypto/rand does not fail
	u := hex.EncodeToString(b[:])
	return clientID + "-" + u[:8] + "-" + u[8:12] + "-" + u[12:16] + "-" + u[16:20] + "-" + u[20:]
}

// fenced reports whether a request naming instanceID comes from an older
// incarnation of that static member.
func (g *classicGroup) fenced(memberID string, instanceID *string) bool {
	if instanceID == nil {
		return false
	}
	id, ok := g.static[*instanceID]
	return ok && id != memberID
}

// touch restarts the member's session timer: without a heartbeat (or
// another request) within its session timeout, it is removed. A member
// waiting on a JoinGroup or SyncGroup answer is kept.
func (g *classicGroup) touch(m *member) {
	id := g.nextSeq()
	m.sessionT = id
	g.after(m.session, func() {
		if g.members[m.id] != m || m.sessionT != id {
			return
		}
		if m.joining != nil || m.syncing != nil {
			g.touch(m)
			return
		}
		glog.V(0).Infof("kafka group %s: member %s left the group: session timeout %v expired", g.name, m.id, m.session)
		g.removeMember(m, "session timeout")
	})
}

// dropMember forgets a member, answering what it waits on.
func (g *classicGroup) dropMember(m *member) {
	if m.joining != nil {
		m.joining.reply <- JoinError(m.joining.req, kerr.UnknownMemberID)
		m.joining = nil
	}
	if m.syncing != nil {
		m.syncing.reply <- SyncError(m.syncing.req, kerr.UnknownMemberID)
		m.syncing = nil
	}
	delete(g.members, m.id)
	delete(g.pendingSync, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	m.sessionT = 0
}

// removeMember takes a member out (it left, or its session ended) and
// rebalances the others.
func (g *classicGroup) removeMember(m *member, reason string) {
	g.dropMember(m)
	g.afterRemoval("member " + m.id + " left: " + reason)
}

func (g *classicGroup) afterRemoval(reason string) {
	switch g.state {
	case Stable, CompletingRebalance:
		g.prepareRebalance(reason)
		if len(g.members) == 0 {
			g.completeJoin()
		}
	case PreparingRebalance:
		if len(g.members) == 0 && !g.initialJoin {
			g.completeJoin()
			return
		}
		g.maybeCompleteJoin()
	}
}

// heartbeat handles a Heartbeat: it keeps the member's session and tells
// it when to rejoin.
func (g *classicGroup) heartbeat(req *kmsg.HeartbeatRequest) *kerr.Error {
	if g.fenced(req.MemberID, req.InstanceID) {
		return kerr.FencedInstanceID
	}
	m := g.members[req.MemberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration
	}
	switch g.state {
	case Stable, CompletingRebalance:
		g.touch(m)
		return nil
	case PreparingRebalance:
		g.touch(m)
		return kerr.RebalanceInProgress
	default:
		return kerr.UnknownMemberID
	}
}

// leave handles one member of a LeaveGroup.
func (g *classicGroup) leave(memberID string, instanceID *string, reason *string) *kerr.Error {
	why := "LeaveGroup"
	if reason != nil && *reason != "" {
		why += " (" + *reason + ")"
	}
	if instanceID != nil {
		id, ok := g.static[*instanceID]
		if !ok {
			return kerr.UnknownMemberID
		}
		if memberID != "" && memberID != id {
			return kerr.FencedInstanceID
		}
		memberID = id
	} else if _, ok := g.pending[memberID]; ok {
		delete(g.pending, memberID)
		g.maybeCompleteJoin()
		return nil
	}
	m := g.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	glog.V(1).Infof("kafka group %s: member %s leaves: %s", g.name, m.id, why)
	g.removeMember(m, why)
	return nil
}
