package group

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

type manyGroups int

func (n manyGroups) GroupStats(context.Context) ([]Stat, error) {
	var out []Stat
	for i := 0; i < int(n); i++ {
		out = append(out, Stat{Name: fmt.Sprintf("scrape-group-%d", i), Members: 1,
			Committed: map[string]map[int32]int64{"scrape-topic": {0: 10}}})
	}
	return out, nil
}

// More groups than metrics.MaxLabelValues: the scrape still succeeds (it answered
// HTTP 500 once the overflow label made duplicate series), with the
// overflowing groups summed into "other".
func TestGroupMetricsOverflow(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(&lagCollector{groups: manyGroups(metrics.MaxLabelValues + 100), offsets: func(context.Context, string, int32) (int64, int64, error) { return 0, 15, nil }})
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	var otherMembers float64
	series := 0
	for _, f := range families {
		if f.GetName() != "kafka_consumergroup_members" {
			continue
		}
		for _, m := range f.GetMetric() {
			series++
			if m.GetLabel()[0].GetValue() == "other" {
				otherMembers = m.GetGauge().GetValue()
			}
		}
	}
	if series > metrics.MaxLabelValues+1 || otherMembers < 100 {
		t.Fatalf("%d member series, %v members under other", series, otherMembers)
	}
}

// groupsOnTopics is one group per topic, each with a commit at offset 10 in
// partition 0.
type groupsOnTopics []string

func (ts groupsOnTopics) GroupStats(context.Context) ([]Stat, error) {
	var out []Stat
	for _, topic := range ts {
		out = append(out, Stat{Name: topic + "-group", Committed: map[string]map[int32]int64{topic: {0: 10}}})
	}
	return out, nil
}

// A partition whose high watermark lookup never answers costs the scrape its
// own lag only: the lookups ran one after the other in one 5 s budget, so a
// gateway that had seen many groups reported no lag at all for the
// partitions after a slow one.
func TestGroupLagSlowPartition(t *testing.T) {
	var topics groupsOnTopics
	for i := 0; i < 200; i++ {
		topics = append(topics, fmt.Sprintf("lag-topic-%03d", i))
	}
	offsets := func(ctx context.Context, topic string, _ int32) (int64, int64, error) {
		if topic == "lag-topic-000" {
			<-ctx.Done()
			return 0, 0, ctx.Err()
		}
		start := int64(0)
		if topic == "lag-topic-001" {
			start = 12 // records before the commit removed: lag counts from the log start
		}
		select {
		case <-time.After(30 * time.Millisecond):
			return start, 25, nil
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(&lagCollector{groups: topics, offsets: offsets})
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	lags := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "kafka_consumergroup_lag" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "topic" {
					lags[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	if _, ok := lags["lag-topic-000"]; ok {
		t.Error("a lag reported for the partition whose high watermark is unknown")
	}
	if lags["lag-topic-001"] != 13 {
		t.Errorf("a commit below the log start: lag %v, want 25 - 12", lags["lag-topic-001"])
	}
	for _, topic := range topics[2:] {
		if lags[topic] != 15 {
			t.Errorf("%s: lag %v, want 25 - 10", topic, lags[topic])
		}
	}
}

// kindsOfGroups is a classic group with commits and a share group with
// share-partitions only (named as manyGroups names its first: the
// metrics' label values are the process's, and past
// metrics.MaxLabelValues new names are "other").
type kindsOfGroups struct{}

func (kindsOfGroups) GroupStats(context.Context) ([]Stat, error) {
	return []Stat{
		{Name: "scrape-group-0", Type: TypeClassic, Committed: map[string]map[int32]int64{"t": {0: 10, 1: 30}}},
		{Name: "scrape-group-1", Type: "share", Committed: map[string]map[int32]int64{}},
	}, nil
}

// Share groups have a lag: the partition's end less their start less the
// records done past it; every group has its lag summed over a topic
// (kafka_consumergroup_lag_sum).
func TestGroupLagOfEveryKind(t *testing.T) {
	shares := func(_ context.Context, group string) (map[string]map[int32]ShareStart, error) {
		if group != "scrape-group-1" {
			t.Errorf("share offsets asked of %s", group)
		}
		return map[string]map[int32]ShareStart{"t": {0: {Start: 40, Done: 5}, 1: {Start: -1}}}, nil
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(&lagCollector{groups: kindsOfGroups{}, shares: shares,
		offsets: func(context.Context, string, int32) (int64, int64, error) { return 0, 50, nil }})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += " " + l.GetValue()
			}
			got[key] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{
		// labels by name: consumergroup, partition, topic
		"kafka_consumergroup_lag scrape-group-0 0 t":   40,
		"kafka_consumergroup_lag scrape-group-0 1 t":   20,
		"kafka_consumergroup_lag_sum scrape-group-0 t": 60,
		"kafka_consumergroup_lag scrape-group-1 0 t":   5,
		"kafka_consumergroup_lag_sum scrape-group-1 t": 5,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if _, ok := got["kafka_consumergroup_lag scrape-group-1 1 t"]; ok {
		t.Error("a lag for a share-partition not started")
	}
}
