package group

// Committed offsets (OffsetCommit, OffsetFetch, OffsetDelete) and the
// group introspection and admin calls (DescribeGroups, ListGroups,
// DeleteGroups).

import (
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
)

// Committer is who commits: a member of the current generation, or a
// group-less consumer (generation -1, no member id).
type Committer struct {
	Generation int32 // a consumer group's member commits with its member epoch
	MemberID   string
	InstanceID *string
	// Version is the OffsetCommit's version: a consumer group's members
	// commit with v9+, and learn of an old epoch by STALE_MEMBER_EPOCH
	// (TxnOffsetCommit: 0, ILLEGAL_GENERATION).
	Version int16
}

// names reports whether the committer names a member (or a generation),
// rather than committing as a simple consumer.
func (who Committer) names() bool {
	return who.Generation >= 0 || who.MemberID != "" || who.InstanceID != nil
}

// checkMember checks that the committer is a member of the current
// generation and not a fenced incarnation of a static member.
func (g *group) checkMember(who Committer) (*member, *kerr.Error) {
	if g.typ() == TypeShare {
		return nil, kerr.GroupIDNotFound
	}
	if cg := g.consumer(); cg != nil {
		if who.Generation < 0 && len(cg.members) == 0 {
			return nil, nil
		}
		m := cg.members[who.MemberID]
		switch {
		case m == nil:
			return nil, kerr.UnknownMemberID
		case who.Generation != m.epoch:
			return nil, kerr.IllegalGeneration
		}
		return nil, nil
	}
	cl := g.classic()
	if cl.fenced(who.MemberID, who.InstanceID) {
		return nil, kerr.FencedInstanceID
	}
	m := cl.members[who.MemberID]
	if m == nil {
		return nil, kerr.UnknownMemberID
	}
	if who.Generation != cl.generation {
		return nil, kerr.IllegalGeneration
	}
	return m, nil
}

// validateCommit checks a commit as Kafka does.
func (g *group) validateCommit(who Committer, offsets offset.Topics) *kerr.Error {
	if g.typ() == TypeShare {
		return kerr.GroupIDNotFound // a share group has no committed offsets
	}
	if cg := g.consumer(); cg != nil && cg.streams != nil {
		return g.validateStreamsCommit(who, offsets)
	} else if cg != nil {
		return g.validateConsumerCommit(who, offsets)
	}
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable
	}
	if who.Generation < 0 && g.state == Empty {
		return nil // a simple consumer, storing offsets only
	}
	if who.names() {
		m, e := g.checkMember(who)
		if e != nil {
			return e
		}
		if g.state == CompletingRebalance {
			return kerr.RebalanceInProgress
		}
		g.classic().touch(m)
		return nil
	}
	// Generation -1 with no member, but the group has members: simple
	// commits would race with theirs.
	return kerr.UnknownMemberID
}

// CommitOffsets commits offsets for the group once the committer is
// validated, and returns when they are in the filer. The error is a Kafka
// error for every partition of the request.
func (c *Coordinator) CommitOffsets(ctx context.Context, name string, who Committer, offsets offset.Topics) *kerr.Error {
	g, e := c.lookup(ctx, name, false)
	if e != nil {
		return e
	}
	if g == nil {
		if who.Generation >= 0 {
			if who.Version >= 9 {
				return kerr.GroupIDNotFound
			}
			return kerr.IllegalGeneration
		}
		if g, e = c.lookup(ctx, name, true); e != nil {
			return e
		}
	}
	now := clock.Now().UnixMilli()
	for _, parts := range offsets {
		for p, o := range parts {
			o.CommitTime = now
			parts[p] = o
		}
	}
	done, err := await(ctx, g, func(answer func(<-chan error)) {
		if e := g.validateCommit(who, offsets); e != nil {
			answer(failed(e))
			return
		}
		// Queued in the order validated, behind the saves under way
		// (a group's first commit saves the group first); written
		// outside the group's goroutine.
		commit := func(err error) {
			if err != nil {
				answer(failed(err))
				return
			}
			answer(c.opts.Store.Commit(g.name, offsets))
		}
		if !g.saved && !g.saving && g.next == nil {
			g.saveThen(commit)
		} else {
			g.afterSaves(commit)
		}
	})
	if err != nil {
		return goneErr(err)
	}
	select {
	case err := <-done:
		return c.storeErr(g, "commit", err)
	case <-ctx.Done():
		return kerr.RequestTimedOut
	}
}

