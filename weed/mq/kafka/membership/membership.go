// Package membership is how the gateways serving one SeaweedFS cluster know
// each other and share the work: which gateway leads each partition and
// coordinates each group and transactional id.
//
// Every gateway holds a filer lock named for its node id, renewed every
// poll, and a registry file in the filer with its address. The gateway with
// the lowest live node id writes the view: the sorted list of gateways whose
// locks are held, with an epoch that grows at each change. Every gateway
// reads the view each poll; owners are chosen from it by rendezvous hashing,
// so all gateways that read the same view agree.
//
// No two gateways serve one key at once. A gateway stops serving a key as
// soon as it reads a view where it does not own it, and stops serving
// everything when its own lock lease or its last read of the view is older
// than ViewLease (it may be cut off from the filer). A gateway starts
// serving a key it gained only after holding the view that gave it for
// Settle, longer than ViewLease: by then the previous owner has read the new
// view or stopped. A gateway that died keeps its lock until the lock's TTL
// runs out; its keys move when the next view is written.
package membership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
)

// Filer is what the membership needs of the filer: small files, written
// conditionally, and locks.
type Filer interface {
	filerfs.VersionedFiles
	// Lock takes (token "") or renews the lock name for ttl and returns
	// the token to renew it with; it fails while another owner holds it.
	Lock(ctx context.Context, name, owner, token string, ttl time.Duration) (string, error)
	// Unlock releases a lock taken with token.
	Unlock(ctx context.Context, name, token string) error
	// LockOwner returns the owner of a held lock, "" if it is free.
	LockOwner(ctx context.Context, name string) (string, error)
}

// Where the membership lives in the filer.
const (
	Dir        = "/etc/kafka-gateway/gateways"
	viewDir    = "/etc/kafka-gateway"
	viewFile   = "gateways.view"
	memberLock = "kafka-gateway/member/"
	viewLock   = "kafka-gateway/view"
)

// Options configure a Membership. Durations left zero take the defaults.
type Options struct {
	Self  Member
	Filer Filer
	// Poll is how often the lock is renewed and the view read.
	Poll time.Duration
	// LockTTL is how long a gateway's lock outlives its last renewal: how
	// long a gateway that died without a goodbye is taken for alive.
	LockTTL time.Duration
	// ViewLease is how long a view read stays usable; Settle how long a
	// gateway holds a view before serving what it gained by it.
	ViewLease time.Duration
	Settle    time.Duration

	now func() time.Time // for tests
}

// Defaults.
const (
	DefaultPoll      = time.Second
	DefaultLockTTL   = 5 * time.Second
	DefaultViewLease = 2500 * time.Millisecond
	DefaultSettle    = 3 * time.Second
	// staleMember is how long a registry file without a live lock is kept.
	staleMember = 30 * time.Second
	// keptViews is how many views are remembered to know since when a key
	// has been owned.
	keptViews = 32
)

// NodeID derives a gateway's node id from its advertised address, so that
// a gateway restarted at the same address keeps its id.
func NodeID(host string, port int32) int32 {
	h := fnv.New32a()
	h.Write([]byte(host + ":" + strconv.Itoa(int(port))))
	return int32(h.Sum32() & 0x7fffffff)
}

type observed struct {
	view View
	seen time.Time
}

// Membership is this gateway's place among the cluster's gateways.
type Membership struct {
	opts     Options
	instance string // lock owner: this process among restarts at one address

	mu        sync.RWMutex
	history   []observed // views read, oldest first
	truncated bool       // older views were dropped
	readAt    time.Time  // when the last successful read of the view began
	leaseEnd  time.Time  // this gateway's lock is surely held until then
	closed    bool
	started   bool

	// owned by the poll loop
	token      string
	registered bool
	lockless   map[int32]time.Time
	lastErr    map[string]string // the last failure logged, by step

	// changed is closed, and replaced, when what Serving answers may have
	// changed (see Changed); announced is what it was then.
	changed   chan struct{}
	announced servingState

	stop chan struct{}
	done chan struct{}
}

