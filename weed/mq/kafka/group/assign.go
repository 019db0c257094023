package group

// The server-side assignors of consumer groups (group.consumer.assignors):
// uniform (Kafka's default) and range, computing every member's target
// assignment from the members' subscriptions and their previous targets,
// as Kafka's UniformAssignor and RangeAssignor do. Member order is by
// member id (Kafka iterates a hash map, so which member gets which
// partition may differ from Kafka; balance and stickiness do not).
// Members' racks do not change the assignment: Kafka's rack-aware rules
// match a member with the partitions that have a replica in its rack, and
// a partition's reads are served in every rack that has a gateway (a
// consumer with client.rack reads from its rack's gateway, KIP-392), so
// every partition matches every member whose rack has one, and the rules
// reduce to these.

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
	"strings"
)

// assignee is a member as an assignor sees it.
type assignee struct {
	id         string
	instanceID *string
	topics     map[topicID]bool // subscribed, existing
	target     partitions       // the previous target
}

// assignInput is what an assignor computes from.
type assignInput struct {
	members []*assignee // in member id order
	topics  map[topicID]Topic
}

// topicOrder sorts topic ids by topic name.
func (in *assignInput) topicOrder(ids map[topicID]bool) []topicID {
	out := slices.Collect(maps.Keys(ids))
	slices.SortFunc(out, func(a, b topicID) int {
		if c := strings.Compare(in.topics[a].Name, in.topics[b].Name); c != 0 {
			return c
		}
		return bytes.Compare(a[:], b[:])
	})
	return out
}

// assign computes the targets with the named assignor.
func assign(name string, in *assignInput) map[string]partitions {
	if name == "range" {
		return assignRange(in)
	}
	return assignUniform(in)
}

// homogeneous reports whether every member subscribes to the same topics.
func (in *assignInput) homogeneous() bool {
	for _, m := range in.members[1:] {
		if !maps.Equal(m.topics, in.members[0].topics) {
			return false
		}
	}
	return true
}

func assignUniform(in *assignInput) map[string]partitions {
	out := map[string]partitions{}
	for _, m := range in.members {
		out[m.id] = partitions{}
	}
	if len(in.members) == 0 {
		return out
	}
	if in.homogeneous() {
		uniformHomogeneous(in, out)
	} else {
		uniformHeterogeneous(in, out)
	}
	return out
}

type tp struct {
	t topicID
	p int32
}

// uniformHomogeneous: every member subscribes to the same topics. Each
// member gets the total divided by the members, the first ones left over
// one more; a member keeps what it had up to its quota, and the rest goes
// to the members below theirs.
func uniformHomogeneous(in *assignInput, out map[string]partitions) {
	topics := in.topicOrder(in.members[0].topics)
	total := 0
	for _, t := range topics {
		total += int(in.topics[t].Partitions)
	}
	if total == 0 {
		return
	}
	taken := map[tp]bool{}
	for _, m := range in.members {
		for t, parts := range m.target {
			for p := range parts {
				if in.members[0].topics[t] && p < in.topics[t].Partitions {
					taken[tp{t, p}] = true
				}
			}
		}
	}
	var unassigned []tp
	for _, t := range topics {
		for p := int32(0); p < in.topics[t].Partitions; p++ {
			if !taken[tp{t, p}] {
				unassigned = append(unassigned, tp{t, p})
			}
		}
	}
	n := len(in.members)
	minQuota, extras := total/n, total%n
	type unfilled struct {
		id    string
		quota int
	}
	var short []unfilled
	for _, m := range in.members {
		quota, extra := minQuota, false
		if extras > 0 {
			quota, extra = quota+1, true
		}
		for _, t := range in.topicOrder(keysOf(m.target)) {
			if !m.topics[t] {
				continue // no longer subscribed: not assignable to anyone
			}
			for _, p := range sortedPartitions(m.target[t]) {
				if p >= in.topics[t].Partitions {
					continue
				}
				if quota > 0 {
					out[m.id].add(t, p, 0)
					quota--
				} else {
					unassigned = append(unassigned, tp{t, p})
				}
			}
		}
		claimed := false
		if extra {
			if quota > 0 {
				quota-- // the extra slot is not filled: others may have it
			} else {
				extras-- // it keeps one more than the minimum
				claimed = true
			}
		}
		if quota > 0 || (extras > 0 && !claimed) {
			short = append(short, unfilled{m.id, quota})
		}
	}
	for i := len(short) - 1; i >= 0 && extras > 0; i-- {
		short[i].quota++
		extras--
	}
	next := 0
	for _, s := range short {
		for ; s.quota > 0 && next < len(unassigned); s.quota-- {
			out[s.id].add(unassigned[next].t, unassigned[next].p, 0)
			next++
		}
	}
}

func keysOf(ps partitions) map[topicID]bool {
	out := make(map[topicID]bool, len(ps))
	for t := range ps {
		out[t] = true
	}
	return out
}

