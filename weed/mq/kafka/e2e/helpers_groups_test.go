package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Consumer groups, end to end. Members ask for 6 s sessions (Kafka's
// group.min.session.timeout.ms, the shortest a member may ask for) and
// heartbeat every second, so rebalances and expiries take seconds; the
// harness starts the gateway with a short group.initial.rebalance.delay.ms.
const (
	groupSession   = 6 * time.Second
	groupHeartbeat = time.Second
	groupRebalance = 10 * time.Second
)

// consumption is one record as a group member got it; seq orders all the
// consumptions of a test.
type consumption struct {
	seq       int
	member    string
	partition int32
	offset    int64
	value     string
}

// consumedLog collects what the members of a group consumed, and which
// member owns which partition: a partition given to a member while another
// still owns it is an overlap.
type consumedLog struct {
	mu       sync.Mutex
	recs     []consumption
	owners   map[int32]string
	overlaps []string
}

// own records that member was given partition p.
func (l *consumedLog) own(member string, p int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.owners == nil {
		l.owners = map[int32]string{}
	}
	if o, ok := l.owners[p]; ok && o != member {
		l.overlaps = append(l.overlaps, fmt.Sprintf("partition %d given to %s while %s owns it", p, member, o))
	}
	l.owners[p] = member
}

// release records that member gave partition p up (all of them if p < 0:
// it crashed).
func (l *consumedLog) release(member string, p int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for q, o := range l.owners {
		if o == member && (p < 0 || q == p) {
			delete(l.owners, q)
		}
	}
}

// noOverlaps fails the test if a partition was ever owned by two members.
func (l *consumedLog) noOverlaps(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.overlaps {
		t.Error(o)
	}
}

func (l *consumedLog) add(member string, partition int32, offset int64, value []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, consumption{len(l.recs), member, partition, offset, string(value)})
}

func (l *consumedLog) snapshot() []consumption {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.recs)
}

type recordAt struct {
	partition int32
	offset    int64
}

// byRecord groups consumptions by record, in the order they happened. A
// consumed record that is not the one produced there fails the test at
// once; missing counts the produced records nobody consumed yet.
func byRecord(t *testing.T, recs []consumption, produced map[int32][]string) (seen map[recordAt][]consumption, missing int) {
	t.Helper()
	seen = map[recordAt][]consumption{}
	for _, c := range recs {
		vals := produced[c.partition]
		if c.offset < 0 || c.offset >= int64(len(vals)) || vals[c.offset] != c.value {
			t.Fatalf("%s consumed %q at %d/%d, which does not hold that record", c.member, c.value, c.partition, c.offset)
		}
		at := recordAt{c.partition, c.offset}
		seen[at] = append(seen[at], c)
	}
	for p, vals := range produced {
		for o := range vals {
			if _, ok := seen[recordAt{p, int64(o)}]; !ok {
				missing++
			}
		}
	}
	return seen, missing
}

// waitConsumed waits until every produced record was consumed.
func waitConsumed(t *testing.T, log *consumedLog, produced map[int32][]string) {
	t.Helper()
	eventually(t, 60*time.Second, "every record consumed", func() error {
		if _, missing := byRecord(t, log.snapshot(), produced); missing > 0 {
			return fmt.Errorf("%d records not consumed", missing)
		}
		return nil
	})
}

// committed is what group committed for topic, by partition.
func committed(ctx context.Context, adm *kadm.Client, group, topic string) (map[int32]int64, error) {
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	if err := resp.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for p, o := range resp[topic] {
		out[p] = o.At
	}
	return out, nil
}

// waitCommitted waits until group's commits for topic are exactly want: a
// partition missing from want has no commit.
func waitCommitted(t *testing.T, group, topic string, want map[int32]int64) {
	t.Helper()
	adm := kadm.NewClient(newClient(t))
	eventually(t, 30*time.Second, "commits of "+group, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := committed(ctx, adm, group, topic)
		if err != nil {
			return err
		}
		if !maps.Equal(got, want) {
			return fmt.Errorf("committed %v, want %v", got, want)
		}
		return nil
	})
}