// New returns a Membership; Start joins the cluster.
func New(opts Options) *Membership {
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.LockTTL <= 0 {
		opts.LockTTL = DefaultLockTTL
	}
	if opts.ViewLease <= 0 {
		opts.ViewLease = DefaultViewLease
	}
	if opts.Settle <= 0 {
		opts.Settle = DefaultSettle
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	return &Membership{
		opts:     opts,
		instance: fmt.Sprintf("%s#%d", opts.Self.Addr(), time.Now().UnixNano()),
		lockless: map[int32]time.Time{},
		lastErr:  map[string]string{},
		changed:  make(chan struct{}),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
}

// Start joins the cluster and keeps the view current until Close.
func (m *Membership) Start() {
	m.mu.Lock()
	if m.closed || m.started { // closed before it joined: it never does
		m.mu.Unlock()
		return
	}
	m.started = true
	m.mu.Unlock()
	go func() {
		defer close(m.done)
		t := time.NewTicker(m.opts.Poll)
		defer t.Stop()
		// next fires when the answers of Serving change with time alone:
		// a view's settle time passing, the view read or the lock
		// going stale.
		next := time.NewTimer(time.Hour)
		defer next.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), m.opts.Poll*2)
			guard.Run("Membership", func() { m.poll(ctx) }) //nolint:errcheck // logged and counted; polled again next round
			cancel()
			for polled := false; !polled; {
				m.mu.Lock()
				m.announceLocked()
				wait := m.nextChangeLocked(m.opts.now())
				m.mu.Unlock()
				next.Reset(wait)
				select {
				case <-m.stop:
					return
				case <-t.C:
					polled = true
				case <-next.C:
				}
			}
		}
	}()
}

// servingState is what Serving's answers depend on, besides the key: the
// view, whether it may be acted on, and how many of the views read have
// been held for the settle time.
type servingState struct {
	epoch   int64
	fresh   bool
	settled int
}

func (m *Membership) stateLocked(now time.Time) servingState {
	var st servingState
	v, fresh := m.currentLocked(now)
	if v != nil {
		st.epoch, st.fresh = v.Epoch, fresh
	}
	for _, h := range m.history {
		if now.Sub(h.seen) >= m.opts.Settle {
			st.settled++
		}
	}
	return st
}

// announceLocked tells the subscribers of Changed if the serving state
// differs from what they were last told.
func (m *Membership) announceLocked() {
	if st := m.stateLocked(m.opts.now()); st != m.announced {
		m.announced = st
		close(m.changed)
		m.changed = make(chan struct{})
	}
}

// nextChangeLocked is how long until the serving state changes with time
// alone, if no view is read meanwhile (at most an hour).
func (m *Membership) nextChangeLocked(now time.Time) time.Duration {
	wait := time.Hour
	soonest := func(at time.Time) {
		if d := at.Sub(now); d > 0 && d < wait {
			wait = d
		}
	}
	for _, h := range m.history {
		soonest(h.seen.Add(m.opts.Settle))
	}
	if _, fresh := m.currentLocked(now); fresh {
		soonest(m.readAt.Add(m.opts.ViewLease))
		soonest(m.leaseEnd)
	}
	return wait + time.Millisecond
}

// Changed returns a channel that is closed once what Serving answers may
// have changed: a new view was read, one was held for the settle time, or
// this gateway's lock or its read of the view went stale (or fresh again).
// Take the channel before looking, so that no change goes unseen:
//
//	for {
//		changed := m.Changed()
//		// look at Serving ...
//		<-changed
//	}
func (m *Membership) Changed() <-chan struct{} {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.changed
}

// Close stops serving and leaves the cluster: the lock is released so the
// others take over without waiting for it to expire.
func (m *Membership) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	started := m.started
	m.announceLocked()
	m.mu.Unlock()
	close(m.stop)
	if started {
		<-m.done
	}
	if m.token != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.opts.Filer.Unlock(ctx, memberLock+strconv.Itoa(int(m.opts.Self.NodeID)), m.token); err != nil {
			glog.Warningf("kafka gateways: leaving: %v", err)
		}
	}
}

func (m *Membership) fail(what string, err error) {
	msg := err.Error()
	if m.lastErr[what] != msg {
		glog.Warningf("kafka gateways: %s: %s", what, msg)
		m.lastErr[what] = msg
	}
}

// poll renews this gateway's lock, writes the view if this gateway is the
// one that does, and reads it.
func (m *Membership) poll(ctx context.Context) {
	start := m.opts.now()
	self := m.opts.Self
	token, err := m.opts.Filer.Lock(ctx, memberLock+strconv.Itoa(int(self.NodeID)), m.instance, m.token, m.opts.LockTTL)
	if err != nil {
		if m.token != "" {
			glog.Errorf("kafka gateways: lost the lock of node %d: %v", self.NodeID, err)
		} else {
			m.fail(fmt.Sprintf("taking the lock of node id %d (another gateway with this id, or one that died less than %v ago, holds it; or the filer does not answer)", self.NodeID, m.opts.LockTTL), err)
		}
		m.token, m.registered = "", false
	} else {
		if m.token == "" {
			glog.V(0).Infof("kafka gateways: joined as node %d at %s", self.NodeID, self.Addr())
		}
		m.token = token
		m.mu.Lock()
		m.leaseEnd = start.Add(m.opts.LockTTL * 4 / 5)
		m.mu.Unlock()
	}
	live, err := m.live(ctx)
	if err != nil {
		m.fail("listing gateways", err)
		return
	}
	if len(live) > 0 && live[0].NodeID == self.NodeID {
		if err := m.writeView(ctx, live); err != nil {
			m.fail("writing the view", err)
		}
	}
	v, err := m.readView(ctx)
	if err != nil {
		m.fail("reading the view", err)
		return
	}
	clear(m.lastErr)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.readAt = start
	if n := len(m.history); n == 0 || m.history[n-1].view.Epoch != v.Epoch {
		if n > 0 {
			glog.V(0).Infof("kafka gateways: view %d: %v", v.Epoch, v.Members)
		}
		m.history = append(m.history, observed{view: v, seen: m.opts.now()})
		if len(m.history) > keptViews {
			m.history = append(m.history[:0], m.history[len(m.history)-keptViews:]...)
			m.truncated = true
		}
	}
}

