package io.seaweedfs.kafka.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.connect.runtime.Connect;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Replication factors as Kafka's tools and Connect ask for them, against three gateways on a
 * SeaweedFS of three volume servers (run apart from the other tests, by the Go test
 * TestReplicatedTopic, with -Dtest=ReplicatedClusterTest): a factor is the copies SeaweedFS keeps
 * of the topic's files, and the replicas of each partition are as many gateways.
 */
class ReplicatedClusterTest {

    private final CommandLineToolsTest tools = new CommandLineToolsTest();

    @BeforeEach
    void trapExit() {
        tools.trapExit();
    }

    @AfterEach
    void resetExit() {
        tools.resetExit();
    }

    /** kafka-topics.sh --create --replication-factor 3 and --describe; 4 is refused. */
    @Test
    void kafkaTopicsWithReplicationFactorThree() throws Exception {
        String topic = Gateway.unique("rf3");
        String bs = Gateway.bootstrap();
        CommandLineToolsTest.run("TopicCommand", "--bootstrap-server", bs, "--create", "--topic", topic, "--partitions", "2",
            "--replication-factor", "3").ok("kafka-topics --create --replication-factor 3").shows("Created topic " + topic);
        CommandLineToolsTest.run("TopicCommand", "--bootstrap-server", bs, "--describe", "--topic", topic)
            .ok("kafka-topics --describe").shows("PartitionCount: 2", "ReplicationFactor: 3");
        CommandLineToolsTest.Result four = CommandLineToolsTest.run("TopicCommand", "--bootstrap-server", bs, "--create",
            "--topic", topic + "-rf4", "--partitions", "1", "--replication-factor", "4");
        assertNotEquals(0, four.code(), "kafka-topics --replication-factor 4 on three volume servers:\n" + four.out());
        four.shows("InvalidReplicationFactorException");
    }

    /**
     * A Connect worker with its default replication factors (3 for its config, offset and status
     * topics) starts, and a connector runs on it; MirrorMaker 2's mirrored topics' default factor
     * (2) is taken too.
     */
    @Test
    void connectWithItsDefaultFactors() throws Exception {
        String group = Gateway.unique("connect-rf");
        String topic = Gateway.topic("connect-rf-lines", 1);
        Path dir = Files.createTempDirectory("connect-rf");
        Path in = dir.resolve("in.txt");
        Path out = dir.resolve("out.txt");
        ConnectTest.appendLines(in, 0, 200);
        int port = ConnectTest.freePort();
        Connect<?> connect = ConnectTest.worker(group, port, false);
        try {
            ConnectTest.putConnector(port, "rf-in", "{\"connector.class\":\"" + LineSource.class.getName() + "\",\"tasks.max\":\"1\","
                + "\"file\":\"" + in + "\",\"topic\":\"" + topic + "\"}");
            ConnectTest.putConnector(port, "rf-out", "{\"connector.class\":\"" + LineSink.class.getName() + "\",\"tasks.max\":\"1\","
                + "\"file\":\"" + out + "\",\"topics\":\"" + topic + "\"}");
            assertEquals(Files.readAllLines(in), ConnectTest.awaitLines(out, 200, 120_000), "the file through the topic");
        } finally {
            connect.stop();
            connect.awaitStop();
        }
        String mirrored = Gateway.unique("mirrored");
        try (Admin admin = Gateway.admin()) {
            admin.createTopics(List.of(new NewTopic(mirrored, 1, (short) 2))).all().get(30, TimeUnit.SECONDS);
            Map<String, TopicDescription> ds = admin.describeTopics(List.of(group + "-configs", group + "-offsets", group + "-status", mirrored))
                .allTopicNames().get(30, TimeUnit.SECONDS);
            for (TopicDescription d : ds.values()) {
                int want = d.name().equals(mirrored) ? 2 : 3;
                for (TopicPartitionInfo p : d.partitions()) {
                    assertEquals(want, p.replicas().size(), d.name() + " partition " + p.partition() + "'s replicas");
                    assertEquals(p.replicas(), p.isr(), d.name() + " partition " + p.partition() + "'s replicas in sync");
                }
            }
        }
    }
}