// AddTxnOffsets answers a TxnOffsetCommit: offsets the producer's open
// transaction commits for the group, held until the transaction's
// coordinator ends it (EndTxnOffsets) and saved with the group's state
// before the answer. v3+ requests name the committing member, checked like
// an OffsetCommit's; generation -1 and no member id, as older producers
// send, are not checked.
func (c *Coordinator) AddTxnOffsets(ctx context.Context, name string, who Committer, producerID int64, epoch int16, offsets offset.Topics) *kerr.Error {
	checked := who.names()
	g, e := c.lookup(ctx, name, !checked)
	if e != nil {
		return e
	}
	if g == nil {
		return kerr.IllegalGeneration
	}
	now := clock.Now().UnixMilli()
	e, err := await(ctx, g, func(answer func(*kerr.Error)) {
		if checked {
			if _, e := g.checkMember(who); e != nil {
				answer(e)
				return
			}
		}
		t := g.txnOffsets[producerID]
		switch {
		case t != nil && epoch < t.Epoch:
			answer(kerr.ProducerFenced)
			return
		case t == nil || epoch > t.Epoch:
			t = &txnOffsets{ProducerID: producerID, Epoch: epoch, Offsets: offset.Topics{}}
		default:
			t = &txnOffsets{ProducerID: producerID, Epoch: epoch, Offsets: t.Offsets.Clone()}
		}
		for topic, parts := range offsets {
			if t.Offsets[topic] == nil {
				t.Offsets[topic] = map[int32]offset.Committed{}
			}
			for p, o := range parts {
				o.CommitTime = now
				t.Offsets[topic][p] = o
			}
		}
		old := g.txnOffsets[producerID]
		g.txnOffsets[producerID] = t
		g.saveThen(func(err error) {
			if err == nil {
				answer(nil)
				return
			}
			if g.txnOffsets[producerID] == t { // not changed again meanwhile
				if old == nil {
					delete(g.txnOffsets, producerID)
				} else {
					g.txnOffsets[producerID] = old
				}
			}
			answer(c.storeErr(g, "saving a transaction's offsets", err))
		})
	})
	if err != nil {
		return goneErr(err)
	}
	return e
}

// EndTxnOffsets carries out a transaction's marker for the group: the
// producer's pending offsets become the group's committed offsets if it
// committed, and are dropped if it aborted. It returns once that is in the
// filer; a repeated marker does nothing.
func (c *Coordinator) EndTxnOffsets(ctx context.Context, name string, producerID int64, epoch int16, coordinatorEpoch int32, commit bool) *kerr.Error {
	g, e := c.lookup(ctx, name, false)
	if e != nil {
		return e
	}
	if g == nil {
		return nil // nothing pending: the group was deleted, or ended before
	}
	res, err := await(ctx, g, func(answer func(error)) {
		last, known := g.txnCoordinators[producerID]
		if known && coordinatorEpoch < last.Epoch {
			glog.Warningf("kafka group %s: refused a marker for producer %d from coordinator epoch %d, after one from %d", g.name, producerID, coordinatorEpoch, last.Epoch)
			answer(kerr.TransactionCoordinatorFenced)
			return
		}
		g.txnCoordinators[producerID] = txnCoordinator{Epoch: coordinatorEpoch, At: clock.Now().UnixMilli()}
		t := g.txnOffsets[producerID]
		if t == nil || t.Epoch > epoch {
			if known && last.Epoch == coordinatorEpoch {
				answer(nil)
				return
			}
			// A coordinator's first marker for the producer here: kept
			// before the answer, so that a deposed one's is refused
			// wherever the group goes.
			g.saveThen(answer)
			return
		}
		drop := func() {
			delete(g.txnOffsets, producerID)
			g.saveThen(func(err error) {
				if err != nil && g.txnOffsets[producerID] == nil {
					g.txnOffsets[producerID] = t
				}
				answer(err)
			})
		}
		if !commit {
			drop()
			return
		}
		// Committed before the pending copy goes: a marker repeated
		// after a failure commits them again. The commit is queued
		// here, in order, and waited for outside the goroutine.
		done := c.opts.Store.Commit(g.name, t.Offsets)
		g.c.wg.Add(1)
		go func() {
			defer g.c.wg.Done()
			err := <-done
			g.deliver(func() {
				switch {
				case err != nil:
					answer(err)
				case g.txnOffsets[producerID] != t:
					answer(nil) // ended or replaced meanwhile
				default:
					drop()
				}
			})
		}()
	})
	if err != nil {
		return goneErr(err)
	}
	return c.storeErr(g, "ending a transaction's offsets", res)
}

