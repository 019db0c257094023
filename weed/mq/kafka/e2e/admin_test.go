package e2e

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListOffsets covers earliest, latest, by timestamp and max timestamp.
func TestListOffsets(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	cl := newClient(t)
	adm := kadm.NewClient(cl)
	ctx := ctxT(t)

	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(topic, 0); o.Offset != 0 || o.Err != nil {
		t.Fatalf("empty partition: end offset %d (%v), want 0", o.Offset, o.Err)
	}

	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	var recs []*kgo.Record
	for i := 0; i < 10; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte{byte(i)}, Timestamp: t0.Add(time.Duration(i) * time.Second)})
	}
	produceSync(t, cl, recs...)

	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup(topic, 0); o.Offset != 0 || o.Err != nil {
		t.Errorf("start offset %d (%v), want 0", o.Offset, o.Err)
	}
	ends, err = adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(topic, 0); o.Offset != 10 || o.Err != nil {
		t.Errorf("end offset %d (%v), want 10", o.Offset, o.Err)
	}
	after, err := adm.ListOffsetsAfterMilli(ctx, t0.Add(5500*time.Millisecond).UnixMilli(), topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := after.Lookup(topic, 0); o.Offset != 6 || o.Timestamp != t0.Add(6*time.Second).UnixMilli() {
		t.Errorf("offset after t0+5.5s: %d at %d, want 6 at %d", o.Offset, o.Timestamp, t0.Add(6*time.Second).UnixMilli())
	}
	after, err = adm.ListOffsetsAfterMilli(ctx, t0.Add(time.Hour).UnixMilli(), topic)
	if err != nil {
		t.Fatal(err)
	}
	// Kafka answers -1 for a timestamp past every record; kadm turns that into the end.
	if o, _ := after.Lookup(topic, 0); o.Offset != 10 && o.Offset != -1 {
		t.Errorf("offset after the last record: %d, want the end", o.Offset)
	}

	// Max timestamp (-3) is a raw request: kadm does not ask for it.
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -3
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.Offset != 9 || p.Timestamp != t0.Add(9*time.Second).UnixMilli() {
		t.Errorf("max timestamp: offset %d ts %d err %d, want 9 at %d", p.Offset, p.Timestamp, p.ErrorCode, t0.Add(9*time.Second).UnixMilli())
	}
}

