package group

// The classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// session and rebalance timeouts, static membership (KIP-345). Every
// function here runs on the group's goroutine.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
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

func joinError(req *kmsg.JoinGroupRequest, code *kerr.Error) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.ErrorCode = code.Code
	resp.Generation = -1
	resp.MemberID = req.MemberID
	return resp
}

func (g *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *member) int { return strings.Compare(a.id, b.id) })
	return ms
}

// fenced reports whether a request naming instanceID comes from an older
// incarnation of that static member.
func (g *group) fenced(memberID string, instanceID *string) bool {
	if instanceID == nil {
		return false
	}
	id, ok := g.static[*instanceID]
	return ok && id != memberID
}

// supports reports whether a member with these protocols may join: the
// first member sets the group's protocol type; later ones must share it and
// one protocol with every member.
func (g *group) supports(protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if protocolType == "" || len(protocols) == 0 {
		return false
	}
	if len(g.members) == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if g.allSupport(p.Name) {
			return true
		}
	}
	return false
}

func (g *group) allSupport(name string) bool {
	for _, m := range g.members {
		if !slices.ContainsFunc(m.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == name }) {
			return false
		}
	}
	return true
}

// selectProtocol picks the protocol every member supports that most
// members prefer, as Kafka does.
func (g *group) selectProtocol() string {
	votes := map[string]int{}
	var order []string
	for _, m := range g.sortedMembers() {
		for _, p := range m.protocols {
			if g.allSupport(p.Name) {
				if _, seen := votes[p.Name]; !seen {
					order = append(order, p.Name)
				}
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, name := range order {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

func sameProtocols(a, b []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(a, b, func(x, y kmsg.JoinGroupRequestProtocol) bool {
		return x.Name == y.Name && bytes.Equal(x.Metadata, y.Metadata)
	})
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// touch restarts the member's session timer: without a heartbeat (or
// another request) within its session timeout, it is removed. A member
// waiting on a JoinGroup or SyncGroup answer is kept.
func (g *group) touch(m *member) {
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

// join handles a JoinGroup; reply is answered now or when the join phase
// ends.
func (g *group) join(req *kmsg.JoinGroupRequest, cl Client, reply chan *kmsg.JoinGroupResponse) {
	answer := func(code *kerr.Error) { reply <- joinError(req, code) }
	if !g.supports(req.ProtocolType, req.Protocols) {
		answer(kerr.InconsistentGroupProtocol)
		return
	}
	if req.MemberID == "" {
		g.joinNew(req, cl, reply)
		return
	}
	if _, ok := g.pending[req.MemberID]; ok {
		delete(g.pending, req.MemberID)
		g.addMember(req, req.MemberID, cl, reply)
		return
	}
	if g.fenced(req.MemberID, req.InstanceID) {
		answer(kerr.FencedInstanceID)
		return
	}
	m := g.members[req.MemberID]
	if m == nil {
		answer(kerr.UnknownMemberID)
		return
	}
	if req.InstanceID != nil && (m.instanceID == nil || *m.instanceID != *req.InstanceID) {
		answer(kerr.FencedInstanceID)
		return
	}
	switch g.state {
	case PreparingRebalance:
		g.updateMember(m, req, cl, reply)
	case CompletingRebalance:
		if sameProtocols(m.protocols, req.Protocols) {
			// It lost our answer: the same answer again.
			g.touch(m)
			reply <- g.joinResponse(req, m)
			return
		}
		g.updateMember(m, req, cl, reply)
		g.prepareRebalance("member " + m.id + " changed its protocols")
	case Stable:
		if m.id == g.leader || !sameProtocols(m.protocols, req.Protocols) {
			g.updateMember(m, req, cl, reply)
			g.prepareRebalance("member " + m.id + " rejoined")
			break
		}
		g.touch(m)
		reply <- g.joinResponse(req, m)
		return
	default:
		answer(kerr.UnknownMemberID)
		return
	}
	// The rebalance ends as soon as everyone is back.
	g.maybeCompleteJoin()
}

// joinNew handles a JoinGroup without a member id.
func (g *group) joinNew(req *kmsg.JoinGroupRequest, cl Client, reply chan *kmsg.JoinGroupResponse) {
	id := newMemberID(cl.ID)
	if req.InstanceID != nil {
		if old, ok := g.static[*req.InstanceID]; ok && g.members[old] != nil {
			g.replaceStatic(g.members[old], id, req, cl, reply)
			return
		}
		g.addMember(req, id, cl, reply)
		return
	}
	if req.Version >= 4 {
		// KIP-394: the client must come back with this id, so that a
		// client that never gets our answer leaves no member behind.
		seq := g.nextSeq()
		g.pending[id] = seq
		g.after(time.Duration(req.SessionTimeoutMillis)*time.Millisecond, func() {
			if s, ok := g.pending[id]; ok && s == seq {
				delete(g.pending, id)
				g.maybeCompleteJoin()
			}
		})
		resp := joinError(req, kerr.MemberIDRequired)
		resp.MemberID = id
		reply <- resp
		return
	}
	g.addMember(req, id, cl, reply)
}

func (g *group) addMember(req *kmsg.JoinGroupRequest, id string, cl Client, reply chan *kmsg.JoinGroupResponse) {
	m := &member{id: id, instanceID: req.InstanceID}
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	g.members[id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = id
	}
	g.updateMember(m, req, cl, reply)
	glog.V(1).Infof("kafka group %s: member %s (client %s, %s) joins", g.name, id, cl.ID, cl.Host)
	g.prepareRebalance("member " + id + " joined")
	if g.initialJoin {
		// Kafka's group.initial.rebalance.delay.ms: each new member of
		// a new group waits a little longer for the others, up to the
		// rebalance timeout.
		g.startJoinTimer(true)
	}
	g.maybeCompleteJoin()
}

func (g *group) updateMember(m *member, req *kmsg.JoinGroupRequest, cl Client, reply chan *kmsg.JoinGroupResponse) {
	if m.joining != nil && m.joining.reply != reply {
		// A second JoinGroup replaces the first, which is answered.
		m.joining.reply <- joinError(m.joining.req, kerr.RebalanceInProgress)
	}
	m.clientID, m.clientHost = cl.ID, cl.Host
	m.session = time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	m.rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 {
		m.rebalance = m.session
	}
	m.protocolType = req.ProtocolType
	m.protocols = req.Protocols
	m.joining = &pendingJoin{req: req, reply: reply}
	g.touch(m)
}

// replaceStatic gives a static member's place to its new incarnation,
// fencing the old one (KIP-345). In a stable group whose member comes back
// unchanged nothing is rebalanced: it gets its old assignment.
func (g *group) replaceStatic(old *member, id string, req *kmsg.JoinGroupRequest, cl Client, reply chan *kmsg.JoinGroupResponse) {
	if old.joining != nil {
		old.joining.reply <- joinError(old.joining.req, kerr.FencedInstanceID)
		old.joining = nil
	}
	if old.syncing != nil {
		old.syncing.reply <- syncError(old.syncing.req, kerr.FencedInstanceID)
		old.syncing = nil
	}
	oldID := old.id
	delete(g.members, oldID)
	m := old // the same member, under its new id
	m.id = id
	g.members[id] = m
	g.static[*req.InstanceID] = id
	if g.leader == oldID || g.leader == "" {
		g.leader = id
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[id] = true
	}
	glog.V(1).Infof("kafka group %s: static member %s rejoins as %s", g.name, *req.InstanceID, id)
	switch g.state {
	case Stable:
		if sameProtocols(m.protocols, req.Protocols) {
			m.clientID, m.clientHost = cl.ID, cl.Host
			m.session = time.Duration(req.SessionTimeoutMillis) * time.Millisecond
			m.rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
			g.touch(m)
			if err := g.save(); err != nil {
				reply <- joinError(req, kerr.UnknownServerError)
				return
			}
			resp := g.joinResponse(req, m)
			// KIP-814: a returning leader keeps the assignment it made.
			resp.SkipAssignment = m.id == g.leader
			if m.id == g.leader && req.Version < 9 {
				resp.Members = nil
			}
			reply <- resp
			return
		}
		g.updateMember(m, req, cl, reply)
		g.prepareRebalance("static member " + *req.InstanceID + " changed its protocols")
	case CompletingRebalance:
		// Its old incarnation may have been sent an assignment:
		// everyone joins again.
		g.updateMember(m, req, cl, reply)
		g.prepareRebalance("static member " + *req.InstanceID + " rejoined")
	default:
		g.updateMember(m, req, cl, reply)
	}
	g.maybeCompleteJoin()
}

// prepareRebalance starts a join phase unless one is running.
func (g *group) prepareRebalance(reason string) {
	if g.state == PreparingRebalance {
		return
	}
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			if m.syncing != nil {
				m.syncing.reply <- syncError(m.syncing.req, kerr.RebalanceInProgress)
				m.syncing = nil
			}
		}
	}
	g.pendingSync = nil
	g.syncSeq = g.nextSeq() // the sync timer of the last generation is void
	initial := g.state == Empty
	g.state = PreparingRebalance
	glog.V(1).Infof("kafka group %s: preparing to rebalance generation %d: %s", g.name, g.generation, reason)
	g.initialStart = time.Now()
	g.startJoinTimer(initial)
}

// startJoinTimer ends the join phase at its deadline: the longest rebalance
// timeout of the members, or for a new group the initial delay.
func (g *group) startJoinTimer(initial bool) {
	g.initialJoin = initial
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalance)
	}
	if initial {
		d = min(g.c.opts.InitialRebalanceDelay, max(0, d-time.Since(g.initialStart)))
	}
	id := g.nextSeq()
	g.joinSeq = id
	g.after(d, func() {
		if g.joinSeq == id && g.state == PreparingRebalance {
			g.completeJoin()
		}
	})
}

// maybeCompleteJoin ends the join phase early once every member has
// rejoined and no member id handed out is still to come back.
func (g *group) maybeCompleteJoin() {
	if g.state != PreparingRebalance || g.initialJoin || len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.joining == nil {
			return
		}
	}
	g.completeJoin()
}

// completeJoin ends the join phase: members that did not rejoin are removed
// (static ones are kept until their session ends), a new generation starts,
// and every waiting JoinGroup is answered, the leader's with the members.
func (g *group) completeJoin() {
	for _, m := range g.members {
		if m.joining == nil && m.instanceID == nil {
			glog.V(0).Infof("kafka group %s: member %s left the group: it did not rejoin within the rebalance timeout", g.name, m.id)
			g.dropMember(m)
		}
	}
	g.joinSeq = g.nextSeq()
	g.initialJoin = false
	g.generation++
	if len(g.members) == 0 {
		g.state, g.protocol, g.leader = Empty, "", ""
		g.emptySince = time.Now()
		glog.V(0).Infof("kafka group %s: generation %d is empty", g.name, g.generation)
		g.save() //nolint:errcheck // logged; the group carries on in memory
		return
	}
	g.protocol = g.selectProtocol()
	if g.members[g.leader] == nil || g.members[g.leader].joining == nil {
		g.leader = ""
		for _, m := range g.sortedMembers() {
			if m.joining != nil {
				g.leader = m.id
				break
			}
		}
		if g.leader == "" { // only static members that did not rejoin
			g.leader = g.sortedMembers()[0].id
		}
	}
	g.state = CompletingRebalance
	g.pendingSync = map[string]bool{}
	for _, m := range g.members {
		m.assignment = nil
		g.pendingSync[m.id] = true
	}
	glog.V(0).Infof("kafka group %s: generation %d with %d members, protocol %s, leader %s", g.name, g.generation, len(g.members), g.protocol, g.leader)
	metrics.Rebalances.WithLabelValues(metrics.Group(g.name)).Inc()
	saveErr := g.save()
	for _, m := range g.members {
		if m.joining == nil {
			continue
		}
		if saveErr != nil {
			m.joining.reply <- joinError(m.joining.req, kerr.UnknownServerError)
		} else {
			m.joining.reply <- g.joinResponse(m.joining.req, m)
		}
		m.joining = nil
		g.touch(m)
	}
	g.startSyncTimer()
}

// startSyncTimer removes the members that have not sent SyncGroup within
// the rebalance timeout, and rebalances without them.
func (g *group) startSyncTimer() {
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

func (g *group) joinResponse(req *kmsg.JoinGroupRequest, m *member) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.Generation = g.generation
	pt, p := g.protocolType, g.protocol
	resp.ProtocolType, resp.Protocol = &pt, &p
	resp.LeaderID = g.leader
	resp.MemberID = m.id
	if m.id == g.leader {
		for _, o := range g.sortedMembers() {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID, rm.InstanceID = o.id, o.instanceID
			rm.ProtocolMetadata = o.metadataFor(g.protocol)
			resp.Members = append(resp.Members, rm)
		}
	}
	return resp
}

// dropMember forgets a member, answering what it waits on.
func (g *group) dropMember(m *member) {
	if m.joining != nil {
		m.joining.reply <- joinError(m.joining.req, kerr.UnknownMemberID)
		m.joining = nil
	}
	if m.syncing != nil {
		m.syncing.reply <- syncError(m.syncing.req, kerr.UnknownMemberID)
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
func (g *group) removeMember(m *member, reason string) {
	g.dropMember(m)
	g.afterRemoval("member " + m.id + " left: " + reason)
}

func (g *group) afterRemoval(reason string) {
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

func syncError(req *kmsg.SyncGroupRequest, code *kerr.Error) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	resp.ErrorCode = code.Code
	return resp
}

// sync handles a SyncGroup: the leader's brings every member's assignment.
func (g *group) sync(req *kmsg.SyncGroupRequest, reply chan *kmsg.SyncGroupResponse) {
	answer := func(code *kerr.Error) { reply <- syncError(req, code) }
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
			m.syncing.reply <- syncError(m.syncing.req, kerr.RebalanceInProgress)
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
		g.state = Stable
		if err := g.save(); err != nil {
			// The assignment is not saved: nobody gets it, and
			// everyone joins again.
			for _, o := range g.members {
				if o.syncing != nil {
					o.syncing.reply <- syncError(o.syncing.req, kerr.CoordinatorNotAvailable)
					o.syncing = nil
				}
				o.assignment = nil
			}
			g.state = CompletingRebalance
			g.prepareRebalance("saving the assignment failed")
			return
		}
		glog.V(1).Infof("kafka group %s: generation %d is stable", g.name, g.generation)
		for _, o := range g.members {
			if o.syncing != nil {
				o.syncing.reply <- g.syncResponse(o.syncing.req, o)
				o.syncing = nil
			}
		}
	default:
		answer(kerr.UnknownMemberID)
	}
}

func (g *group) syncResponse(req *kmsg.SyncGroupRequest, m *member) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	pt, p := g.protocolType, g.protocol
	resp.ProtocolType, resp.Protocol = &pt, &p
	resp.MemberAssignment = m.assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return resp
}

// heartbeat handles a Heartbeat: it keeps the member's session and tells
// it when to rejoin.
func (g *group) heartbeat(req *kmsg.HeartbeatRequest) *kerr.Error {
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
func (g *group) leave(memberID string, instanceID *string, reason *string) *kerr.Error {
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
