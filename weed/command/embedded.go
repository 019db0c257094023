package command

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"
)

// embedded is a single-node SeaweedFS started from this binary as child
// processes: a master, a volume server, a filer and an MQ broker, for the
// one-command setup. They run as processes of their own (not one `weed
// server`) so that they stop in the order they depend on one another: the
// broker flushes into the filer, the filer its metadata log into the volume
// server, while what they write to is still up. (`weed server` stops its
// volume server first, and its filer then retried that flush for 15 s.)
type embedded struct {
	master   string
	procs    []*child // in start order
	stopping atomic.Bool
}

// child is one process of the embedded SeaweedFS.
type child struct {
	role   string
	cmd    *exec.Cmd
	exited chan struct{}
}

// EmbeddedRoles are the embedded SeaweedFS's processes, in start order.
var EmbeddedRoles = []string{"master", "volume", "filer", "broker"}

// startEmbedded starts master, volume server, filer and MQ broker on
// 127.0.0.1, their data and log (seaweedfs.log) in dir, and waits until the
// master answers. The layout of dir is `weed server -dir`'s.
func startEmbedded(dir, ports string, s3Port, icebergPort int) (*embedded, error) {
	p := strings.Split(ports, ",")
	if len(p) != len(EmbeddedRoles) {
		return nil, fmt.Errorf("-embedded.ports wants master,volume,filer,broker; got %q", ports)
	}
	for i, s := range p {
		p[i] = strings.TrimSpace(s)
		if _, err := strconv.Atoi(p[i]); err != nil {
			return nil, fmt.Errorf("-embedded.ports: %q is not a port", s)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logName := filepath.Join(abs, "seaweedfs.log")
	e := &embedded{master: "127.0.0.1:" + p[0]}
	roles := EmbeddedRoles
	if s3Port > 0 {
		roles = append(roles[:len(roles):len(roles)], "s3")
	}
	for i, role := range roles {
		logFile, err := os.OpenFile(logName, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			e.stop()
			return nil, err
		}
		var args []string
		if role == "s3" {
			args = S3Args("127.0.0.1:"+p[2], s3Port, icebergPort)
		} else {
			args = RoleArgs(role, abs, e.master, p[i])
		}
		cmd := exec.Command(self, args...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		// The cluster must not outlive the gateway that started it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
		if err := cmd.Start(); err != nil {
			logFile.Close()
			e.stop()
			return nil, err
		}
		c := &child{role: role, cmd: cmd, exited: make(chan struct{})}
		go func() { cmd.Wait(); logFile.Close(); close(c.exited) }() //nolint:errcheck // exit is reported below
		e.procs = append(e.procs, c)
	}
	glog.V(0).Infof("kafka gateway: started embedded SeaweedFS (%s), data in %s, log in %s", strings.Join(roles, ", "), abs, logName)
	if s3Port > 0 {
		glog.V(0).Infof("kafka gateway: embedded S3 API on http://127.0.0.1:%d, Iceberg REST catalog on http://127.0.0.1:%d", s3Port, icebergPort)
	}

	// Every process must be up: one that cannot take its port (another
	// program holds it) exits, and a gateway over a cluster without a
	// volume server takes topics but no records.
	addrs := make([]string, len(roles))
	for i, role := range roles {
		if role == "s3" {
			addrs[i] = "127.0.0.1:" + strconv.Itoa(s3Port)
		} else {
			addrs[i] = "127.0.0.1:" + p[i]
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for up := 0; up < len(e.procs); {
		for _, c := range e.procs {
			select {
			case <-c.exited:
				e.stop()
				return nil, fmt.Errorf("the embedded SeaweedFS's %s exited at start (is its port %s taken? -embedded.ports sets them); see %s", c.role, addrs[slices.Index(e.procs, c)], logName)
			default:
			}
		}
		if c, err := net.DialTimeout("tcp", addrs[up], time.Second); err == nil {
			c.Close()
			up++
			continue
		}
		if time.Now().After(deadline) {
			e.stop()
			return nil, fmt.Errorf("the embedded SeaweedFS's %s did not answer on %s within 60s; see %s", roles[up], addrs[up], logName)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, c := range e.procs {
		go e.watch(c, logName)
	}
	return e, nil
}

// watch logs a process of the embedded SeaweedFS that exits while the
// gateway runs: its clients get retriable errors from then on.
func (e *embedded) watch(c *child, logName string) {
	<-c.exited
	if !e.stopping.Load() {
		glog.Errorf("kafka gateway: the embedded SeaweedFS's %s exited (%v); see %s", c.role, c.cmd.ProcessState, logName)
	}
}

// RoleArgs are the command line of one process of a SeaweedFS on 127.0.0.1
// (role master, volume, filer or broker; the port its own), with its data
// in dir laid out as `weed server -dir` lays it out. Tests that run the
// processes apart start them with these too.
func RoleArgs(role, dir, master, port string) []string {
	common := []string{"-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-port=" + port}
	switch role {
	case "master":
		return append([]string{"master", "-mdir=" + dir, "-volumeSizeLimitMB=256", "-telemetry=false"}, common...)
	case "volume":
		// One node has no peer to move traffic to before it stops: the
		// volume server's 10 s pause after its last heartbeat is for
		// clusters.
		return append([]string{"volume", "-dir=" + dir, "-max=0", "-master=" + master, "-preStopSeconds=0"}, common...)
	case "filer":
		return append([]string{"filer", "-defaultStoreDir=" + dir, "-master=" + master}, common...)
	default:
		return append([]string{"mq.broker", "-master=" + master}, common...)
	}
}

// S3Args are the command line of SeaweedFS's S3 gateway on 127.0.0.1 over
// the filer at filer: the S3 API on port, its Iceberg REST catalog on
// icebergPort (0: none), no Lance namespace server.
func S3Args(filer string, port, icebergPort int) []string {
	return []string{"s3", "-filer=" + filer, "-ip.bind=127.0.0.1", "-port=" + strconv.Itoa(port),
		"-port.iceberg=" + strconv.Itoa(icebergPort), "-port.lance=0"}
}

// ServerArgs are the `weed server` arguments of a single-node SeaweedFS with
// an MQ broker on 127.0.0.1: the tests' shared cluster, one process.
func ServerArgs(dir, masterPort, volumePort, filerPort, brokerPort string) []string {
	return []string{"server",
		"-dir=" + dir,
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port=" + masterPort,
		"-volume.port=" + volumePort,
		"-filer", "-filer.port=" + filerPort,
		"-mq.broker", "-mq.broker.port=" + brokerPort,
		"-master.telemetry=false",
		"-volume.max=0", "-master.volumeSizeLimitMB=256",
		"-volume.preStopSeconds=0",
	}
}

// stop ends the processes in the reverse of their start order, each
// gracefully (SIGTERM: the broker and the filer flush), killing one that
// does not exit in time.
func (e *embedded) stop() {
	e.stopping.Store(true)
	for i := len(e.procs) - 1; i >= 0; i-- {
		c := e.procs[i]
		c.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may be gone
		select {
		case <-c.exited:
		case <-time.After(20 * time.Second):
			glog.Warningf("kafka gateway: the embedded SeaweedFS's %s did not stop within 20s; killing it", c.role)
			c.cmd.Process.Kill() //nolint:errcheck
			<-c.exited
		}
	}
}