// uniformHeterogeneous: members subscribe to different topics. Each keeps
// what it had of the topics it still subscribes to; the partitions nobody
// has go, topic by topic, to the least loaded of their subscribers; then
// partitions move from the most to the least loaded subscribers of each
// topic until their loads differ by one at most.
func uniformHeterogeneous(in *assignInput, out map[string]partitions) {
	load := map[string]int{}
	index := map[string]int{}
	subscribers := map[topicID][]string{}
	owner := map[tp]string{}
	all := map[topicID]bool{}
	for i, m := range in.members {
		index[m.id] = i
		for t := range m.topics {
			subscribers[t] = append(subscribers[t], m.id)
			all[t] = true
		}
	}
	for _, m := range in.members {
		for t, parts := range m.target {
			if !m.topics[t] {
				continue
			}
			for p := range parts {
				if p < in.topics[t].Partitions && owner[tp{t, p}] == "" {
					out[m.id].add(t, p, 0)
					owner[tp{t, p}] = m.id
					load[m.id]++
				}
			}
		}
	}
	order := in.topicOrder(all)
	slices.SortStableFunc(order, func(a, b topicID) int {
		ra := float64(in.topics[a].Partitions) / float64(len(subscribers[a]))
		rb := float64(in.topics[b].Partitions) / float64(len(subscribers[b]))
		if c := cmp.Compare(rb, ra); c != 0 {
			return c
		}
		return cmp.Compare(len(subscribers[a]), len(subscribers[b]))
	})
	// Unassigned partitions go round-robin among the least loaded
	// subscribers, the next level admitted once they have caught up.
	for _, t := range order {
		var free []int32
		for p := int32(0); p < in.topics[t].Partitions; p++ {
			if owner[tp{t, p}] == "" {
				free = append(free, p)
			}
		}
		if len(free) == 0 {
			continue
		}
		subs := slices.Clone(subscribers[t])
		slices.SortFunc(subs, func(a, b string) int {
			if c := cmp.Compare(load[a], load[b]); c != 0 {
				return c
			}
			return cmp.Compare(index[a], index[b])
		})
		start := map[string]int{}
		for _, s := range subs {
			start[s] = load[s]
		}
		end, cursor, level := 0, 0, start[subs[0]]-1
		for _, p := range free {
			if cursor == end {
				level++
				for end < len(subs) && start[subs[end]] <= level {
					end++
				}
				cursor = 0
			}
			s := subs[cursor]
			cursor++
			out[s].add(t, p, 0)
			owner[tp{t, p}] = s
			load[s]++
		}
	}
	// Balance: within each topic's subscribers, move its highest
	// partitions from the most to the least loaded.
	for pass := 0; pass < 16; pass++ {
		moved := false
		for _, t := range order {
			subs := subscribers[t]
			if len(subs) < 2 {
				continue
			}
			for {
				least, most := "", ""
				for _, s := range subs {
					if least == "" || load[s] < load[least] || (load[s] == load[least] && index[s] < index[least]) {
						least = s
					}
					if len(out[s][t]) > 0 && (most == "" || load[s] > load[most] || (load[s] == load[most] && index[s] < index[most])) {
						most = s
					}
				}
				if most == "" || load[most]-load[least] <= 1 {
					break
				}
				p := slices.Max(sortedPartitions(out[most][t]))
				delete(out[most][t], p)
				if len(out[most][t]) == 0 {
					delete(out[most], t)
				}
				out[least].add(t, p, 0)
				load[most]--
				load[least]++
				moved = true
			}
		}
		if !moved {
			break
		}
	}
}

// assignRange: each topic's partitions are split in contiguous ranges
// over its subscribers (static members first, by instance id, then the
// others by member id), the first ones one more when they do not divide
// evenly; topics with the same partitions and subscribers are
// co-partitioned. Not sticky, as Kafka's.
func assignRange(in *assignInput) map[string]partitions {
	out := map[string]partitions{}
	members := slices.Clone(in.members)
	slices.SortStableFunc(members, func(a, b *assignee) int {
		switch {
		case a.instanceID != nil && b.instanceID != nil:
			return strings.Compare(*a.instanceID, *b.instanceID)
		case a.instanceID != nil:
			return -1
		case b.instanceID != nil:
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	all := map[topicID]bool{}
	for _, m := range members {
		out[m.id] = partitions{}
		for t := range m.topics {
			all[t] = true
		}
	}
	for _, t := range in.topicOrder(all) {
		var subs []string
		for _, m := range members {
			if m.topics[t] {
				subs = append(subs, m.id)
			}
		}
		n := int(in.topics[t].Partitions)
		quota, extra := n/len(subs), n%len(subs)
		next := 0
		for _, s := range subs {
			q := quota
			if extra > 0 {
				q++
				extra--
			}
			for p := next; p < next+q; p++ {
				out[s].add(t, int32(p), 0)
			}
			next += q
		}
	}
	return out
}
