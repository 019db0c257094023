package e2e

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// saramaTopicConfigs describes a topic's settings with sarama's
// ClusterAdmin, by name.
func saramaTopicConfigs(t *testing.T, admin sarama.ClusterAdmin, topic string) map[string]sarama.ConfigEntry {
	t.Helper()
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatalf("DescribeConfig %s: %v", topic, err)
	}
	byName := map[string]sarama.ConfigEntry{}
	for _, e := range entries {
		if _, dup := byName[e.Name]; dup {
			t.Errorf("DescribeConfig %s: %s listed twice", topic, e.Name)
		}
		byName[e.Name] = e
	}
	return byName
}

// checkSaramaConfig checks one setting's value and whether it is the
// default.
func checkSaramaConfig(t *testing.T, what string, cs map[string]sarama.ConfigEntry, name, value string, isDefault bool) {
	t.Helper()
	source := sarama.SourceTopic
	if isDefault {
		source = sarama.SourceDefault
	}
	c, ok := cs[name]
	if !ok {
		t.Errorf("%s: no %s", what, name)
		return
	}
	if c.Value != value || c.Default != isDefault || c.Source != source || c.ReadOnly || c.Sensitive {
		t.Errorf("%s: %s = %q (default %v, source %v, read-only %v, sensitive %v), want %q (default %v, source %v)",
			what, name, c.Value, c.Default, c.Source, c.ReadOnly, c.Sensitive, value, isDefault, source)
	}
}

