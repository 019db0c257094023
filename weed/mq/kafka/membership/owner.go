package membership

import (
	"hash/fnv"
	"maps"
	"net"
	"strconv"
	"strings"
)

// Member is one gateway as Kafka clients see it: a broker.
type Member struct {
	NodeID int32  `json:"nodeId"`
	Host   string `json:"host"`
	Port   int32  `json:"port"`
	// Listeners are the member's advertised listeners in Kafka's form,
	// "NAME://host:port,..." (empty: one listener, Host and Port).
	Listeners string `json:"listeners,omitempty"`
	// Registry is the URL of the member's schema registry ("": none).
	Registry string `json:"registry,omitempty"`
	// Rack is the member's rack or zone (-rack; "": none), as Kafka's
	// broker.rack: clients see it in Metadata and DescribeCluster.
	Rack string `json:"rack,omitempty"`
}

// Addr is the member's advertised host:port for the other gateways.
func (m Member) Addr() string { return m.Host + ":" + strconv.Itoa(int(m.Port)) }

// Endpoint is the member's advertised host and port on the listener named
// listener; Host and Port when it has no such listener.
func (m Member) Endpoint(listener string) (string, int32) {
	if listener == "" {
		return m.Host, m.Port
	}
	for _, l := range strings.Split(m.Listeners, ",") {
		name, addr, ok := strings.Cut(l, "://")
		if !ok || name != listener {
			continue
		}
		host, port, err := net.SplitHostPort(addr)
		if p, perr := strconv.Atoi(port); err == nil && perr == nil {
			return host, int32(p)
		}
	}
	return m.Host, m.Port
}

// View is the cluster's agreed list of live gateways. Its epoch grows with
// every change. Earlier views are kept with it, so that every gateway knows
// since which epoch a key has had its owner: that epoch is a partition's
// leader epoch, which moves forward only when its leader changes.
type View struct {
	Epoch   int64    `json:"epoch"`
	Members []Member `json:"members"` // by node id
	// Earlier are the views before this one, latest first (at most
	// keptEarlier).
	Earlier []EarlierView `json:"earlier,omitempty"`
	// Since is, for each member, the epoch from which it has been a
	// member without a break; Left, for each gateway that was a member
	// and is not, the first epoch without it (kept while a member's
	// Since is earlier). With them a key's owner epoch is exact however
	// many views ago its owner took it, not bounded by Earlier.
	Since map[int32]int64 `json:"since,omitempty"`
	Left  map[int32]int64 `json:"left,omitempty"`
}

// EarlierView is a view that was replaced.
type EarlierView struct {
	Epoch   int64    `json:"epoch"`
	Members []Member `json:"members"`
}

// keptEarlier is how many earlier views a view keeps.
const keptEarlier = 16

// next returns the view that follows v with members.
func (v *View) next(members []Member) View {
	n := View{Epoch: v.Epoch + 1, Members: members, Since: map[int32]int64{}, Left: map[int32]int64{}}
	if len(v.Members) > 0 {
		n.Earlier = append(n.Earlier, EarlierView{Epoch: v.Epoch, Members: v.Members})
	}
	for _, e := range v.Earlier {
		if len(n.Earlier) == keptEarlier {
			break
		}
		n.Earlier = append(n.Earlier, e)
	}
	oldest := n.Epoch
	for _, m := range members {
		since := n.Epoch
		if v.has(m.NodeID) {
			since = v.memberSince(m.NodeID)
		}
		n.Since[m.NodeID] = since
		oldest = min(oldest, since)
	}
	left := maps.Clone(v.Left)
	for _, m := range v.Members {
		if !n.has(m.NodeID) {
			if left == nil {
				left = map[int32]int64{}
			}
			left[m.NodeID] = n.Epoch
		}
	}
	// A departure matters to the keys of members that were there when
	// it happened.
	for id, at := range left {
		if !n.has(id) && at > oldest {
			n.Left[id] = at
		}
	}
	return n
}

// memberSince is the epoch from which node has been a member without a
// break (views written before Since was kept: as far as Earlier tells).
func (v *View) memberSince(node int32) int64 {
	if s, ok := v.Since[node]; ok {
		return s
	}
	epoch := v.Epoch
	for _, e := range v.Earlier {
		if e.Epoch != epoch-1 || !(&View{Members: e.Members}).has(node) {
			break
		}
		epoch = e.Epoch
	}
	return epoch
}

// beats reports whether a outranks b for key, as owner picks.
func beats(a, b int32, key string) bool {
	sa, sb := score(a, key), score(b, key)
	return sa > sb || sa == sb && a < b
}

// ownerEpoch returns the epoch since which key has had its current owner:
// the earliest of the consecutive views, this one and earlier, that give
// it the same owner.
func (v *View) ownerEpoch(key string) int64 {
	o, ok := v.owner(key)
	if !ok {
		return v.Epoch
	}
	if since, ok := v.Since[o.NodeID]; ok {
		// Its owner since it became a member, unless a gateway that
		// outranks it for key was a member since then: its owner until
		// it left.
		epoch := since
		for id, at := range v.Left {
			if at > epoch && beats(id, o.NodeID, key) {
				epoch = at
			}
		}
		return epoch
	}
	epoch := v.Epoch
	for _, e := range v.Earlier {
		if e.Epoch != epoch-1 {
			break
		}
		ev := View{Members: e.Members}
		if eo, ok := ev.owner(key); !ok || eo.NodeID != o.NodeID {
			break
		}
		epoch = e.Epoch
	}
	return epoch
}

// owner returns the member that owns key under the view, by rendezvous
// hashing: the member with the highest score for the key. A change of
// members moves only the keys of the members that came or went.
func (v *View) owner(key string) (Member, bool) {
	var best Member
	var bestScore uint64
	found := false
	for _, m := range v.Members {
		s := score(m.NodeID, key)
		if !found || s > bestScore || s == bestScore && m.NodeID < best.NodeID {
			best, bestScore, found = m, s, true
		}
	}
	return best, found
}

func score(node int32, key string) uint64 {
	h := fnv.New64a()
	var b [4]byte
	b[0], b[1], b[2], b[3] = byte(node>>24), byte(node>>16), byte(node>>8), byte(node)
	h.Write(b[:])
	h.Write([]byte(key))
	// fnv's low bits mix poorly for short keys; splitmix64's finalizer
	// spreads them.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func (v *View) has(node int32) bool {
	for _, m := range v.Members {
		if m.NodeID == node {
			return true
		}
	}
	return false
}

// hasMember reports whether the view holds m as it is, listeners included.
func (v *View) hasMember(m Member) bool {
	for _, o := range v.Members {
		if o.NodeID == m.NodeID {
			return o == m
		}
	}
	return false
}

func sameMembers(a, b []Member) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Keys of what gateways own.

// PartitionKey names a partition for ownership.
func PartitionKey(topic string, partition int32) string {
	return "p\x00" + topic + "\x00" + strconv.Itoa(int(partition))
}

// GroupKey names a consumer group for ownership.
func GroupKey(group string) string { return "g\x00" + group }

// TxnKey names a transactional id for ownership.
func TxnKey(id string) string { return "t\x00" + id }