// PendingTxnOffsets reports whether an open transaction will commit an
// offset of the group's partition (OffsetFetch with require_stable).
func (c *Coordinator) PendingTxnOffsets(ctx context.Context, name, topic string, partition int32) bool {
	g, e := c.lookup(ctx, name, false)
	if e != nil || g == nil {
		return false
	}
	pending, err := call(ctx, g, func() bool {
		for _, t := range g.txnOffsets {
			if _, ok := t.Offsets[topic][partition]; ok {
				return true
			}
		}
		return false
	})
	return err != nil || pending
}

// FetchOffsets returns the group's committed offsets of topics (all topics
// if nil). A group that does not exist has none.
func (c *Coordinator) FetchOffsets(ctx context.Context, name string, topics []string) (offset.Topics, *kerr.Error) {
	g, e := c.lookup(ctx, name, false)
	if e != nil {
		return nil, e
	}
	if g == nil {
		return offset.Topics{}, nil
	}
	if isShare, err := call(ctx, g, func() bool { return g.typ() == TypeShare }); err != nil {
		return nil, goneErr(err)
	} else if isShare {
		return nil, kerr.GroupIDNotFound
	}
	offs, err := c.opts.Store.Fetch(ctx, name, topics)
	if err != nil {
		glog.Warningf("kafka group %s: %v", name, err)
		return nil, kerr.CoordinatorLoadInProgress
	}
	return offs, nil
}

// DeleteOffsets answers an OffsetDelete: the group's commits of partitions
// are removed, unless members of the group are subscribed to the topic.
// It returns an error per topic, and the request's.
func (c *Coordinator) DeleteOffsets(ctx context.Context, name string, partitions map[string][]int32) (map[string]*kerr.Error, *kerr.Error) {
	g, e := c.lookup(ctx, name, false)
	if e != nil {
		return nil, e
	}
	if g == nil {
		return nil, kerr.GroupIDNotFound
	}
	type result struct {
		group  *kerr.Error
		topics map[string]*kerr.Error
		done   <-chan error
	}
	r, err := call(ctx, g, func() result {
		if !g.exists() {
			return result{group: kerr.GroupIDNotFound}
		}
		if g.state == Dead {
			return result{group: kerr.CoordinatorNotAvailable}
		}
		if g.typ() == TypeShare {
			return result{group: kerr.GroupIDNotFound}
		}
		if cl := g.classic(); cl != nil && g.state != Empty && cl.protocolType != "consumer" {
			return result{group: kerr.NonEmptyGroup}
		}
		subscribed := g.subscribedTopics()
		res := result{topics: map[string]*kerr.Error{}}
		drop := map[string][]int32{}
		for t, parts := range partitions {
			if g.state != Empty && slices.Contains(subscribed, t) {
				res.topics[t] = kerr.GroupSubscribedToTopic
				continue
			}
			drop[t] = parts
		}
		res.done = c.opts.Store.Delete(g.name, drop)
		return res
	})
	if err != nil {
		return nil, goneErr(err)
	}
	if r.done != nil {
		select {
		case err := <-r.done:
			if e := c.storeErr(g, "deleting offsets", err); e != nil {
				return nil, e
			}
		case <-ctx.Done():
			return nil, kerr.RequestTimedOut
		}
	}
	return r.topics, r.group
}

