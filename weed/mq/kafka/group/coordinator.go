// Package group is the group coordinator: Kafka's classic consumer group
// protocol (join, sync, heartbeat, leave, static membership) and the
// group's committed offsets. Each group is owned by one goroutine; requests
// and timers change it by sending it functions, so a group's state needs no
// lock. Offsets and the state needed to carry on after a restart are kept
// in the filer through package offset.
package group

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/semaphore"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
)

// Options configure a Coordinator. Durations left zero take Kafka's
// defaults.
type Options struct {
	Store *offset.Store
	// InitialRebalanceDelay is how long a new group waits for more members
	// before its first generation (group.initial.rebalance.delay.ms).
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound the session timeouts
	// members may ask for (group.min/max.session.timeout.ms).
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// OffsetsRetention is offsets.retention.minutes: the committed offsets
	// of a group empty for this long (or, for a group that only commits,
	// committed this long ago) are removed, and so is the group once none
	// are left. Zero: DefaultOffsetsRetention; negative: never.
	OffsetsRetention time.Duration
	// RetentionCheck is offsets.retention.check.interval.ms, how often
	// that is looked at; zero: DefaultRetentionCheck.
	RetentionCheck time.Duration
	// Serving reports whether this gateway serves a group now, as its
	// coordinator, and in which term (a group loaded in an earlier term is
	// stale): membership.Serving. Nil: every group, always.
	Serving func(group string) (term int64, ok bool)
	// Changed is closed when what Serving answers may have changed
	// (membership.Changed); the groups no longer served here are dropped
	// then. Nil: it never changes.
	Changed func() <-chan struct{}

	// Consumer groups (KIP-848).
	//
	// Topics gives them the cluster's topics (nil: none, so they are
	// assigned nothing); TopicRefresh is how often the topics of loaded
	// consumer groups are read again (zero: DefaultTopicRefresh).
	Topics       Topics
	TopicRefresh time.Duration
	// ConsumerSessionTimeout and ConsumerHeartbeatInterval are
	// group.consumer.session.timeout.ms and
	// group.consumer.heartbeat.interval.ms; zero: Kafka's defaults.
	ConsumerSessionTimeout    time.Duration
	ConsumerHeartbeatInterval time.Duration
	// ConsumerAssignors is group.consumer.assignors, of "uniform" and
	// "range": the first is used when no member asks for one (nil:
	// DefaultConsumerAssignors).
	ConsumerAssignors []string
	// ConsumerMaxSize is group.consumer.max.size (0: unbounded).
	ConsumerMaxSize int
	// ClassicMaxSize is group.max.size, the most members of a classic
	// group, those a JoinGroup v4+ handed an id and waits for counted
	// (0: unbounded).
	ClassicMaxSize int
	// Streams groups (KIP-1071): group.streams.session.timeout.ms,
	// .heartbeat.interval.ms, .initial.rebalance.delay.ms (zero: Kafka's
	// defaults), .num.standby.replicas and .max.size (0: unbounded).
	StreamsSessionTimeout     time.Duration
	StreamsHeartbeatInterval  time.Duration
	StreamsInitialDelay       time.Duration
	StreamsNumStandbyReplicas int
	StreamsMaxSize            int
	// Share groups (KIP-932): their configs (nil: the defaults), most
	// members (group.share.max.size; zero: DefaultShareMaxSize), and
	// where their share-partitions are kept, removed with the group (nil:
	// nowhere).
	ShareConfigs *share.Configs
	ShareMaxSize int
	ShareStates  interface {
		DeleteGroup(ctx context.Context, group string) error
	}
	// TopicVisible reports whether a principal, connected from host, may
	// describe a topic: a member's regex subscribes it only to those (nil:
	// every topic).
	TopicVisible func(principal, host, topic string) bool
}

// Kafka's defaults.
const (
	DefaultInitialRebalanceDelay = 3 * time.Second
	DefaultMinSessionTimeout     = 6 * time.Second
	DefaultMaxSessionTimeout     = 30 * time.Minute
	// MaxMetadataBytes bounds a committed offset's metadata
	// (offset.metadata.max.bytes).
	MaxMetadataBytes = 4096

	// Kafka's offsets.retention.minutes (7 days) and
	// offsets.retention.check.interval.ms (10 minutes).
	DefaultOffsetsRetention = 7 * 24 * time.Hour
	DefaultRetentionCheck   = 10 * time.Minute
)

