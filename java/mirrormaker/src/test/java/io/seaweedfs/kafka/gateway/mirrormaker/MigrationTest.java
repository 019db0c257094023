package io.seaweedfs.kafka.gateway.mirrormaker;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.connect.mirror.MirrorMaker;
import org.junit.jupiter.api.Test;

/**
 * MirrorMaker 2 in dedicated mode moving a topic from Apache Kafka (cluster alias kafka) into the
 * gateway (alias gateway) as a user moving off Kafka runs it: its defaults but for the clusters'
 * addresses, the identity replication policy (the topic keeps its name), the sync of idle groups'
 * offsets, replication factors of 1 (the target places one copy) and short intervals. The end-to-end
 * suite (TestMirrorMakerFromKafka) prepares Kafka and checks the gateway afterwards; this class runs
 * MirrorMaker until it has done its work: every record mirrored, a config changed on Kafka
 * afterwards synced (its periodic IncrementalAlterConfigs, with every config of the topic, was
 * taken), and the group's offsets translated onto the gateway.
 *
 * <p>System properties: migration.source and migration.target (bootstrap servers), migration.topic,
 * migration.group.
 */
class MigrationTest {

    static final long TIMEOUT_MS = 150_000;

    static String required(String name) {
        String v = System.getProperty(name);
        assertNotNull(v, "system property " + name);
        return v;
    }

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    /** The mm2.properties of docs/moving-from-kafka.md, with the test's intervals. */
    static Map<String, String> config(String source, String target) {
        Map<String, String> mm = new HashMap<>();
        mm.put("clusters", "kafka, gateway");
        mm.put("kafka.bootstrap.servers", source);
        mm.put("gateway.bootstrap.servers", target);
        mm.put("kafka->gateway.enabled", "true");
        mm.put("gateway->kafka.enabled", "false");
        mm.put("replication.policy.class", "org.apache.kafka.connect.mirror.IdentityReplicationPolicy");
        mm.put("sync.group.offsets.enabled", "true");
        for (String factor : List.of("replication.factor", "checkpoints.topic.replication.factor",
                "heartbeats.topic.replication.factor", "offset-syncs.topic.replication.factor",
                "offset.storage.replication.factor", "status.storage.replication.factor",
                "config.storage.replication.factor")) {
            mm.put(factor, "1");
        }
        // Seconds instead of MirrorMaker's minutes.
        mm.put("refresh.topics.interval.seconds", "1");
        mm.put("refresh.groups.interval.seconds", "1");
        mm.put("sync.topic.configs.interval.seconds", "1");
        mm.put("emit.checkpoints.interval.seconds", "1");
        mm.put("sync.group.offsets.interval.seconds", "1");
        mm.put("gateway.offset.flush.interval.ms", "1000");
        return mm;
    }

    @Test
    void movesTopicConfigsAndGroupOffsets() throws Exception {
        String source = required("migration.source");
        String target = required("migration.target");
        String topic = required("migration.topic");
        String group = required("migration.group");
        MirrorMaker mirrorMaker = new MirrorMaker(config(source, target), List.of("gateway"));
        mirrorMaker.start();
        try (Admin kafka = admin(source); Admin gateway = admin(target)) {
            Map<TopicPartition, Long> ends = ends(kafka, topic);
            waitFor("every record of " + topic + " mirrored (end offsets " + ends + ")", () -> {
                Map<TopicPartition, Long> got = ends(gateway, topic);
                return got.equals(ends) ? null : "end offsets on the gateway " + got;
            });

            // A config changed on Kafka now reaches the gateway only through the periodic sync.
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            String retention = configs(kafka, resource).get("retention.ms");
            String changed = String.valueOf(Long.parseLong(retention) + 60_000);
            kafka.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
                new ConfigEntry("retention.ms", changed), AlterConfigOp.OpType.SET)))).all().get(30, TimeUnit.SECONDS);
            waitFor("retention.ms changed on Kafka to " + changed + " synced", () -> {
                String got = configs(gateway, resource).get("retention.ms");
                return changed.equals(got) ? null : "retention.ms on the gateway " + got;
            });

            // Every offset the group committed on Kafka, translated; one at a partition's end
            // translated to the end (MirrorMaker emits an offset sync for the last record it
            // mirrored at each offset flush), so that a group that had read everything reads
            // nothing again.
            Map<TopicPartition, OffsetAndMetadata> committed = kafka.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            waitFor("group " + group + "'s offsets " + committed + " synced", () -> {
                Map<TopicPartition, OffsetAndMetadata> got = gateway.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
                for (Map.Entry<TopicPartition, OffsetAndMetadata> c : committed.entrySet()) {
                    OffsetAndMetadata g = got.get(c.getKey());
                    boolean atEnd = c.getValue().offset() == ends.get(c.getKey());
                    if (g == null || (atEnd && g.offset() != c.getValue().offset())) {
                        return "offsets on the gateway " + got;
                    }
                }
                return null;
            });
        } finally {
            mirrorMaker.stop();
        }
    }

    /** A topic's end offsets, empty while it does not exist. */
    static Map<TopicPartition, Long> ends(Admin admin, String topic) throws Exception {
        TopicDescription d;
        try {
            d = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) {
                return Map.of();
            }
            throw e;
        }
        Map<TopicPartition, OffsetSpec> latest = d.partitions().stream()
            .collect(Collectors.toMap(p -> new TopicPartition(topic, p.partition()), p -> OffsetSpec.latest()));
        Map<TopicPartition, ListOffsetsResultInfo> res = admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS);
        Map<TopicPartition, Long> out = new TreeMap<>((a, b) -> Integer.compare(a.partition(), b.partition()));
        res.forEach((tp, info) -> out.put(tp, info.offset()));
        return out;
    }

    static Map<String, String> configs(Admin admin, ConfigResource resource) throws Exception {
        Config c = admin.describeConfigs(List.of(resource)).all().get(30, TimeUnit.SECONDS).get(resource);
        Map<String, String> out = new HashMap<>();
        c.entries().forEach(e -> out.put(e.name(), e.value()));
        return out;
    }

    /** Polls state until it is null (done) or the time is up, then fails with its last answer. */
    static void waitFor(String what, Callable<String> state) throws Exception {
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        String last = null;
        while (System.currentTimeMillis() < deadline) {
            try {
                last = state.call();
            } catch (ExecutionException e) {
                last = e.getCause().toString();
            }
            if (last == null) {
                return;
            }
            Thread.sleep(500);
        }
        fail(what + ": not within " + TIMEOUT_MS / 1000 + " s; last: " + last);
    }
}
