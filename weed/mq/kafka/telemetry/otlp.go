package telemetry

import (
	"strconv"
	"strings"
	"unicode/utf8"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// Prefix begins the name of every pushed metric on /metrics, so that no
// client can push a metric of the gateway's own.
const Prefix = "kafka_client_"

// The labels every pushed series carries: who pushed it.
var clientLabels = []string{ClientInstanceID, ClientID, ClientSoftwareName, ClientSoftwareVersion, ClientSourceAddress, ClientSourcePort}

// point is one pushed series: its latest value.
type point struct {
	name    string // as on /metrics
	help    string
	counter bool
	labels  []string // names, then values: names[i] = labels[2i]
	value   float64
}

// parse reads an OTLP MetricsData into series by key (name and labels).
// Gauges and sums are kept (a monotonic cumulative sum as a counter),
// other kinds are dropped and counted.
func parse(data []byte, c Client) (map[string]*point, error) {
	var md metricspb.MetricsData
	if err := proto.Unmarshal(data, &md); err != nil {
		return nil, err
	}
	base := make([]string, 0, 2*len(clientLabels))
	for _, l := range clientLabels {
		base = append(base, l, c.attribute(l))
	}
	pts := map[string]*point{}
	for _, rm := range md.GetResourceMetrics() {
		resource := attributes(base, rm.GetResource().GetAttributes())
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				name := Prefix + sanitize(m.GetName())
				var dps []*metricspb.NumberDataPoint
				counter := false
				switch d := m.GetData().(type) {
				case *metricspb.Metric_Gauge:
					dps = d.Gauge.GetDataPoints()
				case *metricspb.Metric_Sum:
					dps = d.Sum.GetDataPoints()
					counter = d.Sum.GetIsMonotonic() && d.Sum.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
				default:
					metrics.ClientSeriesDropped.Inc()
					continue
				}
				for _, dp := range dps {
					p := &point{name: name, help: m.GetDescription(), counter: counter, labels: attributes(resource, dp.GetAttributes())}
					switch v := dp.GetValue().(type) {
					case *metricspb.NumberDataPoint_AsDouble:
						p.value = v.AsDouble
					case *metricspb.NumberDataPoint_AsInt:
						p.value = float64(v.AsInt)
					default:
						metrics.ClientSeriesDropped.Inc()
						continue
					}
					pts[p.key()] = p
				}
			}
		}
	}
	return pts, nil
}

// attributes appends OTLP attributes to labels as label pairs; the ones
// already there (the client's own) win.
func attributes(labels []string, kvs []*commonpb.KeyValue) []string {
	out := labels[:len(labels):len(labels)]
next:
	for _, kv := range kvs {
		name := sanitize(kv.GetKey())
		if strings.HasPrefix(name, "__") || name == "" {
			name = "attr" + name
		}
		for i := 0; i < len(out); i += 2 {
			if out[i] == name {
				continue next
			}
		}
		out = append(out, name, value(kv.GetValue()))
	}
	return out
}

func value(v *commonpb.AnyValue) string {
	var s string
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		s = x.StringValue
	case *commonpb.AnyValue_IntValue:
		s = strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		s = strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		s = strconv.FormatBool(x.BoolValue)
	}
	return strings.ToValidUTF8(s, string(utf8.RuneError))
}

// sanitize makes an OTLP name a Prometheus one: what is not a letter, a
// digit or '_' becomes '_', and a leading digit gets a '_' before it.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 0 && b[0] >= '0' && b[0] <= '9' {
		return "_" + string(b)
	}
	return string(b)
}

func (p *point) key() string {
	var b strings.Builder
	b.WriteString(p.name)
	for _, l := range p.labels {
		b.WriteByte(0)
		b.WriteString(l)
	}
	return b.String()
}
