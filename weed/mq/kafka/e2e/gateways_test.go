package e2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// gateways is the package's gateway and two more on the same cluster.
type gateways struct {
	t     *testing.T
	mu    sync.Mutex
	procs []*gatewayProc // procs[0] is gw
}

// threeGateways starts two gateways beside the package's one and waits
// until all three see each other. At cleanup the two stop and the
// package's gateway serves everything again.
func threeGateways(t *testing.T) *gateways {
	t.Helper()
	g := &gateways{t: t, procs: []*gatewayProc{gw}}
	for i := 2; i <= 3; i++ {
		p, err := startNamedGateway("gateway"+strconv.Itoa(i), cluster.master, 0)
		if err != nil {
			t.Fatal(err)
		}
		g.procs = append(g.procs, p)
	}
	t.Cleanup(func() {
		g.mu.Lock()
		extra := g.procs[1:]
		g.mu.Unlock()
		for _, p := range extra {
			p.stop()
		}
		// The package's gateway sees them gone, then serves what they
		// owned once it has held that view for the settle time.
		eventually(t, 30*time.Second, "the package's gateway alone again", func() error {
			if n := len(g.brokers(t, gw)); n != 1 {
				return fmt.Errorf("%d brokers", n)
			}
			return nil
		})
		time.Sleep(4 * time.Second)
	})
	eventually(t, 30*time.Second, "three gateways in every gateway's metadata", func() error {
		for _, p := range g.all() {
			if n := len(g.brokers(t, p)); n != 3 {
				return fmt.Errorf("%s lists %d brokers", p.addr, n)
			}
		}
		return nil
	})
	return g
}

func (g *gateways) all() []*gatewayProc {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.procs)
}

func (g *gateways) seeds() []string {
	var out []string
	for _, p := range g.all() {
		out = append(out, p.addr)
	}
	return out
}

// byAddr returns the gateway at a broker's address.
func (g *gateways) byAddr(addr string) (int, *gatewayProc) {
	for i, p := range g.all() {
		if p.addr == addr {
			return i, p
		}
	}
	g.t.Fatalf("no gateway at %s", addr)
	return -1, nil
}

// restart starts gateway i again on its port after it was killed.
func (g *gateways) restart(i int) error {
	g.mu.Lock()
	old := g.procs[i]
	g.mu.Unlock()
	name := "gateway" + strconv.Itoa(i+1)
	if i == 0 {
		name = "gateway"
	}
	p, err := startNamedGateway(name, cluster.master, old.port)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.procs[i] = p
	g.mu.Unlock()
	if i == 0 {
		gw = p
	}
	return nil
}

// askOne sends req to the gateway at addr, and only to it, on a connection
// of its own, and returns the answer.
func askOne[R kmsg.Response](t *testing.T, addr string, req kmsg.Request) R {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &rawConn{t, nc}
	c.send(frame(req.Key(), req.GetVersion(), 7, req.IsFlexible(), req.AppendTo(nil)))
	b, err := c.readFrame()
	if err != nil {
		t.Fatalf("%s from %s: %v", kmsg.NameForKey(req.Key()), addr, err)
	}
	resp := req.ResponseKind()
	b = b[4:] // correlation id
	if resp.IsFlexible() {
		b = b[1:] // no tagged fields in our answers' headers
	}
	if err := resp.ReadFrom(b); err != nil {
		t.Fatalf("%s from %s: %v", kmsg.NameForKey(req.Key()), addr, err)
	}
	return resp.(R)
}

// metadata asks one gateway, and only it, about topic.
func metadataFrom(t *testing.T, p *gatewayProc, topic string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	if topic != "" {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	} else {
		req.Topics = []kmsg.MetadataRequestTopic{}
	}
	return askOne[*kmsg.MetadataResponse](t, p.addr, req)
}

func (g *gateways) brokers(t *testing.T, p *gatewayProc) []string {
	var out []string
	for _, b := range metadataFrom(t, p, "").Brokers {
		out = append(out, fmt.Sprintf("%d@%s:%d", b.NodeID, b.Host, b.Port))
	}
	slices.Sort(out)
	return out
}

// leaders describes topic's leaders and epochs as one gateway tells them.
func leadersFrom(t *testing.T, p *gatewayProc, topic string) (string, map[int32]string) {
	resp := metadataFrom(t, p, topic)
	addr := map[int32]string{}
	for _, b := range resp.Brokers {
		addr[b.NodeID] = fmt.Sprintf("%s:%d", b.Host, b.Port)
	}
	var desc []string
	leaders := map[int32]string{}
	for _, mt := range resp.Topics {
		for _, mp := range mt.Partitions {
			desc = append(desc, fmt.Sprintf("p%d:%d@%d(err %d)", mp.Partition, mp.Leader, mp.LeaderEpoch, mp.ErrorCode))
			leaders[mp.Partition] = addr[mp.Leader]
		}
	}
	slices.Sort(desc)
	return fmt.Sprintf("controller %d, %s", resp.ControllerID, strings.Join(desc, " ")), leaders
}