// TestTopicAdmin creates, describes and deletes topics, and checks the
// errors Kafka gives for bad requests.
func TestTopicAdmin(t *testing.T) {
	cl := newClient(t)
	adm := kadm.NewClient(cl)
	ctx := ctxT(t)
	topic := newTopic(t)
	retention := "86400000"
	resp, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": &retention}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	if resp.ID == [16]byte{} {
		t.Errorf("created topic has no id")
	}

	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	d := details[topic]
	if d.Err != nil || len(d.Partitions) != 3 || d.ID != resp.ID {
		t.Fatalf("describe: err %v, %d partitions, id %v (created %v)", d.Err, len(d.Partitions), d.ID, resp.ID)
	}

	configs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := configs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		found[c.Key] = c
	}
	if c := found["retention.ms"]; c.MaybeValue() != retention || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("retention.ms = %q from %v, want %s set on the topic", c.MaybeValue(), c.Source, retention)
	}
	if c := found["cleanup.policy"]; c.MaybeValue() != "delete" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("cleanup.policy = %q from %v, want the default delete", c.MaybeValue(), c.Source)
	}

	// Errors Kafka gives.
	// kadm's CreateTopic returns the topic's error as its error too.
	again, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
	if !errors.Is(again.Err, kerr.TopicAlreadyExists) {
		t.Errorf("create existing: %v %v, want TOPIC_ALREADY_EXISTS", err, again.Err)
	}
	bad, err := adm.CreateTopic(ctx, 1, 1, nil, "bad/name")
	if !errors.Is(bad.Err, kerr.InvalidTopicException) {
		t.Errorf("create bad name: %v %v, want INVALID_TOPIC_EXCEPTION", err, bad.Err)
	}
	policy := "compact,archive"
	cfg, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &policy}, newTopic(t)+"-archive")
	if !errors.Is(cfg.Err, kerr.InvalidConfig) {
		t.Errorf("create with an unknown cleanup policy: %v %v, want INVALID_CONFIG", err, cfg.Err)
	}
	rf, err := adm.CreateTopic(ctx, 1, 3, nil, newTopic(t)+"-rf3")
	if !errors.Is(rf.Err, kerr.InvalidReplicationFactor) {
		t.Errorf("create rf 3: %v %v, want INVALID_REPLICATION_FACTOR", err, rf.Err)
	}
	vo, err := adm.ValidateCreateTopics(ctx, 2, 1, nil, newTopic(t)+"-validate")
	if err != nil || vo.Error() != nil {
		t.Errorf("validate only: %v %v", err, vo.Error())
	}
	listed, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name := range listed {
		if name == newTopic(t)+"-validate" {
			t.Errorf("validate-only created the topic")
		}
	}

	// Delete by name, then it is gone.
	del, err := adm.DeleteTopics(ctx, topic)
	if err != nil || del.Error() != nil {
		t.Fatalf("delete: %v %v", err, del.Error())
	}
	waitTopicGone(t, adm, topic)
	del, err = adm.DeleteTopics(ctx, topic)
	if err != nil || !errors.Is(del[topic].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("delete again: %v %v, want UNKNOWN_TOPIC_OR_PARTITION", err, del[topic].Err)
	}

	// Delete by id (DeleteTopics v6).
	byID := newTopic(t) + "-byid"
	created, err := adm.CreateTopic(ctx, 1, 1, nil, byID)
	if err != nil || created.Err != nil {
		t.Fatalf("create: %v %v", err, created.Err)
	}
	dreq := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.TopicID = created.ID
	dreq.Topics = append(dreq.Topics, dt)
	dreq.TimeoutMillis = 10000
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil || len(dresp.Topics) != 1 || dresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete by id: %v %+v", err, dresp)
	}
	waitTopicGone(t, adm, byID)
}

// waitTopicGone waits until Metadata no longer lists topic.
func waitTopicGone(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	eventually(t, 10*time.Second, topic+" gone from metadata", func() error {
		l, err := adm.ListTopics(ctxT(t))
		if err != nil {
			return err
		}
		if l.Has(topic) {
			return errors.New("still listed")
		}
		return nil
	})
}

// TestAutoCreate produces to a topic that does not exist yet.
func TestAutoCreate(t *testing.T) {
	topic := newTopic(t)
	cl := newClient(t, kgo.AllowAutoTopicCreation())
	produceSync(t, cl, &kgo.Record{Topic: topic, Value: []byte("first")})
	got := consumeN(t, topic, 1)
	if string(got[0].Value) != "first" || got[0].Offset != 0 {
		t.Fatalf("got %q at %d", got[0].Value, got[0].Offset)
	}
	details, err := kadm.NewClient(cl).ListTopics(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(details[topic].Partitions); n != 1 {
		t.Errorf("auto-created with %d partitions, want -default-partitions=1", n)
	}
}

// TestDescribeCluster checks the one broker clients are told about is the
// address they reach.
func TestDescribeCluster(t *testing.T) {
	adm := kadm.NewClient(newClient(t))
	meta, err := adm.BrokerMetadata(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Brokers) != 1 || meta.Brokers[0].Host != "127.0.0.1" || int(meta.Brokers[0].Port) != gw.port {
		t.Fatalf("brokers %+v, want 127.0.0.1:%d", meta.Brokers, gw.port)
	}
	if meta.Cluster == "" || meta.Controller != meta.Brokers[0].NodeID {
		t.Errorf("cluster %q controller %d", meta.Cluster, meta.Controller)
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	resp, err := req.RequestWith(ctxT(t), newClient(t))
	if err != nil || resp.ErrorCode != 0 || len(resp.Brokers) != 1 || resp.ClusterID != meta.Cluster {
		t.Fatalf("DescribeCluster: %v %+v", err, resp)
	}
}
