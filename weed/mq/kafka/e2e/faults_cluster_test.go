package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/command"
)

// faultCluster is a SeaweedFS (master, volume server, filer, MQ broker)
// and three gateways, each process in a network namespace of its own
// (faultNet) on the ports SeaweedFS and Kafka use by default, so that a
// test can cut, pause, kill and restart any of them.
type faultCluster struct {
	t   *testing.T
	net *faultNet
	dir string

	mu     sync.Mutex
	procs  map[string]*proc
	paused map[string]bool
}

var (
	seaweedNodes = []string{"master", "volume", "filer", "broker"}
	gatewayNodes = []string{"gw1", "gw2", "gw3"}
	seaweedPorts = map[string]int{"master": 9333, "volume": 8080, "filer": 8888, "broker": 17777}
)

const (
	faultKafkaPort   = 9092
	faultMetricsPort = 9327
)

func startFaultCluster(t *testing.T) *faultCluster {
	t.Helper()
	c := &faultCluster{t: t, net: newFaultNet(t, append(append([]string{}, seaweedNodes...), gatewayNodes...)...),
		dir: filepath.Join(work, t.Name()), procs: map[string]*proc{}, paused: map[string]bool{}}
	t.Cleanup(c.stop)
	for _, node := range append(append([]string{}, seaweedNodes...), gatewayNodes...) {
		if err := os.MkdirAll(filepath.Join(c.dir, node), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, node := range seaweedNodes {
		c.start(node)
	}
	for _, node := range gatewayNodes {
		c.start(node)
	}
	for _, node := range gatewayNodes {
		if err := c.gateway(node).waitReady(120 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func (c *faultCluster) master() string {
	return c.net.addr("master") + ":" + strconv.Itoa(seaweedPorts["master"])
}

// args are a node's command line: the embedded SeaweedFS's roles, or a
// gateway with the test tuning, bound to the node's address.
func (c *faultCluster) args(node string) []string {
	addr := c.net.addr(node)
	if port, ok := seaweedPorts[node]; ok {
		args := command.RoleArgs(node, filepath.Join(c.dir, node), c.master(), strconv.Itoa(port))
		for i, a := range args {
			switch a {
			case "-ip=127.0.0.1":
				args[i] = "-ip=" + addr
			case "-ip.bind=127.0.0.1":
				args[i] = "-ip.bind=" + addr
			}
		}
		return args
	}
	return append([]string{"-v=1", "mq.kafka.gateway", "-ip=" + addr, "-port=" + strconv.Itoa(faultKafkaPort),
		"-master=" + c.master(), "-metricsPort=" + strconv.Itoa(faultMetricsPort),
		"-clock.skew.file=" + c.skewFile(node)}, gatewayTuning...)
}

func (c *faultCluster) skewFile(node string) string { return filepath.Join(c.dir, node, "clock-skew") }

// skew sets a gateway's wall clock d off the system's, within a second.
func (c *faultCluster) skew(node string, d time.Duration) {
	c.t.Helper()
	if err := os.WriteFile(c.skewFile(node), []byte(d.String()), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

func (c *faultCluster) logPath(node string) string {
	return filepath.Join(work, strings.ReplaceAll(c.t.Name(), "/", "-")+"-"+node+".log")
}

// keepLogs copies every node's log (each kept across its restarts) into
// dir.
func (c *faultCluster) keepLogs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, node := range append(append([]string{}, seaweedNodes...), gatewayNodes...) {
		data, err := os.ReadFile(c.logPath(node))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, node+".log"), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// start starts a node's process (again).
func (c *faultCluster) start(node string) {
	c.t.Helper()
	p, err := startProcIn(c.net.ns(node), node, c.logPath(node), c.args(node)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	c.procs[node] = p
	c.paused[node] = false
	c.mu.Unlock()
}

// gateway is a gateway node as the readiness helpers see it.
func (c *faultCluster) gateway(node string) *gatewayProc {
	c.mu.Lock()
	defer c.mu.Unlock()
	addr := c.net.addr(node)
	return &gatewayProc{proc: c.procs[node], addr: addr + ":" + strconv.Itoa(faultKafkaPort), port: faultKafkaPort,
		monitor: "http://" + addr + ":" + strconv.Itoa(faultMetricsPort)}
}

// seeds are the gateways' Kafka addresses.
func (c *faultCluster) seeds() []string {
	var out []string
	for _, node := range gatewayNodes {
		out = append(out, c.net.addr(node)+":"+strconv.Itoa(faultKafkaPort))
	}
	return out
}

func (c *faultCluster) proc(node string) *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[node]
}

// kill SIGKILLs a node's process; start brings it back.
func (c *faultCluster) kill(node string) { c.proc(node).kill() }

// pause SIGSTOPs a node's process; resume lets it go on.
func (c *faultCluster) pause(node string) {
	c.mu.Lock()
	c.paused[node] = true
	c.mu.Unlock()
	c.proc(node).signal(syscall.SIGSTOP)
}

func (c *faultCluster) resume(node string) {
	c.mu.Lock()
	c.paused[node] = false
	c.mu.Unlock()
	c.proc(node).signal(syscall.SIGCONT)
}

// stop ends every process, gateways first, each let go on first if
// paused; their logs are shown if the test failed.
func (c *faultCluster) stop() {
	order := append(append([]string{}, gatewayNodes...), "broker", "filer", "volume", "master")
	for _, node := range order {
		if p := c.proc(node); p != nil && !p.exited() {
			p.signal(syscall.SIGCONT)
			p.stop()
		}
	}
	if c.t.Failed() {
		for _, node := range order {
			dumpLog(c.logPath(node))
		}
	}
}
