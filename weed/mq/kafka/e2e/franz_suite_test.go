package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// kgoSuite runs tests of franz-go's own kgo suite against the package's
// gateway (KGO_SEEDS) and checks that each of want passed: a skip, as the
// suite skips what the broker does not serve, is a failure.
func kgoSuite(t *testing.T, timeout time.Duration, env []string, run string, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-v", "-run", run, "github.com/twmb/franz-go/pkg/kgo")
	cmd.Env = append(append(os.Environ(), "KGO_SEEDS="+gw.addr, "KGO_TEST_RF=1"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kgo suite %s: %v\n%s", run, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "--- ") {
			t.Log(l) // what ran, and how long it took
		}
	}
	for _, name := range want {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass:\n%s", name, out)
		}
	}
}

// franz-go's kgo suite tests of the consumer group protocol (KIP-848),
// which it skips against a broker without ConsumerGroupHeartbeat v1: the
// broker resolving a regex (with __consumer_offsets, an
// internal topic, assigned), and the chains of consuming groups that
// produce what they consume, plain and transactional (exactly once), with
// the range and the uniform assignor, static members too (20,000 records;
// the suite's classic "range" chains run beside them).
func TestFranzGoSuiteConsumerGroups(t *testing.T) {
	kgoSuite(t, 5*time.Minute, nil, "^Test848RegexBrokerResolves$", "Test848RegexBrokerResolves")
	// One at a time: the suite's chains share a semaphore that a subtest
	// left out by -run never gives back.
	for _, test := range []string{"TestGroupETL", "TestTxnEtl"} {
		kgoSuite(t, 5*time.Minute, []string{"KGO_TEST_RECORDS=20000"}, "^"+test+"$/^(range|sticky)$/^848$",
			test+"/range/848", test+"/sticky/848", test+"/sticky/848/static")
	}
}
