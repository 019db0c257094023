package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicConfig is a topic setting's value and source as DescribeConfigs
// shows it.
func topicConfig(t *testing.T, adm *kadm.Client, topic, name string) (string, string) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			return c.MaybeValue(), c.Source.String()
		}
	}
	t.Fatalf("%s has no setting %s", topic, name)
	return "", ""
}

// TestAlterConfigs: a topic's settings are changed with
// IncrementalAlterConfigs and AlterConfigs, shown by DescribeConfigs with
// their source, survive a gateway restart, and what SeaweedMQ cannot
// honour is refused with INVALID_CONFIG.
func TestAlterConfigs(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	adm := kadm.NewClient(newClient(t))
	if v, src := topicConfig(t, adm, topic, "retention.ms"); v != "-1" || src != "DEFAULT_CONFIG" {
		t.Fatalf("retention.ms before: %s (%s)", v, src)
	}
	set := func(name, value string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: kmsg.StringPtr(value)}
	}
	resps, err := adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{set("retention.ms", "3600000"), set("max.message.bytes", "2000000")}, topic)
	if err != nil || resps[0].Err != nil {
		t.Fatalf("incremental alter: %v %+v", err, resps)
	}
	restartGateway(t)
	adm = kadm.NewClient(newClient(t))
	for name, want := range map[string]string{"retention.ms": "3600000", "max.message.bytes": "2000000"} {
		if v, src := topicConfig(t, adm, topic, name); v != want || src != "DYNAMIC_TOPIC_CONFIG" {
			t.Errorf("%s after a restart: %s (%s), want %s set on the topic", name, v, src, want)
		}
	}

	// DELETE goes back to the default; AlterConfigs replaces every setting.
	resps, err = adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, topic)
	if err != nil || resps[0].Err != nil {
		t.Fatalf("delete retention.ms: %v %+v", err, resps)
	}
	if v, src := topicConfig(t, adm, topic, "retention.ms"); v != "-1" || src != "DEFAULT_CONFIG" {
		t.Errorf("retention.ms deleted: %s (%s)", v, src)
	}
	resps, err = adm.AlterTopicConfigsState(ctxT(t), []kadm.AlterConfig{{Name: "segment.ms", Value: kmsg.StringPtr("86400000")}}, topic)
	if err != nil || resps[0].Err != nil {
		t.Fatalf("alter (replace): %v %+v", err, resps)
	}
	if v, src := topicConfig(t, adm, topic, "max.message.bytes"); src != "DEFAULT_CONFIG" {
		t.Errorf("max.message.bytes after a replacing AlterConfigs: %s (%s)", v, src)
	}
	if v, _ := topicConfig(t, adm, topic, "segment.ms"); v != "86400000" {
		t.Errorf("segment.ms: %s", v)
	}

	// message.timestamp.type=LogAppendTime: what is produced from then
	// on carries the time the log appended it, of that timestamp type,
	// as franz-go and librdkafka read it.
	resps, err = adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{set("message.timestamp.type", "LogAppendTime")}, topic)
	if err != nil || resps[0].Err != nil {
		t.Fatalf("message.timestamp.type=LogAppendTime: %v %+v", err, resps)
	}
	before := time.Now().UnixMilli()
	produceSync(t, newClient(t, kgo.DefaultProduceTopic(topic)), &kgo.Record{Value: []byte("stamped"), Timestamp: time.UnixMilli(1_000_000_000_000)})
	after := time.Now().UnixMilli()
	end := listEndVia(t, newClient(t), topic, 0)
	reader := newClient(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(end - 1)}}))
	pctx, pcancel := context.WithTimeout(ctxT(t), 30*time.Second)
	fetched := reader.PollRecords(pctx, 1)
	pcancel()
	if len(fetched.Records()) != 1 {
		t.Fatalf("franz-go read %d records at offset %d: %v", len(fetched.Records()), end-1, fetched.Errors())
	}
	got := fetched.Records()[0]
	if ts := got.Timestamp.UnixMilli(); string(got.Value) != "stamped" || got.Attrs.TimestampType() != 1 || ts < before || ts > after {
		t.Errorf("franz-go read %q with timestamp type %d at %d, produced between %d and %d", got.Value, got.Attrs.TimestampType(), ts, before, after)
	}
	rk, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": gw.addr, "group.id": "unused-" + topic, "enable.auto.commit": false})
	if err != nil {
		t.Fatal(err)
	}
	defer rk.Close()
	if err := rk.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.Offset(end - 1)}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatal("librdkafka read nothing")
		}
		if m, ok := rk.Poll(200).(*kafka.Message); ok {
			if ts := m.Timestamp.UnixMilli(); string(m.Value) != "stamped" || m.TimestampType != kafka.TimestampLogAppendTime || ts < before || ts > after {
				t.Errorf("librdkafka read %q with timestamp type %v at %d", m.Value, m.TimestampType, ts)
			}
			break
		}
	}

	// Settings of nothing.
	resps, err = adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{set("no.such.setting", "1")}, topic)
	if err != nil || !errors.Is(resps[0].Err, kerr.InvalidConfig) {
		t.Errorf("an unknown setting: %v %+v", err, resps)
	}
	resps, err = adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{set("retention.ms", "1")}, topic+"-missing")
	if err == nil && (len(resps) == 0 || !errors.Is(resps[0].Err, kerr.UnknownTopicOrPartition)) {
		t.Errorf("altering a missing topic: %+v", resps)
	}
}

