package link

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// Options configure a Manager.
type Options struct {
	Store *Store
	// Backend is the storage as this gateway serves it (leadership
	// checked); Mirror the same, for the fetchers' writes.
	Backend storage.Backend
	Mirror  storage.Mirror
	// Serving is the membership's: whether this gateway owns a key now.
	Serving func(key string) (term int64, ok bool)
	Self    int32
	// Local returns the settings of a Kafka client of this cluster, as
	// the gateways' own user (topics, configs, groups, ACLs are changed
	// through the Kafka API, on whichever gateway owns them).
	Local func() []kgo.Opt
	// Refresh is how often every gateway reads the links (default 2 s);
	// Interval how often a link's controller syncs (default 5 s).
	Refresh  time.Duration
	Interval time.Duration
}

// Manager runs the links on one gateway: the fetchers of the mirrored
// partitions it leads, and the controllers of the links it owns. It
// answers which topics are mirrors (read-only) for the produce path.
type Manager struct {
	opts Options
	ctx  context.Context
	stop context.CancelFunc
	// kick has the loop read the links now (a controller changed a
	// link's state); done is closed when the loop ended.
	kick      chan struct{}
	done      chan struct{}
	startOnce sync.Once

	// readOnly maps each mirror topic not yet promoted to its link.
	readOnly atomic.Pointer[map[string]string]

	mu    sync.Mutex
	links map[string]*running
}

// running is what this gateway runs for one link.
type running struct {
	cfg     Config
	src     *kgo.Client
	fetcher *fetcher // while this gateway leads any of its partitions
	ctrl    *controller
	// failed are the partitions whose source deleted what was not yet
	// pulled, as the fetcher found: reported by the controller.
	failed sync.Map // partKey -> string
}

type partKey struct {
	topic     string
	partition int32
}

// New returns a manager, not started.
func New(opts Options) *Manager {
	if opts.Refresh <= 0 {
		opts.Refresh = 2 * time.Second
	}
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Second
	}
	m := &Manager{opts: opts, links: map[string]*running{}, kick: make(chan struct{}, 1), done: make(chan struct{})}
	m.ctx, m.stop = context.WithCancel(context.Background())
	empty := map[string]string{}
	m.readOnly.Store(&empty)
	return m
}

// Start begins reading the links, every Refresh and when kicked.
func (m *Manager) Start() {
	m.startOnce.Do(func() {
		go func() {
			defer close(m.done)
			t := time.NewTicker(m.opts.Refresh)
			defer t.Stop()
			for {
				ctx, cancel := context.WithTimeout(m.ctx, filerfs.StepTimeout)
				m.refresh(ctx)
				cancel()
				select {
				case <-m.ctx.Done():
					return
				case <-t.C:
				case <-m.kick:
				}
			}
		}()
	})
}

// Refresh has the links read again at once (the API changed one).
func (m *Manager) Refresh() { m.refreshNow() }

// refreshNow has the links read again at once.
func (m *Manager) refreshNow() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Close stops every fetcher and controller.
func (m *Manager) Close() {
	m.stop()
	m.startOnce.Do(func() { close(m.done) })
	<-m.done
	m.mu.Lock()
	links := m.links
	m.links = map[string]*running{}
	m.mu.Unlock()
	for _, r := range links {
		r.close()
	}
}

// ReadOnly reports whether topic is a mirror topic not yet promoted, and
// of which link: produce to it is refused.
func (m *Manager) ReadOnly(topic string) (string, bool) {
	name, ok := (*m.readOnly.Load())[topic]
	return name, ok
}

// LinkKey names a link for ownership: its controller is the gateway that
// owns it.
func LinkKey(name string) string { return "l\x00" + name }

// refresh reads the links and starts and stops what this gateway runs.
func (m *Manager) refresh(ctx context.Context) {
	links, err := m.opts.Store.List(ctx)
	if err != nil {
		glog.Warningf("kafka links: reading the links: %v", err)
		return
	}
	readOnly := map[string]string{}
	for _, l := range links {
		if l.Status == nil {
			continue
		}
		for t, ts := range l.Status.Topics {
			if ts.State != StatePromoted && ts.State != StateConflict {
				readOnly[t] = l.Config.Name
			}
		}
		if l.Status.ProducerIDFloor >= 0 {
			m.opts.Mirror.DropProducerIDs(l.Status.ProducerIDFloor)
		}
	}
	m.readOnly.Store(&readOnly)

	seen := map[string]bool{}
	for _, l := range links {
		seen[l.Config.Name] = true
		m.run(ctx, l)
	}
	m.mu.Lock()
	var gone []*running
	for name, r := range m.links {
		if !seen[name] {
			gone = append(gone, r)
			delete(m.links, name)
		}
	}
	m.mu.Unlock()
	for _, r := range gone {
		r.close()
	}
}

// run starts and stops the link's controller and fetcher here.
func (m *Manager) run(ctx context.Context, l Link) {
	name := l.Config.Name
	m.mu.Lock()
	r := m.links[name]
	m.mu.Unlock()
	if r != nil && r.cfg.Created != l.Config.Created {
		// Deleted and created again under the same name.
		r.close()
		r = nil
	}
	if r == nil {
		password, err := m.opts.Store.password(&l.Config)
		if err != nil {
			glog.Warningf("kafka link %s: %v", name, err)
			return
		}
		opts, err := clientOpts(&l.Config, password)
		if err == nil {
			var src *kgo.Client
			if src, err = kgo.NewClient(opts...); err == nil {
				r = &running{cfg: l.Config, src: src}
			}
		}
		if err != nil {
			glog.Warningf("kafka link %s: a client of its source: %v", name, err)
			return
		}
		m.mu.Lock()
		m.links[name] = r
		m.mu.Unlock()
	}
	r.cfg = l.Config

	// The controller, on the gateway that owns the link.
	if _, owned := m.opts.Serving(LinkKey(name)); owned {
		if r.ctrl == nil {
			r.ctrl = newController(m, r, l.Status)
			r.ctrl.start(m.ctx)
		}
		r.ctrl.setConfig(l.Config)
	} else if r.ctrl != nil {
		r.ctrl.stop()
		r.ctrl = nil
	}

	// The fetcher, of the mirrored partitions this gateway leads.
	want := map[partKey]bool{}
	if !l.Config.Paused && l.Status != nil {
		for t, ts := range l.Status.Topics {
			if !ts.Taken || ts.State != StateMirroring && ts.State != StatePromoting {
				continue // not created (or taken) yet, or done with
			}
			info, err := m.opts.Backend.DescribeTopic(ctx, t)
			if err != nil {
				continue // created by the controller in a moment
			}
			for i := int32(0); i < info.Partitions; i++ {
				if _, leads := m.opts.Serving(membership.PartitionKey(t, i)); leads {
					want[partKey{t, i}] = true
				}
			}
		}
	}
	switch {
	case len(want) > 0 && r.fetcher == nil:
		r.fetcher = newFetcher(name, r.src, m.opts.Backend, m.opts.Mirror, func(k partKey, err error) { r.failed.Store(k, err.Error()) })
		r.fetcher.set(want)
		r.fetcher.start(m.ctx)
	case len(want) > 0:
		r.fetcher.set(want)
	case r.fetcher != nil:
		r.fetcher.stop()
		r.fetcher = nil
	}
}

// close stops what runs for the link.
func (r *running) close() {
	if r.ctrl != nil {
		r.ctrl.stop()
	}
	if r.fetcher != nil {
		r.fetcher.stop()
	}
	r.src.Close()
}
