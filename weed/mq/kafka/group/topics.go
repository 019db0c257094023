package group

// The topics consumer groups (KIP-848) subscribe to. The coordinator keeps
// an image of the cluster's topics that some loaded consumer group names or
// whose name one of their regular expressions matches: name, id and
// partition count. It is read from the cluster outside the groups'
// goroutines (at a heartbeat that names a topic the image lacks, and every
// TopicRefresh while consumer groups are loaded) and published whole; a
// group reads it on its goroutine, and is told when it changed so that it
// bumps its epoch if what its members subscribe to changed (a topic
// created, deleted or re-created), as Kafka's coordinator does on a new
// metadata image.

import (
	"context"
	"maps"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"
	"golang.org/x/sync/semaphore"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
)

// Topic is what the server-side assignors know of a topic.
type Topic struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// Topics gives the coordinator the cluster's topics.
type Topics interface {
	// Names lists the name of every topic.
	Names(ctx context.Context) ([]string, error)
	// Topic describes one topic; ok is false if it does not exist.
	Topic(ctx context.Context, name string) (t Topic, ok bool, err error)
}

// Defaults of the topic image.
const (
	// DefaultTopicRefresh is how often the topics of loaded consumer
	// groups are looked at again: a topic created for a subscription (or
	// matching a regex) is assigned about this long after its creation.
	DefaultTopicRefresh = time.Second
	// redescribeAfter is how long a described topic is trusted before it
	// is described again (a topic deleted and created again under its
	// name has a new id).
	redescribeAfter = 10 * time.Second
	// regexListAge is how old the list of names may be when a member
	// brings a regex: older, it is listed again before the regex is
	// resolved. Kafka resolves regexes at most every 10 s.
	regexListAge = 2 * time.Second
)

// topicImage is the topics known to the coordinator; never changed once
// published.
type topicImage struct {
	byName    map[string]Topic
	byID      map[[16]byte]Topic
	described map[string]time.Time // when each topic was described
	names     map[string]bool      // every topic's name, as last listed
	listed    time.Time            // when names were listed (zero: never)
}

func (im *topicImage) topic(name string) (Topic, bool) {
	t, ok := im.byName[name]
	return t, ok
}

// sameTopics reports whether two images hold the same topics.
func (im *topicImage) sameTopics(o *topicImage) bool {
	return maps.Equal(im.byName, o.byName)
}

func (im *topicImage) clone() *topicImage {
	n := &topicImage{byName: maps.Clone(im.byName), byID: maps.Clone(im.byID),
		described: maps.Clone(im.described), names: im.names, listed: im.listed}
	if n.byName == nil {
		n.byName, n.byID, n.described = map[string]Topic{}, map[[16]byte]Topic{}, map[string]time.Time{}
	}
	return n
}

func (im *topicImage) put(t Topic, at time.Time) {
	if old, ok := im.byName[t.Name]; ok {
		delete(im.byID, old.ID)
	}
	im.byName[t.Name], im.byID[t.ID], im.described[t.Name] = t, t, at
}

func (im *topicImage) drop(name string) {
	if old, ok := im.byName[name]; ok {
		delete(im.byID, old.ID)
	}
	delete(im.byName, name)
	delete(im.described, name)
}

// known reports whether the image knows of a name: a topic, or a name
// missing from a listing of a moment ago.
func (im *topicImage) known(name string, now time.Time, every time.Duration) bool {
	if _, ok := im.byName[name]; ok {
		return true
	}
	return now.Sub(im.listed) < 2*every && !im.names[name]
}

// subscriptions is what one loaded consumer group subscribes to: names and
// regexes, for the refresh to know which topics to describe.
type subscriptions struct {
	names   map[string]bool
	regexes []*regexp.Regexp
}

func (s subscriptions) wants(name string) bool {
	return s.names[name] || slices.ContainsFunc(s.regexes, func(re *regexp.Regexp) bool { return re.MatchString(name) })
}

// topicWatch keeps the image.
type topicWatch struct {
	source Topics
	every  time.Duration

	// refreshing is held by the refresh going on, across its calls to
	// Topics (one at a time); mu never is.
	refreshing *semaphore.Weighted

	mu    sync.Mutex
	image *topicImage
	subs  map[string]subscriptions // by group
}

func (w *topicWatch) current() *topicImage {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.image
}

