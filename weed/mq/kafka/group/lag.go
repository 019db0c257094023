package group

// The group metrics: every group this gateway coordinates, its members,
// committed offsets and lag, collected at each scrape.

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// Stat is one group as the group metrics show it.
type Stat struct {
	Name      string
	Type      string // TypeClassic, TypeConsumer, "share" or "streams"
	Members   int
	Committed map[string]map[int32]int64 // topic -> partition -> committed offset
}

// ShareStart is a share-partition's position: its start offset and the
// records done after it (acknowledged past the start).
type ShareStart struct {
	Start, Done int64
}

// ShareOffsets returns a share group's share-partitions, by topic and
// partition.
type ShareOffsets func(ctx context.Context, group string) (map[string]map[int32]ShareStart, error)

// statsSource lists the groups for the metrics: the coordinator (a fake
// in tests).
type statsSource interface {
	GroupStats(ctx context.Context) ([]Stat, error)
}

// Offsets returns a partition's log start and high watermark.
type Offsets func(ctx context.Context, topic string, partition int32) (logStart, hw int64, err error)

// lagCollector reports, at each scrape, the groups with their members,
// committed offsets and lag, under kafka_exporter's names.
type lagCollector struct {
	groups  statsSource
	offsets Offsets
	shares  ShareOffsets // nil: share groups have no lag
}

// Metrics is the collector of the coordinator's groups for /metrics: at
// each scrape, their members, committed offsets and lag, with the
// partitions' log starts and high watermarks from offsets (looked up on
// their leaders); share groups' lag from their share-partitions' starts
// (shares). Lag is counted from the log start when a commit is older (the
// records between are gone: no consumer reads them).
func (c *Coordinator) Metrics(offsets Offsets, shares ShareOffsets) prometheus.Collector {
	return &lagCollector{groups: c, offsets: offsets, shares: shares}
}

// scrapeTimeout bounds the backend calls of one scrape.
const scrapeTimeout = 5 * time.Second

// scrapeLookups is how many high watermarks one scrape looks up at once: a
// gateway coordinating many groups over many partitions answers its scrape
// within scrapeTimeout, and one slow partition holds up only itself.
const scrapeLookups = 16

// logOffsets are a partition's log start and high watermark.
type logOffsets struct{ start, hw int64 }

type topicPartition struct {
	topic     string
	partition int32
}

// logOffsets looks up the log start and high watermark of every partition
// in which a group committed, scrapeLookups at a time; a partition whose
// lookup failed or did not end in time is left out (and so is its lag).
func (c *lagCollector) logOffsets(ctx context.Context, gs []Stat) map[topicPartition]logOffsets {
	seen := map[topicPartition]bool{}
	var tps []topicPartition
	for _, g := range gs {
		for topic, parts := range g.Committed {
			for p := range parts {
				tp := topicPartition{topic, p}
				if !seen[tp] {
					seen[tp] = true
					tps = append(tps, tp)
				}
			}
		}
	}
	var mu sync.Mutex
	hws := make(map[topicPartition]logOffsets, len(tps))
	metrics.Lookups(ctx, len(tps), scrapeLookups, func(i int) {
		tp := tps[i]
		if start, hw, err := c.offsets(ctx, tp.topic, tp.partition); err == nil && hw >= 0 {
			mu.Lock()
			hws[tp] = logOffsets{start, hw}
			mu.Unlock()
		}
	})
	return hws
}

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- metrics.GroupsDesc
	ch <- metrics.GroupMembersDesc
	ch <- metrics.GroupOffsetDesc
	ch <- metrics.GroupLagDesc
	ch <- metrics.GroupLagSumDesc
}

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	gs, err := c.groups.GroupStats(ctx)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(metrics.GroupsDesc, prometheus.GaugeValue, float64(len(gs)))
	// A share group's partitions are counted as committed at their start
	// plus the records done past it: its lag is what is not yet done.
	if c.shares != nil {
		for i := range gs {
			if gs[i].Type != "share" {
				continue
			}
			starts, err := c.shares(ctx, gs[i].Name)
			if err != nil {
				continue
			}
			for topic, parts := range starts {
				if gs[i].Committed[topic] == nil {
					gs[i].Committed[topic] = map[int32]int64{}
				}
				for p, s := range parts {
					if s.Start >= 0 {
						gs[i].Committed[topic][p] = s.Start + s.Done
					}
				}
			}
		}
	}
	hws := c.logOffsets(ctx, gs)
	// Series are summed by their label values: groups and topics past
	// metrics.MaxLabelValues share the label "other", and one series each.
	type series struct{ group, topic, partition string }
	members := map[string]float64{}
	current, lag := map[series]float64{}, map[series]float64{}
	type topicSeries struct{ group, topic string }
	lagSum := map[topicSeries]float64{}
	for _, g := range gs {
		name := metrics.Group(g.Name)
		members[name] += float64(g.Members)
		for topic, parts := range g.Committed {
			for p, off := range parts {
				k := series{name, metrics.Topic(topic), strconv.Itoa(int(p))}
				current[k] += float64(off)
				if lo, ok := hws[topicPartition{topic, p}]; ok {
					n := float64(max(lo.hw-max(off, lo.start), 0))
					lag[k] += n
					lagSum[topicSeries{k.group, k.topic}] += n
				}
			}
		}
	}
	for name, n := range members {
		ch <- prometheus.MustNewConstMetric(metrics.GroupMembersDesc, prometheus.GaugeValue, n, name)
	}
	for k, v := range current {
		ch <- prometheus.MustNewConstMetric(metrics.GroupOffsetDesc, prometheus.GaugeValue, v, k.group, k.topic, k.partition)
	}
	for k, v := range lag {
		ch <- prometheus.MustNewConstMetric(metrics.GroupLagDesc, prometheus.GaugeValue, v, k.group, k.topic, k.partition)
	}
	for k, v := range lagSum {
		ch <- prometheus.MustNewConstMetric(metrics.GroupLagSumDesc, prometheus.GaugeValue, v, k.group, k.topic)
	}
}
