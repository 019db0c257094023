package e2e

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Each client library writes records its own way and reads them back; a
// second, different client reads them too, so neither only agrees with
// itself.

func TestSaramaProduceConsume(t *testing.T) {
	versions := map[string]sarama.KafkaVersion{"default": sarama.DefaultVersion, "3.6": sarama.V3_6_0_0}
	codecs := map[string]sarama.CompressionCodec{
		"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
		"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
	}
	for vname, version := range versions {
		for cname, codec := range codecs {
			t.Run(vname+"/"+cname, func(t *testing.T) {
				topic := newTopic(t)
				createTopic(t, topic, 2, nil)
				cfg := sarama.NewConfig()
				cfg.Version = version
				cfg.Producer.Return.Successes = true
				cfg.Producer.RequiredAcks = sarama.WaitForAll
				cfg.Producer.Compression = codec
				cfg.Producer.Partitioner = sarama.NewHashPartitioner
				prod, err := sarama.NewSyncProducer([]string{gw.addr}, cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer prod.Close()
				ts := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
				var msgs []*sarama.ProducerMessage
				for i := 0; i < 100; i++ {
					msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprint(i % 5)),
						Value:     sarama.ByteEncoder(bytes.Repeat([]byte{byte(i)}, 50+i)),
						Headers:   []sarama.RecordHeader{{Key: []byte("n"), Value: []byte(fmt.Sprint(i))}},
						Timestamp: ts.Add(time.Duration(i) * time.Millisecond)})
				}
				if err := prod.SendMessages(msgs); err != nil {
					t.Fatal(err)
				}

				// Read back with sarama's partition consumers.
				cons, err := sarama.NewConsumer([]string{gw.addr}, cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer cons.Close()
				got := map[string]*sarama.ConsumerMessage{}
				for p := int32(0); p < 2; p++ {
					pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
					if err != nil {
						t.Fatal(err)
					}
					want := 0
					for _, m := range msgs {
						if m.Partition == p {
							want++
						}
					}
					for i := 0; i < want; i++ {
						select {
						case m := <-pc.Messages():
							if m.Offset != int64(i) {
								t.Fatalf("partition %d: offset %d, want %d", p, m.Offset, i)
							}
							got[string(m.Headers[0].Value)] = m
						case err := <-pc.Errors():
							t.Fatal(err)
						case <-time.After(30 * time.Second):
							t.Fatalf("partition %d: %d of %d records", p, i, want)
						}
					}
					pc.Close()
				}
				for i, m := range msgs {
					g := got[fmt.Sprint(i)]
					v, _ := m.Value.Encode()
					k, _ := m.Key.Encode()
					if g == nil || !bytes.Equal(g.Value, v) || !bytes.Equal(g.Key, k) || !g.Timestamp.Equal(m.Timestamp) {
						t.Fatalf("record %d: got %+v", i, g)
					}
				}
				// And with franz-go.
				if n := len(consumeN(t, topic, len(msgs))); n != len(msgs) {
					t.Fatalf("franz-go read %d records", n)
				}
			})
		}
	}
}

func TestKafkaGoWriterReader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(w *kafkago.Writer)
	}{
		{"defaults", func(w *kafkago.Writer) {}},
		{"require-all-snappy", func(w *kafkago.Writer) {
			w.RequiredAcks = kafkago.RequireAll
			w.Compression = compress.Snappy
		}},
		{"require-one-lz4", func(w *kafkago.Writer) {
			w.RequiredAcks = kafkago.RequireOne
			w.Compression = compress.Lz4
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := newTopic(t)
			createTopic(t, topic, 3, nil)
			// A transport of its own: kafka-go's shared one caches cluster
			// metadata for seconds and would not know the new topic yet.
			w := &kafkago.Writer{Addr: kafkago.TCP(gw.addr), Topic: topic, Balancer: &kafkago.Hash{}, Transport: &kafkago.Transport{}}
			tc.setup(w)
			defer w.Close()
			var msgs []kafkago.Message
			for i := 0; i < 300; i++ {
				msgs = append(msgs, kafkago.Message{Key: []byte(fmt.Sprintf("k%d", i%7)), Value: []byte(fmt.Sprintf("v%d", i)),
					Headers: []kafkago.Header{{Key: "i", Value: []byte(fmt.Sprint(i))}}})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				t.Fatal(err)
			}
			// RequireNone does not wait for the write: wait for the records.
			eventually(t, 30*time.Second, "records stored", func() error {
				var total int64
				for p := 0; p < 3; p++ {
					conn, err := kafkago.DialLeader(ctx, "tcp", gw.addr, topic, p)
					if err != nil {
						return err
					}
					last, err := conn.ReadLastOffset()
					conn.Close()
					if err != nil {
						return err
					}
					total += last
				}
				if total != int64(len(msgs)) {
					return fmt.Errorf("%d records stored", total)
				}
				return nil
			})

			seen := map[string]bool{}
			for p := 0; p < 3; p++ {
				r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{gw.addr}, Topic: topic, Partition: p, MaxWait: 200 * time.Millisecond})
				conn, err := kafkago.DialLeader(ctx, "tcp", gw.addr, topic, p)
				if err != nil {
					t.Fatal(err)
				}
				last, _ := conn.ReadLastOffset()
				conn.Close()
				lastKey := map[string]int{}
				for i := int64(0); i < last; i++ {
					m, err := r.ReadMessage(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if m.Offset != i {
						t.Fatalf("partition %d: offset %d, want %d", p, m.Offset, i)
					}
					var n int
					fmt.Sscanf(string(m.Value), "v%d", &n)
					if prev, ok := lastKey[string(m.Key)]; ok && n <= prev {
						t.Fatalf("key %s out of order: %d after %d", m.Key, n, prev)
					}
					lastKey[string(m.Key)] = n
					if len(m.Headers) != 1 || string(m.Headers[0].Value) != fmt.Sprint(n) {
						t.Fatalf("record %s: headers %+v", m.Value, m.Headers)
					}
					seen[string(m.Value)] = true
				}
				r.Close()
			}
			if len(seen) != len(msgs) {
				t.Fatalf("read %d distinct records, want %d", len(seen), len(msgs))
			}
		})
	}
}

