package group

// A group's kinds, and the classic group: the protocol of JoinGroup,
// SyncGroup, Heartbeat and LeaveGroup (join.go, sync.go, members.go).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kind is what a group is besides its offsets: a *classicGroup, or a
// *consumerGroup for the groups of KIP-848's heartbeat protocol (consumer,
// share and streams groups, which differ in what their members are
// assigned).
type kind interface {
	// typ is TypeClassic, TypeConsumer, TypeShare or TypeStreams.
	typ() string
	// hasMembers reports whether a member is in the group, or (classic)
	// on its way in.
	hasMembers() bool
	// save fills in the kind's part of the group's state file.
	save(st *savedState)
}

// typ is the group's type, as ListGroups and DescribeGroups name it.
func (g *group) typ() string { return g.kind.typ() }

// classic is the group's classic protocol state; nil for the other kinds.
func (g *group) classic() *classicGroup {
	cl, _ := g.kind.(*classicGroup)
	return cl
}

// consumer is the group's KIP-848 state; nil for a classic group.
func (g *group) consumer() *consumerGroup {
	cg, _ := g.kind.(*consumerGroup)
	return cg
}

// classicGroup is a classic group's members and generation. Its functions
// run on the group's goroutine, as the group's; it reaches the group's
// state, offsets and saves through the group it embeds.
// DefaultClassicMaxSize is the gateway's group.max.size: Kafka's is
// unbounded, which lets one client's join flood grow a group's state
// without end; no application's group has this many members.
const DefaultClassicMaxSize = 1000

type classicGroup struct {
	*group

	protocolType string
	protocol     string // selected for the current generation
	generation   int32
	leader       string
	members      map[string]*member
	static       map[string]string // group.instance.id -> member id
	pending      map[string]uint64 // member ids handed out with MEMBER_ID_REQUIRED -> expiry seq

	// The join phase: ends when every member rejoined, or at the deadline.
	joinSeq      uint64
	initialJoin  bool
	initialStart time.Time
	// The sync phase: members that have not sent SyncGroup for this
	// generation.
	syncSeq     uint64
	pendingSync map[string]bool
}

func newClassicGroup(g *group) *classicGroup {
	return &classicGroup{group: g, members: map[string]*member{}, static: map[string]string{}, pending: map[string]uint64{}}
}

func (g *classicGroup) typ() string { return TypeClassic }

func (g *classicGroup) hasMembers() bool { return len(g.members) > 0 || len(g.pending) > 0 }

// after runs fn on the group's goroutine once d has passed, if the group
// is still this classic group then: a timer of a group that became a
// consumer group meanwhile does nothing.
func (g *classicGroup) after(d time.Duration, fn func()) {
	g.group.after(d, func() {
		if g.kind == kind(g) {
			fn()
		}
	})
}

// join handles a JoinGroup; reply is answered now or when the join phase
// ends. A consumer group without members becomes classic; classic members
// do not join one with members (mixed groups are not served), nor a share
// or streams group.
func (g *group) join(req *kmsg.JoinGroupRequest, cl Client, reply chan *kmsg.JoinGroupResponse) {
	if cg := g.consumer(); cg != nil {
		if cg.kindOf == TypeShare || len(cg.members) > 0 {
			reply <- JoinError(req, kerr.InconsistentGroupProtocol)
			return
		}
		g.toClassic()
	}
	g.classic().join(req, cl, reply)
}

// sync handles a SyncGroup: members of other kinds are unknown to it.
func (g *group) sync(req *kmsg.SyncGroupRequest, reply chan *kmsg.SyncGroupResponse) {
	cl := g.classic()
	if cl == nil {
		reply <- SyncError(req, kerr.UnknownMemberID)
		return
	}
	cl.sync(req, reply)
}

// heartbeat handles a Heartbeat: members of other kinds are unknown to it.
func (g *group) heartbeat(req *kmsg.HeartbeatRequest) *kerr.Error {
	cl := g.classic()
	if cl == nil {
		return kerr.UnknownMemberID
	}
	return cl.heartbeat(req)
}

// leave handles one member of a LeaveGroup: members of other kinds are
// unknown to it.
func (g *group) leave(memberID string, instanceID *string, reason *string) *kerr.Error {
	cl := g.classic()
	if cl == nil {
		return kerr.UnknownMemberID
	}
	return cl.leave(memberID, instanceID, reason)
}

// member is one member of a classic group.
type member struct {
	id           string
	instanceID   *string
	clientID     string
	clientHost   string
	session      time.Duration
	rebalance    time.Duration
	protocolType string
	protocols    []kmsg.JoinGroupRequestProtocol
	assignment   []byte

	joining  *pendingJoin // a JoinGroup waiting for the join phase to end
	syncing  *pendingSync // a SyncGroup waiting for the leader's assignment
	sessionT uint64       // id of the live session timer
}

type pendingJoin struct {
	req   *kmsg.JoinGroupRequest
	reply chan *kmsg.JoinGroupResponse
}

type pendingSync struct {
	req   *kmsg.SyncGroupRequest
	reply chan *kmsg.SyncGroupResponse
}

// save puts the classic group's generation and members in st.
func (g *classicGroup) save(st *savedState) {
	st.ProtocolType, st.Protocol, st.Generation, st.Leader = g.protocolType, g.protocol, g.generation, g.leader
	st.Stable = g.state == Stable || g.state == Empty
	for _, m := range g.sortedMembers() {
		sm := savedMember{
			ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			SessionMillis: m.session.Milliseconds(), RebalanceMillis: m.rebalance.Milliseconds(),
			Assignment: m.assignment,
		}
		for _, p := range m.protocols {
			sm.Protocols = append(sm.Protocols, savedProtocol{p.Name, p.Metadata})
		}
		st.Members = append(st.Members, sm)
	}
}

// restore sets the classic group from its state file. A group saved with
// its assignments resumes Stable: its members carry on heartbeating with
// their generation and need not rebalance. One saved in the middle of a
// rebalance resumes in a rebalance that its members join again.
func (g *classicGroup) restore(st *savedState) {
	g.protocolType, g.protocol = st.ProtocolType, st.Protocol
	g.generation, g.leader = st.Generation, st.Leader
	for _, sm := range st.Members {
		m := &member{
			id: sm.ID, instanceID: sm.InstanceID, clientID: sm.ClientID, clientHost: sm.ClientHost,
			session:      time.Duration(sm.SessionMillis) * time.Millisecond,
			rebalance:    time.Duration(sm.RebalanceMillis) * time.Millisecond,
			protocolType: st.ProtocolType, assignment: sm.Assignment,
		}
		for _, p := range sm.Protocols {
			m.protocols = append(m.protocols, kmsg.JoinGroupRequestProtocol{Name: p.Name, Metadata: p.Metadata})
		}
		g.members[m.id] = m
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
		g.touch(m)
	}
	switch {
	case len(g.members) == 0:
		g.state = Empty
	case st.Stable:
		g.state = Stable
	default:
		g.state = PreparingRebalance
		g.startJoinTimer(false)
	}
}