// subscribedTopics are the topics the members of a consumer group are
// subscribed to, from their protocol metadata.
func (g *group) subscribedTopics() []string {
	cl := g.classic()
	if cl == nil {
		return g.consumerSubscribed()
	}
	var topics []string
	for _, m := range cl.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadataFor(cl.protocol)); err != nil {
			continue
		}
		topics = append(topics, meta.Topics...)
	}
	return topics
}

// Describe answers DescribeGroups for one group.
func (c *Coordinator) Describe(ctx context.Context, name string, version int16) kmsg.DescribeGroupsResponseGroup {
	d := kmsg.NewDescribeGroupsResponseGroup()
	d.Group = name
	d.State = string(Dead)
	g, e := c.lookup(ctx, name, false)
	if e != nil {
		d.ErrorCode = e.Code
		return d
	}
	notFound := func() {
		if version >= 6 {
			d.ErrorCode = kerr.GroupIDNotFound.Code
		}
	}
	if g == nil {
		notFound()
		return d
	}
	consumer := false
	found, err := call(ctx, g, func() bool {
		if !g.exists() {
			return false
		}
		cl := g.classic()
		if cl == nil {
			consumer = true // described by ConsumerGroupDescribe
			return false
		}
		d.State = string(g.state)
		d.ProtocolType = cl.protocolType
		if g.state == Stable {
			d.Protocol = cl.protocol
		}
		for _, m := range cl.sortedMembers() {
			dm := kmsg.NewDescribeGroupsResponseGroupMember()
			dm.MemberID, dm.InstanceID = m.id, m.instanceID
			dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
			if g.state == Stable {
				dm.ProtocolMetadata = m.metadataFor(cl.protocol)
				dm.MemberAssignment = m.assignment
			}
			d.Members = append(d.Members, dm)
		}
		return true
	})
	if err != nil {
		d.ErrorCode = goneErr(err).Code
		return d
	}
	if !found {
		notFound()
		if consumer && version >= 6 {
			d.ErrorMessage = kmsg.StringPtr("Group " + name + " is not a classic group.")
		}
	}
	return d
}

// Listed is one group of ListGroups.
type Listed struct {
	Name         string
	ProtocolType string
	State        State
	Type         string // TypeClassic or TypeConsumer
}

