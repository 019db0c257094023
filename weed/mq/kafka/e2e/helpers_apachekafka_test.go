package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// apacheKafka is Apache Kafka 4.4 on one node (broker and KRaft
// controller), started from Maven Central's jars as scripts/compare.sh
// starts it: the source of the migration tests.
type apacheKafka struct {
	addr string
	proc *proc
}

// kafkaClasspath fetches Apache Kafka 4.4's jars (scripts/compare/pom.xml)
// once into the user's cache and returns the classpath.
func kafkaClasspath(t *testing.T) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".cache", "seaweedfs-kafka-gateway", "kafka-4.4-libs")
	mavenMu["kafka-libs"].Lock()
	defer mavenMu["kafka-libs"].Unlock()
	if jars, _ := filepath.Glob(filepath.Join(dir, "kafka_2.13-*.jar")); len(jars) == 0 {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			t.Fatal(err)
		}
		pom := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "scripts", "compare", "pom.xml")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if res, err := exec.CommandContext(ctx, "mvn", "-q", "-B", "-f", pom, "dependency:copy-dependencies", "-DoutputDirectory="+dir).CombinedOutput(); err != nil {
			t.Fatalf("fetching Apache Kafka's jars: %v\n%s", err, res)
		}
	}
	return filepath.Join(dir, "*")
}

// startApacheKafka starts Apache Kafka 4.4 on 127.0.0.1, logging into the
// suite's work directory, with ACLs (its StandardAuthorizer; what no ACL
// speaks of is open); it stops with the test.
func startApacheKafka(t *testing.T) *apacheKafka {
	t.Helper()
	cp := kafkaClasspath(t)
	port, err := freePort(false)
	if err != nil {
		t.Fatal(err)
	}
	cport, err := freePort(false)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(work, "apache-kafka-")
	if err != nil {
		t.Fatal(err)
	}
	props := filepath.Join(dir, "server.properties")
	config := fmt.Sprintf(`process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:%[2]d
listeners=PLAINTEXT://127.0.0.1:%[1]d,CONTROLLER://127.0.0.1:%[2]d
advertised.listeners=PLAINTEXT://127.0.0.1:%[1]d
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=%[3]s
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.cleaner.backoff.ms=1000
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=true
super.users=User:ANONYMOUS
`, port, cport, filepath.Join(dir, "data"))
	if err := os.WriteFile(props, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	id, err := exec.Command("java", "-cp", cp, "kafka.tools.StorageTool", "random-uuid").Output()
	if err != nil {
		t.Fatalf("kafka-storage random-uuid: %v", err)
	}
	if out, err := exec.Command("java", "-cp", cp, "kafka.tools.StorageTool", "format", "--standalone", "-t", strings.TrimSpace(string(id)), "-c", props).CombinedOutput(); err != nil {
		t.Fatalf("kafka-storage format: %v\n%s", err, out)
	}
	logPath := filepath.Join(dir, "kafka.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("java", "-Xms256m", "-Xmx768m", "-cp", cp, "kafka.Kafka", props)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatal(err)
	}
	p := &proc{name: "apache-kafka", cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { cmd.Wait(); f.Close(); close(p.done) }() //nolint:errcheck
	k := &apacheKafka{addr: "127.0.0.1:" + strconv.Itoa(port), proc: p}
	t.Cleanup(func() {
		p.signal(syscall.SIGCONT) // if a test left it paused
		p.stop()
		if t.Failed() {
			dumpLog(logPath)
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for deadline := time.Now().Add(2 * time.Minute); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := adm.ListTopics(ctx)
		cancel()
		if err == nil {
			return k
		}
		if p.exited() || time.Now().After(deadline) {
			dumpLog(logPath)
			t.Fatalf("Apache Kafka did not start: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
