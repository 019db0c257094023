package io.seaweedfs.kafka.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.InvalidUpdateVersionException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.junit.jupiter.api.Test;

/** Kafka's AdminClient: topics, configs, the cluster, offsets, groups, producers and transactions. */
class AdminTest {

    static <T> T get(org.apache.kafka.common.KafkaFuture<T> f) throws Exception {
        return f.get(30, TimeUnit.SECONDS);
    }

    @Test
    void topicsConfigsAndCluster() throws Exception {
        try (Admin admin = Gateway.admin()) {
            DescribeClusterResult cluster = admin.describeCluster();
            assertNotNull(get(cluster.clusterId()), "cluster id");
            assertFalse(get(cluster.nodes()).isEmpty(), "no nodes");
            assertNotNull(get(cluster.controller()), "controller");

            // What kafka-metadata-quorum.sh describe --status asks: the
            // gateways' view as the quorum, led by the controller.
            QuorumInfo quorum = get(admin.describeMetadataQuorum().quorumInfo());
            int controller = get(cluster.controller()).id();
            assertEquals(controller, quorum.leaderId(), "quorum leader");
            assertEquals(get(cluster.nodes()).size(), quorum.voters().size(), "voters");
            assertTrue(quorum.voters().stream().anyMatch(v -> v.replicaId() == controller), "the leader votes");
            assertTrue(quorum.voters().stream().allMatch(v -> v.logEndOffset() == quorum.highWatermark()), "voters behind");
            assertTrue(quorum.observers().isEmpty(), "observers");

            String topic = Gateway.topic("java-admin", 4, Map.of("retention.ms", "86400000"));
            // Kafka 4's describeTopics asks DescribeTopicPartitions.
            TopicDescription d = get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
            assertEquals(4, d.partitions().size());
            assertNotNull(d.topicId());
            for (TopicPartitionInfo p : d.partitions()) {
                assertNotNull(p.leader(), "partition " + p.partition() + " has no leader");
                assertEquals(List.of(p.leader()), p.replicas());
            }
            // Listed once the cluster's metadata has it (as with Kafka, a listing
            // right after the creation may not have it yet).
            long listed = System.currentTimeMillis() + 10_000;
            while (!get(admin.listTopics().names()).contains(topic) && System.currentTimeMillis() < listed) {
                Thread.sleep(100);
            }
            assertTrue(get(admin.listTopics().names()).contains(topic), "created topic not listed within 10 s");
            Set<String> internal = get(admin.listTopics(new org.apache.kafka.clients.admin.ListTopicsOptions().listInternal(true)).names());
            assertTrue(internal.contains("__consumer_offsets"), "internal topics: " + internal);

            // kafka-reassign-partitions.sh: none in progress; a partition's
            // one replica is its leader, so moving it elsewhere is refused.
            assertTrue(get(admin.listPartitionReassignments().reassignments()).isEmpty(), "reassignments listed");
            TopicPartition first = new TopicPartition(topic, 0);
            ExecutionException refused = assertThrows(ExecutionException.class, () -> get(admin.alterPartitionReassignments(
                Map.of(first, Optional.of(new NewPartitionReassignment(List.of(d.partitions().get(0).leader().id() + 1000))))).all()));
            assertInstanceOf(InvalidReplicaAssignmentException.class, refused.getCause());

            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            assertEquals("86400000", get(admin.describeConfigs(List.of(res)).all()).get(res).get("retention.ms").value());
            Map<ConfigResource, Collection<AlterConfigOp>> change = Map.of(res,
                List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET)));
            get(admin.incrementalAlterConfigs(change).all());
            ConfigEntry e = get(admin.describeConfigs(List.of(res)).all()).get(res).get("retention.ms");
            assertEquals("3600000", e.value());
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, e.source());

            get(admin.deleteTopics(List.of(topic)).all());
            long deadline = System.currentTimeMillis() + 30_000;
            while (get(admin.listTopics().names()).contains(topic) && System.currentTimeMillis() < deadline) {
                Thread.sleep(200);
            }
            assertFalse(get(admin.listTopics().names()).contains(topic), "deleted topic still listed");
        }
    }

    @Test
    void offsetsAndDeleteRecords() throws Exception {
        String topic = Gateway.topic("java-offsets", 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        long before;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Gateway.producer())) {
            for (int i = 0; i < 50; i++) {
                producer.send(new ProducerRecord<>(topic, 0, 1_000_000L + i, null, "v" + i)).get();
            }
            before = 1_000_000L + 30;
        }
        try (Admin admin = Gateway.admin()) {
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> earliest =
                get(admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).all());
            assertEquals(0, earliest.get(tp).offset());
            assertEquals(50, get(admin.listOffsets(Map.of(tp, OffsetSpec.latest())).all()).get(tp).offset());
            assertEquals(30, get(admin.listOffsets(Map.of(tp, OffsetSpec.forTimestamp(before))).all()).get(tp).offset());
            assertEquals(49, get(admin.listOffsets(Map.of(tp, OffsetSpec.maxTimestamp())).all()).get(tp).offset());

            assertEquals(20, get(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(20))).lowWatermarks().get(tp)).lowWatermark());
            assertEquals(20, get(admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).all()).get(tp).offset());
        }
    }

    @Test
    void groupsProducersAndTransactions() throws Exception {
        String topic = Gateway.topic("java-groups", 2);
        String group = Gateway.unique("java-admin-group");
        String txnID = Gateway.unique("java-admin-txn");
        Properties tp = Gateway.producer();
        tp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnID);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(tp)) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, null, "v" + i)).get();
            }
            try (Admin admin = Gateway.admin()) {
                // The open transaction, as the coordinator and the partitions' leaders see it.
                TransactionListing listed = get(admin.listTransactions().all()).stream()
                    .filter(t -> t.transactionalId().equals(txnID)).findFirst().orElseThrow();
                assertEquals(org.apache.kafka.clients.admin.TransactionState.ONGOING, listed.state());
                var described = get(admin.describeTransactions(List.of(txnID)).all()).get(txnID);
                assertEquals(Set.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)), described.topicPartitions());
                List<ProducerState> producers = get(admin.describeProducers(List.of(new TopicPartition(topic, 0))).all())
                    .get(new TopicPartition(topic, 0)).activeProducers();
                assertEquals(1, producers.size(), "producers of partition 0: " + producers);
                assertTrue(producers.get(0).currentTransactionStartOffset().isPresent(), "no open transaction shown");
            }
            producer.commitTransaction();
        }

        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Gateway.consumer(group))) {
            consumer.subscribe(List.of(topic));
            int read = 0;
            long deadline = System.currentTimeMillis() + Gateway.DEADLINE_MS;
            while (read < 10 && System.currentTimeMillis() < deadline) {
                read += consumer.poll(Gateway.POLL).count();
            }
            assertEquals(10, read);
            consumer.commitSync();
            try (Admin admin = Gateway.admin()) {
                Collection<GroupListing> groups = get(admin.listGroups().all());
                GroupListing g = groups.stream().filter(l -> l.groupId().equals(group)).findFirst().orElseThrow();
                assertEquals("consumer", g.protocol());
                ConsumerGroupDescription cd = get(admin.describeConsumerGroups(List.of(group)).all()).get(group);
                assertEquals(GroupState.STABLE, cd.groupState());
                assertEquals(1, cd.members().size());
                assertEquals(2, cd.members().iterator().next().assignment().topicPartitions().size());
                Map<TopicPartition, OffsetAndMetadata> offsets = get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
                long sum = 0;
                for (OffsetAndMetadata o : offsets.values()) {
                    sum += o.offset();
                }
                // Five records and a commit marker in each partition.
                assertEquals(12, sum, "committed offsets " + offsets);
            }
        }
        try (Admin admin = Gateway.admin()) {
            get(admin.deleteConsumerGroups(List.of(group)).all());
            List<String> left = new ArrayList<>();
            for (GroupListing l : get(admin.listGroups().all())) {
                left.add(l.groupId());
            }
            assertFalse(left.contains(group), "deleted group still listed");
        }
    }

    /**
     * Client quotas as kafka-configs.sh sets them: the AdminClient sets and describes a client id's
     * producer_byte_rate, and a producer with that client id sending past it is throttled (its
     * produce-throttle-time-max, from the responses' throttle_time_ms, is above 0).
     */
    @Test
    void clientQuotas() throws Exception {
        String clientId = Gateway.unique("java-quota");
        String topic = Gateway.topic("quota", 1);
        ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, clientId));
        ClientQuotaFilter onlyIt = ClientQuotaFilter.containsOnly(List.of(ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, clientId)));
        try (Admin admin = Gateway.admin()) {
            get(admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity,
                List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 10240.0))))).all());
            assertEquals(Map.of(entity, Map.of("producer_byte_rate", 10240.0)), get(admin.describeClientQuotas(onlyIt).entities()),
                "the client id's quota");
        }
        Properties p = Gateway.producer();
        p.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "none");
        String value = "x".repeat(1000);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            // 120 KB: far past the 10 KB/s over the seconds the rate's window lets a burst through.
            for (int i = 0; i < 120; i++) {
                producer.send(new ProducerRecord<>(topic, value));
                if (i % 20 == 19) {
                    producer.flush();
                }
            }
            producer.flush();
            double throttled = producer.metrics().entrySet().stream()
                .filter(e -> e.getKey().name().equals("produce-throttle-time-max") && e.getKey().group().equals("producer-metrics"))
                .mapToDouble(e -> (Double) e.getValue().metricValue()).max().orElse(0);
            assertTrue(throttled > 0, "produce-throttle-time-max " + throttled);
        }
        try (Admin admin = Gateway.admin()) {
            get(admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity,
                List.of(new ClientQuotaAlteration.Op("producer_byte_rate", null))))).all());
            assertTrue(get(admin.describeClientQuotas(onlyIt).entities()).isEmpty(), "the quota removed");
        }
    }

    /**
     * Features as kafka-features.sh describes and updates them: the supported ranges and finalized
     * levels; a downgrade checked with validate-only (the suite's other tests keep the levels); an
     * upgrade past the supported range refused with INVALID_UPDATE_VERSION.
     */
    @Test
    void features() throws Exception {
        try (Admin admin = Gateway.admin()) {
            FeatureMetadata fm = get(admin.describeFeatures().featureMetadata());
            assertEquals((short) 2, fm.finalizedFeatures().get("transaction.version").maxVersionLevel(), "transaction.version");
            assertEquals((short) 1, fm.finalizedFeatures().get("group.version").maxVersionLevel(), "group.version");
            assertEquals((short) 2, fm.supportedFeatures().get("transaction.version").maxVersion(), "transaction.version supported");
            assertEquals((short) 1, fm.supportedFeatures().get("streams.version").maxVersion(), "streams.version supported");
            assertEquals((short) 1, fm.finalizedFeatures().get("streams.version").maxVersionLevel(), "streams.version");
            assertTrue(fm.finalizedFeaturesEpoch().isPresent(), "the finalized features' epoch");

            get(admin.updateFeatures(Map.of("transaction.version", new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE)),
                new UpdateFeaturesOptions().validateOnly(true)).all());
            ExecutionException refused = assertThrows(ExecutionException.class, () -> get(admin.updateFeatures(
                Map.of("transaction.version", new FeatureUpdate((short) 3, FeatureUpdate.UpgradeType.UPGRADE)), new UpdateFeaturesOptions()).all()));
            assertInstanceOf(InvalidUpdateVersionException.class, refused.getCause(), "an upgrade past the supported range");
            assertEquals((short) 2, get(admin.describeFeatures().featureMetadata()).finalizedFeatures().get("transaction.version").maxVersionLevel(),
                "transaction.version after validate-only and refused updates");
        }
    }
}
