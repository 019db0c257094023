package io.seaweedfs.kafka.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/** Kafka's share consumer (KIP-932, "queues for Kafka"). */
class ShareConsumerTest {

    /** A delivery of a record to a consumer, and what the consumer did with it. */
    private record Delivery(String consumer, short count, AcknowledgeType ack) {}

    /**
     * Two share consumers of one group, acknowledging explicitly, read a topic's 300 records between them: whichever
     * gets them rejects the records whose number ends in 3 and releases, at their first delivery, those ending in 5
     * (which consumer gets which records is the gateway's choice, so both follow the same rules). Every record is
     * accepted or rejected once; a rejected one never comes again; a released one comes again, its delivery count 2.
     * The admin client describes the group and its share offsets at the topic's end.
     */
    @Test
    void twoConsumersShareATopic() throws Exception {
        String topic = Gateway.topic("java-share", 2);
        String group = Gateway.unique("java-share-group");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Gateway.producer())) {
            for (int i = 0; i < 300; i++) {
                producer.send(new ProducerRecord<>(topic, "key-" + i, "value-" + i));
            }
        }
        try (Admin admin = Gateway.admin()) {
            ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
                .all().get(30, TimeUnit.SECONDS);
        }
        Map<String, List<Delivery>> got = new ConcurrentHashMap<>();
        AtomicBoolean stop = new AtomicBoolean();
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (String name : List.of("java-share-1", "java-share-2")) {
            Thread th = new Thread(() -> {
                Properties p = new Properties();
                p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, Gateway.bootstrap());
                p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
                p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
                p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
                p.put("share.acknowledgement.mode", "explicit");
                try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(p)) {
                    consumer.subscribe(List.of(topic));
                    while (!stop.get()) {
                        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                            short count = r.deliveryCount().orElse((short) 0);
                            AcknowledgeType ack = AcknowledgeType.ACCEPT;
                            if (r.value().endsWith("3")) {
                                ack = AcknowledgeType.REJECT;
                            } else if (r.value().endsWith("5") && count == 1) {
                                ack = AcknowledgeType.RELEASE;
                            }
                            consumer.acknowledge(r, ack);
                            got.computeIfAbsent(r.value(), k -> new CopyOnWriteArrayList<>()).add(new Delivery(name, count, ack));
                        }
                        consumer.commitSync();
                    }
                } catch (Throwable t) {
                    failures.add(t);
                }
            }, name);
            th.start();
            threads.add(th);
        }
        long deadline = System.currentTimeMillis() + Gateway.DEADLINE_MS;
        while (System.currentTimeMillis() < deadline && done(got) < 300) {
            Thread.sleep(200);
        }
        // The records may all be read before the second member's
        // assignment settles: the group is described until it is stable
        // with both members (Reconciling meanwhile, as in Kafka).
        try (Admin admin = Gateway.admin()) {
            ShareGroupDescription d = null;
            long settle = System.currentTimeMillis() + 30_000;
            do {
                if (d != null) {
                    Thread.sleep(200);
                }
                d = admin.describeShareGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
            } while ((d.groupState() != GroupState.STABLE || d.members().size() != 2) && System.currentTimeMillis() < settle);
            assertEquals(GroupState.STABLE, d.groupState());
            assertEquals(2, d.members().size(), "members " + d.members());
        }
        stop.set(true);
        for (Thread th : threads) {
            th.join(30_000);
        }
        assertEquals(List.of(), failures);
        assertEquals(300, done(got), "records accepted or rejected");
        int released = 0;
        int rejected = 0;
        for (Map.Entry<String, List<Delivery>> e : got.entrySet()) {
            List<Delivery> ds = e.getValue();
            Delivery last = ds.get(ds.size() - 1);
            assertTrue(last.ack() != AcknowledgeType.RELEASE, e.getKey() + " ends released: " + ds);
            if (ds.size() == 1) {
                assertEquals(1, ds.get(0).count(), e.getKey() + ": " + ds);
                if (ds.get(0).ack() == AcknowledgeType.REJECT) {
                    rejected++;
                }
                continue;
            }
            assertEquals(2, ds.size(), e.getKey() + " delivered " + ds);
            assertEquals(AcknowledgeType.RELEASE, ds.get(0).ack(), e.getKey() + " came again though not released: " + ds);
            assertEquals(2, ds.get(1).count(), e.getKey() + ": " + ds);
            released++;
        }
        assertEquals(30, released, "records released once and delivered again");
        assertEquals(30, rejected, "records rejected at their first delivery");
        try (Admin admin = Gateway.admin()) {
            Map<TopicPartition, SharePartitionOffsetInfo> offsets = admin
                .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                .partitionsToOffsetInfo(group).get(30, TimeUnit.SECONDS);
            long sum = offsets.values().stream().mapToLong(SharePartitionOffsetInfo::startOffset).sum();
            assertEquals(300, sum, "the share group's start offsets " + offsets);
        }
    }

    private static int done(Map<String, List<Delivery>> got) {
        int n = 0;
        for (Collection<Delivery> ds : got.values()) {
            Delivery last = null;
            for (Delivery d : ds) {
                last = d;
            }
            if (last != null && last.ack() != AcknowledgeType.RELEASE) {
                n++;
            }
        }
        return n;
    }
}
