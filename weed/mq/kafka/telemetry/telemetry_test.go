package telemetry

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newManager(t *testing.T) (*Manager, *clock, *filerfstest.Files) {
	t.Helper()
	files := filerfstest.New()
	c := &clock{time.Unix(1_700_000_000, 0)}
	m := New(Options{Files: files, Now: c.now})
	if err := m.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m, c, files
}

func set(t *testing.T, m *Manager, name string, configs map[string]string) {
	t.Helper()
	err := m.Alter(context.Background(), name, false, func(c map[string]string) error {
		clear(c)
		for k, v := range configs {
			c[k] = v
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Configs are checked as Kafka's ClientMetricsConfigs checks them.
func TestParse(t *testing.T) {
	if _, err := Parse("s", map[string]string{MetricsConfig: "org.apache.kafka.producer., org.apache.kafka.consumer.",
		IntervalConfig: "1000", MatchConfig: "client_id=app-.*,client_software_name=apache-kafka-java"}); err != nil {
		t.Fatal(err)
	}
	var unknown *UnknownConfig
	if _, err := Parse("s", map[string]string{"metric": "x"}); !errors.As(err, &unknown) {
		t.Errorf("unknown config: %v", err)
	}
	for _, bad := range []map[string]string{
		{IntervalConfig: "99"}, {IntervalConfig: "3600001"}, {IntervalConfig: "1s"},
		{MatchConfig: "client_id"}, {MatchConfig: "host=x"}, {MatchConfig: "client_id=("},
	} {
		var invalid *InvalidConfig
		if _, err := Parse("s", bad); !errors.As(err, &invalid) {
			t.Errorf("%v: %v, want an invalid config", bad, err)
		}
	}
	if _, err := Parse("", nil); err == nil {
		t.Error("a subscription without a name taken")
	}
}

var java = Client{InstanceID: [16]byte{1, 2, 3}, ClientID: "app-1", SoftwareName: "apache-kafka-java", SoftwareVersion: "4.4.0",
	Address: "127.0.0.1", Port: "40000"}

// A client gets the metrics of the subscriptions it matches and the
// shortest interval; another client none and Kafka's 5 minutes; the
// subscription id is Kafka's; a request before the interval is throttled,
// unless the subscriptions changed.
func TestSubscribe(t *testing.T) {
	m, c, _ := newManager(t)
	set(t, m, "producers", map[string]string{MetricsConfig: "org.apache.kafka.producer.", IntervalConfig: "2000", MatchConfig: "client_software_name=apache-kafka-java"})
	set(t, m, "all-app", map[string]string{MetricsConfig: "org.apache.kafka.consumer.,org.apache.kafka.producer.", IntervalConfig: "1000", MatchConfig: "client_id=app-[0-9]+"})
	set(t, m, "others", map[string]string{MetricsConfig: "*", MatchConfig: "client_id=other"})

	sub, e := m.Subscribe(java)
	if e != nil {
		t.Fatal(e)
	}
	want := []string{"org.apache.kafka.consumer.", "org.apache.kafka.producer."}
	if strings.Join(sub.Metrics, ",") != strings.Join(want, ",") || sub.IntervalMillis != 1000 || sub.InstanceID != java.InstanceID {
		t.Fatalf("subscription %+v", sub)
	}
	if sub.ID != subscriptionID(want, 1000, java.InstanceID) {
		t.Errorf("subscription id %d", sub.ID)
	}
	if _, e := m.Subscribe(java); e != kerr.ThrottlingQuotaExceeded {
		t.Errorf("second request at once: %v", e)
	}
	c.advance(time.Second)
	if _, e := m.Subscribe(java); e != nil {
		t.Errorf("after the interval: %v", e)
	}

	rdkafka := Client{ClientID: "rdkafka", SoftwareName: "librdkafka", SoftwareVersion: "2.12.0"}
	other, e := m.Subscribe(rdkafka)
	if e != nil || len(other.Metrics) != 0 || other.IntervalMillis != DefaultIntervalMs || other.InstanceID == ([16]byte{}) {
		t.Fatalf("unmatched client: %+v %v", other, e)
	}
	rdkafka.ClientID = "other"
	rdkafka.InstanceID = NewInstanceID()
	if all, _ := m.Subscribe(rdkafka); strings.Join(all.Metrics, ",") != AllMetrics {
		t.Errorf("a * subscription gives %v", all.Metrics)
	}

	// A change of the subscriptions is given at once.
	set(t, m, "all-app", map[string]string{MetricsConfig: "org.apache.kafka.consumer.", IntervalConfig: "500", MatchConfig: "client_id=app-[0-9]+"})
	changed, e := m.Subscribe(java)
	if e != nil || changed.IntervalMillis != 500 || changed.ID == sub.ID || len(changed.Metrics) != 2 {
		t.Errorf("after a change: %+v %v", changed, e)
	}
}

// Pushes are checked as Kafka checks them: the subscription id, the
// interval (a push right after a subscription is taken), the compression,
// the size, nothing after a terminating push.
func TestPushChecks(t *testing.T) {
	m, c, _ := newManager(t)
	set(t, m, "s", map[string]string{MetricsConfig: "*", IntervalConfig: "1000"})
	sub, _ := m.Subscribe(java)
	data := payload(t, record.CodecZstd, gauge("org.apache.kafka.producer.buffer.available.bytes", 1))

	if e := m.Push(java, sub.ID+1, false, int8(record.CodecZstd), data); e != kerr.UnknownSubscriptionID {
		t.Errorf("stale subscription id: %v", e)
	}
	if _, e := m.Subscribe(java); e != nil { // asked again at once after UNKNOWN_SUBSCRIPTION_ID
		t.Fatalf("subscribe after an unknown subscription id: %v", e)
	}
	c.advance(time.Second) // as Kafka, a push an interval after the refused one
	if e := m.Push(java, sub.ID, false, int8(record.CodecZstd), data); e != nil {
		t.Fatalf("push after subscribing: %v", e)
	}
	if e := m.Push(java, sub.ID, false, int8(record.CodecZstd), data); e != kerr.ThrottlingQuotaExceeded {
		t.Errorf("second push at once: %v", e)
	}
	c.advance(time.Second)
	if e := m.Push(java, sub.ID, false, 9, data); e != kerr.UnsupportedCompressionType {
		t.Errorf("codec 9: %v", e)
	}
	c.advance(time.Second)
	if e := m.Push(java, sub.ID, false, 0, make([]byte, MaxBytes+1)); e != kerr.TelemetryTooLarge {
		t.Errorf("over max bytes: %v", e)
	}
	c.advance(time.Second)
	if e := m.Push(java, sub.ID, false, 0, []byte("not protobuf \xff\xff")); e != kerr.InvalidRecord {
		t.Errorf("garbage: %v", e)
	}
	c.advance(time.Second)
	bomb := payload(t, record.CodecGzip, gauge(strings.Repeat("x", 2*MaxBytes), 1))
	if e := m.Push(java, sub.ID, false, int8(record.CodecGzip), bomb); e != kerr.TelemetryTooLarge {
		t.Errorf("%d bytes inflating to over max bytes: %v", len(bomb), e)
	}
	// The terminating push is taken at once, and then nothing.
	if e := m.Push(java, sub.ID, true, int8(record.CodecZstd), data); e != nil {
		t.Errorf("terminating push: %v", e)
	}
	c.advance(time.Second)
	if e := m.Push(java, sub.ID, false, int8(record.CodecZstd), data); e != kerr.InvalidRequest {
		t.Errorf("push after terminating: %v", e)
	}
	if e := m.Push(Client{}, 0, false, 0, nil); e != kerr.InvalidRequest {
		t.Errorf("push of instance 0: %v", e)
	}
}

// Pushed gauges and sums are served with the client's labels and their
// own attributes, every codec; a family has the union of its series'
// labels; an instance is forgotten after three intervals (at least a
// minute) without a request, with its series.
func TestPushedMetricsServed(t *testing.T) {
	m, c, _ := newManager(t)
	set(t, m, "s", map[string]string{MetricsConfig: "*", IntervalConfig: "1000"})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)

	second := java
	second.InstanceID, second.ClientID = [16]byte{9}, "app-2"
	for i, cl := range []Client{java, second} {
		codec := []record.Codec{record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}[i]
		sub, _ := m.Subscribe(cl)
		ms := []*metricspb.Metric{gauge("org.apache.kafka.producer.record.queue.time.avg", 2.5, "topic", "orders"),
			sum("org.apache.kafka.producer.record.send.total", 42)}
		if i == 1 {
			ms[0] = gauge("org.apache.kafka.producer.record.queue.time.avg", 7, "node_id", "1")
		}
		if e := m.Push(cl, sub.ID, false, int8(codec), payload(t, codec, ms...)); e != nil {
			t.Fatalf("push with %v: %v", codec, e)
		}
	}
	families := gather(t, reg)
	queue := families["kafka_client_org_apache_kafka_producer_record_queue_time_avg"]
	if queue == nil || queue.GetType() != dto.MetricType_GAUGE || len(queue.Metric) != 2 {
		t.Fatalf("queue time family %v", queue)
	}
	for _, mt := range queue.Metric {
		l := labelMap(mt)
		switch l[ClientID] {
		case "app-1":
			if mt.Gauge.GetValue() != 2.5 || l["topic"] != "orders" || l["node_id"] != "" || l[ClientInstanceID] != InstanceIDString(java.InstanceID) ||
				l[ClientSoftwareName] != "apache-kafka-java" || l[ClientSourcePort] != "40000" || l["service"] != "test" {
				t.Errorf("app-1's series %v = %v", l, mt.Gauge.GetValue())
			}
		case "app-2":
			if mt.Gauge.GetValue() != 7 || l["node_id"] != "1" || l["topic"] != "" {
				t.Errorf("app-2's series %v = %v", l, mt.Gauge.GetValue())
			}
		default:
			t.Errorf("series %v", l)
		}
	}
	sends := families["kafka_client_org_apache_kafka_producer_record_send_total"]
	if sends == nil || sends.GetType() != dto.MetricType_COUNTER || len(sends.Metric) != 2 || sends.Metric[0].Counter.GetValue() != 42 {
		t.Fatalf("send total family %v", sends)
	}

	c.advance(MinExpiry + time.Second)
	m.expire()
	if n := len(gather(t, reg)); n != 0 {
		t.Errorf("%d families after the instances expired", n)
	}
}

// A client's series beyond MaxSeriesPerClient are dropped.
func TestSeriesBounded(t *testing.T) {
	m, _, _ := newManager(t)
	set(t, m, "s", map[string]string{MetricsConfig: "*"})
	var ms []*metricspb.Metric
	for i := range MaxSeriesPerClient + 500 {
		ms = append(ms, gauge("m", float64(i), "i", strings.Repeat("x", i%7)+string(rune('a'+i%26))+strings.Repeat("y", i/26)))
	}
	sub, _ := m.Subscribe(java)
	if e := m.Push(java, sub.ID, false, int8(record.CodecZstd), payload(t, record.CodecZstd, ms...)); e != nil {
		t.Fatal(e)
	}
	if m.series != MaxSeriesPerClient || len(m.inst[java.InstanceID].series) != MaxSeriesPerClient {
		t.Errorf("%d series kept, want %d", m.series, MaxSeriesPerClient)
	}
}

// A subscription set on one gateway is read by another.
func TestSubscriptionsShared(t *testing.T) {
	m, _, files := newManager(t)
	set(t, m, "shared", map[string]string{MetricsConfig: "org.apache.kafka.", IntervalConfig: "60000"})
	other := New(Options{Files: files})
	if err := other.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if names := other.Names(); len(names) != 1 || names[0] != "shared" || other.Configs("shared")[IntervalConfig] != "60000" {
		t.Errorf("other gateway sees %v %v", names, other.Configs("shared"))
	}
	// Deleting every config removes the subscription.
	if err := m.Alter(context.Background(), "shared", false, func(c map[string]string) error { clear(c); return nil }); err != nil {
		t.Fatal(err)
	}
	other.Refresh(context.Background())
	if names := other.Names(); len(names) != 0 {
		t.Errorf("after deleting: %v", names)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(mustMarshal(f, gauge("a.b", 1, "k", "v")))
	f.Add([]byte{0x0a, 0x02, 0x0a, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		pts, err := parse(data, java)
		if err != nil {
			return
		}
		for _, p := range pts {
			if len(p.labels)%2 != 0 || !strings.HasPrefix(p.name, Prefix) {
				t.Fatalf("point %+v", p)
			}
		}
	})
}

func gauge(name string, v float64, attrs ...string) *metricspb.Metric {
	return &metricspb.Metric{Name: name, Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{
		DataPoints: []*metricspb.NumberDataPoint{{Attributes: kvs(attrs...), Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}}}}}}
}

func sum(name string, v int64) *metricspb.Metric {
	return &metricspb.Metric{Name: name, Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{IsMonotonic: true,
		AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
		DataPoints:             []*metricspb.NumberDataPoint{{Value: &metricspb.NumberDataPoint_AsInt{AsInt: v}}}}}}
}

func kvs(attrs ...string) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	for i := 0; i+1 < len(attrs); i += 2 {
		out = append(out, &commonpb.KeyValue{Key: attrs[i], Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: attrs[i+1]}}})
	}
	return out
}

