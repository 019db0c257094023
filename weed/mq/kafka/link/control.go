package link

// A link's controller runs on the gateway that owns the link. Each round
// it lists the source's topics that the link mirrors and creates their
// mirror topics here (the same partitions, the source's configs that the
// gateway takes), follows their partition counts and configs, measures
// how far each mirrored partition is behind, copies consumer groups'
// committed offsets and ACLs, promotes the topics asked to be, and writes
// what it found (Status) for the other gateways and the API.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/txn"
)

// roundTimeout bounds one round of a controller; sourceTimeout the
// source's answer to its first request.
const (
	roundTimeout  = 30 * time.Second
	sourceTimeout = 10 * time.Second
)

type controller struct {
	m *Manager
	r *running

	mu  sync.Mutex
	cfg Config

	st    *Status // this controller's; written each round
	local *kgo.Client
	// srcErr is the first error of a request to the source this round
	// (every one is bounded by sourceTimeout): the link is reported
	// unreachable for it.
	srcErr error

	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{}
}

func newController(m *Manager, r *running, st *Status) *controller {
	c := &controller{m: m, r: r, kick: make(chan struct{}, 1)}
	if st != nil {
		c.st = st
	} else {
		c.st = &Status{State: StateActive, ProducerIDFloor: -1}
	}
	if c.st.Topics == nil {
		c.st.Topics = map[string]*TopicStatus{}
	}
	if c.st.Groups == nil {
		c.st.Groups = map[string]*GroupStatus{}
	}
	return c
}

// setConfig gives the controller the link's configuration as last read,
// and has it act at once on a change.
func (c *controller) setConfig(cfg Config) {
	c.mu.Lock()
	changed := !sameConfig(c.cfg, cfg)
	c.cfg = cfg
	c.mu.Unlock()
	if changed {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

func sameConfig(a, b Config) bool {
	return a.Created == b.Created && a.Paused == b.Paused && a.Topics == b.Topics && a.Groups == b.Groups &&
		a.ACLs == b.ACLs && maps.Equal(a.Promote, b.Promote)
}

func (c *controller) config() Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfg
}

func (c *controller) start(ctx context.Context) {
	ctx, c.cancel = context.WithCancel(ctx)
	c.done = make(chan struct{})
	go func() {
		defer close(c.done)
		t := time.NewTicker(c.m.opts.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-c.kick:
			}
			rctx, cancel := context.WithTimeout(ctx, roundTimeout)
			c.round(rctx)
			cancel()
		}
	}()
}

func (c *controller) stop() {
	c.cancel()
	<-c.done
	if c.local != nil {
		c.local.Close()
	}
	c.clearMetrics()
}

// round is one sync of the link.
func (c *controller) round(ctx context.Context) {
	cfg := c.config()
	if cfg.Name == "" {
		return
	}
	if c.local == nil {
		local, err := kgo.NewClient(c.m.opts.Local()...)
		if err != nil {
			glog.Warningf("kafka link %s: a client of this cluster: %v", cfg.Name, err)
			return
		}
		c.local = local
	}
	src, local := kadm.NewClient(c.r.src), kadm.NewClient(c.local)
	st := c.st
	st.Controller, st.Updated = c.m.opts.Self, time.Now().UnixMilli()
	st.Error = ""
	c.srcErr = nil
	err := c.sync(ctx, cfg, src, local)
	if err == nil {
		err = c.srcErr
	}
	switch {
	case err != nil:
		st.State, st.Error = StateUnreachable, err.Error()
		metrics.LinkErrors.WithLabelValues(cfg.Name, "source").Inc()
	case cfg.Paused:
		st.State = StatePaused
	default:
		st.State = StateActive
		for _, ts := range st.Topics {
			if ts.State == StateFailed {
				st.State = StateFailed
			}
		}
	}
	c.setMetrics(cfg.Name)
	if _, _, err := c.m.opts.Store.Get(ctx, cfg.Name); errors.Is(err, ErrNotFound) {
		return // deleted meanwhile: no state is left behind
	}
	if err := c.m.opts.Store.SaveStatus(ctx, cfg.Name, st); err != nil {
		glog.Warningf("kafka link %s: saving its state: %v", cfg.Name, err)
	}
	// This gateway acts on the new state at once (pulls the partitions
	// it leads of a topic just created); the others within Refresh.
	c.m.refreshNow()
}