// describedMember is a member as DescribeGroups or ConsumerGroupDescribe
// shows it.
type describedMember struct {
	id, clientID string
	assigned     map[string][]int32 // by topic, sorted
}

// describeAny describes a group of either protocol: ConsumerGroupDescribe
// for a consumer group (KIP-848), DescribeGroups for a classic one (whose
// protocol type is returned too).
func describeAny(ctx context.Context, adm *kadm.Client, group string) (state, protocolType string, members []describedMember, err error) {
	cds, err := adm.DescribeConsumerGroups(ctx, group)
	if err == nil {
		if cd, ok := cds[group]; ok && cd.Err == nil {
			for _, m := range cd.Members {
				dm := describedMember{id: m.MemberID, clientID: m.ClientID, assigned: map[string][]int32{}}
				for topic, ps := range m.Assignment {
					dm.assigned[topic] = slices.Sorted(maps.Keys(ps))
				}
				members = append(members, dm)
			}
			return cd.State, "consumer", members, nil
		}
	}
	d, err := describe(ctx, adm, group)
	if err != nil {
		return "", "", nil, err
	}
	for _, m := range d.Members {
		dm := describedMember{id: m.MemberID, clientID: m.ClientID, assigned: map[string][]int32{}}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, at := range a.Topics {
				dm.assigned[at.Topic] = append(dm.assigned[at.Topic], at.Partitions...)
				slices.Sort(dm.assigned[at.Topic])
			}
		}
		members = append(members, dm)
	}
	return d.State, d.ProtocolType, members, nil
}

// describe is DescribeGroups for one group.
func describe(ctx context.Context, adm *kadm.Client, group string) (kadm.DescribedGroup, error) {
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return kadm.DescribedGroup{}, err
	}
	d, err := ds.On(group, nil)
	if err != nil {
		return d, err
	}
	return d, d.Err
}

// assignedTo is the sorted partitions of topic a described member was
// assigned.
func assignedTo(m kadm.DescribedGroupMember, topic string) []int32 {
	var ps []int32
	if a, ok := m.Assigned.AsConsumer(); ok {
		for _, at := range a.Topics {
			if at.Topic == topic {
				ps = append(ps, at.Partitions...)
			}
		}
	}
	slices.Sort(ps)
	return ps
}

// waitShared waits until group is Stable with one member per client id,
// each assigned some partitions of topic, together all of them once.
func waitShared(t *testing.T, group, topic string, partitions int, clientIDs ...string) {
	t.Helper()
	adm := kadm.NewClient(newClient(t))
	want := slices.Sorted(slices.Values(clientIDs))
	eventually(t, 45*time.Second, fmt.Sprintf("%v share the partitions of %s", want, topic), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		state, protocolType, members, err := describeAny(ctx, adm, group)
		if err != nil {
			return err
		}
		if state != "Stable" || protocolType != "consumer" {
			return fmt.Errorf("state %q, protocol type %q", state, protocolType)
		}
		var clients []string
		owner := map[int32]string{}
		for _, m := range members {
			clients = append(clients, m.clientID)
			ps := m.assigned[topic]
			if len(ps) == 0 {
				return fmt.Errorf("%s has no partition", m.clientID)
			}
			for _, p := range ps {
				if o, dup := owner[p]; dup {
					return fmt.Errorf("partition %d assigned to %s and %s", p, o, m.clientID)
				}
				owner[p] = m.clientID
			}
		}
		slices.Sort(clients)
		if !slices.Equal(clients, want) || len(owner) != partitions {
			return fmt.Errorf("members %v, assignment %v", clients, owner)
		}
		return nil
	})
}

// memberOpts are the options of a franz-go group member: it consumes topic
// from its start in group and commits only when told to.
func memberOpts(clientID, group, topic string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(gw.addr), kgo.ClientID(clientID),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(groupSession), kgo.HeartbeatInterval(groupHeartbeat), kgo.RebalanceTimeout(groupRebalance),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(500 * time.Millisecond),
	}
}

