package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/command"
)

// The one SeaweedFS cluster and gateway of this test package.
var (
	weedBin string
	work    string
	cluster *seaweedCluster
	// lake is the cluster's S3 gateway with its Iceberg REST catalog,
	// where the gateways keep topics as tables.
	lake *lakeProc
	gw   *gatewayProc
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(memberProcessEnv); spec != "" {
		os.Exit(runMemberProcess(spec)) // a group member a test can kill
	}
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		if work != "" {
			dumpLogs()
		}
		code = 1
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var err error
	if work, err = os.MkdirTemp("", "kafka-e2e-"); err != nil {
		return 1, err
	}
	if os.Getenv("E2E_KEEP") == "" {
		defer os.RemoveAll(work)
	} else {
		fmt.Fprintln(os.Stderr, "e2e: keeping", work)
	}
	if weedBin, err = buildWeed(); err != nil {
		return 1, err
	}
	if creds, err = makeCreds(filepath.Join(work, "security")); err != nil {
		return 1, err
	}
	if cluster, err = startCluster(filepath.Join(work, "seaweedfs")); err != nil {
		return 1, err
	}
	defer cluster.stop()
	if lake, err = startLake(cluster); err != nil {
		return 1, err
	}
	defer lake.stop()
	if gw, err = startGateway(cluster.master, 0); err != nil {
		return 1, err
	}
	defer func() { gw.stop() }()
	code := m.Run()
	if code != 0 {
		dumpLogs()
	}
	return code, nil
}

// buildWeed returns the weed binary named by WEED_BINARY, or builds one.
func buildWeed() (string, error) {
	if b := os.Getenv("WEED_BINARY"); b != "" {
		return b, nil
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(work, "weed")
	cmd := exec.Command("go", "build", "-o", bin, "./weed")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build weed: %w", err)
	}
	return bin, nil
}

// handedOut are the ports freePort returned: none is returned twice, as a
// port handed out may not be bound yet (a gateway's metrics port and one
// of its listeners once got the same one, and the restarted gateway did
// not serve).
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePort returns a free 127.0.0.1 port; with grpc, port+10000 is free too
// (SeaweedFS servers listen on both).
func freePort(grpc bool) (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for i := 0; i < 200; i++ {
		// Below Linux's ephemeral ports (32768 on): a port chosen there can
		// be taken, while its process restarts, by some connection's own
		// end (a volume server once could not listen again on its gRPC
		// port, port+10000).
		p := 10000 + rand.IntN(12700)
		if handedOut.ports[p] || (grpc && handedOut.ports[p+10000]) {
			continue
		}
		l1, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		if grpc {
			l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
			if err != nil {
				l1.Close()
				continue
			}
			l2.Close()
			handedOut.ports[p+10000] = true
		}
		l1.Close()
		handedOut.ports[p] = true
		return p, nil
	}
	return 0, errors.New("no free port")
}

type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func startProc(name, logPath string, args ...string) (*proc, error) {
	return startProcIn("", name, logPath, args...)
}

// startProcIn starts weed in the network namespace ns ("": this one's);
// `ip netns exec` execs weed, so the process is weed's.
func startProcIn(ns, name, logPath string, args ...string) (*proc, error) {
	return startBinIn(weedBin, ns, name, logPath, args...)
}