// epochsFrom gives topic's leader epochs as one gateway tells them.
func epochsFrom(t *testing.T, p *gatewayProc, topic string) map[int32]int32 {
	out := map[int32]int32{}
	for _, mt := range metadataFrom(t, p, topic).Topics {
		for _, mp := range mt.Partitions {
			out[mp.Partition] = mp.LeaderEpoch
		}
	}
	return out
}

// coordinatorFrom asks one gateway which gateway coordinates key.
func coordinatorFrom(t *testing.T, p *gatewayProc, typ int8, key string) string {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 3
	req.CoordinatorType, req.CoordinatorKey = typ, key
	resp := askOne[*kmsg.FindCoordinatorResponse](t, p.addr, req)
	if resp.ErrorCode != 0 {
		return "error " + kerr.ErrorForCode(resp.ErrorCode).Error()
	}
	return fmt.Sprintf("%s:%d", resp.Host, resp.Port)
}

// TestGatewaysAgree: three gateways on one cluster name the same brokers,
// partition leaders with leader epochs, controller and coordinators, and
// send a request that reaches the wrong gateway elsewhere with Kafka's
// error.
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
}

// failover runs an idempotent producer and a two-member consumer group on
// three gateways while one gateway is killed (SIGKILL) and later started
// again, or (paused) stopped with SIGSTOP for 8 s, long enough for the
// others to take over what it led, and then let go on with what it was
// doing: the group's coordinator if coordinatorDies, otherwise one that
// leads partitions but not the group. Every acknowledged record is stored
// exactly once at dense offsets, the group consumes everything, and its
// commits never go backwards nor past what was consumed.
func failover(t *testing.T, coordinatorDies, paused bool) {
	g := threeGateways(t)
	const partitions = 6
	topic := newTopic(t)
	createTopic(t, topic, partitions, nil)
	procs := g.all()

	// A group coordinated by an added gateway if it is to die, by the
	// package's gateway otherwise.
	var group string
	victim := -1
	_, leaders := leadersFrom(t, procs[0], topic)
	for i := 0; i < 500 && group == ""; i++ {
		name := fmt.Sprintf("%s-g%d", topic, i)
		idx, _ := g.byAddr(coordinatorFrom(t, procs[0], 0, name))
		switch {
		case coordinatorDies && idx != 0:
			group, victim = name, idx
		case !coordinatorDies && idx == 0:
			group = name
			for p := int32(0); p < partitions; p++ {
				if j, _ := g.byAddr(leaders[p]); j != 0 {
					victim = j
				}
			}
		}
	}
	if group == "" || victim < 0 {
		t.Fatalf("no group and gateway to kill found (leaders %v)", leaders)
	}
	t.Logf("group %s; killing %s", group, procs[victim].addr)
	epochs := epochsFrom(t, procs[0], topic)

	seeds := kgo.SeedBrokers(g.seeds()...)
	log := &consumedLog{}
	startMember(t, "m1", group, topic, log, seeds)
	startMember(t, "m2", group, topic, log, seeds)

	// Watch the group's commits while it runs.
	adm := kadm.NewClient(newClient(t, seeds))
	watchCtx, stopWatch := context.WithCancel(context.Background())
	var watchErr error
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		last := map[int32]int64{}
		for watchCtx.Err() == nil {
			time.Sleep(250 * time.Millisecond)
			ctx, cancel := context.WithTimeout(watchCtx, 5*time.Second)
			c, err := committed(ctx, adm, group, topic)
			cancel()
			if err != nil {
				continue // coordinator moving
			}
			consumed := map[int32]int64{}
			for _, r := range log.snapshot() {
				consumed[r.partition] = max(consumed[r.partition], r.offset+1)
			}
			for p, o := range c {
				if o < last[p] {
					watchErr = fmt.Errorf("partition %d: commit went back from %d to %d", p, last[p], o)
					return
				}
				if o > consumed[p] {
					watchErr = fmt.Errorf("partition %d: commit %d past the %d records consumed", p, o, consumed[p])
					return
				}
				last[p] = o
			}
		}
	}()

	cl := newClient(t, seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RetryTimeout(2*time.Minute))
	produced := produceIdempotent(t, cl, topic, partitions, 1200, func(<-chan struct{}) {
		time.Sleep(time.Second)
		if paused {
			p := g.all()[victim]
			t.Logf("SIGSTOP %s", p.addr)
			p.signal(syscall.SIGSTOP)
			time.Sleep(8 * time.Second)
			t.Logf("SIGCONT %s", p.addr)
			p.signal(syscall.SIGCONT)
			return
		}
		g.all()[victim].kill()
		time.Sleep(8 * time.Second)
		if err := g.restart(victim); err != nil {
			t.Error(err)
		}
	})
	exactlyOnce(t, topic, produced)
	waitConsumed(t, log, produced)
	hwm := highWatermarks(t, topic, produced)
	waitCommitted(t, group, topic, hwm)
	stopWatch()
	<-watched
	if watchErr != nil {
		t.Fatal(watchErr)
	}

	// The victim's partitions moved away and back: their leader epochs
	// grew; the others kept their leaders and epochs.
	eventually(t, 20*time.Second, "leaders as before the kill", func() error {
		_, now := leadersFrom(t, g.all()[0], topic)
		for p, l := range leaders {
			if now[p] != l {
				return fmt.Errorf("partition %d led by %s, before by %s", p, now[p], l)
			}
		}
		return nil
	})
	after := epochsFrom(t, g.all()[0], topic)
	for p, l := range leaders {
		moved := l == procs[victim].addr
		if moved && after[p] <= epochs[p] || !moved && after[p] != epochs[p] {
			t.Errorf("partition %d (led by %s, the victim %v): leader epoch %d, before %d", p, l, moved, after[p], epochs[p])
		}
	}
}

