package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCreatePartitions grows a topic as Kafka does, with franz-go's admin
// client (3 to 6 partitions) and librdkafka's (6 to 8): the records
// produced before stay in their partitions at their offsets, the new
// partitions start empty at offset 0 and fill with what keys now hash to
// them, and a consumer from the start reads every record once, in order.
func TestCreatePartitions(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 3, nil)
	produced := map[int32][]string{}
	produceBatch(t, topic, 0, 300, produced)
	before := map[int32]int{}
	for p, vals := range produced {
		before[p] = len(vals)
	}

	adm := kadm.NewClient(newClient(t))
	resp, err := adm.CreatePartitions(ctxT(t), 3, topic)
	if err != nil || resp[topic].Err != nil {
		t.Fatalf("CreatePartitions to 6: %v %+v", err, resp)
	}
	eventually(t, 10*time.Second, "6 partitions in metadata", func() error {
		d, err := adm.ListTopics(ctxT(t), topic)
		if err != nil {
			return err
		}
		if n := len(d[topic].Partitions); n != 6 {
			return fmt.Errorf("%d partitions", n)
		}
		return nil
	})
	// A new producer hashes the keys over six partitions (produceBatch
	// checks each acknowledged offset is the next of its partition).
	produceBatch(t, topic, 300, 300, produced)
	for p := int32(3); p < 6; p++ {
		if len(produced[p]) == 0 {
			t.Errorf("nothing produced to new partition %d", p)
		}
	}
	for p, n := range before {
		if len(produced[p]) <= n {
			t.Errorf("partition %d took no records after growing", p)
		}
	}

	// librdkafka's admin client, then its producer to a new partition.
	ac, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": gw.addr})
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	res, err := ac.CreatePartitions(ctxT(t), []kafka.PartitionsSpecification{{Topic: topic, IncreaseTo: 8}})
	if err != nil || len(res) != 1 || res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("librdkafka CreatePartitions to 8: %v %+v", err, res)
	}
	res, err = ac.CreatePartitions(ctxT(t), []kafka.PartitionsSpecification{{Topic: topic, IncreaseTo: 7}})
	if err != nil || len(res) != 1 || res[0].Error.Code() != kafka.ErrInvalidPartitions {
		t.Fatalf("librdkafka CreatePartitions to 7 of 8: %v %+v, want INVALID_PARTITIONS", err, res)
	}
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": gw.addr, "linger.ms": 5})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	delivered := make(chan kafka.Event, 10)
	for i := 0; i < 10; i++ {
		v := fmt.Sprintf("record-p7-%d", i)
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 7}, Value: []byte(v)}, delivered); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 10; i++ {
		select {
		case e := <-delivered:
			m := e.(*kafka.Message)
			if m.TopicPartition.Error != nil || int(m.TopicPartition.Offset) != i {
				t.Fatalf("delivery %d to partition 7: offset %v, %v", i, m.TopicPartition.Offset, m.TopicPartition.Error)
			}
			produced[7] = append(produced[7], string(m.Value))
		case <-time.After(60 * time.Second):
			t.Fatalf("%d of 10 delivered to partition 7", i)
		}
	}
	if len(produced[6]) != 0 {
		t.Fatalf("partition 6 got %d records", len(produced[6]))
	}
	exactlyOnce(t, topic, produced)
	// And a group consumer of the grown topic gets every partition.
	got := consumeN(t, topic, 610, kgo.ConsumerGroup(topic+"-g"))
	seen := map[int32]bool{}
	for _, r := range got {
		seen[r.Partition] = true
	}
	for p := int32(0); p < 8; p++ {
		if p != 6 && !seen[p] {
			t.Errorf("the group consumer read nothing of partition %d", p)
		}
	}
}
