package node

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// The partitions' log metrics: for the topics the regexp names, the
// partitions this gateway leads, each with its log start, end and size;
// past the cap, the rest counted as omitted.
func TestPartitionMetrics(t *testing.T) {
	topics := []storage.TopicInfo{{Name: "orders", Partitions: 4}, {Name: "audit", Partitions: 2}, {Name: "orders-big", Partitions: metrics.MaxPartitionSeries}}
	led := func(key string) (int64, bool) {
		// Partitions 1 and 3 of orders are led elsewhere.
		return 1, key != membership.PartitionKey("orders", 1) && key != membership.PartitionKey("orders", 3)
	}
	c := &partitionCollector{match: regexp.MustCompile(`^orders`),
		topics:  func(context.Context) ([]storage.TopicInfo, error) { return topics, nil },
		serving: led,
		offsets: func(_ context.Context, topic string, p int32) (storage.Offsets, error) {
			return storage.Offsets{LogStart: int64(p), HighWatermark: 100 + int64(p)}, nil
		},
		size: func(_ context.Context, topic string, p int32) (int64, error) { return 1000 * int64(p+1), nil },
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			key := f.GetName() + "{}"
			if len(labels) > 0 {
				key = f.GetName() + "{" + labels["topic"] + "," + labels["partition"] + "}"
			}
			series[key] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{
		"SeaweedFS_kafka_partition_log_start_offset{orders,0}": 0, "SeaweedFS_kafka_partition_log_end_offset{orders,0}": 100, "SeaweedFS_kafka_partition_size_bytes{orders,0}": 1000,
		"SeaweedFS_kafka_partition_log_start_offset{orders,2}": 2, "SeaweedFS_kafka_partition_log_end_offset{orders,2}": 102, "SeaweedFS_kafka_partition_size_bytes{orders,2}": 3000,
		"SeaweedFS_kafka_partition_metrics_omitted{}": 2, // orders-big past the cap: 2 of its partitions
	}
	for k, v := range want {
		if got, ok := series[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	for _, k := range []string{"{orders,1}", "{orders,3}", "{audit,0}"} {
		if _, ok := series["SeaweedFS_kafka_partition_log_end_offset"+k]; ok {
			t.Errorf("%s exported: led elsewhere or not named", k)
		}
	}
	n := 0
	for k := range series {
		if strings.HasPrefix(k, "SeaweedFS_kafka_partition_log_end_offset{") {
			n++
		}
	}
	if n != metrics.MaxPartitionSeries {
		t.Errorf("%d partitions exported, want the cap %d", n, metrics.MaxPartitionSeries)
	}
}