// live lists the registered gateways whose locks are held, registering
// this one if it holds its lock and is not listed.
func (m *Membership) live(ctx context.Context) ([]Member, error) {
	files, err := m.opts.Filer.ListFiles(ctx, Dir)
	if err != nil {
		return nil, err
	}
	self := m.opts.Self
	var live []Member
	listed := false
	for _, f := range files {
		var mem Member
		if f.Dir || json.Unmarshal(f.Data, &mem) != nil || f.Name != strconv.Itoa(int(mem.NodeID)) {
			continue
		}
		if mem.NodeID == self.NodeID && m.token != "" {
			listed = mem == self
			continue
		}
		owner, err := m.opts.Filer.LockOwner(ctx, memberLock+f.Name)
		if err != nil {
			return nil, err
		}
		if owner == "" {
			m.forgetStale(ctx, mem.NodeID)
			continue
		}
		delete(m.lockless, mem.NodeID)
		live = append(live, mem)
	}
	if m.token != "" {
		if !listed || !m.registered {
			data, _ := json.Marshal(self)
			if err := m.opts.Filer.WriteFile(ctx, Dir, strconv.Itoa(int(self.NodeID)), data); err != nil {
				return nil, err
			}
			m.registered = true
		}
		live = append(live, self)
	}
	sort.Slice(live, func(i, j int) bool { return live[i].NodeID < live[j].NodeID })
	return live, nil
}

// forgetStale removes the registry file of a gateway whose lock has been
// free for staleMember; only the gateway that writes the view does.
func (m *Membership) forgetStale(ctx context.Context, node int32) {
	now := m.opts.now()
	since, ok := m.lockless[node]
	if !ok {
		m.lockless[node] = now
		return
	}
	if now.Sub(since) < staleMember || m.token == "" {
		return
	}
	m.mu.RLock()
	controller := m.controllerLocked() == m.opts.Self.NodeID
	m.mu.RUnlock()
	if controller {
		if err := m.opts.Filer.Remove(ctx, Dir, strconv.Itoa(int(node))); err == nil {
			delete(m.lockless, node)
		}
	}
}

func (m *Membership) readView(ctx context.Context) (View, error) {
	v, _, err := m.readViewVersion(ctx)
	return v, err
}

// readViewVersion is readView with the file's version ("" if there is
// none yet).
func (m *Membership) readViewVersion(ctx context.Context) (View, string, error) {
	var v View
	data, version, err := m.opts.Filer.ReadFileVersion(ctx, viewDir, viewFile)
	if errors.Is(err, fs.ErrNotExist) {
		return v, "", nil
	}
	if err != nil {
		return v, "", err
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return v, "", fmt.Errorf("%s/%s: %w", viewDir, viewFile, err)
	}
	return v, version, nil
}

// writeView writes a new view of live if the current one differs, under
// the view lock, and only over the view it read: epochs only grow. The
// lock keeps the gateways from writing at once; the condition holds when
// the lock does not, for a write that lands after it expired (sent before
// a cut, say) over a view written since.
func (m *Membership) writeView(ctx context.Context, live []Member) error {
	v, err := m.readView(ctx)
	if err != nil || sameMembers(v.Members, live) {
		return err
	}
	token, err := m.opts.Filer.Lock(ctx, viewLock, m.instance, "", 5*time.Second)
	if err != nil {
		return err
	}
	defer m.opts.Filer.Unlock(ctx, viewLock, token) //nolint:errcheck // it expires anyway
	v, version, err := m.readViewVersion(ctx)
	if err != nil || sameMembers(v.Members, live) {
		return err
	}
	next := v.next(live)
	data, _ := json.Marshal(next)
	_, err = m.opts.Filer.WriteFileIf(ctx, viewDir, viewFile, data, version)
	return err
}

// current returns the last view read and whether this gateway may act on
// it at now: its lock and the view read are both recent enough.
func (m *Membership) currentLocked(now time.Time) (*View, bool) {
	if len(m.history) == 0 {
		return nil, false
	}
	v := &m.history[len(m.history)-1].view
	fresh := !m.closed && now.Sub(m.readAt) < m.opts.ViewLease && now.Before(m.leaseEnd)
	return v, fresh
}