// TestPartitionAdmin: CreatePartitions to as many partitions is refused
// with Kafka's message; OffsetForLeaderEpoch and ElectLeaders answer as for a partition with one
// leader epoch and one leader.
func TestPartitionAdmin(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 2, nil)
	cl := newClient(t)
	adm := kadm.NewClient(cl)
	cp, err := adm.UpdatePartitions(ctxT(t), 2, topic)
	if err != nil {
		t.Fatal(err)
	}
	if r := cp[topic]; !errors.Is(r.Err, kerr.InvalidPartitions) || !strings.Contains(r.ErrMessage, "already has 2 partitions") {
		t.Errorf("CreatePartitions: %v %q", r.Err, r.ErrMessage)
	}
	if d, _ := adm.ListTopics(ctxT(t), topic); len(d[topic].Partitions) != 2 {
		t.Errorf("partitions after the refusal: %d", len(d[topic].Partitions))
	}

	produceRaw(t, cl, topic, 0, batchOf([]byte("a"), []byte("b"), []byte("c")))
	// The current leader epoch, as Metadata gives it.
	md, err := adm.Metadata(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	cur := md.Topics[topic].Partitions[0].LeaderEpoch
	if cur < 0 {
		t.Fatalf("leader epoch %d in metadata", cur)
	}
	ask := func(current int32, epochs ...int32) []kmsg.OffsetForLeaderEpochResponseTopicPartition {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		for _, epoch := range epochs {
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.LeaderEpoch, rp.CurrentLeaderEpoch = 0, epoch, current
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxT(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions
	}
	// Nothing is ever truncated: every epoch up to the current one ends at
	// the partition's end; a later one is unknown.
	ps := ask(cur, 0, cur, cur+1)
	if ps[0].ErrorCode != 0 || ps[0].LeaderEpoch != 0 || ps[0].EndOffset != 3 {
		t.Errorf("epoch 0: %+v, want epoch 0 ending at 3", ps[0])
	}
	if ps[1].ErrorCode != 0 || ps[1].LeaderEpoch != cur || ps[1].EndOffset != 3 {
		t.Errorf("epoch %d: %+v, want it ending at 3", cur, ps[1])
	}
	if ps[2].ErrorCode != 0 || ps[2].LeaderEpoch != -1 || ps[2].EndOffset != -1 {
		t.Errorf("epoch %d: %+v, want unknown (-1, -1)", cur+1, ps[2])
	}
	if ps := ask(cur+1, 0); ps[0].ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Errorf("a client ahead of the current epoch: %v, want UNKNOWN_LEADER_EPOCH", kerr.ErrorForCode(ps[0].ErrorCode))
	}

	var set kadm.TopicsSet
	set.Add(topic, 0, 1)
	er, err := adm.ElectLeaders(ctxT(t), kadm.ElectPreferredReplica, set)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		if r := er[topic][p]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
			t.Errorf("ElectLeaders partition %d: %v", p, r.Err)
		}
	}
}