// sync does the round's work; its error is the source's unreachable.
func (c *controller) sync(ctx context.Context, cfg Config, src, local *kadm.Client) error {
	st := c.st
	// A source that does not answer within sourceTimeout is reported as
	// such at once, not after the client's retries.
	lctx, cancel := context.WithTimeout(ctx, sourceTimeout)
	topics, err := src.ListTopics(lctx)
	cancel()
	if err != nil {
		return fmt.Errorf("listing the source's topics: %w", err)
	}
	if err := topics.Error(); err != nil && len(topics) == 0 {
		return fmt.Errorf("listing the source's topics: %w", err)
	}
	match, err := matcher(cfg.Topics)
	if err != nil {
		return err
	}
	var names []string
	for name, td := range topics {
		if td.IsInternal || td.Err != nil || !match.MatchString(name) {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	// New mirror topics are in the state, and so read-only on every
	// gateway, before they are created.
	fresh := false
	for _, name := range names {
		if st.Topics[name] == nil {
			st.Topics[name] = &TopicStatus{State: StateMirroring, Partitions: int32(len(topics[name].Partitions))}
			fresh = true
		}
	}
	if fresh {
		if err := c.m.opts.Store.SaveStatus(ctx, cfg.Name, st); err != nil {
			return nil // tried again next round; nothing created yet
		}
		// Every gateway reads it before the topics take records.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(c.m.opts.Refresh + 500*time.Millisecond):
		}
	}
	onSource := make(map[string]bool, len(names))
	for _, name := range names {
		onSource[name] = true
	}
	for name, ts := range st.Topics {
		if !onSource[name] && (ts.State == StateMirroring || ts.State == StatePromoting) {
			ts.Error = "not on the source any more (deleted there?): the mirror keeps what it holds"
		}
	}
	if len(names) == 0 {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, sourceTimeout)
	srcConfigs, err := src.DescribeTopicConfigs(sctx, names...)
	cancel()
	if err != nil {
		return fmt.Errorf("the source's topic configs: %w", err)
	}
	here, err := local.ListTopics(ctx, names...)
	if err != nil {
		glog.V(1).Infof("kafka link %s: this cluster's topics: %v", cfg.Name, err)
		return nil
	}
	localConfigs, _ := local.DescribeTopicConfigs(ctx, names...)
	for _, name := range names {
		ts := st.Topics[name]
		if ts.State == StatePromoted || ts.State == StateConflict {
			continue
		}
		want := int32(len(topics[name].Partitions))
		configs := topicConfigs(srcConfigs, name)
		if err := c.ensureTopic(ctx, local, here, name, want, configs, ts); err != nil {
			ts.Error = err.Error()
			metrics.LinkErrors.WithLabelValues(cfg.Name, "sync").Inc()
			continue
		}
		if d, existed := here[name]; existed && d.Err == nil {
			c.syncConfigs(ctx, local, topicConfigs(localConfigs, name), name, configs, ts)
		}
	}
	if err := c.measure(ctx, cfg, src, local, onSource); err != nil {
		return err
	}
	c.promote(ctx, cfg, src, local)
	if cfg.Groups != "" {
		gctx, cancel := context.WithTimeout(ctx, sourceTimeout)
		c.syncGroups(gctx, cfg, src, local)
		cancel()
	}
	if cfg.ACLs {
		actx, cancel := context.WithTimeout(ctx, sourceTimeout)
		c.syncACLs(actx, cfg, src, local)
		cancel()
	}
	return nil
}

// topicConfigs are the configs set on the source's topic (not its
// defaults).
func topicConfigs(rcs kadm.ResourceConfigs, topic string) map[string]*string {
	out := map[string]*string{}
	for _, rc := range rcs {
		if rc.Name != topic || rc.Err != nil {
			continue
		}
		for _, c := range rc.Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
				out[c.Key] = c.Value
			}
		}
	}
	return out
}