// TestSaramaClusterAdmin: what an operator does with sarama's ClusterAdmin:
// creates a topic with a setting, finds it with its partitions, leaders and
// settings, changes settings (AlterConfig replaces them all,
// IncrementalAlterConfig one by one), is refused more partitions, deletes
// records up to an offset, sets, reads and deletes a group's offsets and the
// group, and deletes the topic.
func TestSaramaClusterAdmin(t *testing.T) {
	topic := newTopic(t)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.ClientID = "e2e-sarama-cluster-admin"
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	client, err := sarama.NewClient([]string{gw.addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		client.Close() //nolint:errcheck
		t.Fatal(err)
	}
	defer admin.Close() // closes client too

	// The cluster: this gateway alone, its own controller.
	brokers, controllerID, err := admin.DescribeCluster()
	if err != nil {
		t.Fatalf("DescribeCluster: %v", err)
	}
	if len(brokers) != 1 || brokers[0].Addr() != gw.addr {
		var addrs []string
		for _, b := range brokers {
			addrs = append(addrs, fmt.Sprintf("%d@%s", b.ID(), b.Addr()))
		}
		t.Fatalf("DescribeCluster brokers %v, want the gateway at %s", addrs, gw.addr)
	}
	brokerID := brokers[0].ID()
	if controllerID != brokerID {
		t.Errorf("DescribeCluster controller %d, want the broker %d", controllerID, brokerID)
	}
	if c, err := admin.Controller(); err != nil || c.ID() != brokerID {
		t.Errorf("Controller: %v, want broker %d", err, brokerID)
	}

	// CreateTopic with a setting; a second time it already exists.
	retention := "86400000"
	detail := &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &retention}}
	if err := admin.CreateTopic(topic, detail, false); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	err = admin.CreateTopic(topic, detail, false)
	var topicErr *sarama.TopicError
	if !errors.As(err, &topicErr) || topicErr.Err != sarama.ErrTopicAlreadyExists {
		t.Errorf("CreateTopic again: %v, want TOPIC_ALREADY_EXISTS", err)
	}

	// ListTopics: partitions, replicas and the settings that are not defaults.
	listed, err := admin.ListTopics()
	if err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	d, ok := listed[topic]
	if !ok {
		t.Fatalf("ListTopics does not list %s", topic)
	}
	if d.NumPartitions != 3 || d.ReplicationFactor != 1 {
		t.Errorf("ListTopics: %d partitions, replication %d, want 3 and 1", d.NumPartitions, d.ReplicationFactor)
	}
	for p := int32(0); p < 3; p++ {
		if r := d.ReplicaAssignment[p]; !slices.Equal(r, []int32{brokerID}) {
			t.Errorf("ListTopics: partition %d replicas %v, want [%d]", p, r, brokerID)
		}
	}
	got := map[string]string{}
	for k, v := range d.ConfigEntries {
		got[k] = *v
	}
	if want := map[string]string{"retention.ms": retention}; !maps.Equal(got, want) {
		t.Errorf("ListTopics settings %v, want %v", got, want)
	}

	// DescribeTopics: three partitions, each led by the one broker.
	metas, err := admin.DescribeTopics([]string{topic})
	if err != nil {
		t.Fatalf("DescribeTopics: %v", err)
	}
	if len(metas) != 1 || metas[0].Name != topic || metas[0].Err != sarama.ErrNoError {
		t.Fatalf("DescribeTopics: %+v", metas)
	}
	if metas[0].Uuid == (sarama.Uuid{}) || metas[0].IsInternal {
		t.Errorf("DescribeTopics: id %v, internal %v", metas[0].Uuid, metas[0].IsInternal)
	}
	if len(metas[0].Partitions) != 3 {
		t.Fatalf("DescribeTopics: %d partitions, want 3", len(metas[0].Partitions))
	}
	seen := map[int32]bool{}
	for _, p := range metas[0].Partitions {
		seen[p.ID] = true
		if p.Err != sarama.ErrNoError || p.Leader != brokerID || p.LeaderEpoch < 0 ||
			!slices.Equal(p.Replicas, []int32{brokerID}) || !slices.Equal(p.Isr, []int32{brokerID}) || len(p.OfflineReplicas) != 0 {
			t.Errorf("DescribeTopics partition %d: err %v leader %d epoch %d replicas %v isr %v offline %v, want led by %d",
				p.ID, p.Err, p.Leader, p.LeaderEpoch, p.Replicas, p.Isr, p.OfflineReplicas, brokerID)
		}
	}
	if !seen[0] || !seen[1] || !seen[2] {
		t.Errorf("DescribeTopics partitions %v, want 0, 1, 2", seen)
	}

	// DescribeConfig: the setting made at creation, and defaults.
	cs := saramaTopicConfigs(t, admin, topic)
	checkSaramaConfig(t, "created", cs, "retention.ms", retention, false)
	checkSaramaConfig(t, "created", cs, "cleanup.policy", "delete", true)
	checkSaramaConfig(t, "created", cs, "max.message.bytes", "1048588", true)
	if _, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic + "-missing"}); !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		t.Errorf("DescribeConfig of a missing topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}

	// AlterConfig replaces the topic's settings; validate-only changes nothing.
	hour := "3600000"
	if err := admin.AlterConfig(sarama.TopicResource, topic, map[string]*string{"retention.ms": &hour}, false); err != nil {
		t.Fatalf("AlterConfig: %v", err)
	}
	checkSaramaConfig(t, "altered", saramaTopicConfigs(t, admin, topic), "retention.ms", hour, false)
	minute := "60000"
	if err := admin.AlterConfig(sarama.TopicResource, topic, map[string]*string{"retention.ms": &minute}, true); err != nil {
		t.Fatalf("AlterConfig validate-only: %v", err)
	}
	checkSaramaConfig(t, "after validate-only", saramaTopicConfigs(t, admin, topic), "retention.ms", hour, false)
	policy := "shred"
	err = admin.AlterConfig(sarama.TopicResource, topic, map[string]*string{"cleanup.policy": &policy}, false)
	var alterErr *sarama.AlterConfigError
	if !errors.As(err, &alterErr) || alterErr.Err != sarama.ErrInvalidConfig || alterErr.ErrMsg == "" {
		t.Errorf("AlterConfig cleanup.policy=shred: %v, want INVALID_CONFIG with a reason", err)
	}
	checkSaramaConfig(t, "after a refused AlterConfig", saramaTopicConfigs(t, admin, topic), "retention.ms", hour, false)

	// IncrementalAlterConfig sets one setting and keeps the others; DELETE
	// brings one back to its default.
	maxBytes := "2000000"
	if err := admin.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"max.message.bytes": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &maxBytes},
	}, false); err != nil {
		t.Fatalf("IncrementalAlterConfig set: %v", err)
	}
	cs = saramaTopicConfigs(t, admin, topic)
	checkSaramaConfig(t, "incrementally set", cs, "max.message.bytes", maxBytes, false)
	checkSaramaConfig(t, "incrementally set", cs, "retention.ms", hour, false)
	if err := admin.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationDelete},
	}, false); err != nil {
		t.Fatalf("IncrementalAlterConfig delete: %v", err)
	}
	cs = saramaTopicConfigs(t, admin, topic)
	checkSaramaConfig(t, "incrementally deleted", cs, "retention.ms", "-1", true)
	checkSaramaConfig(t, "incrementally deleted", cs, "max.message.bytes", maxBytes, false)
	err = admin.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"no.such.setting": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &hour},
	}, false)
	if !errors.Is(err, sarama.ErrInvalidConfig) {
		t.Errorf("IncrementalAlterConfig of an unknown setting: %v, want INVALID_CONFIG", err)
	}

	// CreatePartitions to fewer is refused, with Kafka's reason; to more
	// grows the topic from three to four.
	err = admin.CreatePartitions(topic, 2, nil, false)
	var partErr *sarama.TopicPartitionError
	if !errors.As(err, &partErr) || partErr.Err != sarama.ErrInvalidPartitions || partErr.ErrMsg == nil || !strings.Contains(*partErr.ErrMsg, "higher than the requested 2") {
		t.Errorf("CreatePartitions to 2: %v, want INVALID_PARTITIONS with a reason", err)
	}
	if err := admin.CreatePartitions(topic, 4, nil, false); err != nil {
		t.Errorf("CreatePartitions to 4: %v", err)
	}
	if metas, err := admin.DescribeTopics([]string{topic}); err != nil || len(metas) != 1 || len(metas[0].Partitions) != 4 {
		t.Errorf("after CreatePartitions: %v %+v, want 4 partitions", err, metas)
	}

	// DeleteRecords after 10 records produced to partition 1 with a
	// SyncProducer moves the low watermark of that partition only.
	prod, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var msgs []*sarama.ProducerMessage
	for i := 0; i < 10; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: 1, Value: sarama.StringEncoder(fmt.Sprintf("r%d", i))})
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatalf("SendMessages: %v", err)
	}
	for i, m := range msgs {
		if m.Partition != 1 || m.Offset != int64(i) {
			t.Fatalf("record %d acked at %d/%d, want 1/%d", i, m.Partition, m.Offset, i)
		}
	}
	watermarks := func(p int32) (low, high int64) {
		t.Helper()
		if low, err = client.GetOffset(topic, p, sarama.OffsetOldest); err != nil {
			t.Fatalf("GetOffset oldest of %d: %v", p, err)
		}
		if high, err = client.GetOffset(topic, p, sarama.OffsetNewest); err != nil {
			t.Fatalf("GetOffset newest of %d: %v", p, err)
		}
		return low, high
	}
	if low, high := watermarks(1); low != 0 || high != 10 {
		t.Fatalf("partition 1 before DeleteRecords: %d-%d, want 0-10", low, high)
	}
	if err := admin.DeleteRecords(topic, map[int32]int64{1: 4}); err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	if low, high := watermarks(1); low != 4 || high != 10 {
		t.Errorf("partition 1 after DeleteRecords up to 4: %d-%d, want 4-10", low, high)
	}
	if low, high := watermarks(0); low != 0 || high != 0 {
		t.Errorf("partition 0 after DeleteRecords of partition 1: %d-%d, want 0-0", low, high)
	}
	err = admin.DeleteRecords(topic, map[int32]int64{1: 11})
	if !errors.Is(err, sarama.ErrDeleteRecords) || !errors.Is(err, sarama.ErrOffsetOutOfRange) {
		t.Errorf("DeleteRecords past the end: %v, want OFFSET_OUT_OF_RANGE", err)
	}
	if low, _ := watermarks(1); low != 4 {
		t.Errorf("partition 1 after a refused DeleteRecords: low watermark %d, want 4", low)
	}
	// A consumer from the oldest offset begins at the new low watermark.
	cons, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 1, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-pc.Messages():
		if m.Offset != 4 || string(m.Value) != "r4" {
			t.Errorf("first record from the oldest offset: %d %q, want 4 \"r4\"", m.Offset, m.Value)
		}
	case err := <-pc.Errors():
		t.Errorf("consume from the oldest offset: %v", err)
	case <-time.After(30 * time.Second):
		t.Errorf("no record from the oldest offset within 30s")
	}
	pc.Close() //nolint:errcheck

	// A group's offsets, set by the admin (nobody joined): read, one
	// partition's deleted, then the group deleted.
	group := topic + "-group"
	commit, err := admin.AlterConsumerGroupOffsets(group, map[string]map[int32]sarama.OffsetAndMetadata{
		topic: {0: {Offset: 0, LeaderEpoch: -1}, 1: {Offset: 7, Metadata: "seven", LeaderEpoch: -1}},
	}, nil)
	if err != nil {
		t.Fatalf("AlterConsumerGroupOffsets: %v", err)
	}
	for _, p := range []int32{0, 1} {
		if e := commit.Errors[topic][p]; e != sarama.ErrNoError {
			t.Errorf("AlterConsumerGroupOffsets partition %d: %v", p, e)
		}
	}
	offsets := func(what string, want map[int32]int64) {
		t.Helper()
		resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1, 2}})
		if err != nil {
			t.Fatalf("ListConsumerGroupOffsets %s: %v", what, err)
		}
		for p := int32(0); p < 3; p++ {
			b := resp.GetBlock(topic, p)
			meta := ""
			if p == 1 {
				meta = "seven"
			}
			if b == nil || b.Err != sarama.ErrNoError || b.Offset != want[p] || (b.Offset >= 0 && b.Metadata != meta) {
				t.Errorf("ListConsumerGroupOffsets %s: partition %d %+v, want offset %d", what, p, b, want[p])
			}
		}
	}
	offsets("after the commit", map[int32]int64{0: 0, 1: 7, 2: -1})
	groups, err := admin.ListConsumerGroups()
	if err != nil {
		t.Fatalf("ListConsumerGroups: %v", err)
	}
	if _, ok := groups[group]; !ok {
		t.Errorf("ListConsumerGroups does not list %s", group)
	}
	if ds, err := admin.DescribeConsumerGroups([]string{group}); err != nil || len(ds) != 1 || ds[0].Err != sarama.ErrNoError ||
		ds[0].State != "Empty" || len(ds[0].Members) != 0 {
		t.Errorf("DescribeConsumerGroups: %v %+v, want Empty with no members", err, ds)
	}
	if err := admin.DeleteConsumerGroupOffset(group, topic, 0); err != nil {
		t.Errorf("DeleteConsumerGroupOffset: %v", err)
	}
	offsets("after DeleteConsumerGroupOffset of partition 0", map[int32]int64{0: -1, 1: 7, 2: -1})
	if err := admin.DeleteConsumerGroup(group); err != nil {
		t.Fatalf("DeleteConsumerGroup: %v", err)
	}
	offsets("after DeleteConsumerGroup", map[int32]int64{0: -1, 1: -1, 2: -1})
	if groups, err := admin.ListConsumerGroups(); err != nil {
		t.Errorf("ListConsumerGroups: %v", err)
	} else if _, ok := groups[group]; ok {
		t.Errorf("ListConsumerGroups still lists %s after DeleteConsumerGroup", group)
	}
	if err := admin.DeleteConsumerGroup(group); !errors.Is(err, sarama.ErrGroupIDNotFound) {
		t.Errorf("DeleteConsumerGroup again: %v, want GROUP_ID_NOT_FOUND", err)
	}

	// DeleteTopic: gone from ListTopics; a second time it is unknown.
	if err := admin.DeleteTopic(topic); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	eventually(t, 10*time.Second, topic+" gone from ListTopics", func() error {
		listed, err := admin.ListTopics()
		if err != nil {
			return err
		}
		if _, ok := listed[topic]; ok {
			return errors.New("still listed")
		}
		return nil
	})
	if err := admin.DeleteTopic(topic); !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		t.Errorf("DeleteTopic again: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}
