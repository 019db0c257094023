package io.seaweedfs.kafka.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** Kafka's consumer with the consumer group protocol of KIP-848 (group.protocol=consumer). */
class ConsumerProtocolTest {

    /** A consumer of the group in its own thread, tracking what it owns. */
    private static final class Member implements Runnable, ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final Map<TopicPartition, String> owners;
        final List<String> overlaps;
        final Map<String, List<String>> read;
        final AtomicBoolean stop = new AtomicBoolean();
        final Thread thread;
        volatile Throwable failure;

        Member(String name, String group, String topic, Map<TopicPartition, String> owners, List<String> overlaps,
                Map<String, List<String>> read) {
            this.name = name;
            this.owners = owners;
            this.overlaps = overlaps;
            this.read = read;
            Properties p = Gateway.consumer(group);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
            consumer = new KafkaConsumer<>(p);
            consumer.subscribe(List.of(topic), this);
            thread = new Thread(this, name);
            thread.start();
        }

        @Override
        public void run() {
            try {
                while (!stop.get()) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Gateway.POLL)) {
                        read.computeIfAbsent(r.value(), k -> new CopyOnWriteArrayList<>()).add(name);
                    }
                    consumer.commitSync();
                }
                consumer.close(); // commits in onPartitionsRevoked and leaves the group
            } catch (Throwable t) {
                failure = t;
            }
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> parts) {
            for (TopicPartition tp : parts) {
                String before = owners.put(tp, name);
                if (before != null && !before.equals(name)) {
                    overlaps.add(tp + " given to " + name + " while " + before + " owned it");
                }
            }
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> parts) {
            consumer.commitSync();
            for (TopicPartition tp : parts) {
                owners.remove(tp, name);
            }
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> parts) {
            for (TopicPartition tp : parts) {
                owners.remove(tp, name);
            }
        }

        int owned() {
            return (int) owners.values().stream().filter(name::equals).count();
        }

        void leave() throws InterruptedException {
            stop.set(true);
            thread.join(30_000);
            if (failure != null) {
                throw new AssertionError(name + " failed", failure);
            }
        }
    }

    private static void waitFor(String what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.currentTimeMillis() + Gateway.DEADLINE_MS;
        while (!cond.getAsBoolean()) {
            assertTrue(System.currentTimeMillis() < deadline, "not within a minute: " + what);
            Thread.sleep(100);
        }
    }

    private static void produce(String topic, int from, int n) throws Exception {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Gateway.producer())) {
            for (int i = from; i < from + n; i++) {
                producer.send(new ProducerRecord<>(topic, "key-" + i, "value-" + i));
            }
        }
    }

    /**
     * Three consumers of the new protocol share six partitions two each; one leaves and the other two take its
     * partitions, three each. No partition is ever owned by two members; every record is read once; the commits
     * end at the partitions' ends; the admin client describes the group as a consumer group, Stable.
     */
    @Test
    void threeMembersShareSixPartitions() throws Exception {
        String topic = Gateway.topic("java-848", 6);
        String group = Gateway.unique("java-848-group");
        produce(topic, 0, 3000);
        Map<TopicPartition, String> owners = new ConcurrentHashMap<>();
        List<String> overlaps = new CopyOnWriteArrayList<>();
        Map<String, List<String>> read = new ConcurrentHashMap<>();
        List<Member> members = new ArrayList<>();
        for (String name : List.of("java-1", "java-2", "java-3")) {
            members.add(new Member(name, group, topic, owners, overlaps, read));
        }
        try {
            waitFor("two partitions each", () -> members.stream().allMatch(m -> m.owned() == 2));
            waitFor("3,000 records read", () -> read.size() == 3000);
            members.get(0).leave();
            waitFor("three partitions each after java-1 left",
                () -> members.get(1).owned() == 3 && members.get(2).owned() == 3);
            produce(topic, 3000, 600);
            waitFor("3,600 records read", () -> read.size() == 3600);

            try (Admin admin = Gateway.admin()) {
                waitFor("the group Stable with two members of three partitions", () -> {
                    try {
                        ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all()
                            .get(10, TimeUnit.SECONDS).get(group);
                        return d.type() == GroupType.CONSUMER && d.groupState() == GroupState.STABLE
                            && d.members().size() == 2
                            && d.members().stream().allMatch(m -> m.assignment().topicPartitions().size() == 3);
                    } catch (Exception e) {
                        return false;
                    }
                });
                waitFor("the commits at the partitions' ends", () -> {
                    try {
                        Map<TopicPartition, OffsetAndMetadata> c = admin.listConsumerGroupOffsets(group)
                            .partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
                        long sum = c.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
                        return c.size() == 6 && sum == 3600;
                    } catch (Exception e) {
                        return false;
                    }
                });
            }
        } finally {
            for (Member m : members) {
                m.leave();
            }
        }
        assertEquals(List.of(), overlaps, "partitions owned by two members at once");
        for (Map.Entry<String, List<String>> e : read.entrySet()) {
            assertEquals(1, e.getValue().size(), e.getKey() + " read by " + e.getValue());
        }
    }

    /**
     * A consumer subscribed with a SubscriptionPattern (the broker resolves the regex, RE2 syntax): it reads the
     * matching topics, and a matching topic created while it runs.
     */
    @Test
    void brokerResolvesThePattern() throws Exception {
        String prefix = Gateway.unique("java-re");
        String first = prefix + "-a";
        String later = prefix + "-b";
        try (Admin admin = Gateway.admin()) {
            admin.createTopics(List.of(new NewTopic(first, 2, (short) 1)))
                .all().get(30, TimeUnit.SECONDS);
        }
        produce(first, 0, 10);
        Properties p = Gateway.consumer(Gateway.unique("java-re-group"));
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        Map<String, Integer> byTopic = new HashMap<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(new SubscriptionPattern(prefix + "-.*"));
            long deadline = System.currentTimeMillis() + Gateway.DEADLINE_MS;
            boolean created = false;
            while (byTopic.getOrDefault(later, 0) < 10 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Gateway.POLL)) {
                    byTopic.merge(r.topic(), 1, Integer::sum);
                }
                if (!created && byTopic.getOrDefault(first, 0) == 10) {
                    try (Admin admin = Gateway.admin()) {
                        admin.createTopics(List.of(new NewTopic(later, 1, (short) 1)))
                            .all().get(30, TimeUnit.SECONDS);
                    }
                    produce(later, 0, 10);
                    created = true;
                }
            }
            Set<String> assigned = consumer.assignment().stream().map(TopicPartition::topic).collect(Collectors.toSet());
            assertEquals(Set.of(first, later), assigned, "topics assigned");
        }
        assertEquals(Map.of(first, 10, later, 10), byTopic);
    }
}
