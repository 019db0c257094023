package e2e

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// faultNet puts each process of a cluster in a network namespace of its
// own, joined by a bridge in this namespace (where the test's clients
// are), so that a test can cut any two of them apart. A cut is a rule in
// each side's namespace that drops, without a word, every packet from the
// other (Jepsen's iptables DROP: connections hang, nothing is refused);
// clients have no namespace of their own, so a cut from them is made on
// the node's side alone, in both directions.
type faultNet struct {
	t      *testing.T
	id     int    // the bridge kfb<id>, namespaces kf<id>-<node>
	prefix string // 10.201.<id>.
	hosts  map[string]int
	mu     sync.Mutex
	cuts   map[string][]string // namespace → rules to delete at heal
}

// clients names the test's side of a cut.
const clients = "clients"

// newFaultNet makes the bridge and a namespace for each node, numbered
// from .10 in order; everything is removed when the test ends.
func newFaultNet(t *testing.T, nodes ...string) *faultNet {
	t.Helper()
	n := &faultNet{t: t, hosts: map[string]int{}, cuts: map[string][]string{}}
	// A subnet and bridge no other run uses now.
	start := rand.IntN(240)
	for i := 0; ; i++ {
		if i == 240 {
			t.Fatal("no free kfb<n> bridge")
		}
		n.id = 10 + (start+i)%240
		if ipCmd("link", "add", n.bridge(), "type", "bridge") == nil {
			break
		}
	}
	n.prefix = fmt.Sprintf("10.201.%d.", n.id)
	t.Cleanup(n.remove)
	n.must("addr", "add", n.prefix+"1/24", "dev", n.bridge())
	n.must("link", "set", n.bridge(), "up")
	for i, node := range nodes {
		host := 10 + i
		n.hosts[node] = host
		ns, out, in := n.ns(node), fmt.Sprintf("kfv%d-%d", n.id, host), fmt.Sprintf("kfw%d-%d", n.id, host)
		n.must("netns", "add", ns)
		n.must("link", "add", out, "type", "veth", "peer", "name", in)
		n.must("link", "set", out, "master", n.bridge())
		n.must("link", "set", out, "up")
		n.must("link", "set", in, "netns", ns)
		for _, args := range [][]string{
			{"link", "set", in, "name", "eth0"},
			{"addr", "add", n.addr(node) + "/24", "dev", "eth0"},
			{"link", "set", "eth0", "up"},
			{"link", "set", "lo", "up"},
			// The cuts' rules must come before the local table, which
			// would otherwise take every packet for the node first.
			{"rule", "add", "pref", "100", "table", "local"},
			{"rule", "del", "pref", "0"},
		} {
			n.must(append([]string{"netns", "exec", ns, "ip"}, args...)...)
		}
		// Forwarding on: a packet a rule drops is dropped silently (with
		// forwarding off the kernel answers it with host unreachable).
		if out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1").CombinedOutput(); err != nil {
			t.Fatalf("sysctl in %s: %v: %s", ns, err, out)
		}
	}
	return n
}

func ipCmd(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (n *faultNet) must(args ...string) {
	n.t.Helper()
	if err := ipCmd(args...); err != nil {
		n.t.Fatal(err)
	}
}

func (n *faultNet) bridge() string { return fmt.Sprintf("kfb%d", n.id) }

// ns is a node's namespace.
func (n *faultNet) ns(node string) string { return fmt.Sprintf("kf%d-%s", n.id, node) }

// addr is a node's address (clients: the bridge's).
func (n *faultNet) addr(node string) string {
	if node == clients {
		return n.prefix + "1"
	}
	h, ok := n.hosts[node]
	if !ok {
		n.t.Fatalf("no node %q", node)
	}
	return fmt.Sprintf("%s%d", n.prefix, h)
}

// cut drops every packet between a and b until heal.
func (n *faultNet) cut(a, b string) {
	n.t.Helper()
	if a == clients {
		a, b = b, a
	}
	n.drop(a, "from", n.addr(b))
	if b == clients {
		n.drop(a, "to", n.addr(b))
	} else {
		n.drop(b, "from", n.addr(a))
	}
}

// isolate cuts node from each of others.
func (n *faultNet) isolate(node string, others ...string) {
	n.t.Helper()
	for _, o := range others {
		if o != node {
			n.cut(node, o)
		}
	}
}

func (n *faultNet) drop(node, dir, addr string) {
	n.t.Helper()
	rule := []string{"rule", "add", "pref", "10", dir, addr, "blackhole"}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, r := range n.cuts[n.ns(node)] {
		if r == dir+" "+addr {
			return // cut already
		}
	}
	n.must(append([]string{"netns", "exec", n.ns(node), "ip"}, rule...)...)
	n.cuts[n.ns(node)] = append(n.cuts[n.ns(node)], dir+" "+addr)
}

// heal removes every cut.
func (n *faultNet) heal() {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	for ns, rules := range n.cuts {
		for _, r := range rules {
			f := strings.Fields(r)
			n.must("netns", "exec", ns, "ip", "rule", "del", "pref", "10", f[0], f[1], "blackhole")
		}
	}
	n.cuts = map[string][]string{}
}

// remove deletes the namespaces (their veths go with them) and the
// bridge; the processes in them must have stopped.
func (n *faultNet) remove() {
	for node := range n.hosts {
		if err := ipCmd("netns", "del", n.ns(node)); err != nil {
			n.t.Log(err)
		}
	}
	if err := ipCmd("link", "del", n.bridge()); err != nil {
		n.t.Log(err)
	}
}
