package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFollowerFetching: gateways in racks a, b and c beside the package's
// (no rack). A consumer with client.rack=b, read_committed, reading a
// topic whose partitions the four gateways lead, gets every committed
// record once, in order, none of the aborted transactions', while a
// producer writes; every record byte it reads is served by the rack-b
// gateway (from the segments in SeaweedFS, the tail from the leaders),
// none by the other gateways; so are librdkafka's with client.rack=b. A
// consumer without client.rack whose client id says "zone=b" is served
// by the rack-b gateway too.
func TestFollowerFetching(t *testing.T) {
	racks := map[string]*gatewayProc{}
	var extra []*gatewayProc
	for _, rack := range []string{"a", "b", "c"} {
		p, err := startNamedGateway("gateway-rack-"+rack, cluster.master, 0, "-rack="+rack, "-metrics.partitions=^testfollowerfetching-")
		if err != nil {
			t.Fatal(err)
		}
		racks[rack] = p
		extra = append(extra, p)
	}
	t.Cleanup(func() {
		for _, p := range extra {
			p.stop()
		}
		eventually(t, 30*time.Second, "the package's gateway alone again", func() error {
			if n := len(metadataFrom(t, gw, "").Brokers); n != 1 {
				return fmt.Errorf("%d brokers", n)
			}
			return nil
		})
		time.Sleep(4 * time.Second) // the settle time: it serves what they led
	})
	all := append([]*gatewayProc{gw}, extra...)
	var seeds []string
	for _, p := range all {
		seeds = append(seeds, p.addr)
	}
	rackB := racks["b"]
	eventually(t, 30*time.Second, "four gateways in every gateway's metadata", func() error {
		for _, p := range all {
			md := metadataFrom(t, p, "")
			if len(md.Brokers) != 4 {
				return fmt.Errorf("%s lists %d brokers", p.addr, len(md.Brokers))
			}
			for _, b := range md.Brokers {
				if fmt.Sprintf("%s:%d", b.Host, b.Port) == rackB.addr && (b.Rack == nil || *b.Rack != "b") {
					return fmt.Errorf("%s names %s's rack %v", p.addr, rackB.addr, b.Rack)
				}
			}
		}
		return nil
	})
	// A topic the rack-b gateway leads no partition of: every read it
	// serves is a follower's (leaders follow from the topic's name). Four
	// partitions: about a third of names qualify (eight: a tenth, and 30
	// names in a row failed one run in 25).
	const partitions = 4
	var topic string
	var leaders map[int32]string
	for attempt := 0; topic == ""; attempt++ {
		name := newTopic(t)
		createTopic(t, name, partitions, nil)
		eventually(t, 30*time.Second, "the gateways agree on the leaders", func() error {
			want, l := leadersFrom(t, all[0], name)
			for _, p := range all[1:] {
				if got, _ := leadersFrom(t, p, name); got != want {
					return fmt.Errorf("%s says %s; %s says %s", all[0].addr, want, p.addr, got)
				}
			}
			leaders = l
			return nil
		})
		if !slices.Contains(slices.Collect(maps.Values(leaders)), rackB.addr) {
			topic = name
		} else if attempt == 30 {
			t.Fatalf("30 topics with partitions led by the rack-b gateway")
		}
	}
	t.Logf("leaders %v; rack b at %s", leaders, rackB.addr)

	// Committed and aborted transactions over every partition.
	want := map[int32][]string{}
	txnCl := newClient(t, kgo.SeedBrokers(seeds...), kgo.TransactionalID(topic+"-txn"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for txn := 0; txn < 12; txn++ {
		if err := txnCl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		commit := txn%3 != 2
		var recs []*kgo.Record
		for i := 0; i < 4*partitions; i++ {
			p := int32(i % partitions)
			v := fmt.Sprintf("txn%d-%d", txn, i)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
			if commit {
				want[p] = append(want[p], v)
			}
		}
		if err := txnCl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txnCl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	// Until the segments hold them (the leaders' tails go to segments
	// after a few seconds): DescribeLogDirs counts segments only.
	adm := kadm.NewClient(newClient(t, kgo.SeedBrokers(seeds...)))
	eventually(t, 60*time.Second, "the records in segments", func() error {
		set := kadm.TopicsSet{}
		for p := int32(0); p < partitions; p++ {
			set.Add(topic, p)
		}
		dirs, err := adm.DescribeAllLogDirs(ctx, set)
		if err != nil {
			return err
		}
		stored := map[int32]bool{}
		dirs.Each(func(d kadm.DescribedLogDir) {
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				if p.Topic == topic && p.Size > 0 {
					stored[p.Partition] = true
				}
			})
		})
		if len(stored) != partitions {
			return fmt.Errorf("%d partitions with segments", len(stored))
		}
		return nil
	})

	outBefore := map[string]float64{}
	for _, p := range all {
		outBefore[p.addr] = metricSum(scrapeFrom(t, p), "SeaweedFS_kafka_bytes_out_total")
	}
	segmentsBefore, _ := metricValue(scrapeFrom(t, rackB), "SeaweedFS_kafka_follower_fetch_bytes_total", map[string]string{"source": "segments"})

	// A producer writes while the consumer reads.
	var wg sync.WaitGroup
	var mu sync.Mutex
	live := map[int32][]string{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		pcl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Error(err)
			return
		}
		defer pcl.Close()
		for i := 0; i < 400; i++ {
			p := int32(i % partitions)
			v := fmt.Sprintf("live-%d", i)
			if err := pcl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			live[p] = append(live[p], v)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	consumer := newClient(t, kgo.SeedBrokers(rackB.addr), kgo.Rack("b"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[int32][]string{}
	total := func(m map[int32][]string) int {
		n := 0
		for _, vs := range m {
			n += len(vs)
		}
		return n
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for produced := false; ; {
		select {
		case <-done:
			produced = true
		default:
		}
		mu.Lock()
		expected := total(want) + total(live)
		mu.Unlock()
		if produced && total(got) >= expected {
			break
		}
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		fs := consumer.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", total(got), expected)
		}
		fs.EachError(func(topic string, p int32, err error) {
			if pctx.Err() == nil {
				t.Errorf("consuming %s-%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], string(r.Value)) })
	}
	for p := int32(0); p < partitions; p++ {
		if w := append(slices.Clone(want[p]), live[p]...); !slices.Equal(got[p], w) {
			t.Errorf("partition %d (led by %s): read %d records, want %d in order\n got %v\nwant %v", p, leaders[p], len(got[p]), len(w), got[p], w)
		}
	}
	assertServedByRackB := func(what string) {
		t.Helper()
		for _, p := range all {
			out := metricSum(scrapeFrom(t, p), "SeaweedFS_kafka_bytes_out_total") - outBefore[p.addr]
			if p == rackB && out <= 0 {
				t.Errorf("%s: the rack-b gateway served no record bytes", what)
			}
			if p != rackB && out != 0 {
				t.Errorf("%s: %s, not in rack b, served %.0f record bytes", what, p.addr, out)
			}
		}
	}
	assertServedByRackB("client.rack=b")
	if segments, _ := metricValue(scrapeFrom(t, rackB), "SeaweedFS_kafka_follower_fetch_bytes_total", map[string]string{"source": "segments"}); segments <= segmentsBefore {
		t.Errorf("the rack-b gateway read nothing of other gateways' partitions from the segments")
	}

	// The client id's zone, without client.rack, read_uncommitted: the
	// aborted transactions' records too.
	all2 := 0
	for _, vs := range want {
		all2 += len(vs)
	}
	all2 += 4 * partitions * 4 // the four aborted transactions
	all2 += total(live)
	zoned := newClient(t, kgo.SeedBrokers(gw.addr), kgo.ClientID("follower-e2e,zone=b"),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	n := 0
	for n < all2 {
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		fs := zoned.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("zone=b: read %d of %d records", n, all2)
		}
		n += fs.NumRecords()
	}
	if n != all2 {
		t.Errorf("zone=b: read %d records, want %d", n, all2)
	}
	assertServedByRackB("client id zone=b")
	fb := scrapeFrom(t, rackB)
	segments, _ := metricValue(fb, "SeaweedFS_kafka_follower_fetch_bytes_total", map[string]string{"source": "segments"})
	tail, _ := metricValue(fb, "SeaweedFS_kafka_follower_fetch_bytes_total", map[string]string{"source": "leader"})
	sent := 0.0
	for _, p := range all {
		v, _ := metricValue(scrapeFrom(t, p), "SeaweedFS_kafka_replica_bytes_out_total", nil)
		sent += v
	}
	// librdkafka with client.rack=b, read_committed: the committed
	// records, each partition in order, all from the rack-b gateway.
	rk, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": gw.addr, "group.id": "unused-" + topic, "client.rack": "b",
		"enable.auto.commit": false, "isolation.level": "read_committed"})
	if err != nil {
		t.Fatal(err)
	}
	defer rk.Close()
	var assign []kafka.TopicPartition
	for p := int32(0); p < partitions; p++ {
		assign = append(assign, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: kafka.OffsetBeginning})
	}
	if err := rk.Assign(assign); err != nil {
		t.Fatal(err)
	}
	rkGot := map[int32][]string{}
	for deadline := time.Now().Add(60 * time.Second); total(rkGot) < total(want)+total(live) && time.Now().Before(deadline); {
		ev := rk.Poll(200)
		switch e := ev.(type) {
		case *kafka.Message:
			rkGot[e.TopicPartition.Partition] = append(rkGot[e.TopicPartition.Partition], string(e.Value))
		case kafka.Error:
			t.Logf("librdkafka: %v", e)
		}
	}
	for p := int32(0); p < partitions; p++ {
		if w := append(slices.Clone(want[p]), live[p]...); !slices.Equal(rkGot[p], w) {
			t.Errorf("librdkafka, partition %d: read %d records, want %d in order", p, len(rkGot[p]), len(w))
		}
	}
	assertServedByRackB("librdkafka client.rack=b")

	// Each rack gateway's partition metrics: the partitions it leads,
	// with the end offsets ListOffsets gives and their segments' size.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range extra {
		fam := scrapeFrom(t, p)
		for part, leader := range leaders {
			labels := map[string]string{"topic": topic, "partition": fmt.Sprint(part)}
			end, ok := metricValue(fam, "SeaweedFS_kafka_partition_log_end_offset", labels)
			size, _ := metricValue(fam, "SeaweedFS_kafka_partition_size_bytes", labels)
			if leader != p.addr {
				if ok {
					t.Errorf("%s exports partition %d, led by %s", p.addr, part, leader)
				}
				continue
			}
			if o, _ := ends.Lookup(topic, part); !ok || int64(end) != o.Offset || size <= 0 {
				t.Errorf("%s: partition %d's log end offset %v (exported %v), ListOffsets %d; size %v", p.addr, part, end, ok, o.Offset, size)
			}
		}
	}
	t.Logf("rack b served %.0f bytes of other gateways' partitions from the segments, %.0f from the leaders' tails; the leaders sent %.0f", segments, tail, sent)
}

// metricSum is the sum of a counter family's series.
func metricSum(families map[string]*dto.MetricFamily, name string) float64 {
	f := families[name]
	if f == nil {
		return 0
	}
	sum := 0.0
	for _, m := range f.Metric {
		if m.Counter != nil {
			sum += m.Counter.GetValue()
		}
	}
	return sum
}