// Coordinator coordinates every group this gateway serves.
type Coordinator struct {
	opts Options

	mu     sync.Mutex
	groups map[string]*group // the groups loaded
	closed bool

	topics *topicWatch // the topics of consumer groups

	stop chan struct{}
	wg   sync.WaitGroup
}

// New returns a coordinator; Start loads the saved groups.
func New(opts Options) *Coordinator {
	if opts.InitialRebalanceDelay == 0 {
		opts.InitialRebalanceDelay = DefaultInitialRebalanceDelay
	}
	if opts.MinSessionTimeout == 0 {
		opts.MinSessionTimeout = DefaultMinSessionTimeout
	}
	if opts.MaxSessionTimeout == 0 {
		opts.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if opts.OffsetsRetention == 0 {
		opts.OffsetsRetention = DefaultOffsetsRetention
	}
	if opts.RetentionCheck <= 0 {
		opts.RetentionCheck = DefaultRetentionCheck
	}
	if opts.TopicRefresh <= 0 {
		opts.TopicRefresh = DefaultTopicRefresh
	}
	if opts.ConsumerSessionTimeout <= 0 {
		opts.ConsumerSessionTimeout = DefaultConsumerSessionTimeout
	}
	if opts.StreamsSessionTimeout <= 0 {
		opts.StreamsSessionTimeout = DefaultStreamsSessionTimeout
	}
	if opts.StreamsHeartbeatInterval <= 0 {
		opts.StreamsHeartbeatInterval = DefaultStreamsHeartbeatInterval
	}
	if opts.StreamsInitialDelay == 0 {
		opts.StreamsInitialDelay = DefaultStreamsInitialDelay
	}
	if opts.ConsumerHeartbeatInterval <= 0 {
		opts.ConsumerHeartbeatInterval = DefaultConsumerHeartbeatInterval
	}
	if opts.ShareMaxSize <= 0 {
		opts.ShareMaxSize = DefaultShareMaxSize
	}
	if len(opts.ConsumerAssignors) == 0 {
		opts.ConsumerAssignors = DefaultConsumerAssignors
	}
	return &Coordinator{opts: opts, groups: map[string]*group{}, stop: make(chan struct{}),
		topics: &topicWatch{source: opts.Topics, every: opts.TopicRefresh, image: (&topicImage{}).clone(), refreshing: semaphore.NewWeighted(1),
			subs: map[string]subscriptions{}}}
}

// visible reports whether a member may describe topic.
func (c *Coordinator) visible(m *cmember, topic string) bool {
	return c.opts.TopicVisible == nil || c.opts.TopicVisible(m.principal, strings.TrimPrefix(m.clientHost, "/"), topic)
}

// Start begins dropping the groups this gateway stops coordinating, and
// expiring offsets (offsets.retention.minutes). Groups are loaded from the
// filer when first asked for, so a gateway that takes a group over (or
// restarts) carries on from its saved state: members keep heartbeating with
// their generation and need not rebalance.
func (c *Coordinator) Start() {
	c.wg.Add(2)
	go c.watchTopics()
	go func() {
		defer c.wg.Done()
		changed := c.changed()
		expire := time.NewTicker(c.opts.RetentionCheck)
		defer expire.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-changed:
				changed = c.changed()            // before looking: no change goes unseen
				guard.Run("GroupSweep", c.sweep) //nolint:errcheck // logged and counted; the next change tries again
			case <-expire.C:
				guard.Run("OffsetExpiry", func() { c.ExpireOffsets(clock.Now()) }) //nolint:errcheck // logged and counted; the next round tries again
			}
		}
	}()
}

// sweep drops the groups whose ownership ended or broke since they were
// loaded: another gateway may have changed them meanwhile.
func (c *Coordinator) sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, g := range c.groups {
		if term, ok := c.serving(name); !ok || term != g.term {
			glog.V(1).Infof("kafka group %s: no longer coordinated here", name)
			c.unloadLocked(g)
		}
	}
}

// unload is unloadLocked with c.mu taken.
func (c *Coordinator) unload(g *group) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unloadLocked(g)
}

func (c *Coordinator) unloadLocked(g *group) {
	if c.groups[g.name] == g {
		delete(c.groups, g.name)
	}
	g.stop()
	c.opts.Store.Forget(g.name)
	c.topics.subscribe(g.name, subscriptions{})
}

// serving returns the term of this gateway's ownership of the group, if it
// serves it.
func (c *Coordinator) serving(name string) (int64, bool) {
	if c.opts.Serving == nil {
		return 0, true
	}
	return c.opts.Serving(name)
}

