package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A fault: what it does to the cluster, and how it is healed.
type fault struct {
	kind string // partition, pause, kill, clock
	name string
	do   func(c *faultCluster) (heal func())
}

// faultsOf lists every fault of each kind, each aimed at gw (a gateway
// chosen per fault) where it aims at a gateway.
func faultsOf(gw string) map[string][]fault {
	others := func() []string {
		var o []string
		for _, g := range gatewayNodes {
			if g != gw {
				o = append(o, g)
			}
		}
		return o
	}
	cut := func(name string, from ...string) fault {
		return fault{"partition", gw + " cut from " + name, func(c *faultCluster) func() {
			c.net.isolate(gw, from...)
			return c.net.heal
		}}
	}
	out := map[string][]fault{"partition": {
		cut("the filer", "filer"),
		cut("the broker", "broker"),
		cut("the volume server", "volume"),
		cut("the other gateways", others()...),
		cut("its clients", clients),
		// The minority side of a split: the others (and SeaweedFS) are
		// the majority; its clients still reach it.
		cut("everything but its clients", append(append([]string{}, seaweedNodes...), others()...)...),
	}}
	// A gateway's wall clock jumps 30 s ahead or behind, and back at heal.
	for _, d := range []time.Duration{30 * time.Second, -30 * time.Second} {
		out["clock"] = append(out["clock"], fault{"clock", fmt.Sprintf("%s's clock %v off", gw, d), func(c *faultCluster) func() {
			c.skew(gw, d)
			return func() { c.skew(gw, 0) }
		}})
	}
	for _, node := range append([]string{gw}, seaweedNodes...) {
		out["pause"] = append(out["pause"], fault{"pause", "pause " + node, func(c *faultCluster) func() {
			c.pause(node)
			return func() { c.resume(node) }
		}})
		out["kill"] = append(out["kill"], fault{"kill", "kill " + node, func(c *faultCluster) func() {
			c.kill(node)
			return func() { c.start(node) }
		}})
	}
	return out
}

var faultKinds = []string{"partition", "pause", "kill", "clock"}

// TestFaults runs the queue workload on a cluster of three gateways while
// faults come and go. In the test command: 90 s with one fault of each
// kind, 12 s each, in random order: a partition (a gateway cut from the
// filer, the broker, the volume server, the other gateways, its clients,
// or from all but its clients), a pause (SIGSTOP) and a kill (SIGKILL,
// then a restart) of a gateway or a SeaweedFS process, and a gateway's
// clock 30 s ahead or behind (a jump there and back). With
// FAULTS_DURATION (5m, say), faults of every kind rotate, 10–20 s each,
// for that long; FAULTS_SEED replays a run's choices. After healing,
// everything is read once more and the history is checked for every
// anomaly class (see package history); a history with an anomaly is kept
// as a file.
func TestFaults(t *testing.T) {
	t.Parallel()
	duration := 90 * time.Second
	rotate := false
	if d := os.Getenv("FAULTS_DURATION"); d != "" {
		var err error
		if duration, err = time.ParseDuration(d); err != nil {
			t.Fatal(err)
		}
		rotate = true
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FAULTS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	t.Logf("FAULTS_SEED=%d", seed)

	c := startFaultCluster(t)
	const partitions = 6
	topic := createTopicAt(t, c.seeds(), partitions)
	w := startQueueWorkload(t, c.seeds(), topic, partitions)

	start := time.Now()
	pick := func(kind string) fault {
		fs := faultsOf(gatewayNodes[rng.IntN(len(gatewayNodes))])[kind]
		return fs[rng.IntN(len(fs))]
	}
	// The kinds, in rounds of each kind once in a random order: one round
	// in the test command, as many as fit when rotating.
	var plan []string
	shuffled := func() []string {
		kinds := slices.Clone(faultKinds)
		rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
		return kinds
	}
	time.Sleep(10 * time.Second) // the workload under way before any fault
	var done []string
	for round := 0; time.Since(start) < duration-10*time.Second; {
		if len(plan) == 0 {
			if round > 0 && !rotate {
				break
			}
			plan, round = shuffled(), round+1
		}
		f := pick(plan[0])
		plan = plan[1:]
		length := 12 * time.Second
		if rotate {
			length = time.Duration(10+rng.IntN(11)) * time.Second
		}
		t.Logf("%v: %s for %v", time.Since(start).Round(time.Second), f.name, length)
		w.h.Fault("start " + f.name)
		heal := f.do(c)
		time.Sleep(length)
		heal()
		w.h.Fault("healed " + f.name)
		done = append(done, f.name)
		time.Sleep(time.Duration(5+rng.IntN(4)) * time.Second)
	}
	if rest := duration - time.Since(start); rest > 0 {
		time.Sleep(rest)
	}

	// Healed: every gateway serves again before the last reads.
	for _, node := range gatewayNodes {
		if err := c.gateway(node).waitReady(2 * time.Minute); err != nil {
			t.Fatalf("%s after the faults: %v", node, err)
		}
	}
	w.stopProducing()
	w.stopTransforming(90 * time.Second)
	w.finalRead()
	w.drain(90 * time.Second)
	r := w.h.Check()
	t.Logf("faults: %v\n%s", done, r)
	if !r.OK() {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("kafka-faults-%d.json", seed))
		if err := w.h.WriteFile(path); err != nil {
			t.Error(err)
		}
		// The processes' logs go beside it: the work directory is
		// removed at the end.
		logs := strings.TrimSuffix(path, ".json") + "-logs"
		if err := c.keepLogs(logs); err != nil {
			t.Error(err)
		}
		t.Errorf("anomalies under %v (FAULTS_SEED=%d, history in %s, logs in %s):\n%s", done, seed, path, logs, r)
	}
	if r.Stats["acknowledged"] == 0 || r.Stats["txn commit"] == 0 {
		t.Errorf("the workload did too little to tell: %v", r.Stats)
	}
}
