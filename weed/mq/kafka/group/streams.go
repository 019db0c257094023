package group

// Streams groups (KIP-1071), the group protocol of Kafka Streams 4.x with
// group.protocol=streams: members heartbeat with StreamsGroupHeartbeat
// carrying the application's topology (its subtopologies, their source,
// repartition and changelog topics), and the coordinator resolves the
// topology against the cluster's topics, has the missing internal topics
// created, assigns tasks (a subtopology and a partition) to members as
// active and standby tasks, and reconciles each member towards its target
// as for consumer groups. This file holds the state, the topology's
// resolution and the task assignor; the heartbeat is in
// streams_heartbeat.go.
//
// A streams group reuses the consumer group's machinery: its members are
// cmembers whose active tasks are partitions of a subtopology's key (a
// topic id derived from the subtopology's id), so that epochs,
// reconciliation (a task is revoked before another member is given it),
// sessions, rebalance timeouts and saving are the same code.

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TypeStreams is a streams group's type, as ListGroups names it.
const TypeStreams = "streams"

// NotReady is a streams group whose topology cannot run yet (topics
// missing or wrongly partitioned).
const NotReady State = "NotReady"

// Kafka's defaults of group.streams.*.
const (
	DefaultStreamsSessionTimeout    = 45 * time.Second
	DefaultStreamsHeartbeatInterval = 5 * time.Second
	DefaultStreamsInitialDelay      = 3 * time.Second
	// StreamsTaskOffsetInterval and StreamsAcceptableRecoveryLag are
	// Kafka's internal defaults, told to members.
	StreamsTaskOffsetInterval    = 60 * time.Second
	StreamsAcceptableRecoveryLag = 10000
)

// MaxStreamsTasks bounds the tasks of a streams group's topology (every
// subtopology's), so that a topology sent by a client cannot make the
// assignor's work or the group's state unbounded.
const MaxStreamsTasks = 100_000

// Status codes of a StreamsGroupHeartbeat response.
const (
	StatusStaleTopology                = 0
	StatusMissingSourceTopics          = 1
	StatusIncorrectlyPartitionedTopics = 2
	StatusMissingInternalTopics        = 3
	StatusShutdownApplication          = 4
	StatusAssignmentDelayed            = 5
)

// Status is one status of a streams group member's heartbeat.
type Status struct {
	Code   int8
	Detail string
}

// InternalTopic is a topic a streams group's topology needs and the
// cluster lacks: its changelog or repartition topic, to be created with
// the partitions resolved and the configs the member sent.
type InternalTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string
}

// streamsState is what a streams group has beyond a consumer group's.
type streamsState struct {
	topology      *kmsg.StreamsGroupHeartbeatRequestTopology // as the first member sent it
	endpointEpoch int32
	shutdown      bool      // a member asked the application to shut down
	delayUntil    time.Time // the first assignment waits until then (zero: it does not)
	resolved      *resolvedTopology
	// description is the topology's description (KIP-1331) a member sent
	// for topology epoch describedEpoch (nil: none yet).
	description    *kmsg.TopologyDescription
	describedEpoch int32
}

// MaxTopologyDescriptionBytes bounds a topology description kept with a
// streams group's state.
const MaxTopologyDescriptionBytes = 1 << 20

// wantsDescription reports whether members should send the topology's
// description: none is kept for the group's topology epoch.
func (s *streamsState) wantsDescription() bool {
	return s.topology != nil && (s.description == nil || s.describedEpoch != s.topology.Epoch)
}

// resolvedTopology is the topology against the topics of the moment.
type resolvedTopology struct {
	fingerprint string           // the required topics as they were (names, partitions)
	ready       bool             // every topic exists, rightly partitioned
	tasks       map[string]int32 // subtopology -> its number of tasks
	stateful    map[string]bool  // subtopologies with state (changelog topics)
	inputs      map[string][]string
	partitions  map[string]int32 // every source and repartition topic's partitions
	statuses    []Status
	create      []InternalTopic
	invalid     string // why the topology cannot be resolved at all
}

// subtopologyKey is the key of a subtopology's tasks in a member's
// partitions.
func subtopologyKey(id string) topicID {
	sum := sha256.Sum256([]byte("streams subtopology " + id))
	var t topicID
	copy(t[:], sum[:])
	return t
}

