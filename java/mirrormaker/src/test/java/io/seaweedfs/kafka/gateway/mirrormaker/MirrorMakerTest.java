package io.seaweedfs.kafka.gateway.mirrormaker;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.connect.mirror.MirrorMaker;
import org.junit.jupiter.api.Test;

/**
 * MirrorMaker 2 in dedicated mode with its defaults but for the clusters' addresses: the gateways'
 * cluster is both its source (alias src) and its target (dst), so that a topic is mirrored to
 * src.topic. Its own topics are created with its default replication factor 3, the mirrored one
 * with 2; against gateways on three volume servers every one is taken.
 */
class MirrorMakerTest {

    static String bootstrap() {
        return System.getProperty("kafka.bootstrap", "127.0.0.1:9092");
    }

    static Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        return Admin.create(p);
    }

    @Test
    void mirrorsWithItsDefaultFactors() throws Exception {
        String topic = "mm2-" + UUID.randomUUID().toString().substring(0, 8);
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 200; i++) {
                p.send(new ProducerRecord<>(topic, "k" + i, "v" + i));
            }
            p.flush();
        }

        Map<String, String> mm = new HashMap<>();
        mm.put("clusters", "src, dst");
        mm.put("src.bootstrap.servers", bootstrap());
        mm.put("dst.bootstrap.servers", bootstrap());
        mm.put("src->dst.enabled", "true");
        mm.put("src->dst.topics", topic);
        mm.put("dst->src.enabled", "false");
        mm.put("refresh.topics.interval.seconds", "2");
        MirrorMaker mirrorMaker = new MirrorMaker(mm, List.of("dst"));
        mirrorMaker.start();
        String mirrored = "src." + topic;
        try {
            assertEquals(200, count(mirrored, 200, 180_000), "records mirrored to " + mirrored);
        } finally {
            mirrorMaker.stop();
        }
        try (Admin admin = admin()) {
            List<String> internal = admin.listTopics().names().get(30, TimeUnit.SECONDS).stream()
                .filter(t -> t.startsWith("mm2-") && t.endsWith(".internal")).toList();
            Map<String, TopicDescription> ds = admin.describeTopics(
                java.util.stream.Stream.concat(internal.stream(), java.util.stream.Stream.of(mirrored)).toList())
                .allTopicNames().get(30, TimeUnit.SECONDS);
            assertEquals(true, internal.size() >= 3, "MirrorMaker 2's own topics: " + internal);
            for (TopicDescription d : ds.values()) {
                int want = d.name().equals(mirrored) ? 2 : 3;
                for (TopicPartitionInfo p : d.partitions()) {
                    assertEquals(want, p.replicas().size(), d.name() + " partition " + p.partition() + "'s replicas");
                }
            }
        }
    }

    /** Reads a topic from the start until it has n records or the time is up; returns how many. */
    static int count(String topic, int n, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (Admin admin = admin()) {
            while (!admin.listTopics().names().get(30, TimeUnit.SECONDS).contains(topic)) {
                if (System.currentTimeMillis() > deadline) {
                    return 0;
                }
                Thread.sleep(500);
            }
        }
        int count = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            while (count < n && System.currentTimeMillis() < deadline) {
                count += c.poll(Duration.ofMillis(500)).count();
            }
        }
        return count;
    }
}