// Coordinates reports whether this gateway coordinates the group now: a
// request for a group it does not is answered NOT_COORDINATOR before
// anything else is looked up.
func (c *Coordinator) Coordinates(name string) bool {
	_, ok := c.serving(name)
	return ok
}

// changed is the channel closed at the next change of what is served here
// (nil, never closed, if nothing changes).
func (c *Coordinator) changed() <-chan struct{} {
	if c.opts.Changed == nil {
		return nil
	}
	return c.opts.Changed()
}

// Close ends every group's goroutine. Requests still waiting on a group get
// COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.stop)
	for _, g := range c.groups {
		g.stop()
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// lookup returns the group, loading it from its saved state, or creating it
// if create is set; nil if it does not exist. The error is a Kafka error for
// the whole request.
func (c *Coordinator) lookup(ctx context.Context, name string, create bool) (*group, *kerr.Error) {
	g, e := c.load(ctx, name, create)
	if g != nil {
		g.used.Store(time.Now().UnixNano())
	}
	return g, e
}

// load is lookup without counting as a use of the group (the expiry pass
// looks at groups no client asks for).
func (c *Coordinator) load(ctx context.Context, name string, create bool) (*group, *kerr.Error) {
	if name == "" {
		return nil, kerr.InvalidGroupID
	}
	term, owned := c.serving(name)
	if !owned {
		return nil, kerr.NotCoordinator
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, kerr.CoordinatorNotAvailable
	}
	g := c.groups[name]
	if g != nil && g.term != term {
		c.unloadLocked(g)
		g = nil
	}
	c.mu.Unlock()
	if g != nil {
		return g, nil
	}
	data, version, err := c.opts.Store.LoadState(ctx, name)
	if err != nil {
		glog.Warningf("kafka group %s: %v", name, err)
		return nil, kerr.CoordinatorLoadInProgress
	}
	if data == nil && !create {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, kerr.CoordinatorNotAvailable
	}
	if g := c.groups[name]; g != nil && g.term == term { // loaded meanwhile
		return g, nil
	}
	g = newGroup(c, name)
	g.term = term
	if data != nil {
		if err := g.restore(data); err != nil {
			glog.Errorf("kafka group %s: unreadable saved state, starting afresh: %v", name, err)
			g = newGroup(c, name)
			g.term = term
		}
	}
	g.version = version // the next save replaces what was read
	c.groups[name] = g
	c.wg.Add(1)
	go g.manage()
	return g, nil
}

// forget removes a deleted group.
func (c *Coordinator) forget(g *group) {
	c.mu.Lock()
	if c.groups[g.name] == g {
		delete(c.groups, g.name)
	}
	c.mu.Unlock()
	g.stop()
	c.topics.subscribe(g.name, subscriptions{})
}

// call runs fn on the group's goroutine and waits for it.
func call[T any](ctx context.Context, g *group, fn func() T) (T, error) {
	done := make(chan T, 1)
	started, failed := make(chan struct{}), make(chan struct{})
	err := g.send(ctx, func() {
		close(started)
		ok := false
		defer func() {
			if !ok {
				close(failed) // it panicked
			}
		}()
		v := fn()
		ok = true
		done <- v
	})
	if err != nil {
		var zero T
		return zero, err
	}
	select {
	case v := <-done:
		return v, nil
	case <-g.quit:
		select {
		case <-started: // it runs (it may be what ended the group): its answer comes
			select {
			case v := <-done:
				return v, nil
			case <-failed:
			}
		default:
		}
		var zero T
		return zero, errGroupGone
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// await runs fn on the group's goroutine and waits for the answer fn gives,
// there or later from work it started (a save's outcome, delivered back to
// the goroutine).
func await[T any](ctx context.Context, g *group, fn func(answer func(T))) (T, error) {
	done := make(chan T, 1)
	answer := func(v T) {
		select {
		case done <- v:
		default: // answered already
		}
	}
	var zero T
	if err := g.send(ctx, func() { fn(answer) }); err != nil {
		return zero, err
	}
	select {
	case v := <-done:
		return v, nil
	case <-g.quit:
		select {
		case v := <-done:
			return v, nil
		default:
			return zero, errGroupGone
		}
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// failed is an outcome channel that holds err.
func failed(err error) <-chan error {
	ch := make(chan error, 1)
	ch <- err
	return ch
}

// goneErr is the Kafka error for a request whose group went away under it.
func goneErr(err error) *kerr.Error {
	if errors.Is(err, errGroupGone) {
		return kerr.CoordinatorNotAvailable
	}
	return kerr.RequestTimedOut
}

// storeErr is the Kafka error for err, the outcome of writing the group's
// offsets or state (nil: written). Another gateway having written them
// since they were read here means it coordinates the group now, or this
// copy is stale: the copy is dropped (read afresh if the group comes back)
// and the client told NOT_COORDINATOR.
func (c *Coordinator) storeErr(g *group, what string, err error) *kerr.Error {
	if err == nil {
		return nil
	}
	if e, ok := err.(*kerr.Error); ok {
		return e
	}
	if errors.Is(err, filerfs.ErrChanged) {
		glog.Warningf("kafka group %s: %s: written by another gateway since loaded here; dropping this copy", g.name, what)
		c.unload(g)
		return kerr.NotCoordinator
	}
	glog.Warningf("kafka group %s: %s: %v", g.name, what, err)
	return kerr.CoordinatorNotAvailable
}

// JoinGroup answers a JoinGroup; it waits until the join phase ends. The
// error is one for the whole request (the handler answers with it alone);
// a member's own answer, errors included, is in the response.
func (c *Coordinator) JoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest, cl Client) (*kmsg.JoinGroupResponse, *kerr.Error) {
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < c.opts.MinSessionTimeout || session > c.opts.MaxSessionTimeout {
		return nil, kerr.InvalidSessionTimeout
	}
	if req.InstanceID != nil && *req.InstanceID == "" {
		return nil, kerr.InvalidGroupID
	}
	g, e := c.lookup(ctx, req.Group, true)
	if e != nil {
		return nil, e
	}
	reply := make(chan *kmsg.JoinGroupResponse, 2)
	if err := g.send(ctx, func() { g.join(req, cl, reply) }); err != nil {
		return nil, goneErr(err)
	}
	select {
	case resp := <-reply:
		return resp, nil
	case <-g.quit:
		return nil, kerr.CoordinatorNotAvailable
	case <-ctx.Done():
		return nil, goneErr(ctx.Err())
	}
}

// SyncGroup answers a SyncGroup; a follower's waits for the leader's. The
// error is one for the whole request, as JoinGroup's.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, *kerr.Error) {
	g, e := c.lookup(ctx, req.Group, false)
	if e != nil {
		return nil, e
	}
	if g == nil {
		return nil, kerr.UnknownMemberID
	}
	reply := make(chan *kmsg.SyncGroupResponse, 2)
	if err := g.send(ctx, func() { g.sync(req, reply) }); err != nil {
		return nil, goneErr(err)
	}
	select {
	case resp := <-reply:
		return resp, nil
	case <-g.quit:
		return nil, kerr.CoordinatorNotAvailable
	case <-ctx.Done():
		return nil, goneErr(ctx.Err())
	}
}

// Heartbeat answers a Heartbeat.
func (c *Coordinator) Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) *kerr.Error {
	g, e := c.lookup(ctx, req.Group, false)
	if e != nil {
		return e
	}
	if g == nil {
		return kerr.UnknownMemberID
	}
	e, err := call(ctx, g, func() *kerr.Error { return g.heartbeat(req) })
	if err != nil {
		return goneErr(err)
	}
	return e
}

// Leaving is one member of a LeaveGroup.
type Leaving struct {
	MemberID   string
	InstanceID *string
	Reason     *string
}

// LeaveGroup removes members; it returns each member's error and the
// request's.
func (c *Coordinator) LeaveGroup(ctx context.Context, name string, members []Leaving) ([]*kerr.Error, *kerr.Error) {
	errs := make([]*kerr.Error, len(members))
	g, e := c.lookup(ctx, name, false)
	if e != nil {
		return errs, e
	}
	if g == nil {
		for i := range errs {
			errs[i] = kerr.UnknownMemberID
		}
		return errs, nil
	}
	_, err := call(ctx, g, func() struct{} {
		switch g.typ() {
		case TypeConsumer:
			g.leaveConsumer(members, errs)
			return struct{}{}
		case TypeShare:
			for i := range errs {
				errs[i] = kerr.UnknownMemberID
			}
			return struct{}{}
		}
		for i, l := range members {
			errs[i] = g.leave(l.MemberID, l.InstanceID, l.Reason)
		}
		return struct{}{}
	})
	if err != nil {
		return errs, goneErr(err)
	}
	return errs, nil
}
