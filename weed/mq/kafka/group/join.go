package group

// The classic group protocol's join phase: JoinGroup, the protocol the
// members share, rebalances and their timers, a new generation; static
// members rejoining (KIP-345). SyncGroup is in sync.go, a member's session
// and leaving in members.go. Every function here runs on the group's
// goroutine.

import (
	"bytes"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// JoinError is the answer to a JoinGroup that failed with e.
func JoinError(req *kmsg.JoinGroupRequest, e *kerr.Error) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.ErrorCode = e.Code
	resp.Generation = -1
	resp.MemberID = req.MemberID
	return resp
}

func (g *classicGroup) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *member) int { return strings.Compare(a.id, b.id) })
	return ms
}

// supports reports whether a member with these protocols may join: the
// first member sets the group's protocol type; later ones must share it and
// one protocol with every member.
func (g *classicGroup) supports(protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
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

func (g *classicGroup) allSupport(name string) bool {
	for _, m := range g.members {
		if !slices.ContainsFunc(m.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == name }) {
			return false
		}
	}
	return true
}

// selectProtocol picks the protocol every member supports that most
// members prefer, as Kafka does.
func (g *classicGroup) selectProtocol() string {
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

// join handles a JoinGroup; reply is answered now or when the join phase
// ends.
func (g *classicGroup) join(req *kmsg.JoinGroupRequest, cl Client, reply chan *kmsg.JoinGroupResponse) {
	answer := func(e *kerr.Error) { reply <- JoinError(req, e) }
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
func (g *classicGroup) joinNew(req *kmsg.JoinGroupRequest, cl Client, reply chan *kmsg.JoinGroupResponse) {
	replacing := req.InstanceID != nil && g.members[g.static[*req.InstanceID]] != nil
	if max := g.c.opts.ClassicMaxSize; max > 0 && !replacing && len(g.members)+len(g.pending) >= max {
		// As Kafka: a new member of a full group is refused.
		reply <- JoinError(req, kerr.GroupMaxSizeReached)
		return
	}
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
		resp := JoinError(req, kerr.MemberIDRequired)
		resp.MemberID = id
		reply <- resp
		return
	}
	g.addMember(req, id, cl, reply)
}

func (g *classicGroup) addMember(req *kmsg.JoinGroupRequest, id string, cl Client, reply chan *kmsg.JoinGroupResponse) {
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

func (g *classicGroup) updateMember(m *member, req *kmsg.JoinGroupRequest, cl Client, reply chan *kmsg.JoinGroupResponse) {
	if m.joining != nil && m.joining.reply != reply {
		// A second JoinGroup replaces the first, which is answered.
		m.joining.reply <- JoinError(m.joining.req, kerr.RebalanceInProgress)
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
func (g *classicGroup) replaceStatic(old *member, id string, req *kmsg.JoinGroupRequest, cl Client, reply chan *kmsg.JoinGroupResponse) {
	if old.joining != nil {
		old.joining.reply <- JoinError(old.joining.req, kerr.FencedInstanceID)
		old.joining = nil
	}
	if old.syncing != nil {
		old.syncing.reply <- SyncError(old.syncing.req, kerr.FencedInstanceID)
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
			g.saveThen(func(err error) {
				switch {
				case err != nil:
					reply <- JoinError(req, kerr.UnknownServerError)
					return
				case g.members[m.id] != m:
					reply <- JoinError(req, kerr.UnknownMemberID) // fenced or removed meanwhile
					return
				}
				resp := g.joinResponse(req, m)
				// KIP-814: a returning leader keeps the assignment it made.
				resp.SkipAssignment = m.id == g.leader
				if m.id == g.leader && req.Version < 9 {
					resp.Members = nil
				}
				reply <- resp
			})
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
func (g *classicGroup) prepareRebalance(reason string) {
	if g.state == PreparingRebalance {
		return
	}
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			if m.syncing != nil {
				m.syncing.reply <- SyncError(m.syncing.req, kerr.RebalanceInProgress)
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
func (g *classicGroup) startJoinTimer(initial bool) {
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
func (g *classicGroup) maybeCompleteJoin() {
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
func (g *classicGroup) completeJoin() {
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
		g.saveThen(nil) // a failure is logged; the group carries on in memory
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
	// The members are answered without waiting for the save, as Kafka
	// does: what they are given is only kept once the leader's assignment
	// is saved (SyncGroup). Saved meanwhile, a gateway taking the group
	// over finds this generation; if not, the previous one, whose
	// members are told to rejoin.
	g.saveThen(nil)
	for _, m := range g.members {
		if m.joining == nil {
			continue
		}
		m.joining.reply <- g.joinResponse(m.joining.req, m)
		m.joining = nil
		g.touch(m)
	}
	g.startSyncTimer()
}

func (g *classicGroup) joinResponse(req *kmsg.JoinGroupRequest, m *member) *kmsg.JoinGroupResponse {
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