// ensureTopic creates the mirror topic, or adopts one that exists with no
// record, and grows it to the source's partitions.
func (c *controller) ensureTopic(ctx context.Context, local *kadm.Client, here kadm.TopicDetails, name string, partitions int32, configs map[string]*string, ts *TopicStatus) error {
	have, exists := here[name]
	if exists && errors.Is(have.Err, kerr.UnknownTopicOrPartition) {
		exists = false
	}
	if !exists {
		take := maps.Clone(configs)
		for k := range ts.Refused {
			delete(take, k)
		}
		resp, err := local.CreateTopic(ctx, partitions, -1, take, name)
		if err == nil {
			err = resp.Err
		}
		if errors.Is(err, kerr.InvalidConfig) || errors.Is(err, kerr.PolicyViolation) {
			// Find which the gateway does not take, and create it
			// without them.
			if ts.Refused == nil {
				ts.Refused = map[string]string{}
			}
			for k, v := range take {
				r, verr := local.ValidateCreateTopics(ctx, partitions, -1, map[string]*string{k: v}, name)
				if verr == nil {
					for _, one := range r {
						verr = one.Err
						if verr != nil && one.ErrMessage != "" {
							verr = fmt.Errorf("%w: %s", verr, one.ErrMessage)
						}
					}
				}
				if verr != nil {
					ts.Refused[k] = verr.Error()
					delete(take, k)
				}
			}
			resp, err = local.CreateTopic(ctx, partitions, -1, take, name)
			if err == nil {
				err = resp.Err
			}
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating the mirror topic: %w", err)
		}
		ts.Partitions, ts.Error, ts.Taken = partitions, "", true
		return nil
	}
	if have.Err != nil {
		return have.Err
	}
	if !ts.Taken {
		// A topic the link did not create: taken only if it holds
		// nothing.
		ends, err := local.ListEndOffsets(ctx, name)
		if err != nil {
			return err
		}
		held := false
		ends.Each(func(o kadm.ListedOffset) { held = held || o.Offset > 0 })
		if held {
			ts.State, ts.Error = StateConflict, "the topic exists here with records: not mirrored"
			return nil
		}
		ts.Taken = true
	}
	if n := int32(len(have.Partitions)); n < partitions {
		resp, err := local.UpdatePartitions(ctx, int(partitions), name)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return fmt.Errorf("growing the mirror topic to %d partitions: %w", partitions, err)
		}
	}
	ts.Partitions, ts.Error = partitions, ""
	return nil
}

// syncConfigs sets the mirror topic's configs to the source's: those set
// there, the others back to their defaults. One the gateway does not
// take is noted (Refused) and left.
func (c *controller) syncConfigs(ctx context.Context, local *kadm.Client, current map[string]*string, name string, want map[string]*string, ts *TopicStatus) {
	var alters []kadm.AlterConfig
	for k, v := range want {
		if _, refused := ts.Refused[k]; refused {
			continue
		}
		if cur, ok := current[k]; !ok || *cur != *v {
			alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: v})
		}
	}
	for k := range current {
		if _, ok := want[k]; !ok {
			alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
		}
	}
	for _, a := range alters {
		resp, err := local.AlterTopicConfigs(ctx, []kadm.AlterConfig{a}, name)
		if err == nil {
			for _, r := range resp {
				if r.Err != nil {
					err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
				}
			}
		}
		if err != nil && a.Op == kadm.SetConfig {
			if ts.Refused == nil {
				ts.Refused = map[string]string{}
			}
			ts.Refused[a.Name] = err.Error()
		}
	}
}

