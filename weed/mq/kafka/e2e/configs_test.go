package e2e

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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

	// What SeaweedMQ cannot honour, and settings of nothing.
	resps, err = adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{set("cleanup.policy", "compact")}, topic)
	if err != nil || !errors.Is(resps[0].Err, kerr.InvalidConfig) || !strings.Contains(resps[0].ErrMessage, "delete") {
		t.Errorf("cleanup.policy=compact: %v %+v", err, resps)
	}
	resps, err = adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{set("no.such.setting", "1")}, topic)
	if err != nil || !errors.Is(resps[0].Err, kerr.InvalidConfig) {
		t.Errorf("an unknown setting: %v %+v", err, resps)
	}
	resps, err = adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{set("retention.ms", "1")}, topic+"-missing")
	if err == nil && (len(resps) == 0 || !errors.Is(resps[0].Err, kerr.UnknownTopicOrPartition)) {
		t.Errorf("altering a missing topic: %+v", resps)
	}
}

// TestPartitionAdmin: CreatePartitions is refused with a reason;
// OffsetForLeaderEpoch and ElectLeaders answer as for a partition with one
// leader epoch and one leader.
func TestPartitionAdmin(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 2, nil)
	cl := newClient(t)
	adm := kadm.NewClient(cl)
	cp, err := adm.CreatePartitions(ctxT(t), 2, topic)
	if err != nil {
		t.Fatal(err)
	}
	if r := cp[topic]; !errors.Is(r.Err, kerr.InvalidPartitions) || !strings.Contains(r.ErrMessage, "ring") {
		t.Errorf("CreatePartitions: %v %q", r.Err, r.ErrMessage)
	}
	if d, _ := adm.ListTopics(ctxT(t), topic); len(d[topic].Partitions) != 2 {
		t.Errorf("partitions after the refusal: %d", len(d[topic].Partitions))
	}

	produceRaw(t, cl, topic, 0, batchOf([]byte("a"), []byte("b"), []byte("c")))
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	for _, epoch := range []int32{0, 1} {
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.CurrentLeaderEpoch = 0, epoch, 0
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	ps := resp.Topics[0].Partitions
	if ps[0].ErrorCode != 0 || ps[0].LeaderEpoch != 0 || ps[0].EndOffset != 3 {
		t.Errorf("epoch 0: %+v, want epoch 0 ending at 3", ps[0])
	}
	if ps[1].ErrorCode != 0 || ps[1].LeaderEpoch != -1 || ps[1].EndOffset != -1 {
		t.Errorf("epoch 1: %+v, want unknown (-1, -1)", ps[1])
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