// since returns the epoch and the time from which, through consecutive
// views, owned has been true; ok is false if it is not true now.
func (m *Membership) sinceLocked(owned func(*View) bool) (epoch int64, seen time.Time, settled bool, ok bool) {
	j := len(m.history) - 1
	if j < 0 || !owned(&m.history[j].view) {
		return 0, time.Time{}, false, false
	}
	for j > 0 && m.history[j-1].view.Epoch+1 == m.history[j].view.Epoch && owned(&m.history[j-1].view) {
		j--
	}
	return m.history[j].view.Epoch, m.history[j].seen, j == 0 && m.truncated, true
}

// Serving reports whether this gateway serves key now, and its term: the
// period it has owned the key without a break, named by the epoch of the
// view it began in (for a partition, its Kafka leader epoch). State kept
// from an earlier term is stale.
func (m *Membership) Serving(key string) (term int64, ok bool) {
	now := m.opts.now()
	self := m.opts.Self.NodeID
	m.mu.RLock()
	defer m.mu.RUnlock()
	if _, fresh := m.currentLocked(now); !fresh {
		return 0, false
	}
	v := &m.history[len(m.history)-1].view
	if o, found := v.owner(key); !found || o.NodeID != self {
		return 0, false
	}
	// The term begins at the owner epoch the view gives (exact however
	// old);
	// it is settled once this gateway has held a view of that epoch for
	// the settle time (or held one older than it remembers).
	epoch := v.ownerEpoch(key)
	seen, settled := m.history[0].seen, m.truncated && m.history[0].view.Epoch > epoch
	for _, h := range m.history {
		if h.view.Epoch == epoch {
			seen, settled = h.seen, false
			break
		}
	}
	if !settled && now.Sub(seen) < m.opts.Settle {
		return 0, false
	}
	return epoch, true
}

// Self returns this gateway.
func (m *Membership) Self() Member { return m.opts.Self }

// Owner returns the gateway that owns key in the current view, whether or
// not it serves it yet, and the epoch of the view its term began in (a
// partition's leader epoch); ok is false before a view naming any gateway
// is read.
func (m *Membership) Owner(key string) (owner Member, epoch int64, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if len(m.history) == 0 {
		return Member{}, 0, false
	}
	v := &m.history[len(m.history)-1].view
	o, found := v.owner(key)
	return m.asItIs(o), v.ownerEpoch(key), found
}

// asItIs is o with this gateway's own listeners if o is this gateway: a
// view written before it restarted (on other ports) names it with the
// listeners it had then.
func (m *Membership) asItIs(o Member) Member {
	if o.NodeID == m.opts.Self.NodeID {
		return m.opts.Self
	}
	return o
}

// Members returns the gateways of the current view, by node id.
func (m *Membership) Members() []Member {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if len(m.history) == 0 {
		return nil
	}
	ms := append([]Member(nil), m.history[len(m.history)-1].view.Members...)
	for i := range ms {
		ms[i] = m.asItIs(ms[i])
	}
	return ms
}

// Epoch returns the current view's epoch (0 before one is read).
func (m *Membership) Epoch() int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if len(m.history) == 0 {
		return 0
	}
	return m.history[len(m.history)-1].view.Epoch
}

// Controller returns the node id of the gateway that writes the view: the
// lowest in it, -1 if none.
func (m *Membership) Controller() int32 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.controllerLocked()
}

func (m *Membership) controllerLocked() int32 {
	if len(m.history) == 0 || len(m.history[len(m.history)-1].view.Members) == 0 {
		return -1
	}
	return m.history[len(m.history)-1].view.Members[0].NodeID
}

// Ready returns nil once this gateway is in the view it acts on and has
// held it for Settle, the reason it is not otherwise.
func (m *Membership) Ready() error {
	now := m.opts.now()
	self := m.opts.Self.NodeID
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return errors.New("leaving the cluster")
	}
	v, fresh := m.currentLocked(now)
	switch {
	case v == nil:
		return errors.New("no view of the cluster's gateways read yet")
	case !fresh:
		return errors.New("the lock of this gateway or its view of the gateways is not current")
	}
	// In the view as it is now: a view written before this gateway
	// restarted names it with the listeners it had then.
	me := m.opts.Self
	_, seen, settled, in := m.sinceLocked(func(v *View) bool { return v.hasMember(me) })
	if !in {
		return fmt.Errorf("node %d is not in the view of the gateways yet", self)
	}
	if !settled && now.Sub(seen) < m.opts.Settle {
		return fmt.Errorf("node %d joined the view %v ago; serving after %v", self, now.Sub(seen).Round(time.Millisecond), m.opts.Settle)
	}
	return nil
}