// subtopologyIDs maps the keys of the topology's subtopologies back to
// their ids.
func (s *streamsState) subtopologyIDs() map[topicID]string {
	out := map[topicID]string{}
	if s.topology != nil {
		for _, st := range s.topology.Subtopologies {
			out[subtopologyKey(st.SubtopologyID)] = st.SubtopologyID
		}
	}
	return out
}

// requiredTopics are the names of every topic the topology reads or
// keeps state in.
func (s *streamsState) requiredTopics() []string {
	set := map[string]bool{}
	if s.topology != nil {
		for _, st := range s.topology.Subtopologies {
			for _, n := range st.SourceTopics {
				set[n] = true
			}
			for _, t := range st.RepartitionSourceTopics {
				set[t.Topic] = true
			}
			for _, t := range st.StateChangelogTopics {
				set[t.Topic] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// resolve resolves the topology against the image of topics, as Kafka's
// InternalTopicManager does: source topics must exist; repartition topics
// get their fixed partitions or those of the subtopology that writes them;
// copartitioned topics must agree; changelogs and tasks follow their
// subtopology's inputs; internal topics missing are to be created.
func resolve(top *kmsg.StreamsGroupHeartbeatRequestTopology, im *topicImage) *resolvedTopology {
	r := &resolvedTopology{tasks: map[string]int32{}, stateful: map[string]bool{}, inputs: map[string][]string{}, partitions: map[string]int32{}}
	var fp strings.Builder
	parts := func(name string) (int32, bool) {
		t, ok := im.topic(name)
		fmt.Fprintf(&fp, "%s:%d;", name, t.Partitions)
		return t.Partitions, ok
	}
	var missing []string
	for _, st := range top.Subtopologies {
		for _, n := range st.SourceTopics {
			if p, ok := parts(n); ok {
				r.partitions[n] = p
			} else if !slices.Contains(missing, n) {
				missing = append(missing, n)
			}
		}
	}
	// Repartition topics: fixed, or resolved from the subtopology that
	// writes them, round after round.
	repartition := map[string]kmsg.TopicInfo{}
	for _, st := range top.Subtopologies {
		for _, t := range st.RepartitionSourceTopics {
			repartition[t.Topic] = t
			if t.NumPartitions > 0 {
				r.partitions[t.Topic] = t.NumPartitions
			}
		}
	}
	for progress := true; progress; {
		progress = false
		for _, st := range top.Subtopologies {
			for _, sink := range st.RepartitionSinkTopics {
				if _, ok := repartition[sink]; !ok || r.partitions[sink] > 0 {
					continue
				}
				n := int32(0)
				for _, src := range st.SourceTopics {
					n = max(n, r.partitions[src])
				}
				for _, t := range st.RepartitionSourceTopics {
					n = max(n, r.partitions[t.Topic])
				}
				if n > 0 {
					r.partitions[sink], progress = n, true
				}
			}
		}
	}
	if len(missing) == 0 {
		for name := range repartition {
			if r.partitions[name] == 0 {
				r.invalid = fmt.Sprintf("Failed to compute the number of partitions of repartition topic %s.", name)
				return r
			}
		}
	}
	// Copartitioned topics must agree; repartition topics follow the
	// others.
	for _, st := range top.Subtopologies {
		for _, cg := range st.CopartitionGroups {
			var external, internal []string
			for _, i := range cg.SourceTopics {
				if i >= 0 && int(i) < len(st.SourceTopics) {
					external = append(external, st.SourceTopics[i])
				}
			}
			for _, i := range cg.RepartitionSourceTopics {
				if i >= 0 && int(i) < len(st.RepartitionSourceTopics) {
					internal = append(internal, st.RepartitionSourceTopics[i].Topic)
				}
			}
			want := int32(0)
			for _, n := range external {
				if p := r.partitions[n]; p > 0 {
					if want > 0 && p != want {
						r.statuses = append(r.statuses, Status{StatusIncorrectlyPartitionedTopics,
							fmt.Sprintf("Following topics do not have the same number of partitions: [%s]", strings.Join(external, ", "))})
						break
					}
					want = p
				}
			}
			if want == 0 {
				for _, n := range internal {
					want = max(want, r.partitions[n])
				}
			}
			for _, n := range internal {
				if fixed := repartition[n].NumPartitions; fixed > 0 && fixed != want {
					r.statuses = append(r.statuses, Status{StatusIncorrectlyPartitionedTopics,
						fmt.Sprintf("Number of partitions %d of repartition topic %s does not match the copartitioned topics' %d.", fixed, n, want)})
					continue
				}
				r.partitions[n] = want
			}
		}
	}
	// Tasks, changelogs, and the internal topics to create.
	var missingInternal []string
	check := func(t kmsg.TopicInfo, want int32) {
		got, ok := parts(t.Topic)
		switch {
		case !ok:
			missingInternal = append(missingInternal, t.Topic)
			it := InternalTopic{Name: t.Topic, Partitions: want, ReplicationFactor: t.ReplicationFactor, Configs: map[string]string{}}
			for _, c := range t.Configs {
				it.Configs[c.Key] = c.Value
			}
			r.create = append(r.create, it)
		case got != want:
			r.statuses = append(r.statuses, Status{StatusIncorrectlyPartitionedTopics,
				fmt.Sprintf("Existing internal topic %s has invalid number of partitions: %d, expected: %d", t.Topic, got, want)})
		}
	}
	for _, st := range top.Subtopologies {
		n := int32(0)
		var inputs []string
		for _, src := range st.SourceTopics {
			n = max(n, r.partitions[src])
			inputs = append(inputs, src)
		}
		for _, t := range st.RepartitionSourceTopics {
			n = max(n, r.partitions[t.Topic])
			inputs = append(inputs, t.Topic)
		}
		r.tasks[st.SubtopologyID], r.inputs[st.SubtopologyID] = n, inputs
		r.stateful[st.SubtopologyID] = len(st.StateChangelogTopics) > 0
		if len(missing) > 0 {
			continue
		}
		for _, t := range st.RepartitionSourceTopics {
			check(t, r.partitions[t.Topic])
		}
		for _, t := range st.StateChangelogTopics {
			check(t, n)
		}
	}
	total := int64(0)
	for _, n := range r.tasks {
		total += int64(n)
	}
	if total > MaxStreamsTasks {
		r.invalid = fmt.Sprintf("The topology has %d tasks, more than the %d a streams group may have.", total, MaxStreamsTasks)
		return r
	}
	if len(missing) > 0 {
		r.statuses = append(r.statuses, Status{StatusMissingSourceTopics, "Source topics " + strings.Join(missing, ", ") + " are missing."})
	}
	if len(missingInternal) > 0 {
		r.statuses = append(r.statuses, Status{StatusMissingInternalTopics, "Internal topics are missing: [" + strings.Join(missingInternal, ", ") + "]"})
	}
	r.ready = len(r.statuses) == 0
	r.fingerprint = fp.String()
	return r
}

// sameResolution reports whether two resolutions assign the same.
func sameResolution(a, b *resolvedTopology) bool {
	return a != nil && b != nil && a.ready == b.ready && maps.Equal(a.tasks, b.tasks)
}

// toStreams makes an empty classic group a streams group; its offsets
// stay. A new group begins at group and assignment epoch 1, as Kafka's: a
// member is never answered epoch 0.
func (g *group) toStreams() {
	cg := newConsumerGroup(TypeStreams)
	cg.epoch, cg.assignmentEpoch = 1, 1
	g.kind, g.state = cg, Empty
}

// resolveStreams resolves the group's topology against the topics of the
// moment; it reports whether what is assigned changed (the group epoch
// moves then).
func (g *group) resolveStreams() bool {
	ss := g.consumer().streams
	if ss.topology == nil {
		return false
	}
	r := resolve(ss.topology, g.c.topics.current())
	changed := !sameResolution(ss.resolved, r)
	ss.resolved = r
	return changed
}

// streamsTopicsChanged runs when the topic image changed: a topology whose
// resolution changed moves the group epoch.
func (g *group) streamsTopicsChanged() {
	if len(g.consumer().members) == 0 {
		return
	}
	if g.resolveStreams() {
		g.consumer().epoch++
		g.updateConsumerState()
		g.saveThen(nil)
	}
}

// task is a subtopology's task.
type task struct {
	sub  string
	part int32
}

// assignStreams computes the target of every member, as Kafka's sticky
// task assignor: each active task stays with the member that has it while
// that member is under its share, else goes to a member that keeps it as a
// standby, else to the least loaded process and its least loaded member;
// then each task of a stateful subtopology gets standbys standbys, each on
// a process that has no copy of it, its previous holders first.
func (g *group) assignStreams(standbys int) {
	cg := g.consumer()
	r := cg.streams.resolved
	ids := slices.Sorted(maps.Keys(cg.members))
	for _, id := range ids {
		cg.members[id].target, cg.members[id].standbyTarget = partitions{}, partitions{}
	}
	cg.assignmentEpoch = cg.epoch
	if r == nil || !r.ready || len(ids) == 0 {
		return
	}
	var tasks []task
	for sub, n := range r.tasks {
		for p := range n {
			tasks = append(tasks, task{sub, p})
		}
	}
	slices.SortFunc(tasks, func(a, b task) int {
		if a.part != b.part {
			return int(a.part - b.part)
		}
		return strings.Compare(a.sub, b.sub)
	})
	members := make([]*cmember, 0, len(ids))
	procMembers := map[string]int{}
	for _, id := range ids {
		members = append(members, cg.members[id])
		procMembers[cg.members[id].processID]++
	}
	quota := int(math.Ceil(float64(len(tasks)) / float64(len(members))))
	load := map[string]int{}     // member -> active tasks
	procLoad := map[string]int{} // process -> tasks of any kind
	give := func(m *cmember, t task) {
		m.target.add(subtopologyKey(t.sub), t.part, cg.epoch)
		load[m.id]++
		procLoad[m.processID]++
	}
	leastLoaded := func(cands []*cmember, ok func(*cmember) bool) *cmember {
		var best *cmember
		bestLoad := math.MaxFloat64
		for _, m := range cands {
			if !ok(m) {
				continue
			}
			l := float64(procLoad[m.processID])/float64(procMembers[m.processID]) + float64(load[m.id])/1e6
			if l < bestLoad {
				best, bestLoad = m, l
			}
		}
		return best
	}
	var rest []task
	for _, t := range tasks {
		key := subtopologyKey(t.sub)
		var owner *cmember
		for _, m := range members {
			if (m.assigned.has(key, t.part) || m.revoking.has(key, t.part)) && load[m.id] < quota {
				owner = m
				break
			}
		}
		if owner == nil {
			owner = leastLoaded(members, func(m *cmember) bool { return m.standby.has(key, t.part) && load[m.id] < quota })
		}
		if owner == nil {
			rest = append(rest, t)
			continue
		}
		give(owner, t)
	}
	slices.SortFunc(rest, func(a, b task) int {
		if a.sub != b.sub {
			return strings.Compare(a.sub, b.sub)
		}
		return int(a.part - b.part)
	})
	for _, t := range rest {
		give(leastLoaded(members, func(m *cmember) bool { return true }), t)
	}
	if standbys <= 0 {
		return
	}
	for _, t := range tasks {
		if !r.stateful[t.sub] {
			continue
		}
		key := subtopologyKey(t.sub)
		holders := map[string]bool{}
		for _, m := range members {
			if m.target.has(key, t.part) {
				holders[m.processID] = true
			}
		}
		for range standbys {
			free := func(m *cmember) bool { return !holders[m.processID] }
			m := leastLoaded(members, func(m *cmember) bool {
				return free(m) && (m.standby.has(key, t.part) || m.assigned.has(key, t.part))
			})
			if m == nil {
				m = leastLoaded(members, free)
			}
			if m == nil {
				break // fewer processes than copies: Kafka skips it too
			}
			m.standbyTarget.add(key, t.part, cg.epoch)
			procLoad[m.processID]++
			holders[m.processID] = true
		}
	}
}

// Saved form of a streams group's own state.
type savedStreams struct {
	Topology       *kmsg.StreamsGroupHeartbeatRequestTopology `json:"topology,omitempty"`
	EndpointEpoch  int32                                      `json:"endpointEpoch"`
	Shutdown       bool                                       `json:"shutdown,omitempty"`
	Description    *kmsg.TopologyDescription                  `json:"description,omitempty"`
	DescribedEpoch int32                                      `json:"describedEpoch,omitempty"`
}

func (ss *streamsState) save() *savedStreams {
	return &savedStreams{Topology: ss.topology, EndpointEpoch: ss.endpointEpoch, Shutdown: ss.shutdown,
		Description: ss.description, DescribedEpoch: ss.describedEpoch}
}

// endpoint is a member's user endpoint (host:port, "" for none).
func endpoint(e *kmsg.StreamsGroupHeartbeatRequestUserEndpoint) string {
	if e == nil {
		return ""
	}
	return e.Host + ":" + strconv.Itoa(int(e.Port))
}

// sameTopology compares two topologies' subtopologies.
func sameTopology(a, b *kmsg.StreamsGroupHeartbeatRequestTopology) bool {
	return reflect.DeepEqual(a.Subtopologies, b.Subtopologies)
}
