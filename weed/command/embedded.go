package command

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"
)

// embedded is a single-node SeaweedFS started from this binary as a child
// process (`weed server` with the MQ broker), for the one-command setup.
type embedded struct {
	cmd    *exec.Cmd
	master string
	exited chan struct{}
}

// startEmbedded starts `weed server` with master, volume, filer and MQ broker
// on 127.0.0.1, its data and log in dir, and waits until the master answers.
func startEmbedded(dir, ports string) (*embedded, error) {
	p := strings.Split(ports, ",")
	if len(p) != 4 {
		return nil, fmt.Errorf("-embedded.ports wants master,volume,filer,broker; got %q", ports)
	}
	for _, s := range p {
		if _, err := strconv.Atoi(strings.TrimSpace(s)); err != nil {
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
	logFile, err := os.OpenFile(filepath.Join(abs, "seaweedfs.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	args := ServerArgs(abs, strings.TrimSpace(p[0]), strings.TrimSpace(p[1]), strings.TrimSpace(p[2]), strings.TrimSpace(p[3]))
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The cluster must not outlive the gateway that started it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	e := &embedded{cmd: cmd, master: "127.0.0.1:" + strings.TrimSpace(p[0]), exited: make(chan struct{})}
	go func() { cmd.Wait(); logFile.Close(); close(e.exited) }() //nolint:errcheck // exit is reported below
	glog.V(0).Infof("kafka gateway: started embedded SeaweedFS (pid %d), data in %s, log in %s", cmd.Process.Pid, abs, logFile.Name())

	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-e.exited:
			return nil, fmt.Errorf("weed server exited at start; see %s", logFile.Name())
		default:
		}
		if c, err := net.DialTimeout("tcp", e.master, time.Second); err == nil {
			c.Close()
			return e, nil
		}
		if time.Now().After(deadline) {
			e.stop()
			return nil, fmt.Errorf("master %s did not answer within 60s; see %s", e.master, logFile.Name())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ServerArgs are the `weed server` arguments of a single-node SeaweedFS with
// an MQ broker on 127.0.0.1. Tests start their cluster with them too.
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
		// One node has no peer to move traffic to before it stops: the
		// volume server's 10 s pause after its last heartbeat is for
		// clusters.
		"-volume.preStopSeconds=0",
	}
}

// stop ends the cluster gracefully (SIGTERM lets the broker flush), then
// kills it if it does not exit in time.
func (e *embedded) stop() {
	e.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may be gone
	select {
	case <-e.exited:
	case <-time.After(30 * time.Second):
		e.cmd.Process.Kill() //nolint:errcheck
		<-e.exited
	}
}
