package node

import (
	"context"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// partitionCollector exports at each scrape, for the topics whose names
// match, each partition this gateway leads: its log start, high watermark
// and size, Kafka's kafka.log Log metrics. Each gateway exports only what
// it leads, so a cluster's series are each partition once; past
// metrics.MaxPartitionSeries partitions (by topic and partition order)
// the rest are counted as omitted.
type partitionCollector struct {
	match   *regexp.Regexp
	topics  func(ctx context.Context) ([]storage.TopicInfo, error)
	serving func(key string) (int64, bool)
	offsets func(ctx context.Context, topic string, partition int32) (storage.Offsets, error)
	size    func(ctx context.Context, topic string, partition int32) (int64, error)
}

// partitionScrapeTimeout bounds one scrape's lookups, partitionLookups
// how many run at once.
const (
	partitionScrapeTimeout = 5 * time.Second
	partitionLookups       = 16
)

func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- metrics.PartitionLogStartDesc
	ch <- metrics.PartitionLogEndDesc
	ch <- metrics.PartitionSizeDesc
	ch <- metrics.PartitionsOmittedDesc
}

func (c *partitionCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), partitionScrapeTimeout)
	defer cancel()
	topics, err := c.topics(ctx)
	if err != nil {
		return
	}
	sort.Slice(topics, func(i, j int) bool { return topics[i].Name < topics[j].Name })
	type tp struct {
		topic     string
		partition int32
	}
	var led []tp
	omitted := 0
	for _, t := range topics {
		if !c.match.MatchString(t.Name) {
			continue
		}
		for p := int32(0); p < t.Partitions; p++ {
			if _, ok := c.serving(membership.PartitionKey(t.Name, p)); !ok {
				continue
			}
			if len(led) >= metrics.MaxPartitionSeries {
				omitted++
				continue
			}
			led = append(led, tp{t.Name, p})
		}
	}
	ch <- prometheus.MustNewConstMetric(metrics.PartitionsOmittedDesc, prometheus.GaugeValue, float64(omitted))
	metrics.Lookups(ctx, len(led), partitionLookups, func(i int) {
		p := led[i]
		labels := []string{p.topic, strconv.Itoa(int(p.partition))}
		offs, err := c.offsets(ctx, p.topic, p.partition)
		size, serr := c.size(ctx, p.topic, p.partition)
		if err == nil {
			ch <- prometheus.MustNewConstMetric(metrics.PartitionLogStartDesc, prometheus.GaugeValue, float64(offs.LogStart), labels...)
			ch <- prometheus.MustNewConstMetric(metrics.PartitionLogEndDesc, prometheus.GaugeValue, float64(offs.HighWatermark), labels...)
		}
		if serr == nil {
			ch <- prometheus.MustNewConstMetric(metrics.PartitionSizeDesc, prometheus.GaugeValue, float64(size), labels...)
		}
	})
}
