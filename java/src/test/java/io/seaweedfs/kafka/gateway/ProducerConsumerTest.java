package io.seaweedfs.kafka.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;

/** Kafka's producer with its defaults and its consumer in a classic group. */
class ProducerConsumerTest {

    /**
     * 3,000 records from an idempotent acks=all producer (Kafka's defaults) over three partitions: a consumer
     * group reads each acknowledged record once, at the offset its acknowledgement gave, in order, with its key,
     * value and headers; the group's commit is what a second member of the group starts from.
     */
    @Test
    void everyAcknowledgedRecordOnceInOrder() throws Exception {
        String topic = Gateway.topic("java-defaults", 3);
        int n = 3000;
        Map<TopicPartition, Map<Long, String>> acked = new HashMap<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Gateway.producer())) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                ProducerRecord<String, String> r = new ProducerRecord<>(topic, "key-" + (i % 17), "value-" + i);
                r.headers().add(new RecordHeader("i", Integer.toString(i).getBytes()));
                sent.add(producer.send(r));
            }
            for (int i = 0; i < n; i++) {
                RecordMetadata m = sent.get(i).get();
                String old = acked.computeIfAbsent(new TopicPartition(topic, m.partition()), k -> new HashMap<>())
                    .put(m.offset(), "value-" + i);
                assertNull(old, "offset " + m.offset() + " of partition " + m.partition() + " acknowledged twice");
            }
        }
        assertEquals(3, acked.size(), "records went to " + acked.keySet());

        String group = Gateway.unique("java-group");
        Map<TopicPartition, Long> last = new HashMap<>();
        int read = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Gateway.consumer(group))) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + Gateway.DEADLINE_MS;
            while (read < n && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Gateway.POLL)) {
                    TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                    assertEquals(acked.get(tp).get(r.offset()), r.value(), "record at " + tp + "@" + r.offset());
                    Long before = last.put(tp, r.offset());
                    assertTrue(before == null || r.offset() > before, tp + ": offset " + r.offset() + " after " + before);
                    String i = new String(r.headers().lastHeader("i").value());
                    assertEquals("value-" + i, r.value(), "header of " + tp + "@" + r.offset());
                    assertEquals("key-" + (Integer.parseInt(i) % 17), r.key());
                    read++;
                }
            }
            assertEquals(n, read, "records read");
            consumer.commitSync();
        }
        try (KafkaConsumer<String, String> again = new KafkaConsumer<>(Gateway.consumer(group))) {
            Set<TopicPartition> parts = acked.keySet();
            Map<TopicPartition, OffsetAndMetadata> committed = again.committed(parts);
            for (TopicPartition tp : parts) {
                assertNotNull(committed.get(tp), "no commit of " + tp);
                assertEquals(last.get(tp) + 1, committed.get(tp).offset(), "commit of " + tp);
            }
            again.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 5_000;
            int more = 0;
            while (System.currentTimeMillis() < deadline) {
                more += again.poll(Gateway.POLL).count();
            }
            assertEquals(0, more, "records read again after the group's commit");
        }
    }

    /** A consumer without a group reads assigned partitions from an offset it seeks to. */
    @Test
    void assignAndSeek() throws Exception {
        String topic = Gateway.topic("java-assign", 1);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Gateway.producer())) {
            for (int i = 0; i < 100; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, "v" + i));
            }
        }
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Gateway.consumer(null))) {
            consumer.assign(List.of(tp));
            assertEquals(100L, consumer.endOffsets(List.of(tp)).get(tp));
            consumer.seek(tp, 60);
            List<String> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + Gateway.DEADLINE_MS;
            while (got.size() < 40 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Gateway.POLL)) {
                    got.add(r.value());
                }
            }
            List<String> want = new ArrayList<>();
            for (int i = 60; i < 100; i++) {
                want.add("v" + i);
            }
            assertEquals(want, got);
            assertEquals(List.of(), got.stream().filter(v -> !v.startsWith("v")).collect(Collectors.toList()));
        }
    }

    /**
     * A topic with message.timestamp.type=LogAppendTime: records produced with their own (old) timestamps are
     * stamped with the time the log appended them; the producer's acknowledgement gives that time and the
     * consumer reads it, as LOG_APPEND_TIME.
     */
    @Test
    void logAppendTime() throws Exception {
        String topic = Gateway.topic("java-append-time", 1, Map.of("message.timestamp.type", "LogAppendTime"));
        long before = System.currentTimeMillis();
        Map<Long, Long> acked = new HashMap<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Gateway.producer())) {
            for (int i = 0; i < 10; i++) {
                RecordMetadata m = producer.send(new ProducerRecord<>(topic, 0, 1_000L + i, "k", "v" + i)).get();
                acked.put(m.offset(), m.timestamp());
            }
        }
        long after = System.currentTimeMillis();
        for (long ts : acked.values()) {
            assertTrue(ts >= before - 1_000 && ts <= after + 1_000, "acknowledged timestamp " + ts + ", not the append time");
        }
        TopicPartition tp = new TopicPartition(topic, 0);
        int read = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Gateway.consumer(null))) {
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + Gateway.DEADLINE_MS;
            while (read < 10 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Gateway.POLL)) {
                    assertEquals(TimestampType.LOG_APPEND_TIME, r.timestampType(), "timestamp type at " + r.offset());
                    assertEquals(acked.get(r.offset()), r.timestamp(), "timestamp at " + r.offset());
                    read++;
                }
            }
        }
        assertEquals(10, read, "records read");
    }
}