// startBinIn is startProcIn of the weed binary bin.
func startBinIn(bin, ns, name, logPath string, args ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if ns != "" {
		cmd = exec.Command("ip", append([]string{"netns", "exec", ns, bin}, args...)...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { cmd.Wait(); f.Close(); close(p.done) }() //nolint:errcheck
	return p, nil
}

// signal sends sig to the process (SIGSTOP and SIGCONT pause it).
func (p *proc) signal(sig syscall.Signal) {
	p.cmd.Process.Signal(sig) //nolint:errcheck // it may be gone
}

// stop sends SIGTERM and waits, killing the process after the timeout.
func (p *proc) stop() {
	if p == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		p.cmd.Process.Kill() //nolint:errcheck
		<-p.done
	}
}

func (p *proc) kill() {
	p.cmd.Process.Kill() //nolint:errcheck
	<-p.done
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

type seaweedCluster struct {
	*proc
	dir                                           string
	master                                        string
	masterPort, volumePort, filerPort, brokerPort int
}

func startCluster(dir string) (*seaweedCluster, error) {
	c := &seaweedCluster{dir: dir}
	var err error
	for _, p := range []*int{&c.masterPort, &c.volumePort, &c.filerPort} {
		if *p, err = freePort(true); err != nil {
			return nil, err
		}
	}
	if c.brokerPort, err = freePort(false); err != nil {
		return nil, err
	}
	c.master = "127.0.0.1:" + strconv.Itoa(c.masterPort)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return c, c.start()
}

func (c *seaweedCluster) start() error {
	args := command.ServerArgs(c.dir, strconv.Itoa(c.masterPort), strconv.Itoa(c.volumePort), strconv.Itoa(c.filerPort), strconv.Itoa(c.brokerPort))
	p, err := startProc("seaweedfs", filepath.Join(work, "seaweedfs.log"), args...)
	if err != nil {
		return err
	}
	c.proc = p
	return nil
}

// restart stops the cluster gracefully and starts it again on the same
// data and ports.
func (c *seaweedCluster) restart() error {
	c.stop()
	return c.start()
}

// lakeProc is SeaweedFS's S3 gateway over the cluster's filer, with its
// Iceberg REST catalog.
type lakeProc struct {
	*proc
	s3, catalog string // base URLs
}

func startLake(c *seaweedCluster) (*lakeProc, error) {
	return startLakeAt("s3", "127.0.0.1:"+strconv.Itoa(c.filerPort), nil)
}

// startLakeAt starts an S3 gateway logging to <name>.log over the filer
// at filer, with weed's global flags global (-config_dir) if given.
func startLakeAt(name, filer string, global []string) (*lakeProc, error) {
	s3Port, err := freePort(true) // its gRPC port is port+10000
	if err != nil {
		return nil, err
	}
	catalogPort, err := freePort(false)
	if err != nil {
		return nil, err
	}
	l := &lakeProc{s3: "http://127.0.0.1:" + strconv.Itoa(s3Port), catalog: "http://127.0.0.1:" + strconv.Itoa(catalogPort)}
	if l.proc, err = startProc(name, filepath.Join(work, name+".log"), append(slices.Clone(global), command.S3Args(filer, s3Port, catalogPort)...)...); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(l.catalog + "/v1/config")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return l, nil
			}
		}
		if time.Now().After(deadline) {
			l.stop()
			return nil, fmt.Errorf("the Iceberg catalog at %s did not answer within 60 s: %v", l.catalog, err)
		}
	}
}

type gatewayProc struct {
	*proc
	addr    string // the PLAINTEXT listener
	port    int
	monitor string // base URL of /metrics, /health, /ready
	// secure are the addresses of its SASL_SSL, SASL_PLAINTEXT and SSL
	// listeners (see helpers_security_test.go).
	secure map[string]string
	// registry is the base URL of its schema registry.
	registry string
}

// startGateway starts the package's gateway on the cluster (port 0: a free
// one) and waits until it serves Kafka with the cluster ready behind it.
func startGateway(master string, port int) (*gatewayProc, error) {
	return startNamedGateway("gateway", master, port)
}

