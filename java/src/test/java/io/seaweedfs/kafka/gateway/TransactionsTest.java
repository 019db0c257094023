package io.seaweedfs.kafka.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** Kafka's transactional producer, and read_committed consumers. */
class TransactionsTest {

    static KafkaProducer<String, String> transactional(String id) {
        Properties p = Gateway.producer();
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
        KafkaProducer<String, String> producer = new KafkaProducer<>(p);
        producer.initTransactions();
        return producer;
    }

    static List<String> readAll(String topic, int partitions, String isolation, int want) {
        Properties p = Gateway.consumer(null);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) {
                tps.add(new TopicPartition(topic, i));
            }
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + Gateway.DEADLINE_MS;
            while (got.size() < want && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Gateway.POLL)) {
                    got.add(r.value());
                }
            }
            // Nothing more comes.
            long quiet = System.currentTimeMillis() + 2_000;
            while (System.currentTimeMillis() < quiet) {
                for (ConsumerRecord<String, String> r : consumer.poll(Gateway.POLL)) {
                    got.add(r.value());
                }
            }
        }
        return got;
    }

    /** A committed transaction's records are read, an aborted one's only by read_uncommitted consumers. */
    @Test
    void committedReadAbortedSkipped() throws Exception {
        String topic = Gateway.topic("java-txn", 2);
        try (KafkaProducer<String, String> producer = transactional(Gateway.unique("java-txn-id"))) {
            producer.beginTransaction();
            for (int i = 0; i < 100; i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, null, "committed-" + i));
            }
            producer.commitTransaction();
            producer.beginTransaction();
            for (int i = 0; i < 50; i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, null, "aborted-" + i));
            }
            producer.flush();
            producer.abortTransaction();
            producer.beginTransaction();
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, null, "committed-again-" + i));
            }
            producer.commitTransaction();
        }
        List<String> committed = readAll(topic, 2, "read_committed", 110);
        assertEquals(110, committed.size(), "read_committed read " + committed.size());
        assertTrue(committed.stream().noneMatch(v -> v.startsWith("aborted")), "read_committed read aborted records");
        List<String> all = readAll(topic, 2, "read_uncommitted", 160);
        assertEquals(160, all.size(), "read_uncommitted read " + all.size());
    }

    /**
     * Consume, transform, produce: each input record's output is written and its offset committed in one
     * transaction (sendOffsetsToTransaction with the group's metadata), so the output holds each once and the
     * group's commit is at the end of the input.
     */
    @Test
    void consumeTransformProduceExactlyOnce() throws Exception {
        String in = Gateway.topic("java-eos-in", 1);
        String out = Gateway.topic("java-eos-out", 1);
        int n = 300;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Gateway.producer())) {
            for (int i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(in, "k" + i, "in-" + i));
            }
        }
        String group = Gateway.unique("java-eos-group");
        Properties cp = Gateway.consumer(group);
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
        int done = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp);
             KafkaProducer<String, String> producer = transactional(Gateway.unique("java-eos-id"))) {
            consumer.subscribe(List.of(in));
            long deadline = System.currentTimeMillis() + Gateway.DEADLINE_MS;
            while (done < n && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Gateway.POLL);
                if (records.isEmpty()) {
                    continue;
                }
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    producer.send(new ProducerRecord<>(out, r.key(), r.value().replace("in-", "out-")));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    done++;
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
            }
            assertEquals(n, done, "input records transformed");
            TopicPartition tp = new TopicPartition(in, 0);
            assertEquals(n, consumer.committed(java.util.Set.of(tp)).get(tp).offset(), "the group's commit");
        }
        List<String> output = readAll(out, 1, "read_committed", n);
        List<String> want = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            want.add("out-" + i);
        }
        assertEquals(want, output);
    }
}
