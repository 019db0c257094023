package e2e

// Apache Kafka's own Java clients (kafka-clients 4.4, the module in java/)
// against the gateway on the real SeaweedFS: the producer with its defaults
// (idempotent, acks=all) and transactional, the consumer in a classic group
// and read_committed, consume-transform-produce with the group's offsets in
// the transaction, the AdminClient (topics, DescribeTopicPartitions,
// configs, the cluster, offsets, DeleteRecords, groups, producers,
// transactions, SCRAM users and ACLs, with a user logging in on the SASL
// listener), Kafka Streams (an exactly-once word count killed mid-run,
// a KTable restored from a compacted topic) and Kafka Connect in
// distributed mode (a file through a topic across a worker restart).

import (
	"context"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

type surefireSuite struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
}

func TestJavaClients(t *testing.T) {
	t.Parallel() // on the shared gateway, touching only what it makes: beside the others at the end
	// ReplicatedClusterTest runs against a cluster of its own
	// (TestReplicatedTopic).
	total := runJavaTests(t, "java", "-Dtest=!ReplicatedClusterTest", "-Dkafka.bootstrap="+gw.addr,
		"-Dkafka.sasl.bootstrap="+gw.secure["SASL_PLAINTEXT"], "-Dkafka.monitor="+gw.monitor, "-Dkafka.registry="+gw.registry)
	if total < 27 {
		t.Errorf("%d Java tests ran, want the 27 of the module", total)
	}
}

// mavenMu keeps one Maven run of a module at a time (runs of a module
// share its target/ folder); modules run side by side.
var mavenMu = map[string]*sync.Mutex{"java": {}, "java/mirrormaker": {}, "java/link": {}, "kafka-libs": {}}

// runJavaTests runs the tests of the Maven module in dir (of the
// repository: java, java/mirrormaker, java/link) with Maven's properties
// props (a surefire selection -Dtest, the tests' system properties), and
// returns how many ran; each that failed, erred or was skipped is an
// error.
func runJavaTests(t *testing.T, dir string, props ...string) int {
	t.Helper()
	mu := mavenMu[dir]
	if mu == nil {
		t.Fatalf("no Maven module %s", dir)
	}
	mu.Lock()
	defer mu.Unlock()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	module := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), dir)
	reports := filepath.Join(module, "target", "surefire-reports")
	os.RemoveAll(reports) //nolint:errcheck // a previous run's, if any
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	args := append([]string{"-B", "-q", "-f", filepath.Join(module, "pom.xml"), "test"}, props...)
	if res, err := exec.CommandContext(ctx, "mvn", args...).CombinedOutput(); err != nil {
		t.Fatalf("mvn test: %v\n%s", err, res)
	}
	files, err := filepath.Glob(filepath.Join(reports, "TEST-*.xml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no surefire reports in %s: %v", reports, err)
	}
	total := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var s surefireSuite
		if err := xml.Unmarshal(data, &s); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if s.Failures+s.Errors+s.Skipped != 0 {
			t.Errorf("%s: %d tests, %d failed, %d errors, %d skipped", s.Name, s.Tests, s.Failures, s.Errors, s.Skipped)
		}
		t.Logf("%s: %d tests passed", s.Name, s.Tests)
		total += s.Tests
	}
	return total
}
