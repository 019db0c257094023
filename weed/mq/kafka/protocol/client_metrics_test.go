package protocol_test

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// A client metrics subscription set with IncrementalAlterConfigs (Kafka's
// checks), described, listed by ListConfigResources v0 and v1, given to
// the clients it matches by GetTelemetrySubscriptions, and what a client
// pushes served with its labels.
func TestClientMetricsSubscription(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	cm := kmsg.ConfigResourceTypeClientMetrics
	alter := func(name string, want *kerr.Error, ops ...configOp) {
		t.Helper()
		resp := roundTrip(t, g.addr, incrementalAlter(false, cm, name, ops...), 1).(*kmsg.IncrementalAlterConfigsResponse)
		code(t, "IncrementalAlterConfigs "+name, resp.Resources[0].ErrorCode, want)
	}
	set := kmsg.IncrementalAlterConfigOpSet
	alter("producers", nil, configOp{"metrics", set, kmsg.StringPtr("org.apache.kafka.producer.")},
		configOp{"interval.ms", set, kmsg.StringPtr("1000")}, configOp{"match", set, kmsg.StringPtr("client_software_name=protocol-test")})
	alter("producers", nil, configOp{"metrics", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("org.apache.kafka.consumer.")})
	alter("producers", kerr.InvalidRequest, configOp{"metric", set, kmsg.StringPtr("x")})
	alter("producers", kerr.InvalidConfig, configOp{"interval.ms", set, kmsg.StringPtr("50")})
	alter("producers", kerr.InvalidConfig, configOp{"match", set, kmsg.StringPtr("hostname=x")})
	alter("producers", kerr.InvalidConfig, configOp{"interval.ms", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("5")})

	describe := func(name string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: cm, ResourceName: name}}
		resp := roundTrip(t, g.addr, req, 4).(*kmsg.DescribeConfigsResponse)
		code(t, "DescribeConfigs "+name, resp.Resources[0].ErrorCode, nil)
		out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
		for _, c := range resp.Resources[0].Configs {
			out[c.Name] = c
		}
		return out
	}
	d := describe("producers")
	if c := d["metrics"]; *c.Value != "org.apache.kafka.producer.,org.apache.kafka.consumer." || c.Source != kmsg.ConfigSourceClientMetricsConfig || c.ConfigType != kmsg.ConfigTypeList {
		t.Errorf("metrics %v %v %v", *c.Value, c.Source, c.ConfigType)
	}
	if c := d["interval.ms"]; *c.Value != "1000" || c.Source != kmsg.ConfigSourceClientMetricsConfig {
		t.Errorf("interval.ms %v %v", *c.Value, c.Source)
	}
	if c := describe("none")["interval.ms"]; *c.Value != "300000" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("a subscription never set: interval.ms %v %v", *c.Value, c.Source)
	}

	list := func(version int16, types ...int8) *kmsg.ListConfigResourcesResponse {
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.ResourceTypes = types
		return roundTrip(t, g.addr, req, version).(*kmsg.ListConfigResourcesResponse)
	}
	if l := list(0); l.ErrorCode != 0 || len(l.ConfigResources) != 1 || l.ConfigResources[0].Name != "producers" {
		t.Errorf("ListConfigResources v0: %+v", l)
	}
	if l := list(1, int8(cm)); len(l.ConfigResources) != 1 || l.ConfigResources[0].Type != int8(cm) {
		t.Errorf("ListConfigResources v1 of client metrics: %+v", l)
	}
	all := list(1)
	if !slices.ContainsFunc(all.ConfigResources, func(r kmsg.ListConfigResourcesResponseConfigResource) bool {
		return r.Type == int8(kmsg.ConfigResourceTypeBroker) && r.Name == "0"
	}) || !slices.ContainsFunc(all.ConfigResources, func(r kmsg.ListConfigResourcesResponseConfigResource) bool { return r.Name == "producers" }) {
		t.Errorf("ListConfigResources v1 of every type: %+v", all.ConfigResources)
	}
	code(t, "ListConfigResources v1 of type 99", list(1, 99).ErrorCode, kerr.UnsupportedVersion)

	// A client calling itself protocol-test gets the subscription; another
	// one does not.
	subscribe := func(software string) (*rawConn, *kmsg.GetTelemetrySubscriptionsResponse) {
		c := dial(t, g.addr)
		av := kmsg.NewPtrApiVersionsRequest()
		av.ClientSoftwareName, av.ClientSoftwareVersion = software, "1.0"
		c.do(av, 3)
		resp := c.do(kmsg.NewPtrGetTelemetrySubscriptionsRequest(), 0).(*kmsg.GetTelemetrySubscriptionsResponse)
		code(t, "GetTelemetrySubscriptions", resp.ErrorCode, nil)
		return c, resp
	}
	c, sub := subscribe("protocol-test")
	if !slices.Equal(sub.RequestedMetrics, []string{"org.apache.kafka.consumer.", "org.apache.kafka.producer."}) || sub.PushIntervalMillis != 1000 {
		t.Errorf("matching client: %v every %d ms", sub.RequestedMetrics, sub.PushIntervalMillis)
	}
	if _, other := subscribe("other-client"); len(other.RequestedMetrics) != 0 || other.PushIntervalMillis != 300000 {
		t.Errorf("other client: %v every %d ms", other.RequestedMetrics, other.PushIntervalMillis)
	}

	data, err := proto.Marshal(&metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{
		Metrics: []*metricspb.Metric{{Name: "org.apache.kafka.producer.record.send.rate", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{
			DataPoints: []*metricspb.NumberDataPoint{{Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: 12.5},
				Attributes: []*commonpb.KeyValue{{Key: "topic", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "orders"}}}}}}}}}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	compressed, err := record.Compress(record.CodecZstd, nil, data)
	if err != nil {
		t.Fatal(err)
	}
	push := kmsg.NewPtrPushTelemetryRequest()
	push.ClientInstanceID, push.SubscriptionID, push.CompressionType, push.Metrics = sub.ClientInstanceID, sub.SubscriptionID, int8(record.CodecZstd), compressed
	code(t, "PushTelemetry", c.do(push, 0).(*kmsg.PushTelemetryResponse).ErrorCode, nil)
	code(t, "PushTelemetry again at once", c.do(push, 0).(*kmsg.PushTelemetryResponse).ErrorCode, kerr.ThrottlingQuotaExceeded)

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(g.clientMetrics)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != 1 || fams[0].GetName() != "kafka_client_org_apache_kafka_producer_record_send_rate" || len(fams[0].Metric) != 1 {
		t.Fatalf("families %v", fams)
	}
	labels := map[string]string{}
	for _, l := range fams[0].Metric[0].Label {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["topic"] != "orders" || labels["client_software_name"] != "protocol-test" || labels["client_software_version"] != "1.0" ||
		labels["client_source_address"] != "127.0.0.1" || labels["client_id"] != "raw-client" || labels["client_source_port"] == "" ||
		fams[0].Metric[0].Gauge.GetValue() != 12.5 {
		t.Errorf("pushed series %v = %v", labels, fams[0].Metric[0].Gauge.GetValue())
	}

	// Deleting every config removes the subscription.
	del := kmsg.IncrementalAlterConfigOpDelete
	alter("producers", nil, configOp{"metrics", del, nil}, configOp{"interval.ms", del, nil}, configOp{"match", del, nil})
	if l := list(0); len(l.ConfigResources) != 0 {
		t.Errorf("after deleting: %+v", l.ConfigResources)
	}
}
