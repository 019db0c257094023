package protocol_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// Consumers of compressed topics get about the bytes that were produced:
// gzip, lz4, zstd and snappy batches go out as the producers compressed
// them, counted by the gateway's byte metrics. They once came back
// uncompressed, several times larger.
func TestCompressedFetchBytesNearProduced(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	for _, c := range []struct {
		name  string
		codec kgo.CompressionCodec
	}{{"gzip", kgo.GzipCompression()}, {"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()}, {"snappy", kgo.SnappyCompression()}} {
		topic := "compressed-" + c.name
		g.topic(t, topic, 2, nil)
		p := client(t, g.addr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(c.codec), kgo.ProducerLinger(0))
		ctx := ctxFor(t)
		const n = 4000
		for i := 0; i < n; i += 200 {
			var rs []*kgo.Record
			for j := i; j < i+200; j++ {
				rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprint("user-", j%13)),
					Value: []byte(fmt.Sprintf(`{"order":%d,"status":"shipped","items":["book","lamp"],"note":"leave it at the door"}`, j))})
			}
			if err := p.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		got := consume(t, g.addr, topic, n)
		if len(got) != n {
			t.Fatalf("%s: %d records", c.name, len(got))
		}
		// Each record once, its key and value, in order within a partition.
		seen := map[string]bool{}
		next := map[int32]int64{}
		last := map[int32]int{}
		for _, r := range got {
			var j int
			if _, err := fmt.Sscanf(string(r.Value), `{"order":%d,`, &j); err != nil || seen[string(r.Value)] {
				t.Fatalf("%s: record %q read twice or not produced", c.name, r.Value)
			}
			seen[string(r.Value)] = true
			if prev, ok := last[r.Partition]; string(r.Key) != fmt.Sprint("user-", j%13) || r.Offset != next[r.Partition] || (ok && j <= prev) {
				t.Fatalf("%s: partition %d offset %d (want %d) holds %q=%q after order %d", c.name, r.Partition, r.Offset, next[r.Partition], r.Key, r.Value, last[r.Partition])
			}
			next[r.Partition], last[r.Partition] = r.Offset+1, j
		}
		label := metrics.Topic(topic)
		in, out := testutil.ToFloat64(metrics.BytesIn.WithLabelValues(label)), testutil.ToFloat64(metrics.BytesOut.WithLabelValues(label))
		t.Logf("%s: %.0f bytes produced, %.0f fetched (%.2fx)", c.name, in, out, out/in)
		if out > 1.2*in {
			t.Errorf("%s: %.0f bytes fetched for %.0f produced, over 1.2x", c.name, out, in)
		}
	}
}
