package brokerconfig

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
)

func set(kv ...string) func(map[string]string) error {
	return func(c map[string]string) error {
		for i := 0; i < len(kv); i += 2 {
			c[kv[i]] = kv[i+1]
		}
		return nil
	}
}

// Kafka's answers to what it refuses, each INVALID_REQUEST with its
// message; custom names are kept.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	s := New(filerfstest.New(), 7)
	for _, c := range []struct {
		resource string
		kv       []string
		want     string
	}{
		{"7", []string{"broker.id", "8"}, "Cannot update these configs dynamically: Set(broker.id)"},
		{"", []string{"log.retention.hours", "1", "process.roles", "broker"}, "Cannot update these configs dynamically: Set(log.retention.hours, process.roles)"},
		{"7", []string{"ssl.keystore.location", "/k"}, "These security configs can be dynamically updated only per-listener using the listener prefix: Set(ssl.keystore.location)"},
		{"", []string{"sasl.kerberos.min.time.before.relogin", "58000"}, "Cannot update these configs at default cluster level, broker id must be specified: Set(sasl.kerberos.min.time.before.relogin)"},
		{"", []string{"listener.name.plain.ssl.keystore.location", "/k"}, "Cannot update these configs at default cluster level, broker id must be specified: Set(listener.name.plain.ssl.keystore.location)"},
		{"7", []string{"background.threads", "abc"}, "Invalid value abc for configuration background.threads: Not a number of type INT"},
		{"7", []string{"log.preallocate", "maybe"}, "Invalid value maybe for configuration log.preallocate: Expected value to be either true or false"},
		{"8", []string{"background.threads", "9"}, "Unexpected broker id, expected 7, but received 8"},
		{"b", []string{"background.threads", "9"}, "Node id must be an integer, but it is: b"},
	} {
		err := s.Alter(ctx, c.resource, false, set(c.kv...))
		var ir *InvalidRequest
		if !errors.As(err, &ir) || ir.Reason != c.want {
			t.Errorf("%q %v: %v, want INVALID_REQUEST %q", c.resource, c.kv, err, c.want)
		}
	}
	if got := s.Current(); len(got.Default) != 0 || len(got.Brokers) != 0 {
		t.Fatalf("refused changes were kept: %+v", got)
	}
	for _, c := range []struct {
		resource string
		kv       []string
	}{
		{"7", []string{"sasl.kerberos.min.time.before.relogin", "58000", "background.threads", "9"}},
		{"7", []string{"listener.name.plain.ssl.keystore.location", "/k"}},
		{"", []string{"max.connections", "100", "listener.name.plain.max.connections", "50", "foo.bar", "x"}},
	} {
		if err := s.Alter(ctx, c.resource, false, set(c.kv...)); err != nil {
			t.Errorf("%q %v: %v", c.resource, c.kv, err)
		}
	}
	if err := s.Alter(ctx, "7", false, set("listener.name.plain.ssl.keystore.password", "s3cret", "sasl.jaas.config", "x password=\"s3cret\";")); err != nil {
		t.Fatal(err)
	}
	if data, _, err := s.files.ReadFileVersion(ctx, Dir, File); err != nil || strings.Contains(string(data), "s3cret") {
		t.Fatalf("a password kept in the filer: %s (%v)", data, err)
	}
	cur := s.Current()
	if _, set := cur.Of("7")["sasl.jaas.config"]; !set {
		t.Fatal("a password config set is not known to be set")
	}
	if cur.Of("7")["background.threads"] != "9" || cur.Of("")["foo.bar"] != "x" || cur.Of("7")["listener.name.plain.ssl.keystore.location"] != "/k" {
		t.Fatalf("configs %+v", cur)
	}
}

// The log.* configs are the defaults of their topic configs, a gateway's
// own over the cluster-wide ones; another gateway reads them at its next
// refresh; validateOnly keeps nothing.
func TestTopicDefaults(t *testing.T) {
	ctx := context.Background()
	files := filerfstest.New()
	a, b := New(files, 1), New(files, 2)
	v0, _ := a.TopicDefaults()
	if err := a.Alter(ctx, "", true, set("log.cleanup.policy", "compact")); err != nil {
		t.Fatal(err)
	}
	if v, m := a.TopicDefaults(); v != v0 || len(m) != 0 {
		t.Fatalf("validateOnly changed the defaults: %d %v", v, m)
	}
	if err := a.Alter(ctx, "", false, set("log.cleanup.policy", "compact", "log.segment.bytes", "2097152", "background.threads", "9")); err != nil {
		t.Fatal(err)
	}
	if err := a.Alter(ctx, "1", false, set("log.segment.bytes", "1048576")); err != nil {
		t.Fatal(err)
	}
	v1, m := a.TopicDefaults()
	if v1 == v0 || m["cleanup.policy"] != "compact" || m["segment.bytes"] != "1048576" || len(m) != 2 {
		t.Fatalf("gateway 1's topic defaults %v (version %d)", m, v1)
	}
	if v, per, ok := a.Inherited("segment.bytes"); !ok || !per || v != "1048576" {
		t.Fatalf("segment.bytes inherited %q per-broker %v %v", v, per, ok)
	}
	if v, per, ok := a.Inherited("cleanup.policy"); !ok || per || v != "compact" {
		t.Fatalf("cleanup.policy inherited %q per-broker %v %v", v, per, ok)
	}
	if _, _, ok := a.Inherited("retention.ms"); ok {
		t.Fatal("retention.ms inherited, though log.retention.ms is not set")
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, m := b.TopicDefaults(); m["segment.bytes"] != "2097152" || m["cleanup.policy"] != "compact" {
		t.Fatalf("gateway 2's topic defaults %v", m)
	}
	// Deleting every config of a broker removes its entry.
	if err := a.Alter(ctx, "1", false, func(c map[string]string) error { clear(c); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Current().Brokers["1"]; ok {
		t.Fatal("an emptied broker's configs stayed")
	}
}
