package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// kcat runs the kcat command-line client against the gateway.
func kcat(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	return kcatAt(t, gw.addr, stdin, args...)
}

// TestKcat: kcat (librdkafka) lists the cluster and a topic with its
// partitions, produces keyed records with headers, and consumes them back;
// what it wrote reads back identically with franz-go.
func TestKcat(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 3, nil)
	// The gateway's broker id, as franz-go reads it from Metadata.
	md, err := kadm.NewClient(newClient(t)).BrokerMetadata(ctxT(t))
	if err != nil || len(md.Brokers) != 1 {
		t.Fatalf("metadata: %v %+v", err, md.Brokers)
	}
	id := strconv.Itoa(int(md.Brokers[0].NodeID))
	list := kcat(t, "", "-L")
	if !strings.Contains(list, "broker "+id+" at "+gw.addr) || !strings.Contains(list, `topic "`+topic+`" with 3 partitions`) {
		t.Fatalf("kcat -L:\n%s", list)
	}
	one := kcat(t, "", "-L", "-t", topic)
	for _, p := range []string{"partition 0, leader " + id, "partition 1, leader " + id, "partition 2, leader " + id} {
		if !strings.Contains(one, p) {
			t.Errorf("kcat -L -t: no %q in\n%s", p, one)
		}
	}

	kcat(t, "k1:v1\nk2:v2\n", "-P", "-t", topic, "-p", "1", "-K", ":", "-H", "h=x")
	out := kcat(t, "", "-C", "-t", topic, "-p", "1", "-o", "beginning", "-e", "-f", "%k=%s %h @%o\n")
	if out != "k1=v1 h=x @0\nk2=v2 h=x @1\n" {
		t.Errorf("kcat -C read:\n%q", out)
	}
	got := consumeN(t, topic, 2)
	for i, r := range got {
		want := []string{"k1", "v1", "k2", "v2"}[2*i:]
		if r.Partition != 1 || string(r.Key) != want[0] || string(r.Value) != want[1] || len(r.Headers) != 1 ||
			r.Headers[0].Key != "h" || string(r.Headers[0].Value) != "x" {
			t.Errorf("franz-go read %d: %s/%d %q=%q %v", i, r.Topic, r.Partition, r.Key, r.Value, r.Headers)
		}
	}
}