// groupClient is a franz-go group member the test polls itself; done
// closes it (once; also at cleanup).
func groupClient(t *testing.T, clientID, group, topic string, opts ...kgo.Opt) (cl *kgo.Client, done func()) {
	t.Helper()
	cl, err := kgo.NewClient(append(memberOpts(clientID, group, topic), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	done = func() { once.Do(cl.Close) }
	t.Cleanup(done)
	return cl, done
}

// pollN polls exactly n records from cl, failing on fetch errors.
func pollN(t *testing.T, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollRecords(ctx, n-len(out))
		if ctx.Err() != nil {
			t.Fatalf("polled %d of %d records before the deadline", len(out), n)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("poll %s/%d: %v", tp, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// franzMember is a franz-go group member polling in its own goroutine: it
// logs what it consumes and commits synchronously after every poll and in
// OnPartitionsRevoked. Rebalances wait while a poll is processed
// (BlockRebalanceOnPoll), so every commit is made by the partitions' owner
// and a new owner starts exactly where the last one stopped.
type franzMember struct {
	name    string
	cl      *kgo.Client
	log     *consumedLog
	dialer  cutDialer
	stopCl  context.CancelFunc // cancels the client's own context
	stopRun context.CancelFunc
	done    chan struct{}
	once    sync.Once

	noCommit    atomic.Bool  // consume but commit nothing, as before a crash
	crashed     atomic.Bool  // no more commits from callbacks
	uncommitted atomic.Int64 // records consumed while noCommit was set

	mu         sync.Mutex
	owned      map[int32]bool
	changes    int // assignments and revocations that changed owned
	pollErrs   []error
	commitErrs []error
	groupErrs  []error
}

// startMember starts a franzMember of group consuming topic; opts add to or
// override the defaults (balancers, instance id, session timeout).
func startMember(t *testing.T, name, group, topic string, log *consumedLog, opts ...kgo.Opt) *franzMember {
	t.Helper()
	m := &franzMember{name: name, log: log, owned: map[int32]bool{}, done: make(chan struct{})}
	clientCtx, stopCl := context.WithCancel(context.Background())
	m.stopCl = stopCl
	base := append(memberOpts(name, group, topic),
		kgo.WithContext(clientCtx), kgo.Dialer(m.dialer.dial), kgo.WithHooks(m), kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.assign(ps[topic], true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, cl *kgo.Client, ps map[string][]int32) {
			m.commit(cl) // before another member gets them
			m.assign(ps[topic], false)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.assign(ps[topic], false) }),
	)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		stopCl()
		t.Fatal(err)
	}
	m.cl = cl
	runCtx, stopRun := context.WithTimeout(context.Background(), 5*time.Minute)
	m.stopRun = stopRun
	go m.poll(runCtx)
	t.Cleanup(m.leave)
	return m
}

// OnGroupManageError is franz-go's hook for an error that ended a group
// session.
func (m *franzMember) OnGroupManageError(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.groupErrs = append(m.groupErrs, err)
}

func (m *franzMember) assign(ps []int32, add bool) {
	if len(ps) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.changes++
	for _, p := range ps {
		if add {
			m.owned[p] = true
			m.log.own(m.name, p)
		} else {
			delete(m.owned, p)
			m.log.release(m.name, p)
		}
	}
}

func (m *franzMember) ownedSet() map[int32]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.owned)
}

func (m *franzMember) changeCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changes
}

// failures are the member's poll, commit and group-session errors.
func (m *franzMember) failures() (poll, commit, group []error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.pollErrs), slices.Clone(m.commitErrs), slices.Clone(m.groupErrs)
}

func (m *franzMember) memberID() string {
	id, _ := m.cl.GroupMetadata()
	return id
}

func (m *franzMember) generation() int32 {
	_, gen := m.cl.GroupMetadata()
	return gen
}

// commit commits what the member polled, unless it plays dead.
func (m *franzMember) commit(cl *kgo.Client) {
	if m.noCommit.Load() || m.crashed.Load() || len(cl.UncommittedOffsets()) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		m.mu.Lock()
		m.commitErrs = append(m.commitErrs, err)
		m.mu.Unlock()
	}
}