// measure reads both sides' offsets of the mirror topics; its error is
// the source's, that did not answer.
func (c *controller) measure(ctx context.Context, cfg Config, src, local *kadm.Client, onSource map[string]bool) error {
	st := c.st
	var names []string
	for name, ts := range st.Topics {
		if onSource[name] && (ts.State == StateMirroring || ts.State == StatePromoting || ts.State == StateFailed) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	// The mirror's ends first: the lag is never under-stated.
	mine, err := local.ListEndOffsets(ctx, names...)
	if err != nil {
		glog.V(1).Infof("kafka link %s: the mirror's offsets: %v", cfg.Name, err)
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, sourceTimeout)
	defer cancel()
	starts, err1 := src.ListStartOffsets(sctx, names...)
	ends, err2 := src.ListEndOffsets(sctx, names...)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("the source's offsets: %w", err)
	}
	for _, lo := range []kadm.ListedOffsets{starts, ends} {
		if err := lo.Error(); err != nil {
			return fmt.Errorf("the source's offsets: %w", err)
		}
	}
	now := time.Now()
	for _, name := range names {
		ts := st.Topics[name]
		lags := map[int32]PartitionLag{}
		failed := ""
		for i := int32(0); i < ts.Partitions; i++ {
			s, okS := starts.Lookup(name, i)
			e, okE := ends.Lookup(name, i)
			m, okM := mine.Lookup(name, i)
			if !okS || !okE || !okM || s.Err != nil || e.Err != nil || m.Err != nil {
				continue
			}
			l := PartitionLag{SourceStart: s.Offset, SourceEnd: e.Offset, MirrorEnd: m.Offset}
			if prev, ok := ts.Lag[i]; ok && prev.Behind != 0 {
				l.Behind = prev.Behind
			}
			switch {
			case l.MirrorEnd >= l.SourceEnd:
				l.Behind = 0
			case l.Behind == 0:
				l.Behind = now.UnixMilli()
			}
			if l.SourceStart > l.MirrorEnd {
				l.Error = fmt.Sprintf("offsets %d to %d were deleted on the source before the link pulled them: the partition is not mirrored on (promote it with -force, or delete the topic and the link's state of it)", l.MirrorEnd, l.SourceStart-1)
				failed = l.Error
			}
			if why, ok := c.r.failed.Load(partKey{name, i}); ok && l.Error == "" && l.SourceStart > l.MirrorEnd {
				l.Error = why.(string)
			}
			lags[i] = l
		}
		ts.Lag = lags
		switch {
		case failed != "" && ts.State != StatePromoting:
			ts.State, ts.Error = StateFailed, failed
		case failed == "" && ts.State == StateFailed:
			ts.State, ts.Error = StateMirroring, ""
		}
	}
	return nil
}

// promote makes the topics asked to be promoted writable, once their
// mirror has caught up with the source (at once with Force), and seeds
// the source's transactional ids here.
func (c *controller) promote(ctx context.Context, cfg Config, src, local *kadm.Client) {
	st := c.st
	promoted := false
	defer func() {
		if promoted {
			c.seedTransactions(ctx, cfg, src)
		}
	}()
	for name, ts := range st.Topics {
		if ts.State == StatePromoted || ts.State == StateConflict {
			continue
		}
		pr, asked := cfg.Promote[name]
		if !asked {
			pr, asked = cfg.Promote["*"]
		}
		if !asked {
			continue
		}
		ts.State = StatePromoting
		caught := len(ts.Lag) == int(ts.Partitions)
		for _, l := range ts.Lag {
			caught = caught && l.MirrorEnd >= l.SourceEnd && l.Error == ""
		}
		if !caught && !pr.Force {
			continue
		}
		// Producer ids go past those of the mirrored producers first,
		// so that no producer of this cluster takes one of theirs.
		floor := int64(-1)
		described, err := local.DescribeProducers(ctx, kadm.TopicsSet{name: partitionSet(ts.Partitions)})
		if err != nil {
			glog.Warningf("kafka link %s: %s's producers: %v", cfg.Name, name, err)
			continue
		}
		bad := false
		described.EachPartition(func(p kadm.DescribedProducersPartition) {
			if p.Err != nil {
				bad = true
			}
			for _, d := range p.ActiveProducers {
				floor = max(floor, d.ProducerID)
			}
		})
		if bad {
			continue
		}
		if floor > st.ProducerIDFloor {
			if err := c.m.opts.Mirror.RaiseProducerIDs(ctx, floor); err != nil {
				glog.Warningf("kafka link %s: producer ids past %d: %v", cfg.Name, floor, err)
				continue
			}
			st.ProducerIDFloor = floor
		}
		ts.State, ts.Error, ts.PromotedAt = StatePromoted, "", time.Now().UnixMilli()
		promoted = true
		glog.V(0).Infof("kafka link %s: topic %s promoted: it takes produce here", cfg.Name, name)
	}
}

