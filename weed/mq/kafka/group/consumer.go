package group

// Consumer groups of the consumer group protocol (KIP-848): members
// heartbeat with ConsumerGroupHeartbeat, the coordinator assigns their
// partitions (assign.go) and reconciles each member towards its target
// (reconcile.go). This file holds their state and how it is saved; the
// heartbeat is in consumer_heartbeat.go. A group is classic or consumer:
// an empty classic group becomes a consumer group at its first
// ConsumerGroupHeartbeat, and an empty consumer group a classic one at its
// first JoinGroup (offsets kept). Every method of group here runs on the
// group's goroutine.

import (
	"encoding/hex"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group types, as ListGroups names them.
const (
	TypeClassic  = "classic"
	TypeConsumer = "consumer"
)

// States of a consumer group, beside Empty, Stable and Dead.
const (
	Assigning   State = "Assigning"   // the group epoch is ahead of the target assignment's
	Reconciling State = "Reconciling" // some member has not reached its target yet
)

// memberState is where a member stands in its reconciliation.
type memberState int8

const (
	memberStable     memberState = iota // at the target epoch, owning what it was given
	memberUnrevoked                     // asked to revoke partitions; keeps its epoch until it has
	memberUnreleased                    // at the target epoch, waiting for partitions others still own
)

// Kafka's defaults (group.consumer.*).
const (
	DefaultConsumerSessionTimeout    = 45 * time.Second
	DefaultConsumerHeartbeatInterval = 5 * time.Second
)

// DefaultConsumerAssignors is group.consumer.assignors: the first is used
// when no member names one.
var DefaultConsumerAssignors = []string{"uniform", "range"}

// topicID is a Kafka topic id.
type topicID = [16]byte

// partitions maps a topic id to partitions, each with the epoch at which
// the member was given it (KIP-1251; 0 where it does not matter).
type partitions map[topicID]map[int32]int32

func (ps partitions) has(t topicID, p int32) bool {
	_, ok := ps[t][p]
	return ok
}

func (ps partitions) add(t topicID, p, epoch int32) {
	if ps[t] == nil {
		ps[t] = map[int32]int32{}
	}
	ps[t][p] = epoch
}

func (ps partitions) count() int {
	n := 0
	for _, m := range ps {
		n += len(m)
	}
	return n
}

func (ps partitions) clone() partitions {
	out := make(partitions, len(ps))
	for t, m := range ps {
		out[t] = maps.Clone(m)
	}
	return out
}

// samePartitions compares two sets of partitions, ignoring epochs.
func samePartitions(a, b partitions) bool {
	if a.count() != b.count() {
		return false
	}
	for t, m := range a {
		for p := range m {
			if !b.has(t, p) {
				return false
			}
		}
	}
	return true
}

// sorted lists a topic's partitions in order.
func sortedPartitions(m map[int32]int32) []int32 {
	return slices.Sorted(maps.Keys(m))
}

// consumerGroup is the state of a group of KIP-848's heartbeat protocol:
// a consumer group, a share group (KIP-932) or a streams group (KIP-1071).
type consumerGroup struct {
	kindOf          string // TypeConsumer, TypeShare or TypeStreams
	epoch           int32  // the group epoch
	assignmentEpoch int32  // the group epoch the target assignment was computed for
	members         map[string]*cmember
	static          map[string]string // group.instance.id -> member id
	// subscribed is the fingerprint of the topics the members subscribe
	// to (names, ids, partition counts) when the epoch last moved: a
	// change bumps the epoch.
	subscribed string
	// streams is a streams group's own state (streams.go); nil for
	// consumer and share groups.
	streams *streamsState
}

// cmember is a member of a consumer group.
type cmember struct {
	id         string
	instanceID *string
	rackID     *string
	clientID   string
	clientHost string
	principal  string        // who heartbeats, for the topics its regex may match
	session    time.Duration // a share member's (its group's share.session.timeout.ms); 0: the coordinator's
	rebalance  time.Duration
	names      []string // subscribed topic names, sorted
	regex      string   // subscribed regex ("": none)
	re         *regexp.Regexp
	assignor   string // the server assignor it asked for ("": none)

	epoch     int32
	prevEpoch int32
	state     memberState
	assigned  partitions // what it was told it owns
	revoking  partitions // what it must give up before it goes on
	target    partitions // what the assignor wants it to own

	sessionT   uint64 // id of the live session timer
	rebalanceT uint64 // id of the live rebalance (revocation) timer

	// A streams group member's (streams.go): assigned, revoking and
	// target above are its active tasks.
	processID     string
	endpoint      *kmsg.StreamsGroupHeartbeatRequestUserEndpoint
	clientTags    map[string]string
	topologyEpoch int32
	standby       partitions // standby tasks it was told it has
	standbyTarget partitions
}

func newConsumerGroup(typ string) *consumerGroup {
	cg := &consumerGroup{kindOf: typ, members: map[string]*cmember{}, static: map[string]string{}}
	if typ == TypeStreams {
		cg.streams = &streamsState{}
	}
	return cg
}

func (cg *consumerGroup) typ() string { return cg.kindOf }

func (cg *consumerGroup) hasMembers() bool { return len(cg.members) > 0 }

// compileRegex compiles a subscribed regex as Kafka matches it (RE2
// syntax, matching the whole topic name).
func compileRegex(re string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(re); err != nil {
		return nil, err
	}
	return regexp.Compile("^(?:" + re + ")$")
}

// copyMember returns a copy of m that may be changed without changing m.
func (m *cmember) copyMember() *cmember {
	n := *m
	n.names = slices.Clone(m.names)
	n.assigned, n.revoking, n.target = m.assigned.clone(), m.revoking.clone(), m.target.clone()
	n.standby, n.standbyTarget = m.standby.clone(), m.standbyTarget.clone()
	return &n
}

// topics are the ids of the topics a member subscribes to that exist:
// its names, and the names its regex matches that its principal may see.
func (g *group) memberTopics(m *cmember, im *topicImage) map[topicID]string {
	out := map[topicID]string{}
	for _, n := range m.names {
		if t, ok := im.topic(n); ok {
			out[t.ID] = t.Name
		}
	}
	if m.re != nil {
		for _, t := range im.byName {
			if m.re.MatchString(t.Name) && g.c.visible(m, t.Name) {
				out[t.ID] = t.Name
			}
		}
	}
	return out
}

// subscribedNames are the names of the topics some member subscribes to
// (by name or through its regex).
func (g *group) consumerSubscribed() []string {
	im := g.c.topics.current()
	set := map[string]bool{}
	for _, m := range g.consumer().members {
		for _, n := range m.names {
			set[n] = true
		}
		for _, name := range g.memberTopics(m, im) {
			set[name] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// fingerprint describes the subscribed topics that exist: a change of it
// (a topic created, deleted or re-created) bumps the group epoch.
func (g *group) fingerprint() string {
	im := g.c.topics.current()
	var b strings.Builder
	for _, n := range g.consumerSubscribed() {
		if t, ok := im.topic(n); ok {
			b.WriteString(n)
			b.WriteByte('/')
			b.WriteString(hex.EncodeToString(t.ID[:]))
			b.WriteByte('/')
			b.WriteString(strconv.Itoa(int(t.Partitions)))
			b.WriteByte(';')
		}
	}
	return b.String()
}

// tellSubscriptions tells the topic image what this group subscribes to.
func (g *group) tellSubscriptions() {
	s := subscriptions{names: map[string]bool{}}
	if cg := g.consumer(); cg != nil && cg.streams != nil {
		for _, n := range cg.streams.requiredTopics() {
			s.names[n] = true
		}
	} else if cg != nil {
		for _, m := range cg.members {
			for _, n := range m.names {
				s.names[n] = true
			}
			if m.re != nil {
				s.regexes = append(s.regexes, m.re)
			}
		}
	}
	g.c.topics.subscribe(g.name, s)
}

// updateConsumerState sets the group's state from its members and epochs.
func (g *group) updateConsumerState() {
	cg := g.consumer()
	was := g.state
	switch {
	case len(cg.members) == 0:
		g.state = Empty
	case cg.streams != nil && (cg.streams.resolved == nil || !cg.streams.resolved.ready):
		g.state = NotReady
	case cg.epoch > cg.assignmentEpoch:
		g.state = Assigning
	default:
		g.state = Stable
		for _, m := range cg.members {
			if m.state != memberStable || m.epoch != cg.assignmentEpoch {
				g.state = Reconciling
				break
			}
		}
	}
	if g.state == Empty && was != Empty {
		g.emptySince = time.Now()
	}
}

// toConsumer makes an empty classic group a consumer group; its offsets
// stay.
func (g *group) toConsumer() {
	g.kind = newConsumerGroup(TypeConsumer)
	g.state = Empty
}

// toClassic makes an empty group of another kind a classic group; its
// offsets stay.
func (g *group) toClassic() {
	g.kind = newClassicGroup(g)
	g.state = Empty
	g.tellSubscriptions()
}

// consumerTopicsChanged runs when the topic image changed: if what the
// members subscribe to changed, the group epoch moves and the target
// assignment is computed again at the next heartbeat.
func (g *group) consumerTopicsChanged() {
	cg := g.consumer()
	if cg == nil || len(cg.members) == 0 {
		return
	}
	if cg.streams != nil {
		g.streamsTopicsChanged()
		return
	}
	if fp := g.fingerprint(); fp != cg.subscribed {
		cg.subscribed = fp
		cg.epoch++
		g.updateConsumerState()
		g.saveThen(nil)
	}
}

// Saved form of a consumer group, in the group's state file.
type savedConsumer struct {
	Epoch           int32          `json:"epoch"`
	AssignmentEpoch int32          `json:"assignmentEpoch"`
	Subscribed      string         `json:"subscribed,omitempty"`
	Members         []savedCMember `json:"members,omitempty"`
	Streams         *savedStreams  `json:"streams,omitempty"`
}

type savedCMember struct {
	ID              string                     `json:"id"`
	InstanceID      *string                    `json:"instanceId,omitempty"`
	RackID          *string                    `json:"rackId,omitempty"`
	ClientID        string                     `json:"clientId"`
	ClientHost      string                     `json:"clientHost"`
	Principal       string                     `json:"principal,omitempty"`
	RebalanceMillis int64                      `json:"rebalanceMs"`
	Names           []string                   `json:"names,omitempty"`
	Regex           string                     `json:"regex,omitempty"`
	Assignor        string                     `json:"assignor,omitempty"`
	Epoch           int32                      `json:"epoch"`
	PrevEpoch       int32                      `json:"prevEpoch"`
	State           memberState                `json:"state"`
	Assigned        map[string]map[int32]int32 `json:"assigned,omitempty"`
	Revoking        map[string]map[int32]int32 `json:"revoking,omitempty"`
	Target          map[string]map[int32]int32 `json:"target,omitempty"`
	// A streams group member's.
	ProcessID     string                                         `json:"processId,omitempty"`
	Endpoint      *kmsg.StreamsGroupHeartbeatRequestUserEndpoint `json:"endpoint,omitempty"`
	ClientTags    map[string]string                              `json:"clientTags,omitempty"`
	TopologyEpoch int32                                          `json:"topologyEpoch,omitempty"`
	Standby       map[string]map[int32]int32                     `json:"standby,omitempty"`
	StandbyTarget map[string]map[int32]int32                     `json:"standbyTarget,omitempty"`
}

func savePartitions(ps partitions) map[string]map[int32]int32 {
	if len(ps) == 0 {
		return nil
	}
	out := make(map[string]map[int32]int32, len(ps))
	for t, m := range ps {
		out[hex.EncodeToString(t[:])] = m
	}
	return out
}

func loadPartitions(in map[string]map[int32]int32) partitions {
	out := partitions{}
	for s, m := range in {
		var t topicID
		if b, err := hex.DecodeString(s); err == nil && len(b) == len(t) {
			copy(t[:], b)
			out[t] = m
		}
	}
	return out
}

// save puts the group's state in st.Consumer.
func (cg *consumerGroup) save(st *savedState) {
	st.Type, st.Stable = cg.kindOf, true
	sc := &savedConsumer{Epoch: cg.epoch, AssignmentEpoch: cg.assignmentEpoch, Subscribed: cg.subscribed}
	if cg.streams != nil {
		sc.Streams = cg.streams.save()
	}
	for _, id := range slices.Sorted(maps.Keys(cg.members)) {
		sc.Members = append(sc.Members, saveMember(cg.members[id]))
	}
	st.Consumer = sc
}

func saveMember(m *cmember) savedCMember {
	sm := savedCMember{
		ID: m.id, InstanceID: m.instanceID, RackID: m.rackID, ClientID: m.clientID, ClientHost: m.clientHost,
		Principal: m.principal, RebalanceMillis: m.rebalance.Milliseconds(), Names: m.names, Regex: m.regex,
		Assignor: m.assignor, Epoch: m.epoch, PrevEpoch: m.prevEpoch, State: m.state,
		Assigned: savePartitions(m.assigned), Revoking: savePartitions(m.revoking), Target: savePartitions(m.target),
		ProcessID: m.processID, Endpoint: m.endpoint, ClientTags: m.clientTags, TopologyEpoch: m.topologyEpoch,
		Standby: savePartitions(m.standby), StandbyTarget: savePartitions(m.standbyTarget),
	}
	if len(sm.Names) == 0 {
		sm.Names = nil
	}
	return sm
}

// restoreConsumer sets a consumer group from its saved state; every member
// gets a new session, and those asked to revoke a new rebalance timeout.
func (g *group) restoreConsumer(typ string, sc *savedConsumer) {
	cg := newConsumerGroup(typ)
	g.kind = cg
	cg.epoch, cg.assignmentEpoch, cg.subscribed = sc.Epoch, sc.AssignmentEpoch, sc.Subscribed
	if typ == TypeStreams {
		if sc.Streams != nil {
			cg.streams.topology, cg.streams.endpointEpoch, cg.streams.shutdown = sc.Streams.Topology, sc.Streams.EndpointEpoch, sc.Streams.Shutdown
			cg.streams.description, cg.streams.describedEpoch = sc.Streams.Description, sc.Streams.DescribedEpoch
		}
	}
	for _, sm := range sc.Members {
		m := &cmember{
			id: sm.ID, instanceID: sm.InstanceID, rackID: sm.RackID, clientID: sm.ClientID, clientHost: sm.ClientHost,
			principal: sm.Principal, rebalance: time.Duration(sm.RebalanceMillis) * time.Millisecond,
			names: sm.Names, regex: sm.Regex, assignor: sm.Assignor, epoch: sm.Epoch, prevEpoch: sm.PrevEpoch,
			state: sm.State, assigned: loadPartitions(sm.Assigned), revoking: loadPartitions(sm.Revoking),
			target:    loadPartitions(sm.Target),
			processID: sm.ProcessID, endpoint: sm.Endpoint, clientTags: sm.ClientTags, topologyEpoch: sm.TopologyEpoch,
			standby: loadPartitions(sm.Standby), standbyTarget: loadPartitions(sm.StandbyTarget),
		}
		if typ == TypeStreams {
			m.session = g.c.opts.StreamsSessionTimeout
		}
		if m.regex != "" {
			m.re, _ = compileRegex(m.regex) // it compiled when it was accepted
		}
		cg.members[m.id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = m.id
		}
		g.touchConsumer(m)
		if m.state == memberUnrevoked {
			g.armRebalance(m)
		}
	}
	g.updateConsumerState()
	g.tellSubscriptions()
}

// describeAssignment is an assignment as ConsumerGroupDescribe shows it:
// topics with their ids and names, those no longer known left out.
func describeAssignment(ps partitions, im *topicImage) kmsg.Assignment {
	a := kmsg.NewAssignment()
	ids := slices.SortedFunc(maps.Keys(ps), func(a, b topicID) int { return strings.Compare(string(a[:]), string(b[:])) })
	for _, t := range ids {
		info, ok := im.byID[t]
		if !ok || len(ps[t]) == 0 {
			continue
		}
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic, tp.Partitions = t, info.Name, sortedPartitions(ps[t])
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return a
}