func (m *franzMember) poll(ctx context.Context) {
	defer close(m.done)
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := m.cl.PollRecords(pctx, 100)
		cancel()
		fs.EachError(func(_ string, _ int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
				return
			}
			m.mu.Lock()
			m.pollErrs = append(m.pollErrs, err)
			m.mu.Unlock()
		})
		fs.EachRecord(func(r *kgo.Record) {
			m.log.add(m.name, r.Partition, r.Offset, r.Value)
			if m.noCommit.Load() {
				m.uncommitted.Add(1)
			}
		})
		m.commit(m.cl)
		m.cl.AllowRebalance()
	}
}

// leave stops polling and closes the client: a dynamic member commits (in
// OnPartitionsRevoked) and sends LeaveGroup; a static one just goes away.
func (m *franzMember) leave() {
	m.once.Do(func() {
		m.stopRun()
		<-m.done
		m.cl.AllowRebalance()
		m.cl.Close()
		m.stopCl()
	})
}

// crash stops the member as a killed process stops: its connections drop
// and it sends no LeaveGroup, heartbeat or commit any more. It returns when
// the connections were cut.
func (m *franzMember) crash() (at time.Time) {
	m.once.Do(func() {
		m.stopRun()
		<-m.done
		m.crashed.Store(true)
		m.dialer.cutOff()
		at = time.Now()
		m.log.release(m.name, -1) // a dead member owns nothing
		m.stopCl()                // whatever the client still tries fails at once
		m.cl.AllowRebalance()
		m.cl.Close()
	})
	return at
}

// waitAssigned waits until members own every partition between them, each
// at least one, none twice.
func waitAssigned(t *testing.T, partitions int, members ...*franzMember) {
	t.Helper()
	eventually(t, 45*time.Second, "partitions assigned", func() error {
		owner := map[int32]string{}
		for _, m := range members {
			owned := m.ownedSet()
			if len(owned) == 0 {
				return fmt.Errorf("%s owns no partition", m.name)
			}
			for p := range owned {
				if o, dup := owner[p]; dup {
					return fmt.Errorf("partition %d owned by %s and %s", p, o, m.name)
				}
				owner[p] = m.name
			}
		}
		if len(owner) != partitions {
			return fmt.Errorf("owned: %v", owner)
		}
		return nil
	})
}

// waitGroup waits until DescribeGroups (ConsumerGroupDescribe for a
// consumer group) shows group in state with exactly members, each under its
// member id and client id, assigned what it owns.
func waitGroup(t *testing.T, group, topic, state string, members ...*franzMember) {
	t.Helper()
	adm := kadm.NewClient(newClient(t))
	eventually(t, 30*time.Second, fmt.Sprintf("group %s %s with %d members", group, state, len(members)), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, protocolType, described, err := describeAny(ctx, adm, group)
		if err != nil {
			return err
		}
		if got != state || len(described) != len(members) {
			return fmt.Errorf("state %q with %d members", got, len(described))
		}
		if state == "Stable" && protocolType != "consumer" {
			return fmt.Errorf("protocol type %q", protocolType)
		}
		for _, m := range members {
			id := m.memberID()
			i := slices.IndexFunc(described, func(dm describedMember) bool { return dm.id == id })
			if i < 0 {
				return fmt.Errorf("%s (member id %q) not described", m.name, id)
			}
			dm := described[i]
			if dm.clientID != m.name {
				return fmt.Errorf("%s described with client id %q", m.name, dm.clientID)
			}
			if got, want := dm.assigned[topic], slices.Sorted(maps.Keys(m.ownedSet())); !slices.Equal(got, want) {
				return fmt.Errorf("%s described with partitions %v, owns %v", m.name, got, want)
			}
		}
		return nil
	})
}

// noFailures fails the test with any error a member saw.
func noFailures(t *testing.T, members ...*franzMember) {
	t.Helper()
	for _, m := range members {
		poll, commit, group := m.failures()
		if len(poll)+len(commit)+len(group) > 0 {
			t.Errorf("%s: poll errors %v, commit errors %v, group errors %v", m.name, poll, commit, group)
		}
	}
}
