package e2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGatewaysAgree: three gateways on one cluster name the same brokers,
// partition leaders with leader epochs, controller and coordinators, and
// the same quorum (DescribeQuorum: the controller leading, the three
// voting), and send a request that reaches the wrong gateway elsewhere
// with Kafka's error.
func TestGatewaysAgree(t *testing.T) {
	g := threeGateways(t)
	topic := newTopic(t)
	createTopic(t, topic, 12, nil)
	procs := g.all()
	var leaders map[int32]string
	eventually(t, 20*time.Second, "the same answers from every gateway", func() error {
		want, l := leadersFrom(t, procs[0], topic)
		leaders = l
		wantBrokers := g.brokers(t, procs[0])
		for _, p := range procs[1:] {
			if got, _ := leadersFrom(t, p, topic); got != want {
				return fmt.Errorf("%s says %s; %s says %s", procs[0].addr, want, p.addr, got)
			}
			if got := g.brokers(t, p); !slices.Equal(got, wantBrokers) {
				return fmt.Errorf("brokers %v and %v", wantBrokers, got)
			}
		}
		wantQuorum := quorumFrom(t, procs[0])
		for _, p := range procs[1:] {
			if got := quorumFrom(t, p); got != wantQuorum {
				return fmt.Errorf("quorum %s and %s", wantQuorum, got)
			}
		}
		md := metadataFrom(t, procs[0], "")
		if want := fmt.Sprintf("leader %d, 3 voters", md.ControllerID); !strings.HasPrefix(wantQuorum, want) {
			return fmt.Errorf("quorum %s, want %s", wantQuorum, want)
		}
		for i := 0; i < 8; i++ {
			for typ, key := range map[int8]string{0: "agree-group-" + strconv.Itoa(i), 1: "agree-txn-" + strconv.Itoa(i)} {
				want := coordinatorFrom(t, procs[0], typ, key)
				for _, p := range procs[1:] {
					if got := coordinatorFrom(t, p, typ, key); got != want {
						return fmt.Errorf("coordinator of %q: %s and %s", key, want, got)
					}
				}
			}
		}
		return nil
	})
	spread := map[string]bool{}
	for _, l := range leaders {
		spread[l] = true
	}
	if len(spread) < 2 {
		t.Fatalf("12 partitions led by %d gateway(s): %v", len(spread), leaders)
	}

	// A produce to a gateway that does not lead the partition.
	var p int32
	var wrong *gatewayProc
	for _, q := range procs {
		if leaders[0] != q.addr {
			p, wrong = 0, q
			break
		}
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.Version = 9
	produce.Acks, produce.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition, pp.Records = p, batchOf([]byte("wrong gateway"))
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	resp := askOne[*kmsg.ProduceResponse](t, wrong.addr, produce)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to a gateway not leading the partition: %v", kerr.ErrorForCode(code))
	}

	// A heartbeat to a gateway that does not coordinate the group.
	group := "agree-group-0"
	coord := coordinatorFrom(t, procs[0], 0, group)
	for _, q := range procs {
		if q.addr == coord {
			continue
		}
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Version = 4
		hb.Group, hb.MemberID, hb.Generation = group, "m", 1
		hresp := askOne[*kmsg.HeartbeatResponse](t, q.addr, hb)
		if hresp.ErrorCode != kerr.NotCoordinator.Code {
			t.Fatalf("heartbeat to %s, not the coordinator %s: %v", q.addr, coord, kerr.ErrorForCode(hresp.ErrorCode))
		}
	}

	// Two gateways asked at once to create a topic (clients auto-creating
	// it on each): one creates it, the other answers TOPIC_ALREADY_EXISTS,
	// and both name the one topic. Before, both created it, each with
	// partitions of its own, and the last written configuration won.
	var conns []*rawConn
	for _, q := range procs[:2] {
		nc, err := net.DialTimeout("tcp", q.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		conns = append(conns, &rawConn{t, nc})
	}
	for i := 0; i < 6; i++ {
		name := topic + "-once-" + strconv.Itoa(i)
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = 7, 15000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 3, -1
		req.Topics = append(req.Topics, rt)
		for _, c := range conns {
			c.send(frame(req.Key(), req.GetVersion(), 1, req.IsFlexible(), req.AppendTo(nil)))
		}
		var codes []int16
		for _, c := range conns {
			codes = append(codes, c.response(req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
		}
		slices.Sort(codes)
		if !slices.Equal(codes, []int16{0, kerr.TopicAlreadyExists.Code}) {
			t.Fatalf("topic %s created at once by two gateways: answers %v, want one created and one TOPIC_ALREADY_EXISTS", name, codes)
		}
		a, b := metadataFrom(t, procs[0], name).Topics[0], metadataFrom(t, procs[1], name).Topics[0]
		if a.TopicID != b.TopicID || len(a.Partitions) != 3 || len(b.Partitions) != 3 {
			t.Fatalf("topic %s: ids %x and %x, %d and %d partitions", name, a.TopicID, b.TopicID, len(a.Partitions), len(b.Partitions))
		}
	}
}

// TestGatewaysGroupLag: a group's coordinator reports the lag of every
// partition its groups read, also of those other gateways lead: the
// kafka_consumergroup_lag metric of a classic group's commits and
// DescribeShareGroupOffsets' lag of a share group (which answered
// NOT_LEADER_OR_FOLLOWER for the partitions the coordinator did not lead).
func TestGatewaysGroupLag(t *testing.T) {
	g := threeGateways(t)
	procs := g.all()
	const partitions = 6
	topic := spreadTopic(t, procs[0], partitions)
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Partition p holds p+1 records.
	var recs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := int32(0); i <= p; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("lag-%d-%d", p, i))})
		}
	}
	if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	coordinator := func(group string) *gatewayProc {
		_, p := g.byAddr(coordinatorFrom(t, procs[0], 0, group))
		if p == nil {
			t.Fatalf("no gateway coordinates %s", group)
		}
		return p
	}

	// A classic group's commits at offset 0: the lag of partition p is p+1.
	group := topic + "-group"
	var offs kadm.Offsets
	for p := int32(0); p < partitions; p++ {
		offs.AddOffset(topic, p, 0, -1)
	}
	if err := kadm.NewClient(cl).CommitAllOffsets(ctxT(t), group, offs); err != nil {
		t.Fatal(err)
	}
	coord := coordinator(group)
	m := scrapeFrom(t, coord)
	for p := 0; p < partitions; p++ {
		by := map[string]string{"consumergroup": group, "topic": topic, "partition": strconv.Itoa(p)}
		if v, ok := metricValue(m, "kafka_consumergroup_lag", by); !ok || v != float64(p+1) {
			t.Errorf("%s's lag in partition %d: %v (%v), want %d", coord.addr, p, v, ok, p+1)
		}
	}

	// A share group started at offset 0 in every partition.
	share := topic + "-share"
	coord = coordinator(share)
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = share
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = topic
	for p := int32(0); p < partitions; p++ {
		at.Partitions = append(at.Partitions, kmsg.AlterShareGroupOffsetsRequestTopicPartition{Partition: p, StartOffset: 0})
	}
	alter.Topics = append(alter.Topics, at)
	ar := askOne[*kmsg.AlterShareGroupOffsetsResponse](t, coord.addr, alter)
	if err := kerr.ErrorForCode(ar.ErrorCode); err != nil {
		t.Fatalf("AlterShareGroupOffsets: %v", err)
	}
	desc := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	desc.Version = 1
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = share
	rg.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0, 1, 2, 3, 4, 5}}}
	desc.Groups = append(desc.Groups, rg)
	dr := askOne[*kmsg.DescribeShareGroupOffsetsResponse](t, coord.addr, desc)
	if len(dr.Groups) != 1 || len(dr.Groups[0].Topics) != 1 || len(dr.Groups[0].Topics[0].Partitions) != partitions {
		t.Fatalf("DescribeShareGroupOffsets: %+v", dr)
	}
	for _, sp := range dr.Groups[0].Topics[0].Partitions {
		if err := kerr.ErrorForCode(sp.ErrorCode); err != nil || sp.StartOffset != 0 || sp.Lag != int64(sp.Partition)+1 {
			t.Errorf("%s's share offsets of partition %d: start %d, lag %d (%v); want 0, %d", coord.addr, sp.Partition, sp.StartOffset, sp.Lag, err, sp.Partition+1)
		}
	}
}