// TestKafkaGoWriterAutoCreate: the Writer asks for metadata of every topic
// (a null list) and creates its topic on first write.
func TestKafkaGoWriterAutoCreate(t *testing.T) {
	topic := newTopic(t)
	w := &kafkago.Writer{Addr: kafkago.TCP(gw.addr), Topic: topic, AllowAutoTopicCreation: true, RequiredAcks: kafkago.RequireAll}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var err error
	for i := 0; i < 20; i++ { // Kafka too answers the first write to a new topic with a retriable error
		if err = w.WriteMessages(ctx, kafkago.Message{Value: []byte("hello")}); err == nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	got := consumeN(t, topic, 1)
	if string(got[0].Value) != "hello" {
		t.Fatalf("got %q", got[0].Value)
	}
}

func TestConfluentProduceConsume(t *testing.T) {
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			topic := newTopic(t)
			createTopic(t, topic, 2, nil)
			p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": gw.addr, "compression.type": codec, "linger.ms": 5})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			const n = 200
			ts := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
			delivered := make(chan kafka.Event, n)
			for i := 0; i < n; i++ {
				var key []byte
				if i%10 != 0 {
					key = []byte(fmt.Sprint(i % 3))
				}
				err := p.Produce(&kafka.Message{
					TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
					Key:            key, Value: []byte(fmt.Sprintf("value-%d", i)), Timestamp: ts.Add(time.Duration(i) * time.Millisecond),
					Headers: []kafka.Header{{Key: "i", Value: []byte(fmt.Sprint(i))}, {Key: "i", Value: nil}},
				}, delivered)
				if err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < n; i++ {
				select {
				case e := <-delivered:
					if m := e.(*kafka.Message); m.TopicPartition.Error != nil {
						t.Fatalf("delivery: %v", m.TopicPartition.Error)
					}
				case <-time.After(60 * time.Second):
					t.Fatalf("%d of %d delivered", i, n)
				}
			}

			// librdkafka consumer with a manual assignment (groups are not served yet).
			c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": gw.addr, "group.id": "unused-" + topic,
				"enable.auto.commit": false, "auto.offset.reset": "earliest"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning},
				{Topic: &topic, Partition: 1, Offset: kafka.OffsetBeginning}}); err != nil {
				t.Fatal(err)
			}
			next := map[int32]kafka.Offset{}
			seen := map[string]bool{}
			deadline := time.Now().Add(60 * time.Second)
			for len(seen) < n && time.Now().Before(deadline) {
				m, err := c.ReadMessage(time.Second)
				if err != nil {
					if kerr, ok := err.(kafka.Error); ok && kerr.IsTimeout() {
						continue
					}
					t.Fatal(err)
				}
				part := m.TopicPartition.Partition
				if m.TopicPartition.Offset != next[part] {
					t.Fatalf("partition %d: offset %d, want %d", part, m.TopicPartition.Offset, next[part])
				}
				next[part]++
				var i int
				fmt.Sscanf(string(m.Value), "value-%d", &i)
				if (i%10 == 0) != (m.Key == nil) {
					t.Fatalf("record %d: key %q", i, m.Key)
				}
				if !m.Timestamp.Equal(ts.Add(time.Duration(i) * time.Millisecond)) {
					t.Fatalf("record %d: timestamp %v", i, m.Timestamp)
				}
				if len(m.Headers) != 2 || string(m.Headers[0].Value) != fmt.Sprint(i) || m.Headers[1].Value != nil {
					t.Fatalf("record %d: headers %v", i, m.Headers)
				}
				seen[string(m.Value)] = true
			}
			if len(seen) != n {
				t.Fatalf("librdkafka read %d of %d records", len(seen), n)
			}
			// franz-go reads what librdkafka wrote.
			if got := consumeN(t, topic, n, kgo.FetchMaxWait(200*time.Millisecond)); len(got) != n {
				t.Fatalf("franz-go read %d", len(got))
			}
		})
	}
}