// seedTransactions gives this cluster's transaction coordinator the
// source's transactional ids that it does not know: their producer ids
// and epochs, so that a transactional producer that initializes here goes
// on as the same producer (a raised epoch, which the mirrored partitions
// take after the source's); and an ongoing transaction on the promoted
// topics, which the coordinator here then aborts (its producer stopped
// with the source; it would hold the last stable offset).
func (c *controller) seedTransactions(ctx context.Context, cfg Config, src *kadm.Client) {
	sctx, cancel := context.WithTimeout(ctx, sourceTimeout)
	defer cancel()
	described, err := src.DescribeTransactions(sctx)
	if err != nil {
		c.noteSource(err)
		glog.Warningf("kafka link %s: the source's transactional ids: %v", cfg.Name, err)
		return
	}
	seeded := 0
	for _, d := range described.Sorted() {
		if d.Err != nil || d.ProducerID < 0 {
			continue
		}
		ongoing := map[string][]int32{}
		if d.State == "Ongoing" || d.State == "PrepareAbort" || d.State == "PrepareCommit" {
			for topic, ps := range d.Topics {
				if ts := c.st.Topics[topic]; ts != nil && ts.State == StatePromoted {
					ongoing[topic] = slices.Sorted(maps.Keys(ps))
				}
			}
		}
		wrote, err := txn.Seed(ctx, c.m.opts.Store.Files, d.TxnID, d.ProducerID, d.ProducerEpoch, d.TimeoutMillis, ongoing, d.StartTimestamp)
		if err != nil {
			glog.Warningf("kafka link %s: transactional id %s: %v", cfg.Name, d.TxnID, err)
			continue
		}
		if wrote {
			seeded++
		}
	}
	if seeded > 0 {
		glog.V(0).Infof("kafka link %s: %d transactional ids of the source seeded here", cfg.Name, seeded)
	}
}

// noteSource keeps the round's first error of a request to the source
// that did not get an answer (a Kafka error is the source's answer).
func (c *controller) noteSource(err error) {
	var answered *kerr.Error
	if c.srcErr == nil && !errors.As(err, &answered) {
		c.srcErr = fmt.Errorf("the source: %w", err)
	}
}

func partitionSet(n int32) map[int32]struct{} {
	out := make(map[int32]struct{}, n)
	for i := int32(0); i < n; i++ {
		out[i] = struct{}{}
	}
	return out
}

// syncGroups copies the committed offsets of the source's groups the link
// names, for its mirror topics not yet promoted, to the groups here with
// no members: never past what the mirror holds.
func (c *controller) syncGroups(ctx context.Context, cfg Config, src, local *kadm.Client) {
	st := c.st
	match, err := matcher(cfg.Groups)
	if err != nil {
		return
	}
	groups, err := src.ListGroups(ctx)
	if err != nil {
		c.noteSource(err)
		return
	}
	here, err := local.ListGroups(ctx)
	if err != nil {
		return
	}
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		if !match.MatchString(g) {
			continue
		}
		gs := st.Groups[g]
		if gs == nil {
			gs = &GroupStatus{}
			st.Groups[g] = gs
		}
		if lg, ok := here[g]; ok && lg.State != "" && lg.State != "Empty" && lg.State != "Dead" {
			gs.Error = fmt.Sprintf("the group is %s here: offsets not copied while it has members", lg.State)
			continue
		}
		committed, err := src.FetchOffsets(ctx, g)
		if err != nil {
			gs.Error = err.Error()
			c.noteSource(err)
			continue
		}
		mine, err := local.FetchOffsets(ctx, g)
		if err != nil {
			gs.Error = err.Error()
			continue
		}
		commit := kadm.Offsets{}
		committed.Each(func(o kadm.OffsetResponse) {
			ts := st.Topics[o.Topic]
			if o.Err != nil || ts == nil || ts.State == StatePromoted || ts.State == StateConflict || o.At < 0 {
				return
			}
			l, ok := ts.Lag[o.Partition]
			if !ok {
				return
			}
			at := min(o.At, l.MirrorEnd)
			if cur, ok := mine.Lookup(o.Topic, o.Partition); ok && cur.Err == nil && cur.At == at {
				return
			}
			commit.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: at, LeaderEpoch: -1, Metadata: o.Metadata})
		})
		gs.Error = ""
		if len(commit) == 0 {
			continue
		}
		resp, err := local.CommitOffsets(ctx, g, commit)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			gs.Error = err.Error()
			metrics.LinkErrors.WithLabelValues(cfg.Name, "sync").Inc()
			continue
		}
		gs.Synced = time.Now().UnixMilli()
	}
}

