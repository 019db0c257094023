package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seaweedfs-kafka/gateway/weed/command"
)

// splitCluster is a SeaweedFS whose master, volume server, filer and MQ
// brokers run as processes of their own, so that a test can kill any one
// of them. Tests that kill processes start one for themselves; it is
// stopped when the test ends.
type splitCluster struct {
	t      *testing.T
	dir    string
	master string
	ports  map[string]int // by role: master, volume, filer, broker, broker2, ...
	procs  map[string]*proc
}

// startSplitCluster starts a master, a volume server, a filer and brokers
// MQ brokers.
func startSplitCluster(t *testing.T, brokers int) *splitCluster {
	t.Helper()
	c := &splitCluster{t: t, dir: filepath.Join(work, t.Name()), ports: map[string]int{}, procs: map[string]*proc{}}
	roles := []string{"master", "volume", "filer"}
	for i := 1; i <= brokers; i++ {
		roles = append(roles, brokerRole(i))
	}
	for _, role := range roles {
		p, err := freePort(role == "master" || role == "volume" || role == "filer")
		if err != nil {
			t.Fatal(err)
		}
		c.ports[role] = p
		if err := os.MkdirAll(filepath.Join(c.dir, role), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c.master = "127.0.0.1:" + strconv.Itoa(c.ports["master"])
	t.Cleanup(c.stop)
	for _, role := range roles {
		c.start(role)
	}
	return c
}

func brokerRole(i int) string {
	if i == 1 {
		return "broker"
	}
	return fmt.Sprintf("broker%d", i)
}

// args are a role's command line: the embedded SeaweedFS's, each process
// with a folder of its own.
func (c *splitCluster) args(role string) []string {
	kind := role
	if strings.HasPrefix(role, "broker") {
		kind = "broker"
	}
	return command.RoleArgs(kind, filepath.Join(c.dir, role), c.master, strconv.Itoa(c.ports[role]))
}

// start starts a role's process (again), logging to <test>-<role>.log.
func (c *splitCluster) start(role string) {
	c.t.Helper()
	p, err := startProc(role, filepath.Join(work, filepath.Base(c.dir)+"-"+role+".log"), c.args(role)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.procs[role] = p
}

// kill SIGKILLs a role's process.
func (c *splitCluster) kill(role string) {
	c.t.Helper()
	c.t.Logf("SIGKILL %s", role)
	c.procs[role].kill()
}

// stop ends every process of the cluster, brokers first.
func (c *splitCluster) stop() {
	for _, role := range []string{"broker3", "broker2", "broker", "filer", "volume", "master"} {
		if p := c.procs[role]; p != nil && !p.exited() {
			p.stop()
		}
	}
	if c.t.Failed() {
		for role := range c.procs {
			dumpLog(filepath.Join(work, filepath.Base(c.dir)+"-"+role+".log"))
		}
	}
}

// dumpLog prints the end of a log file.
func dumpLog(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if len(data) > 8000 {
		data = data[len(data)-8000:]
	}
	fmt.Fprintf(os.Stderr, "==== last of %s ====\n%s\n", filepath.Base(path), data)
}