// TestGatewayKilled: a gateway leading partitions dies without a goodbye
// and comes back.
func TestGatewayKilled(t *testing.T) { failover(t, false, false) }

// TestGatewayCoordinatorKilled: the gateway coordinating the group dies
// without a goodbye and comes back.
func TestGatewayCoordinatorKilled(t *testing.T) { failover(t, true, false) }

// TestGatewayCoordinatorPaused: the gateway coordinating the group (and
// leading partitions) stops for 8 s (SIGSTOP) while the others take its
// group and partitions over, then goes on (SIGCONT) with what it had under
// way, acting on what it owned before: no committed offset goes back, no
// offset is written twice, no idempotent batch is stored twice.
func TestGatewayCoordinatorPaused(t *testing.T) { failover(t, true, true) }

// TestGatewaysTransactions: a consume-transform-produce session on three
// gateways whose transaction coordinator, group coordinator and partition
// leaders are on different gateways: markers and the group's offsets go
// from gateway to gateway. The transaction coordinator's gateway is killed
// (SIGKILL) after two commits and started again; every input is output
// exactly once read_committed, and the group's commits reach the input's
// end.
func TestGatewaysTransactions(t *testing.T) {
	g := threeGateways(t)
	in := newTopic(t)
	createTopic(t, in, 4, nil)
	createTopic(t, in+"-out", 3, nil)
	procs := g.all()
	group := in + "-group"
	groupAt, _ := g.byAddr(coordinatorFrom(t, procs[0], 0, group))
	var txnID string
	txnAt := -1
	for i := 0; i < 200 && txnID == ""; i++ {
		id := fmt.Sprintf("%s-txn%d", in, i)
		at, _ := g.byAddr(coordinatorFrom(t, procs[0], 1, id))
		if at != groupAt && at != 0 {
			txnID, txnAt = id, at
		}
	}
	if txnID == "" {
		t.Fatal("no transactional id coordinated apart from the group and the package's gateway")
	}
	_, leaders := leadersFrom(t, procs[0], in+"-out")
	t.Logf("group at %s, transactions at %s, output leaders %v", procs[groupAt].addr, procs[txnAt].addr, leaders)
	transactSession(t, in, group, txnID, []kgo.Opt{kgo.SeedBrokers(g.seeds()...)}, func() {
		g.all()[txnAt].kill()
		if err := g.restart(txnAt); err != nil {
			t.Fatal(err)
		}
	})
}

// TestGatewaysClients: sarama, kafka-go and librdkafka, each bootstrapped
// from a different one of three gateways, produce to partitions led by all
// three; a librdkafka consumer bootstrapped from yet another reads every
// record once, at dense offsets.
func TestGatewaysClients(t *testing.T) {
	g := threeGateways(t)
	procs := g.all()
	const partitions = 6
	// The partitions' leaders follow from the topic's name (rendezvous
	// hashing over the view, served once it has settled): a topic whose
	// partitions do not come to be led by two gateways at least is left
	// for another.
	var topic string
	var leaders map[int32]string
	for attempt := 0; ; attempt++ {
		topic = newTopic(t) + "-" + strconv.Itoa(attempt)
		createTopic(t, topic, partitions, nil)
		spread := map[string]bool{}
		for wait := 0; wait < 20 && len(spread) < 2; wait++ {
			if wait > 0 {
				time.Sleep(500 * time.Millisecond)
			}
			_, leaders = leadersFrom(t, procs[0], topic)
			clear(spread)
			for _, l := range leaders {
				spread[l] = true
			}
		}
		if len(spread) >= 2 {
			break
		}
		if attempt == 4 {
			t.Fatalf("%d partitions led by %d gateway(s) for five topics", partitions, len(spread))
		}
	}
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
}