// subscribe records what a group subscribes to (nothing: forget it).
func (w *topicWatch) subscribe(group string, s subscriptions) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(s.names) == 0 && len(s.regexes) == 0 {
		delete(w.subs, group)
		return
	}
	w.subs[group] = s
}

func (w *topicWatch) watched() []subscriptions {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Collect(maps.Values(w.subs))
}

// ensure makes the image hold what a group and a heartbeat to it
// subscribe to: the topics they name (those that exist) and, for regexes,
// a list of names no older than regexListAge. A group loaded a moment ago
// (after a restart, or from another gateway) is read here before it looks
// at the image. It reports whether the image changed.
func (w *topicWatch) ensure(ctx context.Context, group string, names []string, regex *regexp.Regexp) bool {
	if w.source == nil {
		return false
	}
	w.mu.Lock()
	s := w.subs[group]
	w.mu.Unlock()
	want := subscriptions{names: map[string]bool{}, regexes: slices.Clone(s.regexes)}
	for n := range s.names {
		want.names[n] = true
	}
	for _, n := range names {
		want.names[n] = true
	}
	if regex != nil {
		want.regexes = append(want.regexes, regex)
	}
	im, now := w.current(), time.Now()
	missing := false
	for n := range want.names {
		missing = missing || !im.known(n, now, w.every)
	}
	if !missing && (len(want.regexes) == 0 || now.Sub(im.listed) < regexListAge) {
		return false
	}
	return w.refresh(ctx, want)
}

// refresh reads the topics the loaded groups (and extra) want. The names
// are listed (one call) when a regex is subscribed to or a name the image
// does not know is; only topics that exist are described, new ones at once
// and known ones again after redescribeAfter; a listing drops the topics
// deleted. It reports whether the image's topics changed.
func (w *topicWatch) refresh(ctx context.Context, extra subscriptions) bool {
	if w.refreshing.Acquire(ctx, 1) != nil {
		return false // the request gave up waiting: the image as it is
	}
	defer w.refreshing.Release(1)
	subs := append(w.watched(), extra)
	old := w.current()
	next := old.clone()
	now := time.Now()
	wanted := map[string]bool{}
	regexes := false
	for _, s := range subs {
		for n := range s.names {
			wanted[n] = true
		}
		regexes = regexes || len(s.regexes) > 0
	}
	list := regexes
	for n := range wanted {
		if _, ok := next.byName[n]; !ok {
			list = true
		}
	}
	if list {
		names, err := w.source.Names(ctx)
		if err != nil {
			glog.V(1).Infof("kafka consumer groups: listing topics: %v", err)
			return false
		}
		next.listed, next.names = now, map[string]bool{}
		for _, n := range names {
			next.names[n] = true
			if regexes && !wanted[n] && slices.ContainsFunc(subs, func(s subscriptions) bool { return s.wants(n) }) {
				wanted[n] = true
			}
		}
		for n := range next.byName {
			if !next.names[n] {
				next.drop(n) // deleted
			}
		}
	}
	for n := range wanted {
		at, known := next.described[n]
		switch {
		case list && !next.names[n]:
			continue // no such topic
		case known && now.Sub(at) < redescribeAfter:
			continue
		}
		t, ok, err := w.source.Topic(ctx, n)
		switch {
		case err != nil:
			glog.V(1).Infof("kafka consumer groups: describing topic %s: %v", n, err)
		case ok:
			next.put(t, now)
		default:
			next.drop(n)
		}
	}
	for n := range next.byName {
		if !wanted[n] {
			next.drop(n) // no group wants it any more
		}
	}
	w.mu.Lock()
	w.image = next
	w.mu.Unlock()
	return !old.sameTopics(next)
}

// watchTopics refreshes the image every TopicRefresh while consumer groups
// are loaded, and tells them when it changed.
func (c *Coordinator) watchTopics() {
	defer c.wg.Done()
	tick := time.NewTicker(c.topics.every)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		if len(c.topics.watched()) == 0 || c.topics.source == nil {
			continue
		}
		var changed bool
		guard.Run("ConsumerGroupTopics", func() { //nolint:errcheck // logged and counted; the next round tries again
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			changed = c.topics.refresh(ctx, subscriptions{})
		})
		if changed {
			c.topicsChanged()
		}
	}
}

// topicsChanged tells every loaded consumer group that the image changed.
func (c *Coordinator) topicsChanged() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range c.groups {
		g.after(0, func() {
			if g.consumer() != nil {
				g.consumerTopicsChanged()
			}
		})
	}
}
