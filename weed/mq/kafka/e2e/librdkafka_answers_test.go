package e2e

// Kafka's exact answers where librdkafka checks them: each test here
// passes against Apache Kafka 4.4 as it does against the gateway.

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// confluentProducer is a librdkafka producer of the package's gateway.
func confluentProducer(t *testing.T, extra kafka.ConfigMap) *kafka.Producer {
	t.Helper()
	cfg := kafka.ConfigMap{"bootstrap.servers": gw.addr}
	for k, v := range extra {
		cfg[k] = v
	}
	p, err := kafka.NewProducer(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestLibrdkafkaFetchMaxBytes: three partitions of 900 KiB records and a
// consumer whose fetch.max.bytes and receive.message.max.bytes hold one of
// them: every record is read. The gateway once answered two partitions'
// records in one fetch, past fetch.max.bytes; librdkafka closed the
// connection ("Invalid response size") and consumed nothing, for good.
func TestLibrdkafkaFetchMaxBytes(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 3, nil)
	p := confluentProducer(t, kafka.ConfigMap{"linger.ms": 5})
	const perPartition = 2
	value := func(part int32, i int) []byte {
		return append([]byte(fmt.Sprintf("%d-%d-", part, i)), bytes.Repeat([]byte{'v'}, 900<<10)...)
	}
	delivered := make(chan kafka.Event, 3*perPartition)
	for part := int32(0); part < 3; part++ {
		for i := 0; i < perPartition; i++ {
			if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: part}, Value: value(part, i)}, delivered); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < 3*perPartition; i++ {
		select {
		case e := <-delivered:
			if m := e.(*kafka.Message); m.TopicPartition.Error != nil {
				t.Fatalf("delivery: %v", m.TopicPartition.Error)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%d delivered", i)
		}
	}
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": gw.addr, "group.id": "unused-" + topic,
		"enable.auto.commit": false, "fetch.max.bytes": 1_000_000, "max.partition.fetch.bytes": 20_000_000,
		"receive.message.max.bytes": 1_000_512})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var tps []kafka.TopicPartition
	for part := int32(0); part < 3; part++ {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: part, Offset: kafka.OffsetBeginning})
	}
	if err := c.Assign(tps); err != nil {
		t.Fatal(err)
	}
	next := map[int32]int{}
	deadline := time.Now().Add(60 * time.Second)
	for got := 0; got < 3*perPartition; {
		if time.Now().After(deadline) {
			t.Fatalf("read %d of %d records: %v", got, 3*perPartition, next)
		}
		ev := c.Poll(500)
		switch e := ev.(type) {
		case *kafka.Message:
			part := e.TopicPartition.Partition
			if int(e.TopicPartition.Offset) != next[part] || !bytes.Equal(e.Value, value(part, next[part])) {
				t.Fatalf("partition %d: offset %d (%d bytes), want offset %d", part, e.TopicPartition.Offset, len(e.Value), next[part])
			}
			next[part]++
			got++
		case kafka.Error:
			t.Logf("consumer: %v", e) // a response past its limits shows as one; the deadline decides
		}
	}
}

// TestLibrdkafkaRecordErrors: one batch of 100 records to a compacted
// topic, every tenth without a key. The partition refuses the batch and
// names the ten keyless records (KIP-467): librdkafka fails those with
// INVALID_RECORD and the 90 others with _INVALID_DIFFERENT_RECORD, as
// against Kafka; nothing of the batch is stored. (The gateway once failed
// all 100 with INVALID_RECORD.) A batch of keyed records is stored.
func TestLibrdkafkaRecordErrors(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")})
	p := confluentProducer(t, kafka.ConfigMap{"linger.ms": 200, "batch.num.messages": 1000})
	const n = 100
	delivered := make(chan kafka.Event, n)
	for i := 0; i < n; i++ {
		var key []byte
		if i%10 != 0 {
			key = []byte(fmt.Sprint("k", i))
		}
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Key: key, Value: []byte(fmt.Sprint(i))}, delivered); err != nil {
			t.Fatal(err)
		}
	}
	var invalid, different []string
	for i := 0; i < n; i++ {
		select {
		case e := <-delivered:
			m := e.(*kafka.Message)
			var code kafka.ErrorCode
			if ke, ok := m.TopicPartition.Error.(kafka.Error); ok {
				code = ke.Code()
			}
			switch {
			case m.Key == nil && code == kafka.ErrInvalidRecord:
				invalid = append(invalid, string(m.Value))
			case m.Key != nil && code == kafka.ErrInvalidDifferentRecord:
				different = append(different, string(m.Value))
			default:
				t.Errorf("record %s (key %q): %v", m.Value, m.Key, m.TopicPartition.Error)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%d of %d delivery reports", i, n)
		}
	}
	if len(invalid) != 10 || len(different) != 90 {
		t.Fatalf("%d records failed with INVALID_RECORD (%v), %d with _INVALID_DIFFERENT_RECORD", len(invalid), invalid, len(different))
	}
	// Then keyed records only: stored from offset 0.
	for i := 0; i < 5; i++ {
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Key: []byte("k"), Value: []byte(fmt.Sprint("ok", i))}, delivered); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 5; i++ {
		if m := (<-delivered).(*kafka.Message); m.TopicPartition.Error != nil || m.TopicPartition.Offset != kafka.Offset(i) {
			t.Fatalf("keyed record %d: offset %v, %v", i, m.TopicPartition.Offset, m.TopicPartition.Error)
		}
	}
}