// TestDeleteRecords: DeleteRecords moves the log start offset up: earlier
// offsets are out of range, a consumer from the start begins there, and
// producing carries on at the end; it survives a gateway restart.
func TestDeleteRecords(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	cl := newClient(t)
	var recs []*kgo.Record
	for i := 0; i < 10; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("r%d", i))})
	}
	produceSync(t, cl, recs...)
	adm := kadm.NewClient(cl)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 4})
	res, err := adm.DeleteRecords(ctxT(t), offs)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup(topic, 0); r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("DeleteRecords: %+v", r)
	}
	restartGateway(t)
	cl = newClient(t)
	adm = kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup(topic, 0); o.Offset != 4 {
		t.Errorf("log start after a restart: %+v", o)
	}
	got := consumeN(t, topic, 6)
	if got[0].Offset != 4 || string(got[0].Value) != "r4" {
		t.Errorf("a consumer from the start begins at %d (%q)", got[0].Offset, got[0].Value)
	}
	// An offset below the log start is out of range.
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes = 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, topicID(t, cl, topic)
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = 0, 2, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	fr, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if p := fr.Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Errorf("fetch at 2: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	// Past the high watermark: out of range; producing goes on at 10.
	offs = kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 11})
	if res, err := adm.DeleteRecords(ctxT(t), offs); err == nil {
		if r, _ := res.Lookup(topic, 0); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
			t.Errorf("DeleteRecords past the end: %+v", r)
		}
	}
	produceSync(t, cl, &kgo.Record{Topic: topic, Value: []byte("r10")})
	if got := consumeN(t, topic, 7); got[6].Offset != 10 {
		t.Errorf("the next record is at %d", got[6].Offset)
	}
}

// TestRetentionBytes: a partition of three log segments whose topic then
// sets retention.bytes to the size of the newer two loses its oldest
// segment, as Kafka removes it: the log start moves up to the first
// record of the second, a consumer from the start begins there with the
// records as produced, and its size is that of the two. DeleteRecords up
// to the third segment frees the second's space too; producing goes on
// at the end.
func TestRetentionBytes(t *testing.T) {
	t.Parallel() // on the shared gateway, touching only what it makes: beside the others at the end
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	cl := newClient(t, kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	size := func() int64 {
		var set kadm.TopicsSet
		set.Add(topic, 0)
		all, err := adm.DescribeAllLogDirs(ctxT(t), set)
		if err != nil {
			t.Fatal(err)
		}
		for _, dirs := range all {
			for _, d := range dirs {
				return d.Topics[topic][0].Size
			}
		}
		return 0
	}
	// Three produces, each flushed before the next: three segments of
	// 100 records each.
	var sizes []int64
	for s := 0; s < 3; s++ {
		var recs []*kgo.Record
		for i := 0; i < 100; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(make([]byte, 0, 1000), "r%d-%0990d", s*100+i, 0)})
		}
		produceSync(t, cl, recs...)
		before := int64(0)
		if len(sizes) > 0 {
			before = sizes[len(sizes)-1]
		}
		eventually(t, 30*time.Second, fmt.Sprintf("segment %d written", s+1), func() error {
			if n := size(); n <= before {
				return fmt.Errorf("size %d", n)
			}
			return nil
		})
		sizes = append(sizes, size())
	}
	keep := sizes[2] - sizes[0] // the second and third segments
	resps, err := adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.bytes", Value: kmsg.StringPtr(fmt.Sprint(keep))}}, topic)
	if err != nil || resps[0].Err != nil {
		t.Fatalf("set retention.bytes: %v %+v", err, resps)
	}
	eventually(t, 30*time.Second, "the oldest segment removed", func() error {
		starts, err := adm.ListStartOffsets(ctxT(t), topic)
		if err != nil {
			return err
		}
		if o, _ := starts.Lookup(topic, 0); o.Offset != 100 {
			return fmt.Errorf("log start %d", o.Offset)
		}
		return nil
	})
	if n := size(); n != keep {
		t.Errorf("the partition holds %d bytes, want the newer two segments' %d", n, keep)
	}
	got := consumeN(t, topic, 200)
	for i, r := range got {
		if want := fmt.Sprintf("r%d-", 100+i); r.Offset != int64(100+i) || !strings.HasPrefix(string(r.Value), want) {
			t.Fatalf("record %d from the start: offset %d, %.8q, want offset %d, %q...", i, r.Offset, r.Value, 100+i, want)
		}
	}

	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 200})
	if res, err := adm.DeleteRecords(ctxT(t), offs); err != nil {
		t.Fatal(err)
	} else if r, _ := res.Lookup(topic, 0); r.Err != nil || r.LowWatermark != 200 {
		t.Fatalf("DeleteRecords: %+v", r)
	}
	eventually(t, 30*time.Second, "the segment below the log start removed", func() error {
		if n := size(); n != sizes[2]-sizes[1] {
			return fmt.Errorf("the partition holds %d bytes, want the newest segment's %d", n, sizes[2]-sizes[1])
		}
		return nil
	})
	if got := consumeN(t, topic, 100); got[0].Offset != 200 || got[99].Offset != 299 {
		t.Errorf("a consumer from the start reads offsets %d to %d, want 200 to 299", got[0].Offset, got[99].Offset)
	}
	produceSync(t, cl, &kgo.Record{Topic: topic, Value: []byte("r300")})
	if o := listEndVia(t, cl, topic, 0); o != 301 {
		t.Errorf("the end after one more record: %d", o)
	}
}

