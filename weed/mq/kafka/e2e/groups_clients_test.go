package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	kafkago "github.com/segmentio/kafka-go"
)

// saramaHandler logs what its member consumes, marks each message and
// commits the marks when its claim goes quiet and when the session ends.
type saramaHandler struct {
	name string
	log  *consumedLog
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaHandler) Cleanup(s sarama.ConsumerGroupSession) error {
	s.Commit()
	return nil
}

func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	marked := false
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				if marked {
					s.Commit()
				}
				return nil
			}
			h.log.add(h.name, m.Partition, m.Offset, m.Value)
			s.MarkMessage(m, "")
			marked = true
		case <-tick.C:
			if marked {
				s.Commit()
				marked = false
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

// TestGroupSarama: two sarama ConsumerGroup members share a topic and
// commit with MarkMessage and Commit; sarama's ClusterAdmin sees the group,
// its members and its offsets.
func TestGroupSarama(t *testing.T) {
	topic := newTopic(t)
	group := topic + "-group"
	createTopic(t, topic, 4, nil)
	produced := map[int32][]string{}
	produceBatch(t, topic, 0, 200, produced)
	log := &consumedLog{}
	config := func(clientID string) *sarama.Config {
		cfg := sarama.NewConfig()
		cfg.Version = sarama.V3_6_0_0
		cfg.ClientID = clientID
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cfg.Consumer.Offsets.AutoCommit.Enable = false
		cfg.Consumer.Group.Session.Timeout = groupSession
		cfg.Consumer.Group.Heartbeat.Interval = groupHeartbeat
		cfg.Consumer.Group.Rebalance.Timeout = groupRebalance
		cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
		cfg.Consumer.Return.Errors = true
		return cfg
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	var groups []sarama.ConsumerGroup
	var wg sync.WaitGroup
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() {
			cancel()
			for _, g := range groups {
				g.Close() //nolint:errcheck
			}
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	names := []string{"e2e-sarama-0", "e2e-sarama-1"}
	for _, name := range names {
		g, err := sarama.NewConsumerGroup([]string{gw.addr}, group, config(name))
		if err != nil {
			t.Fatal(err)
		}
		groups = append(groups, g)
		h := &saramaHandler{name: name, log: log}
		wg.Add(2)
		go func() {
			defer wg.Done()
			// Consume returns at every rebalance; it is called again.
			for ctx.Err() == nil {
				if err := g.Consume(ctx, []string{topic}, h); err != nil {
					if errors.Is(err, sarama.ErrClosedConsumerGroup) {
						return
					}
					t.Logf("%s: %v", name, err)
					select {
					case <-ctx.Done():
					case <-time.After(500 * time.Millisecond):
					}
				}
			}
		}()
		go func() {
			defer wg.Done()
			for err := range g.Errors() {
				t.Logf("%s: %v", name, err)
			}
		}()
	}

	admin, err := sarama.NewClusterAdmin([]string{gw.addr}, config("e2e-sarama-admin"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	describeGroup := func() (*sarama.GroupDescription, error) {
		ds, err := admin.DescribeConsumerGroups([]string{group})
		if err != nil {
			return nil, err
		}
		if len(ds) != 1 || ds[0].GroupId != group {
			return nil, fmt.Errorf("described %d groups", len(ds))
		}
		if ds[0].Err != sarama.ErrNoError {
			return nil, ds[0].Err
		}
		return ds[0], nil
	}

	// Both members are in the group and share the partitions.
	eventually(t, 45*time.Second, "two sarama members share the partitions", func() error {
		d, err := describeGroup()
		if err != nil {
			return err
		}
		if d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "range" || len(d.Members) != 2 {
			return fmt.Errorf("state %q, protocol %q/%q, %d members", d.State, d.ProtocolType, d.Protocol, len(d.Members))
		}
		var clients []string
		owner := map[int32]string{}
		for id, m := range d.Members {
			clients = append(clients, m.ClientId)
			a, err := m.GetMemberAssignment()
			if err != nil {
				return err
			}
			if len(a.Topics[topic]) == 0 {
				return fmt.Errorf("%s has no partition", m.ClientId)
			}
			for _, p := range a.Topics[topic] {
				if o, dup := owner[p]; dup {
					return fmt.Errorf("partition %d assigned to %s and %s", p, o, id)
				}
				owner[p] = id
			}
		}
		slices.Sort(clients)
		if !slices.Equal(clients, names) || len(owner) != 4 {
			return fmt.Errorf("clients %v, assignment %v", clients, owner)
		}
		return nil
	})
	produceBatch(t, topic, 200, 200, produced)
	waitConsumed(t, log, produced)
	consumers := map[string]bool{}
	for _, c := range log.snapshot() {
		consumers[c.member] = true
	}
	if len(consumers) != 2 {
		t.Errorf("records consumed by %v, want both members", consumers)
	}

	// The commits, as sarama's admin and franz-go read them.
	hwm := highWatermarks(t, topic, produced)
	eventually(t, 30*time.Second, "sarama's commits", func() error {
		resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1, 2, 3}})
		if err != nil {
			return err
		}
		for p := int32(0); p < 4; p++ {
			b := resp.GetBlock(topic, p)
			if b == nil || b.Err != sarama.ErrNoError || b.Offset != hwm[p] {
				return fmt.Errorf("partition %d: %+v, want offset %d", p, b, hwm[p])
			}
		}
		return nil
	})
	waitCommitted(t, group, topic, hwm)
	listed, err := admin.ListConsumerGroups()
	if err != nil {
		t.Fatal(err)
	}
	if pt, ok := listed[group]; !ok || pt != "consumer" {
		t.Errorf("ListConsumerGroups: %q listed %v with protocol type %q", group, ok, pt)
	}

	// Closing leaves the group.
	stop()
	eventually(t, 30*time.Second, "group empty after both closed", func() error {
		d, err := describeGroup()
		if err != nil {
			return err
		}
		if d.State != "Empty" || len(d.Members) != 0 {
			return fmt.Errorf("state %q with %d members", d.State, len(d.Members))
		}
		return nil
	})
	waitCommitted(t, group, topic, hwm)
}

// TestGroupKafkaGo: a kafka-go Reader with a GroupID reads and commits
// everything; a later Reader of the group starts at the commits.
func TestGroupKafkaGo(t *testing.T) {
	topic := newTopic(t)
	group := topic + "-group"
	createTopic(t, topic, 4, nil)
	produced := map[int32][]string{}
	produceBatch(t, topic, 0, 300, produced)
	newReader := func() *kafkago.Reader {
		return kafkago.NewReader(kafkago.ReaderConfig{
			Brokers: []string{gw.addr}, GroupID: group, Topic: topic, MaxWait: 200 * time.Millisecond,
			SessionTimeout: groupSession, HeartbeatInterval: groupHeartbeat, RebalanceTimeout: groupRebalance,
			StartOffset: kafkago.FirstOffset,
		})
	}
	ctx := ctxT(t)
	// read reads n records, in order per partition from from, committing
	// every 25 and the last ones.
	read := func(r *kafkago.Reader, n int, from map[int32]int64) {
		t.Helper()
		next := maps.Clone(from)
		if next == nil {
			next = map[int32]int64{}
		}
		var pending []kafkago.Message
		for i := 0; i < n; i++ {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatalf("record %d of %d: %v", i, n, err)
			}
			p := int32(m.Partition)
			if m.Offset != next[p] || m.Offset >= int64(len(produced[p])) || string(m.Value) != produced[p][m.Offset] {
				t.Fatalf("partition %d: %q at %d, want offset %d", p, m.Value, m.Offset, next[p])
			}
			next[p]++
			pending = append(pending, m)
			if len(pending) == 25 || i == n-1 {
				if err := r.CommitMessages(ctx, pending...); err != nil {
					t.Fatal(err)
				}
				pending = nil
			}
		}
	}
	r := newReader()
	read(r, 300, nil)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	hwm := highWatermarks(t, topic, produced)
	waitCommitted(t, group, topic, hwm)

	produceBatch(t, topic, 300, 100, produced)
	r = newReader()
	read(r, 100, hwm)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, group, topic, highWatermarks(t, topic, produced))
	waitGroup(t, group, topic, "Empty")
}

