package group

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
)

// ExpireOffsets removes, in every group this gateway coordinates, the
// committed offsets whose retention (offsets.retention.minutes) ended by
// now, as Kafka's group coordinator does:
//   - a group with a protocol that is Empty: all of them, once it has been
//     empty for the retention (or, when when it became empty is not known,
//     each retention after its commit);
//   - a group that only commits offsets (no protocol): each retention after
//     its commit;
//   - a consumer group with members: those of topics no member subscribes
//     to, retention after their commit;
//
// never a partition an open transaction is committing offsets for. An
// Empty group left with no offsets is removed. Groups with nothing going on
// that no request asked for since the last pass are dropped from memory.
func (c *Coordinator) ExpireOffsets(now time.Time) {
	if c.opts.OffsetsRetention < 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	saved, err := c.opts.Store.States(ctx)
	if err != nil {
		glog.Warningf("kafka groups: expiring offsets: %v", err)
		return
	}
	removed, groups := 0, 0
	for _, name := range slices.Sorted(maps.Keys(saved)) {
		if _, owned := c.serving(name); !owned {
			continue
		}
		g, e := c.load(ctx, name, false)
		if e != nil || g == nil {
			continue
		}
		n, gone := c.expireGroup(ctx, g, now)
		removed += n
		if gone {
			groups++
		} else {
			c.unloadIdle(ctx, g)
		}
	}
	if removed > 0 || groups > 0 {
		glog.V(0).Infof("kafka groups: removed %d expired offsets and %d empty groups (offsets.retention.minutes %v)", removed, groups, c.opts.OffsetsRetention)
	}
}

// expireGroup removes the group's expired offsets, and the group if it is
// left empty; it says how many offsets went and whether the group did.
func (c *Coordinator) expireGroup(ctx context.Context, g *group, now time.Time) (int, bool) {
	type outcome struct {
		removed int
		gone    bool
	}
	res, err := call(ctx, g, func() outcome {
		if !g.exists() || g.state == Dead || g.typ() == TypeShare { // share groups stay until deleted, as Kafka's
			return outcome{}
		}
		// The commits accepted before are written first (none come in
		// meanwhile: they pass through this goroutine), so that none is
		// judged by an older one's time.
		<-c.opts.Store.Delete(g.name, nil)
		committed, err := c.opts.Store.Fetch(ctx, g.name, nil)
		if err != nil {
			glog.Warningf("kafka group %s: expiring offsets: %v", g.name, err)
			return outcome{}
		}
		pending := map[string]map[int32]bool{}
		for _, t := range g.txnOffsets {
			for topic, parts := range t.Offsets {
				if pending[topic] == nil {
					pending[topic] = map[int32]bool{}
				}
				for p := range parts {
					pending[topic][p] = true
				}
			}
		}
		var subscribed []string
		cl := g.classic()
		switch {
		case g.state == Empty:
		case cl == nil:
			subscribed = g.consumerSubscribed() // in any state, as Kafka
		case cl.protocolType == "consumer" && g.state == Stable:
			subscribed = g.subscribedTopics()
		default:
			return outcome{} // rebalancing, or a protocol whose topics are not known
		}
		retention := c.opts.OffsetsRetention
		expired := map[string][]int32{}
		n := 0
		for topic, parts := range committed {
			if g.state != Empty && slices.Contains(subscribed, topic) {
				continue
			}
			for p, o := range parts {
				base := time.UnixMilli(o.CommitTime)
				if g.state == Empty && (cl == nil || cl.protocolType != "") && !g.emptySince.IsZero() {
					base = g.emptySince
				}
				if pending[topic][p] || base.Add(retention).After(now) {
					continue
				}
				expired[topic] = append(expired[topic], p)
				n++
			}
		}
		if n > 0 {
			if err := <-c.opts.Store.Delete(g.name, expired); err != nil {
				glog.Warningf("kafka group %s: removing expired offsets: %v", g.name, err)
				return outcome{}
			}
		}
		if g.state != Empty || len(g.txnOffsets) > 0 || n < countOffsets(committed) || g.saving || g.next != nil {
			// A save under way (the last member's leaving, say) writes
			// the version the removal is conditional on: the next
			// round removes the group.
			return outcome{removed: n}
		}
		dctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
		defer cancel()
		if err := c.opts.Store.DeleteGroup(dctx, g.name, g.version); err != nil {
			glog.Warningf("kafka group %s: removing the empty group: %v", g.name, err)
			if errors.Is(err, filerfs.ErrChanged) {
				c.unload(g) // stale: read afresh where it is coordinated
			}
			return outcome{removed: n}
		}
		g.state = Dead
		glog.V(1).Infof("kafka group %s: removed, empty and without offsets", g.name)
		metrics.ForgetGroup(g.name)
		c.forget(g) // last: the caller is answered as the group ends
		return outcome{removed: n, gone: true}
	})
	if err != nil {
		return 0, false
	}
	return res.removed, res.gone
}

func countOffsets(t offset.Topics) int {
	n := 0
	for _, parts := range t {
		n += len(parts)
	}
	return n
}

// unloadIdle drops a group from memory if nothing is going on in it (no
// members, no open transaction) and no request asked for it for a
// RetentionCheck: it is loaded again when asked for.
func (c *Coordinator) unloadIdle(ctx context.Context, g *group) {
	if time.Since(time.Unix(0, g.used.Load())) < c.opts.RetentionCheck {
		return
	}
	idle, err := call(ctx, g, func() bool {
		return !g.kind.hasMembers() && len(g.txnOffsets) == 0
	})
	if err != nil || !idle {
		return
	}
	c.unload(g)
}