// TestDescribeLogDirs: one log directory with every partition of a topic
// and its size, which grows once records are flushed.
func TestDescribeLogDirs(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 2, nil)
	// Uncompressed: a partition's size is what its batches take stored,
	// as they were produced.
	cl := newClient(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	produceSync(t, cl, &kgo.Record{Topic: topic, Partition: 0, Value: make([]byte, 5000)})
	adm := kadm.NewClient(cl)
	var set kadm.TopicsSet
	set.Add(topic, 0, 1)
	eventually(t, 30*time.Second, "partition 0 has a size", func() error {
		all, err := adm.DescribeAllLogDirs(ctxT(t), set)
		if err != nil {
			return err
		}
		if len(all) != 1 {
			return fmt.Errorf("%d brokers", len(all))
		}
		for _, dirs := range all {
			d, ok := dirs["/topics/kafka"]
			if !ok || d.Err != nil || len(dirs) != 1 {
				return fmt.Errorf("dirs %+v", dirs)
			}
			ps := d.Topics[topic]
			if len(ps) != 2 {
				return fmt.Errorf("%d partitions listed", len(ps))
			}
			if ps[0].Size < 5000 || ps[1].Size != 0 {
				return fmt.Errorf("sizes %d and %d", ps[0].Size, ps[1].Size)
			}
		}
		return nil
	})
}

// DeleteRecords and AlterConfigs each rewrite the topic's settings file:
// run at once, on two connections, neither loses the other's change — a
// log start offset never moves back, and both settings are kept.
func TestConcurrentSettingChanges(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	cl := newClient(t)
	var recs []*kgo.Record
	for i := 0; i < 60; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))})
	}
	produceSync(t, cl, recs...)
	a, b := kadm.NewClient(newClient(t)), kadm.NewClient(newClient(t))
	done := make(chan error, 2)
	go func() {
		for i := int64(1); i <= 50; i++ {
			offs := kadm.Offsets{}
			offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: i})
			res, err := a.DeleteRecords(ctxT(t), offs)
			if err == nil {
				err = res.Error()
			}
			if err != nil {
				done <- fmt.Errorf("delete records before %d: %w", i, err)
				return
			}
		}
		done <- nil
	}()
	go func() {
		for j := 0; j < 50; j++ {
			key := []string{"retention.ms", "max.message.bytes"}[j%2]
			v := fmt.Sprint(2000000 + j)
			res, err := b.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: &v}}, topic)
			if err == nil {
				_, err = res.On(topic, nil)
			}
			if err != nil {
				done <- fmt.Errorf("set %s: %w", key, err)
				return
			}
		}
		done <- nil
	}()
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	starts, err := a.ListStartOffsets(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup(topic, 0); o.Offset != 50 {
		t.Fatalf("log start %d after records before 50 were deleted", o.Offset)
	}
	for key, want := range map[string]string{"retention.ms": "2000048", "max.message.bytes": "2000049"} {
		if v, _ := topicConfig(t, a, topic, key); v != want {
			t.Errorf("%s = %s, want %s", key, v, want)
		}
	}
}
