package console

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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

// lag returns the session's snapshot, measured again once older than
// lagTTL (one measure at a time per session).
func (r *request) lag() *lagSnapshot {
	r.lagMu.Lock()
	defer r.lagMu.Unlock()
	if r.session.lag != nil && time.Since(r.session.lag.at) < lagTTL {
		return r.session.lag
	}
	prev := r.session.lag
	l := measureLag(r.ctx, r.adm)
	if l.err == nil || prev == nil {
		r.session.lag = l
	} else {
		return prev
	}
	return l
}

func measureLag(ctx context.Context, adm *kadm.Client) *lagSnapshot {
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
	topics := map[string]bool{}
	if len(offsetGroups) > 0 {
		for name, resp := range adm.FetchManyOffsets(ctx, offsetGroups...) {
			if resp.Err != nil {
				continue
			}
			committed[name] = resp.Fetched
			for t := range resp.Fetched {
				topics[t] = true
			}
		}
	}
	if len(topics) > 0 {
		names := make([]string, 0, len(topics))
		for t := range topics {
			names = append(names, t)
		}
		starts, err := adm.ListStartOffsets(ctx, names...)
		if err != nil {
			l.err = err
			return l
		}
		ends, err := adm.ListEndOffsets(ctx, names...)
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
