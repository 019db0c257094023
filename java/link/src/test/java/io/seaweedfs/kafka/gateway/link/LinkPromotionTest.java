package io.seaweedfs.kafka.gateway.link;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/**
 * A transactional producer across a topic link's promotion, run by the Go test TestLinkFromKafka
 * in two phases (-Dlink.phase; -Dkafka.bootstrap is the cluster of the phase): on Apache Kafka ("source"), it commits, aborts and commits a
 * transaction to lk-jtx; once the link mirrored the topic to the gateway and promoted it
 * ("gateway"), a producer of the same transactional.id goes on against the gateway. A
 * read_committed consumer of the gateway reads the committed records of both sides, in order and
 * at increasing offsets, and none of the aborted ones.
 */
class LinkPromotionTest {
    static final String TOPIC = "lk-jtx";
    static final String TXN_ID = "lk-java-tx";

    static String bootstrap() {
        return System.getProperty("kafka.bootstrap", "127.0.0.1:9092");
    }

    static Properties txnProducer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, TXN_ID);
        return p;
    }

    static void transaction(KafkaProducer<String, String> p, String prefix, int n, boolean commit) throws Exception {
        p.beginTransaction();
        for (int i = 0; i < n; i++) {
            p.send(new ProducerRecord<>(TOPIC, prefix + "-" + i, prefix + "-" + i)).get(30, TimeUnit.SECONDS);
        }
        if (commit) {
            p.commitTransaction();
        } else {
            p.abortTransaction();
        }
    }

    @Test
    void transactionsAcrossThePromotion() throws Exception {
        String phase = System.getProperty("link.phase", "source");
        if (phase.equals("source")) {
            Properties a = new Properties();
            a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
            try (Admin admin = Admin.create(a)) {
                admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            }
            try (KafkaProducer<String, String> p = new KafkaProducer<>(txnProducer())) {
                p.initTransactions();
                transaction(p, "kafka-a", 10, true);
                transaction(p, "kafka-aborted", 5, false);
                transaction(p, "kafka-b", 10, true);
            }
            assertEquals(20, readCommitted().size(), "committed on Kafka");
            return;
        }
        try (KafkaProducer<String, String> p = new KafkaProducer<>(txnProducer())) {
            p.initTransactions();
            transaction(p, "gateway-a", 10, true);
            transaction(p, "gateway-aborted", 5, false);
            transaction(p, "gateway-b", 10, true);
        }
        List<ConsumerRecord<String, String>> got = readCommitted();
        List<String> values = new ArrayList<>();
        long last = -1;
        for (ConsumerRecord<String, String> r : got) {
            assertTrue(r.offset() > last, "offsets increase: " + r.offset() + " after " + last);
            last = r.offset();
            values.add(r.value());
        }
        List<String> want = new ArrayList<>();
        for (String prefix : List.of("kafka-a", "kafka-b", "gateway-a", "gateway-b")) {
            for (int i = 0; i < 10; i++) {
                want.add(prefix + "-" + i);
            }
        }
        assertEquals(want, values, "read_committed on the gateway after the promotion");
    }

    /** Reads lk-jtx read_committed from its start to its last stable offset. */
    static List<ConsumerRecord<String, String>> readCommitted() {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            TopicPartition tp = new TopicPartition(TOPIC, 0);
            consumer.assign(Set.of(tp));
            consumer.seekToBeginning(Set.of(tp));
            long end = consumer.endOffsets(Set.of(tp)).get(tp);
            long deadline = System.currentTimeMillis() + 30_000;
            while (consumer.position(tp) < end && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    out.add(r);
                }
            }
        }
        return out;
    }
}