func mustMarshal(tb testing.TB, ms ...*metricspb.Metric) []byte {
	data, err := proto.Marshal(&metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource:     &resourcepb.Resource{Attributes: kvs("service", "test", "client_id", "spoofed")},
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: ms}}}}})
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func payload(t *testing.T, codec record.Codec, ms ...*metricspb.Metric) []byte {
	t.Helper()
	data, err := record.Compress(codec, nil, mustMarshal(t, ms...))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.Label {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// Two gateways altering one subscription at once, each a config of its
// own: both stay (before, the second write replaced the first's).
func TestAltersOnTwoGatewaysBothStay(t *testing.T) {
	ctx := context.Background()
	here, _, files := newManager(t)
	there := New(Options{Files: files})
	files.BeforeNextWriteIf(func() {
		if err := there.Alter(ctx, "sub", false, func(c map[string]string) error {
			c[IntervalConfig] = "60000"
			return nil
		}); err != nil {
			t.Error(err)
		}
	})
	if err := here.Alter(ctx, "sub", false, func(c map[string]string) error {
		c[MetricsConfig] = "org.apache.kafka.producer."
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := here.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := here.Configs("sub"); got[IntervalConfig] != "60000" || got[MetricsConfig] != "org.apache.kafka.producer." {
		t.Fatalf("configs %v, want both", got)
	}
}
