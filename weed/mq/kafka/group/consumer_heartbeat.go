package group

// ConsumerGroupHeartbeat (KIP-848), as Kafka's group coordinator answers
// it: the request's checks in Kafka's order and with its messages; joining
// (epoch 0, also a member coming back with its id), heartbeating with its
// epoch (or the previous one, when a response was lost), leaving (-1),
// static members leaving for a while (-2) and coming back; the group epoch
// moved by subscription and topic changes, the target assignment computed
// again when it moved, and the member reconciled towards it. A heartbeat
// that changed the group is answered once its state is in the filer.
// Sessions (group.consumer.session.timeout.ms) and revocation deadlines
// (the member's rebalance timeout) fence members that go silent. Every
// method of group here runs on the group's goroutine.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
)

// HeartbeatError is the answer to a ConsumerGroupHeartbeat that failed.
func HeartbeatError(req *kmsg.ConsumerGroupHeartbeatRequest, e *kerr.Error, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.ErrorCode = e.Code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

// newUUID is a member id as Kafka makes them: 16 random bytes in URL-safe
// base64.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:]) //nolint:errcheck // crypto/rand does not fail
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func blank(s *string) bool { return s != nil && strings.TrimSpace(*s) == "" }

// checkHeartbeat checks a request as Kafka does before it reaches the
// group, in Kafka's order.
func (c *Coordinator) checkHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (*kerr.Error, string) {
	invalid := kerr.InvalidRequest
	switch {
	case (req.Version >= 1 || req.MemberEpoch > 0 || req.MemberEpoch == -1) && strings.TrimSpace(req.MemberID) == "":
		return invalid, "MemberId can't be empty."
	case strings.TrimSpace(req.Group) == "":
		return invalid, "GroupId can't be empty."
	case blank(req.InstanceID):
		return invalid, "InstanceId can't be empty."
	case blank(req.RackID):
		return invalid, "RackId can't be empty."
	}
	switch {
	case req.MemberEpoch == 0:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return invalid, "RebalanceTimeoutMs must be provided in first request."
		case req.Topics == nil || len(req.Topics) > 0:
			return invalid, "TopicPartitions must be empty when (re-)joining."
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return invalid, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
		}
	case req.MemberEpoch == -2:
		if req.InstanceID == nil {
			return invalid, "InstanceId can't be null."
		}
	case req.MemberEpoch < -2:
		return invalid, "MemberEpoch is invalid."
	}
	if req.ServerAssignor != nil && !slices.Contains(c.opts.ConsumerAssignors, *req.ServerAssignor) {
		return kerr.UnsupportedAssignor, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %s.",
			*req.ServerAssignor, strings.Join(c.opts.ConsumerAssignors, ", "))
	}
	return nil, ""
}

// ConsumerGroupHeartbeat answers a ConsumerGroupHeartbeat; principal is
// who sent it (the topics its regex matches are those it may describe).
func (c *Coordinator) ConsumerGroupHeartbeat(ctx context.Context, req *kmsg.ConsumerGroupHeartbeatRequest, cl Client, principal string) *kmsg.ConsumerGroupHeartbeatResponse {
	if e, msg := c.checkHeartbeat(req); e != nil {
		return HeartbeatError(req, e, msg)
	}
	leaving := req.MemberEpoch < 0
	g, e := c.lookup(ctx, req.Group, req.MemberEpoch == 0)
	if e != nil {
		return HeartbeatError(req, e, "")
	}
	if g == nil {
		if leaving {
			return HeartbeatError(req, kerr.GroupIDNotFound, fmt.Sprintf("Group %s not found.", req.Group))
		}
		return HeartbeatError(req, kerr.GroupIDNotFound, fmt.Sprintf("Consumer group %s not found.", req.Group))
	}
	if !leaving {
		// The topics the group and the request subscribe to are read
		// before the group looks at them.
		var re *regexp.Regexp
		if r := req.SubscribedTopicRegex; r != nil && *r != "" {
			re, _ = compileRegex(*r) // an invalid one is refused by the group
		}
		if c.topics.ensure(ctx, req.Group, req.SubscribedTopicNames, re) {
			c.topicsChanged()
		}
	}
	memberID := req.MemberID
	if memberID == "" { // v0 joins: the coordinator names the member
		memberID = newUUID()
	}
	// The group's session timeout and heartbeat interval: its group
	// configs (consumer.session.timeout.ms, consumer.heartbeat.interval.ms)
	// or the coordinator's defaults.
	timing := consumerTiming{session: c.opts.ConsumerSessionTimeout, interval: c.opts.ConsumerHeartbeatInterval}
	if cf := c.opts.ShareConfigs; cf != nil && !leaving {
		configs, err := cf.Get(ctx, req.Group, false)
		if err != nil {
			glog.Warningf("kafka group %s: its configs: %v", req.Group, err)
			return HeartbeatError(req, kerr.CoordinatorNotAvailable, "")
		}
		timing.apply(configs)
	}
	resp, err := await(ctx, g, func(answer func(*kmsg.ConsumerGroupHeartbeatResponse)) {
		if leaving {
			g.consumerLeave(req, answer)
			return
		}
		g.consumerHeartbeat(req, memberID, cl, principal, timing, answer)
	})
	if err != nil {
		return HeartbeatError(req, goneErr(err), "")
	}
	return resp
}