// gatewayTuning are the flags every test gateway runs with: timeouts of
// seconds where Kafka's are of minutes, so that tests wait little.
var gatewayTuning = []string{"-default-partitions=1",
	"-group.initial.rebalance.delay.ms=300",
	// Consumer groups of the KIP-848 protocol: sessions and heartbeats
	// as the classic members of the tests ask for (groupSession).
	"-group.consumer.session.timeout.ms=6000", "-group.consumer.heartbeat.interval.ms=1000",
	// Share groups: the same, and locks of a second or more.
	"-group.share.session.timeout.ms=6000", "-group.share.min.session.timeout.ms=6000",
	"-group.share.heartbeat.interval.ms=1000", "-group.share.min.heartbeat.interval.ms=1000",
	"-group.share.min.record.lock.duration.ms=1000",
	// Streams groups: a killed instance's tasks move after 10 s (not
	// 45), heartbeats every second, one standby of each stateful task.
	"-group.streams.session.timeout.ms=10000", "-group.streams.heartbeat.interval.ms=1000",
	"-group.streams.num.standby.replicas=1",
	// Expired offsets are looked for every 2 s (not 10 minutes): idle groups
	// are dropped from memory and read again all along the suite.
	"-offsets.retention.check.interval.ms=2000",
}

// startNamedGateway starts a gateway logging to <name>.log, with extra
// flags if given.
func startNamedGateway(name, master string, port int, extra ...string) (*gatewayProc, error) {
	return startGatewayWith(name, master, port, lake, nil, extra...)
}

// startGatewayWith starts a gateway as startNamedGateway does, whose
// tables are in l's catalog, with weed's global flags global (-config_dir)
// if given.
func startGatewayWith(name, master string, port int, l *lakeProc, global []string, extra ...string) (*gatewayProc, error) {
	return startGatewayBin(weedBin, name, master, port, l, global, extra...)
}

// startGatewayBin is startGatewayWith of the weed binary bin.
func startGatewayBin(bin, name, master string, port int, l *lakeProc, global []string, extra ...string) (*gatewayProc, error) {
	if port == 0 {
		var err error
		if port, err = freePort(false); err != nil {
			return nil, err
		}
	}
	metricsPort, err := freePort(false)
	if err != nil {
		return nil, err
	}
	registryPort, err := freePort(false)
	if err != nil {
		return nil, err
	}
	g := &gatewayProc{addr: "127.0.0.1:" + strconv.Itoa(port), port: port,
		monitor: "http://127.0.0.1:" + strconv.Itoa(metricsPort), secure: map[string]string{},
		registry: "http://127.0.0.1:" + strconv.Itoa(registryPort)}
	listeners := []string{"PLAINTEXT://" + g.addr}
	for _, l := range []string{"SASL_SSL", "SASL_PLAINTEXT", "SSL"} {
		p, err := freePort(false)
		if err != nil {
			return nil, err
		}
		g.secure[l] = "127.0.0.1:" + strconv.Itoa(p)
		listeners = append(listeners, l+"://"+g.secure[l])
	}
	args := append(append(append([]string{"-v=1"}, global...), "mq.kafka.gateway",
		"-ip=127.0.0.1", "-port="+strconv.Itoa(port), "-master="+master), gatewayTuning...)
	args = append(args, "-metricsPort="+strconv.Itoa(metricsPort),
		// Compacted partitions are looked at every second (not 15 s),
		// and so are partitions for retention (not every 5 minutes).
		"-log.cleaner.backoff.ms=1000", "-log.retention.check.interval.ms=1000",
		"-schema.registry.listeners="+g.registry,
		"-iceberg.catalog="+l.catalog, "-iceberg.s3.endpoint="+l.s3,
		// Tables' snapshots are expired every 3 s (not every hour).
		"-iceberg.maintenance.interval.ms=3000",
		"-listeners="+strings.Join(listeners, ","))
	args = append(args, creds.gatewayFlags()...)
	args = append(args, extra...)
	p, err := startBinIn(bin, "", name, filepath.Join(work, name+".log"), args...)
	if err != nil {
		return nil, err
	}
	g.proc = p
	if err := g.waitReady(120 * time.Second); err != nil {
		g.stop()
		return nil, err
	}
	return g, nil
}

