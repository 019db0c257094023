package docker_test

import (
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seaweedfs/seaweedfs/weed/stats"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// The Grafana dashboard's expressions, checked against the metrics the
// gateway registers in SeaweedFS's registry (package metrics).

// requiredMetrics are metrics the dashboard shows at least once.
var requiredMetrics = []string{
	"SeaweedFS_kafka_requests_total",
	"SeaweedFS_kafka_request_duration_seconds",
	"SeaweedFS_kafka_backend_duration_seconds",
	"SeaweedFS_kafka_errors_total",
	"SeaweedFS_kafka_messages_in_total",
	"SeaweedFS_kafka_messages_out_total",
	"SeaweedFS_kafka_bytes_in_total",
	"SeaweedFS_kafka_bytes_out_total",
	"SeaweedFS_kafka_follower_fetch_bytes_total",
	"SeaweedFS_kafka_replica_bytes_out_total",
	"SeaweedFS_kafka_connections",
	"SeaweedFS_kafka_groups",
	"SeaweedFS_kafka_group_rebalances_total",
	"kafka_consumergroup_lag",
	"SeaweedFS_kafka_link_lag_records",
	"SeaweedFS_kafka_link_records_total",
}

func checkDashboardMetrics(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID           string            `json:"uid"`
		Title         string            `json:"title"`
		SchemaVersion int               `json:"schemaVersion"`
		Panels        []json.RawMessage `json:"panels"`
		Templating    struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if dash.UID == "" || dash.Title != "SeaweedFS Kafka gateway" || dash.SchemaVersion < 36 {
		t.Errorf("dashboard uid %q, title %q, schemaVersion %d", dash.UID, dash.Title, dash.SchemaVersion)
	}

	// The expressions of every panel (rows hold theirs when collapsed) and
	// of the query variables.
	var exprs []string
	ids := map[int]bool{}
	var walk func([]json.RawMessage)
	walk = func(panels []json.RawMessage) {
		for _, raw := range panels {
			var p struct {
				ID      int               `json:"id"`
				Title   string            `json:"title"`
				Type    string            `json:"type"`
				Panels  []json.RawMessage `json:"panels"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			}
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatalf("panel: %v", err)
			}
			if ids[p.ID] {
				t.Errorf("panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q queries nothing", p.Title)
			}
			for _, tg := range p.Targets {
				exprs = append(exprs, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q string
		if json.Unmarshal(v.Query, &q) != nil {
			var obj struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &obj); err != nil {
				t.Errorf("variable %s: query %s", v.Name, v.Query)
			}
			q = obj.Query
		}
		// label_values(selector, label) queries selector's series.
		if rest, ok := strings.CutPrefix(strings.TrimSpace(q), "label_values("); ok {
			if i := strings.LastIndex(rest, ","); i >= 0 {
				q = rest[:i]
			}
		}
		exprs = append(exprs, q)
	}

	// The gateway's /metrics is SeaweedFS's registry: the metrics of
	// package metrics, and the group coordinator's collector of the
	// consumer group metrics, as a gateway registers it at start (once in
	// this test binary; only its descriptions are asked for here).
	registerGroups.Do(func() {
		if _, err := metrics.Register(group.New(group.Options{}).Metrics(nil, nil)); err != nil {
			t.Fatal(err)
		}
	})

	used := map[string]bool{}
	for _, expr := range exprs {
		names := promqlMetricNames(expr)
		if len(names) == 0 {
			t.Errorf("no metric in %q", expr)
		}
		for _, name := range names {
			base, ok := registeredMetric(name)
			if !ok {
				t.Errorf("the dashboard queries %s, which the gateway does not export (in %q)", name, expr)
			}
			used[base] = true
		}
	}
	for _, name := range requiredMetrics {
		if !used[name] {
			t.Errorf("no panel shows %s", name)
		}
	}
	if !t.Failed() {
		t.Logf("%d expressions, %d metrics, all exported", len(exprs), len(used))
	}
}

// registerGroups registers the group metrics once in the test binary.
var registerGroups sync.Once

// registeredMetric tells whether SeaweedFS's registry, which the gateway's
// /metrics serves, has a metric of this name, or, for a histogram's
// _bucket, _sum and _count series, of its base name; it returns that name.
func registeredMetric(name string) (string, bool) {
	if registered(name) {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && registered(base) {
			return base, true
		}
	}
	return name, false
}

// registered asks the registry itself: a registry lists no names, but it
// refuses a collector describing a metric name it already has (with other
// help), and takes one describing a name it does not have, given back at
// once. The names come from promqlMetricNames, so they are valid.
func registered(name string) bool {
	p := probe{prometheus.NewDesc(name, "dashboard test probe", nil, nil)}
	if err := stats.Gather.Register(p); err != nil {
		return true
	}
	stats.Gather.Unregister(p)
	return false
}

type probe struct{ desc *prometheus.Desc }

func (p probe) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }
func (p probe) Collect(chan<- prometheus.Metric)    {}