// TestLibrdkafkaMaxTimestamp: ListOffsets MAX_TIMESTAMP (KIP-734) names
// the first record with the largest timestamp, which producers choose:
// three records of timestamps T+100, T+400, T+250 in one batch give
// offset 1 (the gateway once answered the last record's), also once a
// record of a smaller timestamp followed, until one of a larger one came.
func TestLibrdkafkaMaxTimestamp(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	p := confluentProducer(t, kafka.ConfigMap{"linger.ms": 100})
	adm, err := kafka.NewAdminClientFromProducer(p)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	produce := func(deltas ...int) {
		t.Helper()
		delivered := make(chan kafka.Event, len(deltas))
		for _, d := range deltas {
			if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0},
				Value: []byte(fmt.Sprint(d)), Timestamp: base.Add(time.Duration(d) * time.Millisecond)}, delivered); err != nil {
				t.Fatal(err)
			}
		}
		for range deltas {
			if m := (<-delivered).(*kafka.Message); m.TopicPartition.Error != nil {
				t.Fatal(m.TopicPartition.Error)
			}
		}
	}
	maxTs := func() (kafka.Offset, int64) {
		t.Helper()
		tp := kafka.TopicPartition{Topic: &topic, Partition: 0}
		res, err := adm.ListOffsets(ctxT(t), map[kafka.TopicPartition]kafka.OffsetSpec{tp: kafka.MaxTimestampOffsetSpec})
		if err != nil {
			t.Fatal(err)
		}
		for got, info := range res.ResultInfos { // keyed by the answer's TopicPartition, offset included
			if *got.Topic == topic && got.Partition == 0 {
				if info.Error.Code() != kafka.ErrNoError {
					t.Fatal(info.Error)
				}
				return info.Offset, info.Timestamp
			}
		}
		t.Fatalf("no answer for the partition: %v", res.ResultInfos)
		return 0, 0
	}
	produce(100, 400, 250)
	for _, c := range []struct {
		then   []int
		offset kafka.Offset
		delta  int
	}{{nil, 1, 400}, {[]int{50}, 1, 400}, {[]int{300, 1000, 1000}, 5, 1000}} {
		if len(c.then) > 0 {
			produce(c.then...)
		}
		off, ts := maxTs()
		if off != c.offset || ts != base.Add(time.Duration(c.delta)*time.Millisecond).UnixMilli() {
			t.Fatalf("after %v: MAX_TIMESTAMP at offset %d, timestamp %d; want offset %d, timestamp T+%d", c.then, off, ts, c.offset, c.delta)
		}
	}
}

// confluentAdmin is a librdkafka admin client of the package's gateway.
func confluentAdmin(t *testing.T) *kafka.AdminClient {
	t.Helper()
	adm, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": gw.addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adm.Close)
	return adm
}

// TestLibrdkafkaTopicConfigs: Kafka 4.4's topic settings that have no
// effect on SeaweedFS storage (flush.ms, flush.messages,
// segment.jitter.ms, preallocate) are taken at creation and by
// IncrementalAlterConfigs and described as set; a name Kafka does not
// know is INVALID_CONFIG. (flush.ms was refused as an unknown config.)
func TestLibrdkafkaTopicConfigs(t *testing.T) {
	adm := confluentAdmin(t)
	topic := newTopic(t)
	res, err := adm.CreateTopics(ctxT(t), []kafka.TopicSpecification{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1,
		Config: map[string]string{"flush.ms": "1000", "preallocate": "true"}}})
	if err != nil || res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("create with flush.ms: %v %v", res, err)
	}
	alter := func(entries ...kafka.ConfigEntry) kafka.Error {
		t.Helper()
		res, err := adm.IncrementalAlterConfigs(ctxT(t), []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic, Config: entries}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0].Error
	}
	set := func(name, value string) kafka.ConfigEntry {
		return kafka.ConfigEntry{Name: name, Value: value, IncrementalOperation: kafka.AlterConfigOpTypeSet}
	}
	if e := alter(set("flush.messages", "10"), set("segment.jitter.ms", "5"), set("flush.ms", "2000")); e.Code() != kafka.ErrNoError {
		t.Fatalf("IncrementalAlterConfigs: %v", e)
	}
	if e := alter(set("no.such.setting", "1")); e.Code() != kafka.ErrInvalidConfig {
		t.Fatalf("an unknown setting: %v", e)
	}
	desc, err := adm.DescribeConfigs(ctxT(t), []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
	if err != nil || desc[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("DescribeConfigs: %v %v", desc, err)
	}
	for name, want := range map[string]string{"flush.ms": "2000", "flush.messages": "10", "segment.jitter.ms": "5", "preallocate": "true"} {
		if c := desc[0].Config[name]; c.Value != want || c.Source != kafka.ConfigSourceDynamicTopic {
			t.Errorf("%s = %q from %v, want %q set on the topic", name, c.Value, c.Source, want)
		}
	}
	if c := desc[0].Config["index.interval.bytes"]; c.Value != "4096" || c.Source != kafka.ConfigSourceDefault {
		t.Errorf("index.interval.bytes = %q from %v, want Kafka's default 4096", c.Value, c.Source)
	}
}

