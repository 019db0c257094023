package io.seaweedfs.kafka.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment.TaskIds;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.junit.jupiter.api.Test;

/** Kafka Streams on the gateway: exactly-once processing and state from compacted topics. */
class StreamsTest {

    static final int WORDS = 40;
    static final int PER_WORD = 100;

    /** Starts WordCountApp as a process of its own. */
    static Process wordCount(String appId, String in, String out, Path stateDir, Path log, String... protocol) throws Exception {
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "-cp", cp, WordCountApp.class.getName(),
                Gateway.bootstrap(), appId, in, out, stateDir.toString()));
        cmd.addAll(List.of(protocol));
        return new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
            .start();
    }

    static void produceWords(String topic, int from, int to) {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Gateway.producer())) {
            for (int i = from; i < to; i++) {
                producer.send(new ProducerRecord<>(topic, "line-" + i, "w" + (i % WORDS)));
            }
            producer.flush();
        }
    }

    /** Reads the committed output from the start: each word's counts, in order. */
    static Map<String, List<Long>> counts(KafkaConsumer<String, String> consumer, Map<String, List<Long>> into) {
        for (ConsumerRecord<String, String> r : consumer.poll(Gateway.POLL)) {
            into.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(Long.parseLong(r.value()));
        }
        return into;
    }

    static KafkaConsumer<String, String> committedReader(String topic, int partitions) {
        Properties p = Gateway.consumer(null);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p);
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < partitions; i++) {
            tps.add(new TopicPartition(topic, i));
        }
        consumer.assign(tps);
        consumer.seekToBeginning(tps);
        return consumer;
    }

    static int total(Map<String, List<Long>> counts) {
        return counts.values().stream().mapToInt(List::size).sum();
    }

    /** The sum of the group's committed offsets of a topic. */
    static long committedInput(Admin admin, String group, String topic) throws Exception {
        return admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS).entrySet().stream()
            .filter(e -> e.getKey().topic().equals(topic) && e.getValue() != null)
            .mapToLong(e -> e.getValue().offset()).sum();
    }

    /** Each word's committed counts are 1 to PER_WORD, once each and in order. */
    static void assertCountedOnce(Map<String, List<Long>> got) {
        assertEquals(WORDS, got.size(), "words counted");
        for (Map.Entry<String, List<Long>> e : new TreeMap<>(got).entrySet()) {
            List<Long> want = new ArrayList<>();
            for (long c = 1; c <= PER_WORD; c++) {
                want.add(c);
            }
            assertEquals(want, e.getValue(), "committed counts of " + e.getKey());
        }
    }

    static boolean finished(Map<String, List<Long>> counts) {
        if (counts.size() < WORDS) {
            return false;
        }
        for (List<Long> c : counts.values()) {
            if (c.isEmpty() || c.get(c.size() - 1) < PER_WORD) {
                return false;
            }
        }
        return true;
    }

    /**
     * A word count with processing.guarantee=exactly_once_v2, its process
     * SIGKILLed mid-run and started again: the committed output has, for
     * each word, every count from 1 to its number of inputs once and in
     * order (each input counted exactly once, none lost, none twice); its
     * store's changelog topic was created compacted, its repartition topic
     * deleting.
     */
    @Test
    void wordCountExactlyOnceAcrossAKill() throws Exception {
        String in = Gateway.topic("wc-in", 3);
        String out = Gateway.topic("wc-out", 3);
        String appId = Gateway.unique("wc");
        Path state = Files.createTempDirectory("streams-state");
        Path log = Path.of("target", appId + ".log");
        Files.createDirectories(log.getParent());
        int n = WORDS * PER_WORD;
        produceWords(in, 0, n / 2);

        Map<String, List<Long>> got = new HashMap<>();
        Process app = wordCount(appId, in, out, state, log);
        try (KafkaConsumer<String, String> reader = committedReader(out, 3)) {
            long deadline = System.currentTimeMillis() + 120_000;
            while (total(got) < n / 8 && System.currentTimeMillis() < deadline) {
                counts(reader, got);
            }
            assertTrue(total(got) >= n / 8, "the word count made no progress in 2 minutes; its log: " + log.toAbsolutePath());
            app.destroyForcibly().waitFor(30, TimeUnit.SECONDS); // SIGKILL, mid-run
            produceWords(in, n / 2, n);
            app = wordCount(appId, in, out, state, log);
            deadline = System.currentTimeMillis() + 180_000;
            while (!finished(got) && System.currentTimeMillis() < deadline) {
                counts(reader, got);
            }
            // Nothing more comes.
            long quiet = System.currentTimeMillis() + 3_000;
            while (System.currentTimeMillis() < quiet) {
                counts(reader, got);
            }
        } finally {
            app.destroy();
            app.waitFor(30, TimeUnit.SECONDS);
        }
        assertCountedOnce(got);
        try (Admin admin = Gateway.admin()) {
            String changelog = appId + "-counts-changelog";
            Set<String> topics = admin.listTopics().names().get(30, TimeUnit.SECONDS);
            assertTrue(topics.contains(changelog), "changelog topic " + changelog + " in " + topics);
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
            Config c = admin.describeConfigs(List.of(r)).all().get(30, TimeUnit.SECONDS).get(r);
            assertEquals("compact", c.get("cleanup.policy").value(), "the changelog's cleanup.policy");
            assertTrue(topics.stream().anyMatch(t -> t.startsWith(appId) && t.endsWith("-repartition")),
                "a repartition topic in " + topics);
        }
    }

    /**
     * The word count on the Streams group protocol (KIP-1071,
     * group.protocol=streams, exactly_once_v2) in three processes, one
     * SIGKILLed mid-run: the committed output has, for each word, every
     * count from 1 to its number of inputs once and in order; the group is
     * a streams group whose tasks the gateway assigned (every task of both
     * subtopologies active on exactly one member, a standby of each
     * stateful task on another process) and whose internal topics it
     * created; the two others go on giving output while the killed one's
     * session has not ended (no stop-the-world rebalance).
     */
    @Test
    void wordCountOnTheStreamsProtocolAcrossAKill() throws Exception {
        String in = Gateway.topic("wcs-in", 6);
        String out = Gateway.topic("wcs-out", 3);
        String appId = Gateway.unique("wcs");
        Path log = Path.of("target", appId + ".log");
        Files.createDirectories(log.getParent());
        int n = WORDS * PER_WORD;
        produceWords(in, 0, n / 2);

        Map<String, List<Long>> got = new HashMap<>();
        List<Process> apps = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            apps.add(wordCount(appId, in, out, Files.createTempDirectory("streams-state"), log, "streams"));
        }
        try (KafkaConsumer<String, String> reader = committedReader(out, 3); Admin admin = Gateway.admin()) {
            long deadline = System.currentTimeMillis() + 120_000;
            while (total(got) < n / 8 && System.currentTimeMillis() < deadline) {
                counts(reader, got);
            }
            assertTrue(total(got) >= n / 8, "the word count made no progress in 2 minutes; its log: " + log.toAbsolutePath());
            StreamsGroupDescription group = admin.describeStreamsGroups(List.of(appId)).all().get(30, TimeUnit.SECONDS).get(appId);
            assertEquals(3, group.members().size(), "members of " + group);
            apps.get(0).destroyForcibly().waitFor(30, TimeUnit.SECONDS); // SIGKILL, mid-run
            produceWords(in, n / 2, n);
            // No stop-the-world: before the killed member's session ends
            // (10 s), the two others go on committing input of their own
            // tasks (their output may wait behind the killed one's open
            // transaction, for read_committed readers, until it is aborted).
            long before = committedInput(admin, appId, in);
            long sessionEnds = System.currentTimeMillis() + 8_000;
            while (committedInput(admin, appId, in) == before && System.currentTimeMillis() < sessionEnds) {
                Thread.sleep(200);
            }
            assertTrue(committedInput(admin, appId, in) > before, "no input committed while the killed member's session ran: the others stopped");
            deadline = System.currentTimeMillis() + 180_000;
            while (!finished(got) && System.currentTimeMillis() < deadline) {
                counts(reader, got);
            }
            long quiet = System.currentTimeMillis() + 3_000;
            while (System.currentTimeMillis() < quiet) {
                counts(reader, got);
            }
            // The two left hold every task once; a standby of each stateful task on the other.
            deadline = System.currentTimeMillis() + 60_000;
            while (true) {
                group = admin.describeStreamsGroups(List.of(appId)).all().get(30, TimeUnit.SECONDS).get(appId);
                Map<String, Integer> active = new HashMap<>();
                int standbys = 0;
                for (StreamsGroupMemberDescription m : group.members()) {
                    for (TaskIds t : m.assignment().activeTasks()) {
                        for (int p : t.partitions()) {
                            active.merge(t.subtopologyId() + "_" + p, 1, Integer::sum);
                        }
                    }
                    for (TaskIds t : m.assignment().standbyTasks()) {
                        standbys += t.partitions().size();
                    }
                }
                boolean settled = group.members().size() == 2 && active.size() == 12 && active.values().stream().allMatch(c -> c == 1) && standbys == 6;
                if (settled) {
                    break;
                }
                assertTrue(System.currentTimeMillis() < deadline, "the group did not settle: " + group + " active " + active + " standbys " + standbys);
                Thread.sleep(500);
            }
            assertEquals(GroupState.STABLE, group.groupState(), "state of " + group);
            assertTrue(admin.listGroups(ListGroupsOptions.forStreamsGroups()).all().get(30, TimeUnit.SECONDS).stream()
                .anyMatch(l -> l.groupId().equals(appId)), "the streams group is listed");
            // Standbys restored the counts' changelog as it was written, and
            // a killed member's task went to the process holding its
            // standby, which took it over from there (PROMOTED).
            String changelog = appId + "-counts-changelog";
            List<String> lines = Files.readAllLines(log);
            assertTrue(lines.stream().anyMatch(l -> l.startsWith("standby batch " + changelog)),
                "no standby loaded a batch of " + changelog + "; the apps' log: " + log.toAbsolutePath());
            assertTrue(lines.stream().anyMatch(l -> l.startsWith("standby suspended " + changelog) && l.endsWith(": PROMOTED")),
                "no standby of " + changelog + " was promoted to active after the kill; the apps' log: " + log.toAbsolutePath());
        } finally {
            for (Process app : apps) {
                app.destroy();
                app.waitFor(30, TimeUnit.SECONDS);
            }
        }
        assertCountedOnce(got);
        try (Admin admin = Gateway.admin()) {
            String changelog = appId + "-counts-changelog";
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
            Config c = admin.describeConfigs(List.of(r)).all().get(30, TimeUnit.SECONDS).get(r);
            assertEquals("compact", c.get("cleanup.policy").value(), "the changelog's cleanup.policy");
            assertEquals(6, admin.describeTopics(List.of(changelog)).allTopicNames().get(30, TimeUnit.SECONDS).get(changelog).partitions().size(),
                "the changelog's partitions");
        }
    }

    static Map<String, String> storeContents(KafkaStreams streams, String store) {
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            try {
                ReadOnlyKeyValueStore<String, String> s = streams.store(
                    StoreQueryParameters.fromNameAndType(store, QueryableStoreTypes.keyValueStore()));
                Map<String, String> m = new TreeMap<>();
                try (KeyValueIterator<String, String> it = s.all()) {
                    it.forEachRemaining(kv -> m.put(kv.key, kv.value));
                }
                return m;
            } catch (Exception e) {
                if (System.currentTimeMillis() > deadline) {
                    fail("store " + store + " not queryable: " + e);
                }
                try {
                    Thread.sleep(200);
                } catch (InterruptedException ie) {
                    throw new RuntimeException(ie);
                }
            }
        }
    }

    static KafkaStreams table(String appId, String source, Path state) {
        Properties p = WordCountApp.config(Gateway.bootstrap(), appId, state.toString());
        // The source topic is the table's changelog: restored from it.
        p.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, StreamsConfig.OPTIMIZE);
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>table(source, Materialized.as("table"));
        KafkaStreams streams = new KafkaStreams(b.build(p), p);
        streams.start();
        return streams;
    }

    static Map<String, String> awaitContents(KafkaStreams streams, Map<String, String> want) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        Map<String, String> got = storeContents(streams, "table");
        while (!got.equals(want) && System.currentTimeMillis() < deadline) {
            Thread.sleep(200);
            got = storeContents(streams, "table");
        }
        return got;
    }

    /**
     * A KTable built from a compacted topic holds the newest value of each
     * key (deleted keys gone); stopped, its local state wiped, and started
     * again after more updates and deletions, it is restored from the
     * topic with the newest values again.
     */
    @Test
    void tableFromACompactedTopicAfterARestart() throws Exception {
        String source = Gateway.topic("kt", 1, Map.of("cleanup.policy", "compact"));
        Map<String, String> want = new TreeMap<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Gateway.producer())) {
            for (int round = 0; round < 5; round++) {
                for (int k = 0; k < 50; k++) {
                    producer.send(new ProducerRecord<>(source, "k" + k, "v" + k + "." + round));
                    want.put("k" + k, "v" + k + "." + round);
                }
            }
            for (int k = 0; k < 5; k++) {
                producer.send(new ProducerRecord<>(source, "k" + k, null));
                want.remove("k" + k);
            }
        }
        String appId = Gateway.unique("kt-app");
        Path state = Files.createTempDirectory("streams-table");
        KafkaStreams streams = table(appId, source, state);
        try {
            assertEquals(want, awaitContents(streams, want), "the table");
        } finally {
            streams.close(CloseOptions.timeout(Duration.ofSeconds(30)).withGroupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP));
        }
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Gateway.producer())) {
            for (int k = 10; k < 20; k++) {
                producer.send(new ProducerRecord<>(source, "k" + k, "v" + k + ".late"));
                want.put("k" + k, "v" + k + ".late");
            }
            for (int k = 20; k < 25; k++) {
                producer.send(new ProducerRecord<>(source, "k" + k, null));
                want.remove("k" + k);
            }
        }
        streams.cleanUp(); // the next instance restores from the topic
        streams = table(appId, source, state);
        try {
            assertEquals(want, awaitContents(streams, want), "the table restored after a restart");
        } finally {
            streams.close(CloseOptions.timeout(Duration.ofSeconds(30)).withGroupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP));
        }
    }
}