// waitReady waits until the gateway can create a topic, which needs the
// whole cluster behind it.
func (g *gatewayProc) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	topic := fmt.Sprintf("ready-%d", time.Now().UnixNano())
	var last error
	for time.Now().Before(deadline) {
		if g.exited() {
			return errors.New("gateway exited")
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(g.addr))
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			req := kmsg.NewPtrCreateTopicsRequest()
			t := kmsg.NewCreateTopicsRequestTopic()
			t.Topic, t.NumPartitions, t.ReplicationFactor = topic, 1, 1
			req.Topics = append(req.Topics, t)
			var resp *kmsg.CreateTopicsResponse
			resp, err = req.RequestWith(ctx, cl)
			cancel()
			cl.Close()
			if err == nil {
				code := resp.Topics[0].ErrorCode
				if code == 0 || code == 36 { // created, or already exists
					// and it has joined the gateways of the cluster
					if err = g.ready(); err == nil {
						return nil
					}
					last = err
					time.Sleep(200 * time.Millisecond)
					continue
				}
				err = fmt.Errorf("create topic: error code %d", code)
			}
		}
		last = err
		time.Sleep(time.Second)
	}
	return fmt.Errorf("gateway at %s not ready after %v: %v", g.addr, timeout, last)
}

// ready returns nil when the gateway's /ready answers 200.
func (g *gatewayProc) ready() error {
	resp, err := http.Get(g.monitor + "/ready")
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/ready: %s: %s", resp.Status, body)
	}
	return nil
}

// restartGateway stops the gateway gracefully and starts it on the same port.
func restartGateway(t *testing.T) {
	t.Helper()
	gw.stop()
	g, err := startGateway(cluster.master, gw.port)
	if err != nil {
		t.Fatal(err)
	}
	gw = g
}

func dumpLogs() {
	for _, name := range []string{"gateway.log", "gateway2.log", "gateway3.log", "seaweedfs.log"} {
		data, err := os.ReadFile(filepath.Join(work, name))
		if err != nil {
			continue
		}
		if len(data) > 20000 {
			data = data[len(data)-20000:]
		}
		fmt.Fprintf(os.Stderr, "==== last of %s ====\n%s\n", name, data)
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
	// global are weed's flags before the command (-config_dir).
	global []string
}

// startSplitCluster starts a master, a volume server, a filer and brokers
// MQ brokers.
func startSplitCluster(t *testing.T, brokers int) *splitCluster {
	t.Helper()
	return startSplitClusterWith(t, splitOptions{brokers: brokers})
}

// splitOptions shape a split cluster: its MQ brokers and volume servers
// (1 if 0), and weed's global flags of its processes (-config_dir: a
// security.toml).
type splitOptions struct {
	brokers, volumes int
	global           []string
}

// startSplitClusterWith starts a split cluster shaped by o.
func startSplitClusterWith(t *testing.T, o splitOptions) *splitCluster {
	t.Helper()
	c := &splitCluster{t: t, dir: filepath.Join(work, t.Name()), ports: map[string]int{}, procs: map[string]*proc{}, global: o.global}
	roles := []string{"master", "volume", "filer"}
	for i := 2; i <= o.volumes; i++ {
		roles = append(roles, fmt.Sprintf("volume%d", i))
	}
	for i := 1; i <= o.brokers; i++ {
		roles = append(roles, brokerRole(i))
	}
	for _, role := range roles {
		p, err := freePort(role == "master" || strings.HasPrefix(role, "volume") || role == "filer")
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
	switch {
	case strings.HasPrefix(role, "broker"):
		kind = "broker"
	case strings.HasPrefix(role, "volume"):
		kind = "volume"
	}
	return append(slices.Clone(c.global), command.RoleArgs(kind, filepath.Join(c.dir, role), c.master, strconv.Itoa(c.ports[role]))...)
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
	for _, role := range []string{"broker3", "broker2", "broker", "filer", "volume3", "volume2", "volume", "master"} {
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
