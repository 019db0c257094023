package seaweedmq

import "testing"

// A named cluster's state, locks, secrets and topics are apart from the
// default cluster's, whatever path the other packages name.
func TestClusterLayout(t *testing.T) {
	def, named := newLayout(""), newLayout("orders")
	for _, c := range []struct {
		l        layout
		dir, got string
	}{
		{def, "/etc/kafka-gateway/users", "/etc/kafka-gateway/users"},
		{named, "/etc/kafka-gateway/users", "/etc/kafka-gateway/clusters/orders/users"},
		{named, "/etc/kafka-gateway", "/etc/kafka-gateway/clusters/orders"},
		{named, "/etc/kafka-gateway/clusters/orders/users", "/etc/kafka-gateway/clusters/orders/users"}, // once only
		{named, "/topics/kafka_orders/t/v1/0000-0630", "/topics/kafka_orders/t/v1/0000-0630"},
		{named, "/etc/kafka-gatewayx", "/etc/kafka-gatewayx"},
	} {
		if got := c.l.at(c.dir); got != c.got {
			t.Errorf("%q at %s: %s, want %s", c.l.cluster, c.dir, got, c.got)
		}
	}
	if def.named("kafka-gateway/view") != "kafka-gateway/view" || named.named("kafka-gateway/view") == "kafka-gateway/view" {
		t.Errorf("lock names: %s, %s", def.named("kafka-gateway/view"), named.named("kafka-gateway/view"))
	}
	if def.topicsDir() != "/topics/kafka" || named.topicsDir() != "/topics/kafka_orders" {
		t.Errorf("topics: %s, %s", def.topicsDir(), named.topicsDir())
	}
	if named.topicOf("/topics/kafka_orders/t/v1/0000-0630") != "t" || named.topicOf("/topics/kafka/t/v1/0000-0630") != "" {
		t.Error("a partition directory's topic")
	}
	for _, bad := range []string{"Orders", "a-b", "a/b", "..", string(make([]byte, 41))} {
		if ValidClusterName(bad) == nil {
			t.Errorf("-cluster.name=%q taken", bad)
		}
	}
}