// TestGroupConfluent: two librdkafka consumers share a topic and commit
// synchronously; one closes and the other takes all partitions.
func TestGroupConfluent(t *testing.T) {
	topic := newTopic(t)
	group := topic + "-group"
	createTopic(t, topic, 4, nil)
	produced := map[int32][]string{}
	produceBatch(t, topic, 0, 300, produced)
	log := &consumedLog{}

	type rdkMember struct {
		c    *kafka.Consumer
		stop chan struct{}
		done chan struct{}
		once sync.Once
	}
	// close stops polling (after a last commit) and closes the consumer,
	// which leaves the group.
	closeMember := func(m *rdkMember) {
		m.once.Do(func() {
			close(m.stop)
			<-m.done
			m.c.Close() //nolint:errcheck
		})
	}
	start := func(name string) *rdkMember {
		c, err := kafka.NewConsumer(&kafka.ConfigMap{
			"bootstrap.servers": gw.addr, "group.id": group, "client.id": name,
			"auto.offset.reset": "earliest", "enable.auto.commit": false,
			"session.timeout.ms": int(groupSession.Milliseconds()), "heartbeat.interval.ms": int(groupHeartbeat.Milliseconds()),
			"fetch.wait.max.ms": 200,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SubscribeTopics([]string{topic}, nil); err != nil {
			t.Fatal(err)
		}
		m := &rdkMember{c: c, stop: make(chan struct{}), done: make(chan struct{})}
		t.Cleanup(func() { closeMember(m) })
		go func() {
			defer close(m.done)
			// Commit() commits the offsets of the messages read so far.
			commit := func() {
				if _, err := c.Commit(); err != nil {
					if ke, ok := err.(kafka.Error); !ok || ke.Code() != kafka.ErrNoOffset {
						t.Logf("%s: commit: %v", name, err)
					}
				}
			}
			read := 0
			for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); {
				select {
				case <-m.stop:
					commit()
					return
				default:
				}
				msg, err := c.ReadMessage(200 * time.Millisecond)
				if err != nil {
					if ke, ok := err.(kafka.Error); ok && ke.IsTimeout() {
						if read > 0 {
							commit()
							read = 0
						}
					} else {
						t.Logf("%s: %v", name, err)
					}
					continue
				}
				log.add(name, msg.TopicPartition.Partition, int64(msg.TopicPartition.Offset), msg.Value)
				if read++; read == 50 {
					commit()
					read = 0
				}
			}
		}()
		return m
	}

	c1 := start("rdk-1")
	c2 := start("rdk-2")
	waitShared(t, group, topic, 4, "rdk-1", "rdk-2")
	waitConsumed(t, log, produced)

	// rdk-2 leaves; rdk-1 takes every partition and reads what comes next.
	closeMember(c2)
	waitShared(t, group, topic, 4, "rdk-1")
	produceBatch(t, topic, 300, 200, produced)
	waitConsumed(t, log, produced)
	hwm := highWatermarks(t, topic, produced)
	waitCommitted(t, group, topic, hwm)

	// librdkafka reads the same commits.
	close(c1.stop)
	<-c1.done
	var parts []kafka.TopicPartition
	for p := int32(0); p < 4; p++ {
		parts = append(parts, kafka.TopicPartition{Topic: &topic, Partition: p})
	}
	got, err := c1.c.Committed(parts, 10000)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range got {
		if tp.Error != nil || int64(tp.Offset) != hwm[tp.Partition] {
			t.Errorf("partition %d: committed %v (%v), want %d", tp.Partition, tp.Offset, tp.Error, hwm[tp.Partition])
		}
	}
	c1.once.Do(func() { c1.c.Close() }) //nolint:errcheck
	waitGroup(t, group, topic, "Empty")
}
