package console

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// lagSnapshot is the lag of every group the session may describe, summed
// by group and by topic, as the lists show it. A group's lag on a
// partition is the partition's end offset minus its committed offset
// (the log start when the commit is before it); share groups' is what
// their coordinator answers (records not yet acknowledged). Partitions
// a group never committed are left out.
type lagSnapshot struct {
	at      time.Time
	groups  kadm.ListedGroups
	byGroup map[string]int64
	byTopic map[string]int64
	// byGroupTopic is each group's lag on each topic it committed on.
	byGroupTopic map[string]map[string]int64
	// consumed is the sum of committed offsets per topic, to measure
	// the records consumed per second between snapshots.
	consumed map[string]int64
	err      error
}

// lags keeps each principal's latest snapshot: the sessions of one user
// share it (their clients are that user's, with the same rights).
type lags struct {
	mu sync.Mutex
	by map[string]*lagEntry
	wg sync.WaitGroup // measures under way in the background
}

type lagEntry struct {
	// measuring is held while the first snapshot is measured, so that
	// the views waiting for it wait for one measure.
	measuring  sync.Mutex
	mu         sync.Mutex
	snap       *lagSnapshot
	refreshing bool
}

func (ls *lags) entry(principal string) *lagEntry {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.by == nil {
		ls.by = map[string]*lagEntry{}
	}
	e := ls.by[principal]
	if e == nil {
		e = &lagEntry{}
		ls.by[principal] = e
	}
	return e
}

// lag returns the principal's snapshot. Only the first view waits for a
// measure: one older than lagTTL is shown while a newer one is measured
// in the background (with this session's client), for the next view.
func (r *request) lag() *lagSnapshot {
	ls := &r.c.lags
	e := ls.entry(r.principal)
	e.mu.Lock()
	snap := e.snap
	if snap != nil {
		if time.Since(snap.at) >= lagTTL && !e.refreshing {
			e.refreshing = true
			ls.wg.Add(1)
			cl, adm := r.cl, r.adm
			go func() {
				defer ls.wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
				defer cancel()
				l := measureLag(ctx, cl, adm)
				e.mu.Lock()
				if l.err == nil {
					e.snap = l
				}
				e.refreshing = false
				e.mu.Unlock()
			}()
		}
		e.mu.Unlock()
		return snap
	}
	e.mu.Unlock()
	e.measuring.Lock()
	defer e.measuring.Unlock()
	e.mu.Lock()
	if e.snap != nil { // measured while this view waited
		snap = e.snap
		e.mu.Unlock()
		return snap
	}
	e.mu.Unlock()
	l := measureLag(r.ctx, r.cl, r.adm)
	if l.err == nil {
		e.mu.Lock()
		e.snap = l
		e.mu.Unlock()
	}
	return l
}

func measureLag(ctx context.Context, cl *kgo.Client, adm *kadm.Client) *lagSnapshot {
	l := &lagSnapshot{at: time.Now(), byGroup: map[string]int64{}, byTopic: map[string]int64{}, byGroupTopic: map[string]map[string]int64{}, consumed: map[string]int64{}}
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		l.err = err
		return l
	}
	l.groups = groups
	var offsetGroups, shareGroups []string
	for name, g := range groups {
		if g.GroupType == "share" {
			shareGroups = append(shareGroups, name)
		} else {
			offsetGroups = append(offsetGroups, name)
		}
	}
	committed := map[string]kadm.OffsetResponses{}
	parts := map[string][]int32{}
	seen := map[topicPartition]bool{}
	if len(offsetGroups) > 0 {
		for name, resp := range adm.FetchManyOffsets(ctx, offsetGroups...) {
			if resp.Err != nil {
				continue
			}
			committed[name] = resp.Fetched
			for t, ps := range resp.Fetched {
				for p := range ps {
					if tp := (topicPartition{t, p}); !seen[tp] {
						seen[tp] = true
						parts[t] = append(parts[t], p)
					}
				}
			}
		}
	}
	if len(parts) > 0 {
		starts, ends, err := startsAndEnds(ctx, cl, parts)
		if err != nil {
			l.err = err
			return l
		}
		for group, fetched := range committed {
			var sum int64
			for t, ps := range fetched {
				for p, o := range ps {
					if o.Err != nil || o.At < 0 {
						continue
					}
					lag, ok := partitionLag(starts, ends, t, p, o.At)
					if !ok {
						continue
					}
					sum += lag
					l.byTopic[t] += lag
					l.add(group, t, lag)
					l.consumed[t] += o.At
				}
			}
			l.byGroup[group] = sum
		}
	}
	if len(shareGroups) > 0 {
		described, err := adm.DescribeShareGroupOffsets(ctx, shareGroups...)
		if err == nil {
			for group, d := range described {
				if d.Err != nil {
					continue
				}
				var sum int64
				for t, ps := range d.Offsets {
					for _, o := range ps {
						if o.Err != nil || o.Lag < 0 {
							continue
						}
						sum += o.Lag
						l.byTopic[t] += o.Lag
						l.add(group, t, o.Lag)
					}
				}
				l.byGroup[group] = sum
			}
		}
	}
	return l
}

// partitionLag is end - committed, the committed offset raised to the
// log start when the records before it are gone.
func partitionLag(starts, ends kadm.ListedOffsets, topic string, partition int32, at int64) (int64, bool) {
	end, ok := ends.Lookup(topic, partition)
	if !ok || end.Err != nil {
		return 0, false
	}
	from := at
	if start, ok := starts.Lookup(topic, partition); ok && start.Err == nil && start.Offset > from {
		from = start.Offset
	}
	return max(end.Offset-from, 0), true
}

func (l *lagSnapshot) add(group, topic string, lag int64) {
	m := l.byGroupTopic[group]
	if m == nil {
		m = map[string]int64{}
		l.byGroupTopic[group] = m
	}
	m[topic] += lag
}

// topicLagOf is a group's lag on a topic, if it consumes it.
func (l *lagSnapshot) topicLagOf(group, topic string) (int64, bool) {
	lag, ok := l.byGroupTopic[group][topic]
	return lag, ok
}

type topicPartition struct {
	topic     string
	partition int32
}