// List answers ListGroups: every group this gateway coordinates, those
// saved in the filer and not yet asked for included.
func (c *Coordinator) List(ctx context.Context) ([]Listed, *kerr.Error) {
	saved, err := c.opts.Store.States(ctx)
	if err != nil {
		glog.Warningf("kafka groups: %v", err)
		return nil, kerr.CoordinatorLoadInProgress
	}
	c.mu.Lock()
	for name := range c.groups {
		saved[name] = nil
	}
	c.mu.Unlock()
	groups := make([]*group, 0, len(saved))
	for name := range saved {
		if _, owned := c.serving(name); !owned {
			continue
		}
		if g, _ := c.lookup(ctx, name, false); g != nil {
			groups = append(groups, g)
		}
	}
	var out []Listed
	for _, g := range groups {
		l, err := call(ctx, g, func() *Listed {
			if !g.exists() || g.state == Dead {
				return nil
			}
			if cl := g.classic(); cl != nil {
				return &Listed{Name: g.name, ProtocolType: cl.protocolType, State: g.state, Type: TypeClassic}
			}
			// the protocol type is the type, as Kafka lists them
			return &Listed{Name: g.name, ProtocolType: g.typ(), State: g.state, Type: g.typ()}
		})
		if err == nil && l != nil {
			out = append(out, *l)
		}
	}
	slices.SortFunc(out, func(a, b Listed) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out, nil
}

// DeleteGroup answers DeleteGroups for one group: an empty group is
// removed with its offsets; one with members is refused.
func (c *Coordinator) DeleteGroup(ctx context.Context, name string) *kerr.Error {
	g, e := c.lookup(ctx, name, false)
	if e != nil {
		return e
	}
	if g == nil {
		return kerr.GroupIDNotFound
	}
	for {
		saved := make(chan struct{})
		res, err := call(ctx, g, func() *kerr.Error {
			if g.saving || g.next != nil {
				// A save of the group's state is under way (the last
				// member's leaving, say): the removal is conditional
				// on the version that save writes, so it comes after.
				g.afterSaves(func(error) { close(saved) })
				return errSavesPending
			}
			return c.deleteLoaded(ctx, g)
		})
		if err != nil {
			return goneErr(err)
		}
		if res != errSavesPending {
			return res
		}
		select {
		case <-saved:
		case <-ctx.Done():
			return kerr.RequestTimedOut
		case <-g.quit:
			return kerr.CoordinatorNotAvailable
		}
	}
}

// errSavesPending: DeleteGroup waits for the group's saves, and asks
// again.
var errSavesPending = &kerr.Error{Message: "SAVES_PENDING"}

// deleteLoaded is DeleteGroup of a loaded group with no save under way,
// on its goroutine.
func (c *Coordinator) deleteLoaded(ctx context.Context, g *group) *kerr.Error {
	if !g.exists() {
		return kerr.GroupIDNotFound
	}
	if g.state != Empty {
		return kerr.NonEmptyGroup
	}
	if g.typ() == TypeShare { // its share-partitions and configs go first
		if st := c.opts.ShareStates; st != nil {
			if err := st.DeleteGroup(ctx, g.name); err != nil {
				glog.Warningf("kafka group %s: removing its share-partitions: %v", g.name, err)
				return kerr.CoordinatorNotAvailable
			}
		}
		if cf := c.opts.ShareConfigs; cf != nil {
			if err := cf.Forget(ctx, g.name); err != nil {
				glog.Warningf("kafka group %s: removing its configs: %v", g.name, err)
				return kerr.CoordinatorNotAvailable
			}
		}
	}
	// Commits accepted before are written first; none can come in
	// meanwhile, as they pass through this goroutine.
	<-c.opts.Store.Delete(g.name, nil)
	dctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	if err := c.opts.Store.DeleteGroup(dctx, g.name, g.version); err != nil {
		glog.Warningf("kafka group %s: %v", g.name, err)
		if errors.Is(err, filerfs.ErrChanged) {
			// Another gateway coordinates it now: this copy is
			// stale, and what it wrote stays.
			c.unload(g)
			return kerr.NotCoordinator
		}
		return kerr.CoordinatorNotAvailable
	}
	g.state = Dead
	glog.V(0).Infof("kafka group %s: deleted", g.name)
	metrics.ForgetGroup(g.name)
	c.forget(g) // last: the caller is answered as the group ends
	return nil
}

// GroupStats is every group with its members and committed offsets.
func (c *Coordinator) GroupStats(ctx context.Context) ([]Stat, error) {
	listed, e := c.List(ctx)
	if e != nil {
		return nil, e
	}
	out := make([]Stat, 0, len(listed))
	for _, l := range listed {
		st := Stat{Name: l.Name, Type: l.Type, Committed: map[string]map[int32]int64{}}
		if g, _ := c.lookup(ctx, l.Name, false); g != nil {
			st.Members, _ = call(ctx, g, func() int {
				if cg := g.consumer(); cg != nil {
					return len(cg.members)
				}
				return len(g.classic().members)
			})
		}
		offs, err := c.opts.Store.Fetch(ctx, l.Name, nil)
		if err != nil {
			return nil, err
		}
		for topic, parts := range offs {
			st.Committed[topic] = map[int32]int64{}
			for p, o := range parts {
				st.Committed[topic][p] = o.Offset
			}
		}
		out = append(out, st)
	}
	return out, nil
}