// TestLibrdkafkaReplicaAssignment: CreateTopics with a replica assignment
// naming the gateway creates as many partitions as the assignment has;
// one naming an unknown broker is INVALID_REPLICA_ASSIGNMENT and creates
// nothing, as on Kafka. (Every assignment was refused.)
func TestLibrdkafkaReplicaAssignment(t *testing.T) {
	adm := confluentAdmin(t)
	md, err := adm.GetMetadata(nil, false, 10_000)
	if err != nil || len(md.Brokers) == 0 {
		t.Fatalf("metadata: %v %v", md, err)
	}
	self := md.Brokers[0].ID
	topic := newTopic(t)
	res, err := adm.CreateTopics(ctxT(t), []kafka.TopicSpecification{
		{Topic: topic, NumPartitions: 3, ReplicaAssignment: [][]int32{{self}, {self}, {self}}},
		{Topic: topic + "-unknown", NumPartitions: 2, ReplicaAssignment: [][]int32{{self}, {self + 1000}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Error.Code() != kafka.ErrNoError || res[1].Error.Code() != kafka.ErrInvalidReplicaAssignment {
		t.Fatalf("results %v", res)
	}
	eventually(t, 10*time.Second, "the assigned topic's three partitions", func() error {
		md, err := adm.GetMetadata(&topic, false, 10_000)
		if err != nil {
			return err
		}
		if n := len(md.Topics[topic].Partitions); n != 3 {
			return fmt.Errorf("%d partitions", n)
		}
		return nil
	})
	unknown := topic + "-unknown"
	listed, err := kadm.NewClient(newClient(t)).ListTopics(ctxT(t), unknown)
	if err != nil {
		t.Fatal(err)
	}
	if d := listed[unknown]; !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("the topic of a refused assignment: %+v", d)
	}
}

// TestLibrdkafkaBurstInOrder: librdkafka's default producer (not
// idempotent, up to a million requests in flight) writes a burst of
// 250,000 records of 1,000 bytes to one partition as fast as it can, and a
// consumer reads each at its own offset, in the order produced. Kafka keeps
// that order; the gateway once refused batches while the partition's
// segments were being written (its tail at the cap) and librdkafka's
// retries put them after later ones (librdkafka's 0038).
func TestLibrdkafkaBurstInOrder(t *testing.T) {
	t.Parallel() // its own topic on the shared gateway
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	p := confluentProducer(t, kafka.ConfigMap{"queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 1 << 20})
	const n = 250_000
	value := func(i int) []byte {
		v := make([]byte, 1000)
		copy(v, fmt.Sprintf("%d-", i))
		return v
	}
	for i := 0; i < n; i++ {
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: value(i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var failed atomic.Int64
	go func() {
		for e := range p.Events() {
			if m, ok := e.(*kafka.Message); ok && m.TopicPartition.Error != nil {
				failed.Add(1)
			}
		}
	}()
	if left := p.Flush(120_000); left > 0 {
		t.Fatalf("%d records not delivered in 120 s", left)
	}
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d records failed", n)
	}
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": gw.addr, "group.id": "unused-" + topic, "enable.auto.commit": false})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(120 * time.Second)
	for next := 0; next < n; {
		if time.Now().After(deadline) {
			t.Fatalf("read %d of %d records in 120 s", next, n)
		}
		switch e := c.Poll(500).(type) {
		case *kafka.Message:
			if int(e.TopicPartition.Offset) != next || !bytes.Equal(e.Value, value(next)) {
				t.Fatalf("offset %d holds %q, want record %d at offset %d", e.TopicPartition.Offset, e.Value[:12], next, next)
			}
			next++
		case kafka.Error:
			t.Logf("consumer: %v", e)
		}
	}
}