// syncACLs copies the source's ACLs of the mirror topics (by their names)
// and of the groups the link names.
func (c *controller) syncACLs(ctx context.Context, cfg Config, src, local *kadm.Client) {
	groups, _ := matcher(cfg.Groups)
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeAny
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, c.r.src)
	if err != nil {
		c.noteSource(err)
		return
	}
	if resp.ErrorCode != 0 {
		metrics.LinkErrors.WithLabelValues(cfg.Name, "sync").Inc()
		return
	}
	create := kmsg.NewPtrCreateACLsRequest()
	for _, r := range resp.Resources {
		switch {
		case r.ResourceType == kmsg.ACLResourceTypeTopic && r.ResourcePatternType == kmsg.ACLResourcePatternTypeLiteral && c.st.Topics[r.ResourceName] != nil:
		case r.ResourceType == kmsg.ACLResourceTypeGroup && r.ResourcePatternType == kmsg.ACLResourcePatternTypeLiteral && groups != nil && groups.MatchString(r.ResourceName):
		default:
			continue
		}
		for _, a := range r.ACLs {
			cr := kmsg.NewCreateACLsRequestCreation()
			cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = r.ResourceType, r.ResourceName, r.ResourcePatternType
			cr.Principal, cr.Host, cr.Operation, cr.PermissionType = a.Principal, a.Host, a.Operation, a.PermissionType
			create.Creations = append(create.Creations, cr)
		}
	}
	if len(create.Creations) == 0 {
		return
	}
	out, err := create.RequestWith(ctx, c.local)
	if err != nil {
		metrics.LinkErrors.WithLabelValues(cfg.Name, "sync").Inc()
		return
	}
	for _, r := range out.Results {
		if r.ErrorCode != 0 {
			metrics.LinkErrors.WithLabelValues(cfg.Name, "sync").Inc()
			c.st.Error = fmt.Sprintf("copying ACLs: %v", kerr.ErrorForCode(r.ErrorCode))
			return
		}
	}
}

// setMetrics exports the link's lag and state.
func (c *controller) setMetrics(name string) {
	now := time.Now()
	for _, s := range []string{StateActive, StatePaused, StateFailed, StateUnreachable} {
		v := 0.0
		if c.st.State == s {
			v = 1
		}
		metrics.LinkState.WithLabelValues(name, s).Set(v)
	}
	for topic, ts := range c.st.Topics {
		for p, l := range ts.Lag {
			labels := []string{name, metrics.Topic(topic), partitionLabel(p)}
			if ts.State == StatePromoted {
				metrics.LinkLagRecords.DeleteLabelValues(labels...)
				metrics.LinkLagSeconds.DeleteLabelValues(labels...)
				continue
			}
			metrics.LinkLagRecords.WithLabelValues(labels...).Set(float64(l.Records()))
			metrics.LinkLagSeconds.WithLabelValues(labels...).Set(l.Seconds(now))
		}
	}
}

// clearMetrics takes the link's series off when this gateway stops being
// its controller.
func (c *controller) clearMetrics() {
	name := c.config().Name
	metrics.LinkState.DeletePartialMatch(map[string]string{"link": name})
	metrics.LinkLagRecords.DeletePartialMatch(map[string]string{"link": name})
	metrics.LinkLagSeconds.DeletePartialMatch(map[string]string{"link": name})
}