// consumerGroupFor returns the consumer group of a heartbeat, making an
// empty classic group one; or the error that refuses it.
func (g *group) consumerGroupFor(req *kmsg.ConsumerGroupHeartbeatRequest) (*kerr.Error, string) {
	if g.typ() == TypeShare || g.typ() == TypeStreams && len(g.consumer().members) > 0 {
		return kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a consumer group.", g.name)
	}
	if g.typ() == TypeConsumer {
		if req.MemberEpoch > 0 && !g.exists() {
			return kerr.GroupIDNotFound, fmt.Sprintf("Consumer group %s not found.", g.name)
		}
		return nil, ""
	}
	switch {
	case !g.exists() && req.MemberEpoch > 0:
		return kerr.GroupIDNotFound, fmt.Sprintf("Consumer group %s not found.", g.name)
	case req.MemberEpoch != 0:
		return kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a consumer group.", g.name)
	case g.kind.hasMembers() || g.state != Empty:
		return kerr.GroupIDNotFound, fmt.Sprintf("Cannot upgrade classic group %s to consumer group because it has members: "+
			"a classic group becomes a consumer group once it is empty (online upgrade is not served).", g.name)
	}
	g.toConsumer()
	return nil, ""
}

// consumerHeartbeat handles a heartbeat of epoch 0 or more.
func (g *group) consumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, memberID string, cl Client, principal string,
	timing consumerTiming, answer func(*kmsg.ConsumerGroupHeartbeatResponse)) {
	fail := func(e *kerr.Error, msg string) { answer(HeartbeatError(req, e, msg)) }
	if e, msg := g.consumerGroupFor(req); e != nil {
		fail(e, msg)
		return
	}
	cg := g.consumer()
	if max := g.c.opts.ConsumerMaxSize; max > 0 && len(cg.members) >= max && cg.members[memberID] == nil {
		fail(kerr.GroupMaxSizeReached, fmt.Sprintf("The consumer group has reached its maximum capacity of %d members.", max))
		return
	}

	// The member, and the one a static member replaces.
	var old, replaced *cmember
	if req.InstanceID == nil {
		old = cg.members[memberID]
		if old == nil && req.MemberEpoch != 0 {
			fail(kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", memberID, g.name))
			return
		}
	} else {
		holder := cg.members[cg.static[*req.InstanceID]]
		switch {
		case req.MemberEpoch == 0 && holder != nil && holder.epoch != -2:
			fail(kerr.UnreleasedInstanceID, fmt.Sprintf("Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.",
				memberID, *req.InstanceID, holder.id))
			return
		case req.MemberEpoch == 0:
			replaced = holder
		case holder == nil:
			fail(kerr.UnknownMemberID, fmt.Sprintf("Instance id %s is unknown.", *req.InstanceID))
			return
		case holder.id != memberID:
			fail(kerr.FencedInstanceID, fmt.Sprintf("Static member %s with instance id %s was fenced by member %s.", memberID, *req.InstanceID, holder.id))
			return
		default:
			old = holder
		}
	}
	if old != nil && req.MemberEpoch != 0 {
		if e, msg := checkEpoch(old, req); e != nil {
			fail(e, msg)
			return
		}
	}

	// The member as this heartbeat leaves it; nothing changes before
	// every check has passed.
	var m *cmember
	switch {
	case replaced != nil:
		m = replaced.copyMember()
		m.id, m.epoch, m.prevEpoch = memberID, 0, 0
	case old != nil:
		m = old.copyMember()
	default:
		m = &cmember{id: memberID, prevEpoch: -1, assigned: partitions{}, revoking: partitions{}, target: partitions{}}
	}
	m.clientID, m.clientHost, m.principal = cl.ID, cl.Host, principal
	m.session = timing.session
	if req.InstanceID != nil {
		m.instanceID = req.InstanceID
	}
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	if req.RebalanceTimeoutMillis >= 0 {
		m.rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.ServerAssignor != nil {
		m.assignor = *req.ServerAssignor
	}
	subChanged := false
	if req.SubscribedTopicNames != nil {
		names := slices.Compact(slices.Sorted(slices.Values(req.SubscribedTopicNames)))
		subChanged = !slices.Equal(names, m.names)
		m.names = names
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex {
		m.re = nil
		if r := *req.SubscribedTopicRegex; r != "" {
			re, err := compileRegex(r)
			if err != nil {
				fail(kerr.InvalidRegularExpression, fmt.Sprintf("SubscribedTopicRegex `%s` is not a valid regular expression: %v.", r, err))
				return
			}
			m.re = re
		}
		m.regex = *req.SubscribedTopicRegex
		subChanged = true
	}

	// Installed; the group epoch moves if the subscriptions (or the
	// topics they name) changed.
	epochs := [2]int32{cg.epoch, cg.assignmentEpoch}
	if replaced != nil {
		delete(cg.members, replaced.id)
		replaced.sessionT, replaced.rebalanceT = 0, 0
	}
	cg.members[m.id] = m
	if m.instanceID != nil {
		cg.static[*m.instanceID] = m.id
	}
	targets := g.advanceEpochs(subChanged, g.computeTargets)
	if subChanged || m.state != memberStable || m.epoch != cg.assignmentEpoch {
		g.reconcile(m, owned(req.Topics), g.memberTopics(m, g.c.topics.current()), subChanged)
	}
	before := old
	if before == nil {
		before = replaced
	}
	changed := before == nil || replaced != nil || !sameSaved(before, m)
	if m.state == memberUnrevoked {
		if changed {
			g.armRebalance(m)
		}
	} else {
		m.rebalanceT = 0
	}
	g.touchConsumer(m)
	g.updateConsumerState()
	if subChanged || before == nil {
		g.tellSubscriptions()
	}

	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.MemberID = &m.id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(timing.interval.Milliseconds())
	full := req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil
	if req.MemberEpoch == 0 || full || before == nil || !samePartitions(before.assigned, m.assigned) {
		resp.Assignment = assignmentOf(m.assigned)
	}
	if !changed && !targets && epochs == [2]int32{cg.epoch, cg.assignmentEpoch} {
		answer(resp)
		return
	}
	g.saveThen(func(err error) {
		if err != nil {
			answer(HeartbeatError(req, savedErr(err), ""))
			return
		}
		answer(resp)
	})
}

// advanceEpochs moves the group epoch when a new group gets its first
// member, when subscriptions changed, or when the topics they name did;
// and computes the targets again with compute when the group epoch is
// ahead of the assignment's. It reports whether it computed them.
func (g *group) advanceEpochs(subChanged bool, compute func()) bool {
	cg := g.consumer()
	bump := cg.epoch == 0 || subChanged
	if fp := g.fingerprint(); fp != cg.subscribed {
		cg.subscribed, bump = fp, true
	}
	if bump {
		cg.epoch++
	}
	if cg.epoch > cg.assignmentEpoch {
		compute()
		return true
	}
	return false
}

// savedErr is the Kafka error for a failed save.
func savedErr(err error) *kerr.Error {
	if e, ok := err.(*kerr.Error); ok {
		return e
	}
	return kerr.CoordinatorNotAvailable
}

// checkEpoch checks the epoch of a member's heartbeat: the member's, or
// its previous one if the heartbeat owns only what it was given (the
// answer that moved it on was lost).
func checkEpoch(m *cmember, req *kmsg.ConsumerGroupHeartbeatRequest) (*kerr.Error, string) {
	e, cur := req.MemberEpoch, m.epoch
	switch {
	case e > cur:
		return kerr.FencedMemberEpoch, fmt.Sprintf("The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", e, cur)
	case e < cur && !(e == m.prevEpoch && req.Topics != nil && owned(req.Topics).within(m.assigned)):
		return kerr.FencedMemberEpoch, fmt.Sprintf("The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", e, cur)
	}
	return nil, ""
}

// sameSaved reports whether two versions of a member save the same.
func sameSaved(a, b *cmember) bool {
	return reflect.DeepEqual(saveMember(a), saveMember(b))
}

// computeTargets runs the group's assignor over every member, and moves
// the assignment epoch to the group epoch.
func (g *group) computeTargets() {
	cg := g.consumer()
	im := g.c.topics.current()
	in := &assignInput{topics: im.byID}
	for _, id := range slices.Sorted(maps.Keys(cg.members)) {
		m := cg.members[id]
		a := &assignee{id: m.id, instanceID: m.instanceID, topics: map[topicID]bool{}, target: m.target}
		for t := range g.memberTopics(m, im) {
			a.topics[t] = true
		}
		in.members = append(in.members, a)
	}
	name := g.assignorName()
	for id, ps := range assign(name, in) {
		cg.members[id].target = ps
	}
	cg.assignmentEpoch = cg.epoch
	metrics.Rebalances.WithLabelValues(metrics.Group(g.name)).Inc()
	glog.V(1).Infof("kafka group %s: target assignment of epoch %d computed by %s for %d members", g.name, cg.epoch, name, len(cg.members))
}

// assignorName is the assignor the group uses: the one most members ask
// for, else the first configured.
func (g *group) assignorName() string {
	votes := map[string]int{}
	for _, m := range g.consumer().members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	name := g.c.opts.ConsumerAssignors[0]
	for _, a := range g.c.opts.ConsumerAssignors {
		if votes[a] > votes[name] {
			name = a
		}
	}
	return name
}

// consumerTiming is a consumer group's session timeout and heartbeat
// interval.
type consumerTiming struct{ session, interval time.Duration }

// apply takes the group configs that set them.
func (t *consumerTiming) apply(configs map[string]string) {
	ms := func(name string, d *time.Duration) {
		if n, err := strconv.ParseInt(configs[name], 10, 64); err == nil && n > 0 {
			*d = time.Duration(n) * time.Millisecond
		}
	}
	ms(share.ConsumerSessionTimeout, &t.session)
	ms(share.ConsumerHeartbeatInterval, &t.interval)
}

// touchConsumer restarts a member's session: without a heartbeat within
// group.consumer.session.timeout.ms it is fenced.
func (g *group) touchConsumer(m *cmember) {
	id := g.nextSeq()
	m.sessionT = id
	g.after(g.c.sessionOf(m), func() {
		cur := g.memberWithTimer(m.id, func(c *cmember) bool { return c.sessionT == id })
		if cur == nil {
			return
		}
		glog.V(0).Infof("kafka group %s: member %s left the group: session timeout %v expired", g.name, cur.id, g.c.sessionOf(cur))
		g.fenceMembers([]*cmember{cur})
		g.saveThen(nil)
	})
}

// armRebalance gives a member asked to revoke partitions its rebalance
// timeout to do so; past it, it is fenced.
func (g *group) armRebalance(m *cmember) {
	id, epoch := g.nextSeq(), m.epoch
	m.rebalanceT = id
	g.after(m.rebalance, func() {
		cur := g.memberWithTimer(m.id, func(c *cmember) bool { return c.rebalanceT == id && c.epoch == epoch })
		if cur == nil {
			return
		}
		glog.V(0).Infof("kafka group %s: member %s left the group: partitions not revoked within its rebalance timeout %v", g.name, cur.id, cur.rebalance)
		g.fenceMembers([]*cmember{cur})
		g.saveThen(nil)
	})
}

// memberWithTimer returns the member with this id if its timer is still
// the one that fired.
func (g *group) memberWithTimer(id string, live func(*cmember) bool) *cmember {
	if g.consumer() == nil {
		return nil
	}
	if m := g.consumer().members[id]; m != nil && live(m) {
		return m
	}
	return nil
}

// fenceMembers removes members (they left, or their session or rebalance
// timeout ended): the group epoch moves once, and the target assignment is
// computed again at the next heartbeat.
func (g *group) fenceMembers(ms []*cmember) {
	cg := g.consumer()
	for _, m := range ms {
		delete(cg.members, m.id)
		if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
			delete(cg.static, *m.instanceID)
		}
		m.sessionT, m.rebalanceT = 0, 0
	}
	cg.subscribed = g.fingerprint()
	cg.epoch++
	g.updateConsumerState()
	g.tellSubscriptions()
}

// consumerLeave handles a heartbeat of epoch -1 (leaving) or -2 (a static
// member leaving for a while: it keeps its partitions until it comes back
// or its session ends).
func (g *group) consumerLeave(req *kmsg.ConsumerGroupHeartbeatRequest, answer func(*kmsg.ConsumerGroupHeartbeatResponse)) {
	fail := func(e *kerr.Error, msg string) { answer(HeartbeatError(req, e, msg)) }
	if g.typ() != TypeConsumer || !g.exists() {
		if !g.exists() {
			fail(kerr.GroupIDNotFound, fmt.Sprintf("Group %s not found.", g.name))
		} else {
			fail(kerr.GroupIDNotFound, fmt.Sprintf("Group %s is not a consumer group.", g.name))
		}
		return
	}
	cg := g.consumer()
	var m *cmember
	if req.InstanceID == nil {
		if m = cg.members[req.MemberID]; m == nil {
			fail(kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.name))
			return
		}
	} else {
		if m = cg.members[cg.static[*req.InstanceID]]; m == nil {
			fail(kerr.UnknownMemberID, fmt.Sprintf("Instance id %s is unknown.", *req.InstanceID))
			return
		}
		if m.id != req.MemberID {
			fail(kerr.FencedInstanceID, fmt.Sprintf("Static member %s with instance id %s was fenced by member %s.", req.MemberID, *req.InstanceID, m.id))
			return
		}
	}
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.MemberID = &m.id
	if req.MemberEpoch == -2 {
		glog.V(1).Infof("kafka group %s: static member %s (%s) leaves for now, keeping its partitions", g.name, m.id, *m.instanceID)
		m.epoch, m.revoking = -2, partitions{}
		resp.MemberEpoch = -2
	} else {
		glog.V(1).Infof("kafka group %s: member %s leaves", g.name, m.id)
		g.fenceMembers([]*cmember{m})
		resp.MemberID = &req.MemberID
		resp.MemberEpoch = -1
	}
	g.updateConsumerState()
	g.saveThen(func(err error) {
		if err != nil {
			answer(HeartbeatError(req, savedErr(err), ""))
			return
		}
		answer(resp)
	})
}

// leaveConsumer is LeaveGroup on a consumer group (how admin clients
// remove members): each named member, by instance id or member id, is
// fenced, all in one move of the group epoch.
func (g *group) leaveConsumer(members []Leaving, errs []*kerr.Error) {
	cg := g.consumer()
	var gone []*cmember
	for i, l := range members {
		var m *cmember
		if l.InstanceID != nil {
			m = cg.members[cg.static[*l.InstanceID]]
			if m != nil && l.MemberID != "" && l.MemberID != m.id {
				errs[i] = kerr.FencedInstanceID
				continue
			}
		} else {
			m = cg.members[l.MemberID]
		}
		if m == nil || slices.Contains(gone, m) {
			errs[i] = kerr.UnknownMemberID
			continue
		}
		glog.V(1).Infof("kafka group %s: member %s removed by LeaveGroup", g.name, m.id)
		gone = append(gone, m)
	}
	if len(gone) > 0 {
		g.fenceMembers(gone)
		g.saveThen(nil)
	}
}

// validateConsumerCommit checks a commit to a consumer group: with no
// members, anyone may commit (generation -1); otherwise a member, with
// OffsetCommit v9+, at its epoch, or (KIP-1251) at an older epoch for
// partitions it has owned since then at least.
func (g *group) validateConsumerCommit(who Committer, offsets offset.Topics) *kerr.Error {
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
		for _, parts := range offsets {
			for p, o := range parts {
				var t topicID
				if b, err := hex.DecodeString(o.TopicID); err == nil && len(b) == len(t) {
					copy(t[:], b)
				}
				if e, ok := m.assigned[t][p]; !ok || who.Generation < e {
					return kerr.StaleMemberEpoch
				}
			}
		}
	}
	return nil
}
