package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestTransactionsGroupTransactSession: consume-transform-produce with
// franz-go's GroupTransactSession. The session consumes an input topic
// read_committed and, per poll, produces each record's value + "-out" to an
// output topic and commits the consumed offsets in the same transaction;
// every third transaction aborts instead, and its records are consumed
// again (the session rewinds to the committed offsets). The gateway is
// restarted once between transactions. At the end a read_committed reader
// of the output gets each input record's output exactly once, a
// read_uncommitted one gets the aborted copies too, and the group's
// commits are the input's high watermarks.
func TestTransactionsGroupTransactSession(t *testing.T) {
	in := newTopic(t)
	createTopic(t, in, 4, nil)
	createTopic(t, in+"-out", 3, nil)
	transactSession(t, in, in+"-group", in+"-txn", nil, func() { restartGateway(t) })
}

// TestTransactionsConfluent: librdkafka's transactional producer commits
// one transaction and aborts another (after its records were delivered);
// librdkafka consumers with isolation.level read_committed get only the
// committed records, with read_uncommitted both, at the offsets delivered
// (the markers skipped). franz-go reads them the same.
func TestTransactionsConfluent(t *testing.T) {
	const parts, k = 2, 5
	topic := newTopic(t)
	createTopic(t, topic, parts, nil)
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": gw.addr, "transactional.id": topic + "-txn",
		"transaction.timeout.ms": 60000, "linger.ms": 5})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := ctxT(t)
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatalf("InitTransactions: %v", err)
	}
	// send produces k records to each partition in the open transaction
	// and waits until all are delivered, at offsets from, from+1, ...
	send := func(tx string, from int64) map[int32][]string {
		t.Helper()
		delivered := make(chan kafka.Event, parts*k)
		vals := map[int32][]string{}
		for part := range int32(parts) {
			for i := range k {
				v := fmt.Sprintf("%s-p%d-%d", tx, part, i)
				vals[part] = append(vals[part], v)
				if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: part},
					Value: []byte(v)}, delivered); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i := 0; i < parts*k; i++ {
			select {
			case e := <-delivered:
				m, ok := e.(*kafka.Message)
				if !ok {
					t.Fatalf("%s: event %v", tx, e)
				}
				if m.TopicPartition.Error != nil {
					t.Fatalf("%s: delivery: %v", tx, m.TopicPartition.Error)
				}
				part := m.TopicPartition.Partition
				if idx := slices.Index(vals[part], string(m.Value)); idx < 0 || int64(m.TopicPartition.Offset) != from+int64(idx) {
					t.Errorf("%s: %q delivered at %d/%d, want offset %d", tx, m.Value, part, m.TopicPartition.Offset, from+int64(idx))
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("%s: %d of %d delivered", tx, i, parts*k)
			}
		}
		return vals
	}
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	committed := send("commit", 0)
	if err := p.CommitTransaction(ctx); err != nil {
		t.Fatalf("CommitTransaction: %v", err)
	}
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	aborted := send("abort", k+1)
	if err := p.AbortTransaction(ctx); err != nil {
		t.Fatalf("AbortTransaction: %v", err)
	}

	ends := txnAppendEnds(t, topic, parts)
	rc := txnReadConfluentTo(t, topic, ends, "read_committed")
	ru := txnReadConfluentTo(t, topic, ends, "read_uncommitted")
	fc := txnReadTo(t, topic, ends, time.Minute, txnReadCommitted())
	for part := range int32(parts) {
		if ends[part] != 2*k+2 {
			t.Errorf("partition %d: record after the transactions at %d, want %d", part, ends[part], 2*k+2)
		}
		want := txnNumbered(committed[part], 0)
		if !slices.Equal(rc[part], want) {
			t.Errorf("partition %d: librdkafka read_committed got %v, want %v", part, rc[part], want)
		}
		if got := txnAt(fc[part]); !slices.Equal(got, want) {
			t.Errorf("partition %d: franz-go read_committed got %v, want %v", part, got, want)
		}
		want = slices.Concat(want, txnNumbered(aborted[part], k+1))
		if !slices.Equal(ru[part], want) {
			t.Errorf("partition %d: librdkafka read_uncommitted got %v, want %v", part, ru[part], want)
		}
	}
}

// txnReadConfluentTo reads topic from its start with a librdkafka consumer
// with isolation.level isolation, up to the records txnAppendEnds appended
// (at ends), and returns the records before them as value@offset.
func txnReadConfluentTo(t *testing.T, topic string, ends map[int32]int64, isolation string) map[int32][]string {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": gw.addr, "group.id": "unused-" + topic,
		"enable.auto.commit": false, "auto.offset.reset": "earliest", "isolation.level": isolation, "fetch.wait.max.ms": 200})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var tps []kafka.TopicPartition
	for p := range ends {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: kafka.OffsetBeginning})
	}
	if err := c.Assign(tps); err != nil {
		t.Fatal(err)
	}
	got := map[int32][]string{}
	reached := map[int32]bool{}
	for deadline := time.Now().Add(time.Minute); len(reached) < len(ends); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the end was not reached within a minute: reached %v, got %v", isolation, reached, got)
		}
		m, err := c.ReadMessage(time.Second)
		if err != nil {
			if ke, ok := err.(kafka.Error); ok && ke.IsTimeout() {
				continue
			}
			t.Fatalf("%s: %v", isolation, err)
		}
		part, off := m.TopicPartition.Partition, int64(m.TopicPartition.Offset)
		end, ok := ends[part]
		switch {
		case !ok || off > end:
			t.Fatalf("%s: %q at %d/%d, past the end", isolation, m.Value, part, off)
		case off == end:
			if string(m.Value) != txnEndValue {
				t.Fatalf("%s: %q at %d/%d, where the end record was acknowledged", isolation, m.Value, part, off)
			}
			reached[part] = true
		default:
			got[part] = append(got[part], fmt.Sprintf("%s@%d", m.Value, off))
		}
	}
	return got
}
