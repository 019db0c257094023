package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// scrape reads the gateway's /metrics.
func scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	return scrapeFrom(t, gw)
}

// scrapeFrom is scrape of gateway from's /metrics.
func scrapeFrom(t *testing.T, from *gatewayProc) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(from.monitor + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// metricValue is the value of the family's series with exactly these label
// values (a counter, gauge, or a histogram's count), and whether it exists.
func metricValue(families map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := families[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.Metric {
		match := true
		for k, v := range labels {
			found := false
			for _, l := range m.Label {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			match = match && found
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetrics: after a produce, a consume and a group commit, /metrics has
// moved by exactly what was done: records in and out of the topic, the
// group's committed offset and its lag (high watermark - committed).
func TestMetrics(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	group := topic + "-group"
	cl := newClient(t)
	var recs []*kgo.Record
	for i := 0; i < 25; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("m%d", i))})
	}
	produceSync(t, cl, recs...)
	consumeN(t, topic, 25)
	adm := kadm.NewClient(cl)
	var offs kadm.Offsets
	offs.AddOffset(topic, 0, 10, -1)
	if err := adm.CommitAllOffsets(ctxT(t), group, offs); err != nil {
		t.Fatal(err)
	}

	m := scrape(t)
	byTopic := map[string]string{"topic": topic}
	if v, _ := metricValue(m, "SeaweedFS_kafka_messages_in_total", byTopic); v != 25 {
		t.Errorf("messages in: %v, want 25", v)
	}
	if v, _ := metricValue(m, "SeaweedFS_kafka_messages_out_total", byTopic); v != 25 {
		t.Errorf("messages out: %v, want 25 (one consumer read the topic once)", v)
	}
	if v, _ := metricValue(m, "SeaweedFS_kafka_bytes_in_total", byTopic); v <= 0 {
		t.Errorf("bytes in: %v", v)
	}
	byGroup := map[string]string{"consumergroup": group, "topic": topic, "partition": "0"}
	if v, ok := metricValue(m, "kafka_consumergroup_current_offset", byGroup); !ok || v != 10 {
		t.Errorf("committed offset: %v (%v), want 10", v, ok)
	}
	if v, ok := metricValue(m, "kafka_consumergroup_lag", byGroup); !ok || v != 15 {
		t.Errorf("lag: %v (%v), want 25 - 10", v, ok)
	}
	if v, ok := metricValue(m, "kafka_consumergroup_members", map[string]string{"consumergroup": group}); !ok || v != 0 {
		t.Errorf("members of a group of simple commits: %v (%v)", v, ok)
	}
	for _, api := range []string{"Produce", "Fetch", "OffsetCommit", "Metadata"} {
		if v, _ := metricValue(m, "SeaweedFS_kafka_requests_total", map[string]string{"api": api}); v <= 0 {
			t.Errorf("no %s requests counted", api)
		}
		if v, _ := metricValue(m, "SeaweedFS_kafka_request_duration_seconds", map[string]string{"api": api}); v <= 0 {
			t.Errorf("no %s latencies observed", api)
		}
	}
	if v, _ := metricValue(m, "SeaweedFS_kafka_backend_duration_seconds", map[string]string{"call": "AppendDurable"}); v <= 0 {
		t.Error("no durable appends timed")
	}
	if v, _ := metricValue(m, "SeaweedFS_kafka_connections", nil); v < 1 {
		t.Errorf("open connections: %v", v)
	}
	if v, _ := metricValue(m, "SeaweedFS_kafka_groups", nil); v < 1 {
		t.Errorf("groups: %v", v)
	}

	// An error code is counted: a produce to a partition that does not
	// exist.
	before, _ := metricValue(m, "SeaweedFS_kafka_errors_total", map[string]string{"api": "Produce", "error": "UNKNOWN_TOPIC_OR_PARTITION"})
	produceRaw(t, cl, topic, 7, batchOf([]byte("x")))
	after, _ := metricValue(scrape(t), "SeaweedFS_kafka_errors_total", map[string]string{"api": "Produce", "error": "UNKNOWN_TOPIC_OR_PARTITION"})
	if after != before+1 {
		t.Errorf("UNKNOWN_TOPIC_OR_PARTITION counted %v -> %v", before, after)
	}
}

func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// TestReadiness: /health answers while the process lives; /ready is 503
// while the SeaweedFS cluster is stopped and 200 again once it is back.
func TestReadiness(t *testing.T) {
	if code, body := get(gw.monitor + "/health"); code != http.StatusOK {
		t.Fatalf("/health: %d %s", code, body)
	}
	if code, body := get(gw.monitor + "/ready"); code != http.StatusOK {
		t.Fatalf("/ready with the cluster up: %d %s", code, body)
	}
	cluster.stop()
	eventually(t, 60*time.Second, "/ready fails with the cluster stopped", func() error {
		if code, body := get(gw.monitor + "/ready"); code != http.StatusServiceUnavailable {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	if code, body := get(gw.monitor + "/health"); code != http.StatusOK {
		t.Fatalf("/health with the cluster stopped: %d %s", code, body)
	}
	if err := cluster.start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 120*time.Second, "/ready again with the cluster back", func() error {
		if code, body := get(gw.monitor + "/ready"); code != http.StatusOK {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	if err := gw.waitReady(120 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestSigtermMidProduce: SIGTERM while a producer writes with acks=all: the
// gateway answers what is in flight and exits within its shutdown bound
// (10 s for requests, then the streams' flush), and every acknowledged
// record is there after a restart.
func TestSigtermMidProduce(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 2, nil)
	cl := newClient(t, kgo.RecordRetries(0), kgo.ProducerLinger(time.Millisecond), kgo.DisableIdempotentWrite(),
		kgo.MaxProduceRequestsInflightPerBroker(5))
	type at struct {
		p int32
		o int64
	}
	acked := map[at]string{}
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := int32(0); p < 2; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				v := fmt.Sprintf("p%d-%d", p, i)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).First()
				cancel()
				if err == nil {
					mu.Lock()
					acked[at{r.Partition, r.Offset}] = v
					mu.Unlock()
				}
			}
		}()
	}
	eventually(t, 60*time.Second, "records acknowledged", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(acked) < 50 {
			return fmt.Errorf("%d acknowledged", len(acked))
		}
		return nil
	})
	start := time.Now()
	gw.stop() // SIGTERM
	took := time.Since(start)
	close(stop)
	wg.Wait()
	if took > 30*time.Second {
		t.Errorf("the gateway took %v to exit after SIGTERM", took)
	}
	g, err := startGateway(cluster.master, gw.port)
	if err != nil {
		t.Fatal(err)
	}
	gw = g

	mu.Lock()
	defer mu.Unlock()
	ends := map[int32]int64{}
	for k := range acked {
		ends[k.p] = max(ends[k.p], k.o+1)
	}
	total := 0
	for _, n := range ends {
		total += int(n)
	}
	for _, r := range consumeN(t, topic, total) {
		if v, ok := acked[at{r.Partition, r.Offset}]; ok {
			if v != string(r.Value) {
				t.Fatalf("%d/%d holds %q, acknowledged %q", r.Partition, r.Offset, r.Value, v)
			}
			delete(acked, at{r.Partition, r.Offset})
		}
	}
	if len(acked) != 0 {
		t.Fatalf("%d acknowledged records missing after SIGTERM", len(acked))
	}
}