// TestGatewaysClients: sarama, kafka-go and librdkafka, each bootstrapped
// from a different one of three gateways, produce to partitions led by all
// three; a librdkafka consumer bootstrapped from yet another reads every
// record once, at dense offsets. Then a client's quota holds across the
// three (sharedQuota), and the schema registry is one on the three
// (sharedRegistry).
func TestGatewaysClients(t *testing.T) {
	g := threeGateways(t)
	procs := g.all()
	const partitions = 6

	// A topic created through one gateway is in another's listing of
	// every topic at once, also right after that one listed them:
	// kafka-go's writer trusts its transport's listing of every topic.
	listed := newTopic(t) + "-listed"
	listAll := func() map[string]bool {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12 // Topics nil: every topic
		names := map[string]bool{}
		for _, rt := range askOne[*kmsg.MetadataResponse](t, procs[2].addr, req).Topics {
			names[*rt.Topic] = true
		}
		return names
	}
	listAll()
	createTopic(t, listed, 1, nil)
	if !listAll()[listed] {
		t.Fatalf("a topic created through %s is missing from %s's listing of every topic", procs[0].addr, procs[2].addr)
	}
	topic := spreadTopic(t, procs[0], partitions)
	want := map[string]bool{}

	// sarama from the second gateway, 10 records to each partition.
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	sp, err := sarama.NewSyncProducer([]string{procs[1].addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*sarama.ProducerMessage
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < 10; i++ {
			v := fmt.Sprintf("sarama-%d-%d", p, i)
			want[v] = true
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: p, Value: sarama.StringEncoder(v)})
		}
	}
	if err := sp.SendMessages(msgs); err != nil {
		t.Fatalf("sarama: %v", err)
	}
	sp.Close()
	for i, m := range msgs {
		if m.Offset != int64(i%10) {
			t.Fatalf("sarama record %d acked at %d/%d", i, m.Partition, m.Offset)
		}
	}

	// kafka-go from the third, round robin.
	w := &kafkago.Writer{Addr: kafkago.TCP(procs[2].addr), Topic: topic, Balancer: &kafkago.RoundRobin{},
		RequiredAcks: kafkago.RequireAll, Transport: &kafkago.Transport{}}
	var kmsgs []kafkago.Message
	for i := 0; i < 60; i++ {
		v := fmt.Sprintf("kafka-go-%d", i)
		want[v] = true
		kmsgs = append(kmsgs, kafkago.Message{Value: []byte(v)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.WriteMessages(ctx, kmsgs...); err != nil {
		t.Fatalf("kafka-go: %v", err)
	}
	w.Close()

	// librdkafka from the first.
	kp, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": procs[0].addr, "linger.ms": 5})
	if err != nil {
		t.Fatal(err)
	}
	defer kp.Close()
	delivered := make(chan kafka.Event, 60)
	for i := 0; i < 60; i++ {
		v := fmt.Sprintf("librdkafka-%d", i)
		want[v] = true
		if err := kp.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: int32(i % partitions)},
			Value: []byte(v)}, delivered); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 60; i++ {
		select {
		case e := <-delivered:
			if m := e.(*kafka.Message); m.TopicPartition.Error != nil {
				t.Fatalf("librdkafka delivery: %v", m.TopicPartition.Error)
			}
		case <-time.After(time.Minute):
			t.Fatalf("librdkafka: %d of 60 delivered", i)
		}
	}

	// librdkafka reads everything, from the second gateway.
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": procs[1].addr, "group.id": "unused-" + topic,
		"enable.auto.commit": false, "auto.offset.reset": "earliest"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var assign []kafka.TopicPartition
	for p := int32(0); p < partitions; p++ {
		assign = append(assign, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: kafka.OffsetBeginning})
	}
	if err := c.Assign(assign); err != nil {
		t.Fatal(err)
	}
	next := map[int32]kafka.Offset{}
	seen := map[string]bool{}
	deadline := time.Now().Add(time.Minute)
	for len(seen) < len(want) && time.Now().Before(deadline) {
		m, err := c.ReadMessage(time.Second)
		if err != nil {
			if ke, ok := err.(kafka.Error); ok && ke.IsTimeout() {
				continue
			}
			t.Fatal(err)
		}
		p := m.TopicPartition.Partition
		if m.TopicPartition.Offset != next[p] {
			t.Fatalf("partition %d: offset %d, want %d", p, m.TopicPartition.Offset, next[p])
		}
		next[p]++
		v := string(m.Value)
		if !want[v] || seen[v] {
			t.Fatalf("read %q (known %v, seen before %v)", v, want[v], seen[v])
		}
		seen[v] = true
	}
	if len(seen) != len(want) {
		t.Fatalf("read %d of %d records", len(seen), len(want))
	}

	t.Run("shared-quota", func(t *testing.T) { sharedQuota(t, g) })
	t.Run("schema-registry", func(t *testing.T) { sharedRegistry(t, g) })
}
