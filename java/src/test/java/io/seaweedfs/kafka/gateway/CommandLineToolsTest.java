package io.seaweedfs.kafka.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.utils.internals.Exit;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Apache Kafka 4.4's own command-line tools (kafka-tools 4.4.0, the classes behind bin/kafka-*.sh),
 * run in this JVM against the gateway with the arguments an operator types, their output checked.
 */
class CommandLineToolsTest {

    /** What a tool printed and the code it exited with (0 when it returned). */
    record Result(int code, String out) {
        Result ok(String what) {
            assertEquals(0, code, what + " exited " + code + ":\n" + out);
            return this;
        }

        Result fails(String what) {
            assertNotEquals(0, code, what + " succeeded:\n" + out);
            return this;
        }

        Result shows(String... parts) {
            for (String p : parts) {
                assertTrue(out.contains(p), "no \"" + p + "\" in:\n" + out);
            }
            return this;
        }
    }

    static final class ExitCalled extends RuntimeException {
        final int code;

        ExitCalled(int code) {
            super("exit " + code);
            this.code = code;
        }
    }

    /** The exit codes a tool asked for, first first (a tool may catch its own exit and exit again). */
    static final List<Integer> EXITS = new ArrayList<>();
    /** The shutdown hooks a tool added: run when it returns, as at the end of its process. */
    static final List<Runnable> HOOKS = new ArrayList<>();

    @BeforeEach
    void trapExit() {
        Exit.setExitProcedure((code, msg) -> {
            EXITS.add(code);
            throw new ExitCalled(code);
        });
        Exit.setHaltProcedure((code, msg) -> {
            EXITS.add(code);
            throw new ExitCalled(code);
        });
        Exit.setShutdownHookAdder((name, hook) -> HOOKS.add(hook));
    }

    @AfterEach
    void resetExit() {
        Exit.resetExitProcedure();
        Exit.resetHaltProcedure();
        Exit.resetShutdownHookAdder();
    }

    /** Runs a tool's main, as its bin/ script does, with stdout and stderr captured. */
    static Result run(String tool, String... args) throws Exception {
        PrintStream out = System.out, err = System.err;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream capture = new PrintStream(buf, true, StandardCharsets.UTF_8);
        System.setOut(capture);
        System.setErr(capture);
        EXITS.clear();
        HOOKS.clear();
        int code = 0;
        try {
            Class.forName("org.apache.kafka.tools." + tool).getMethod("main", String[].class).invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            if (!(e.getCause() instanceof ExitCalled)) {
                e.getCause().printStackTrace(capture);
                code = -1;
            }
        } finally {
            for (Runnable hook : HOOKS) {
                hook.run();
            }
            if (!EXITS.isEmpty()) {
                code = EXITS.get(0);
            }
            capture.flush();
            System.setOut(out);
            System.setErr(err);
        }
        String printed = buf.toString(StandardCharsets.UTF_8);
        out.println("$ " + tool + " " + String.join(" ", args) + "\n" + printed);
        return new Result(code, printed);
    }

    /**
     * Runs a tool in a process of its own, as its bin/ script does: for the tools that end by the
     * end of their process (the verifiable clients print their last events from shutdown hooks).
     */
    static Result runProcess(String tool, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-cp", System.getProperty("java.class.path"), "org.apache.kafka.tools." + tool));
        cmd.addAll(List.of(args));
        Path output = Files.createTempFile("tool", ".out");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(output.toFile()).start();
        int code = -1;
        if (p.waitFor(90, TimeUnit.SECONDS)) {
            code = p.exitValue();
        } else {
            p.destroyForcibly().waitFor();
        }
        String printed = Files.readString(output);
        Files.delete(output);
        System.out.println("$ " + tool + " " + String.join(" ", args) + "\n" + printed);
        return new Result(code, printed);
    }

    static String bs() {
        return Gateway.bootstrap();
    }

    @Test
    void topicsConfigsOffsetsAndCluster() throws Exception {
        String topic = Gateway.unique("cli-topic");
        run("TopicCommand", "--bootstrap-server", bs(), "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1")
            .ok("kafka-topics --create").shows("Created topic " + topic);
        run("TopicCommand", "--bootstrap-server", bs(), "--list").ok("kafka-topics --list").shows(topic);
        run("TopicCommand", "--bootstrap-server", bs(), "--describe", "--topic", topic).ok("kafka-topics --describe")
            .shows("PartitionCount: 3", "Partition: 2");
        run("TopicCommand", "--bootstrap-server", bs(), "--alter", "--topic", topic, "--partitions", "4").ok("kafka-topics --alter");
        run("TopicCommand", "--bootstrap-server", bs(), "--describe", "--topic", topic).ok("kafka-topics --describe").shows("PartitionCount: 4");

        run("ConfigCommand", "--bootstrap-server", bs(), "--entity-type", "topics", "--entity-name", topic, "--alter",
            "--add-config", "retention.ms=86400000").ok("kafka-configs --alter topic");
        run("ConfigCommand", "--bootstrap-server", bs(), "--entity-type", "topics", "--entity-name", topic, "--describe")
            .ok("kafka-configs --describe topic").shows("retention.ms=86400000");
        // A dynamic broker config for the whole cluster (one that changes
        // nothing here: the other tests share this cluster), described and
        // deleted; a static one refused as Kafka refuses it.
        run("ConfigCommand", "--bootstrap-server", bs(), "--entity-type", "brokers", "--entity-default", "--alter",
            "--add-config", "log.cleaner.threads=2").ok("kafka-configs --alter brokers --entity-default");
        run("ConfigCommand", "--bootstrap-server", bs(), "--entity-type", "brokers", "--entity-default", "--describe")
            .ok("kafka-configs --describe brokers --entity-default").shows("log.cleaner.threads=2", "DYNAMIC_DEFAULT_BROKER_CONFIG");
        run("ConfigCommand", "--bootstrap-server", bs(), "--entity-type", "brokers", "--entity-default", "--alter",
            "--delete-config", "log.cleaner.threads").ok("kafka-configs --alter brokers --delete-config");
        run("ConfigCommand", "--bootstrap-server", bs(), "--entity-type", "brokers", "--entity-default", "--alter",
            "--add-config", "broker.id=5").fails("kafka-configs --alter brokers broker.id").shows("Cannot update these configs dynamically: Set(broker.id)");

        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Gateway.producer())) {
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(topic, 0, "k", "v" + i)).get(30, TimeUnit.SECONDS);
            }
        }
        run("GetOffsetShell", "--bootstrap-server", bs(), "--topic", topic).ok("kafka-get-offsets").shows(topic + ":0:10", topic + ":1:0");
        Path offsets = Files.createTempFile("delete-records", ".json");
        Files.writeString(offsets, "{\"partitions\":[{\"topic\":\"" + topic + "\",\"partition\":0,\"offset\":4}],\"version\":1}");
        run("DeleteRecordsCommand", "--bootstrap-server", bs(), "--offset-json-file", offsets.toString())
            .ok("kafka-delete-records").shows("partition: " + topic + "-0", "low_watermark: 4");
        run("GetOffsetShell", "--bootstrap-server", bs(), "--topic", topic, "--time", "-2").ok("kafka-get-offsets --time -2")
            .shows(topic + ":0:4");

        run("LogDirsCommand", "--bootstrap-server", bs(), "--describe", "--topic-list", topic).ok("kafka-log-dirs").shows("\"brokers\"", topic);
        run("LeaderElectionCommand", "--bootstrap-server", bs(), "--election-type", "preferred", "--topic", topic, "--partition", "0")
            .ok("kafka-leader-election");
        run("reassign.ReassignPartitionsCommand", "--bootstrap-server", bs(), "--list").ok("kafka-reassign-partitions --list")
            .shows("No partition reassignments found");
        run("FeatureCommand", "--bootstrap-server", bs(), "describe").ok("kafka-features describe")
            .shows("Feature: transaction.version", "FinalizedVersionLevel: 2", "Feature: group.version");
        run("MetadataQuorumCommand", "--bootstrap-server", bs(), "describe", "--status").ok("kafka-metadata-quorum describe --status")
            .shows("LeaderId:", "CurrentVoters:");

        run("TopicCommand", "--bootstrap-server", bs(), "--delete", "--topic", topic).ok("kafka-topics --delete");
        assertFalse(run("TopicCommand", "--bootstrap-server", bs(), "--list").ok("kafka-topics --list").out().contains(topic),
            "the deleted topic is listed");
    }

    /**
     * kafka-client-metrics and kafka-configs --entity-type client-metrics set a subscription (KIP-714); a
     * producer with default settings that matches it pushes its metrics, which the gateway serves on
     * /metrics with the producer's client id.
     */
    @Test
    void clientMetrics() throws Exception {
        String name = Gateway.unique("cli-metrics");
        String clientId = Gateway.unique("pushing-producer");
        run("ClientMetricsCommand", "--bootstrap-server", bs(), "--alter", "--name", name, "--metrics", "org.apache.kafka.producer.",
            "--interval", "1000", "--match", "client_id=" + clientId).ok("kafka-client-metrics --alter");
        run("ClientMetricsCommand", "--bootstrap-server", bs(), "--list").ok("kafka-client-metrics --list").shows(name);
        run("ClientMetricsCommand", "--bootstrap-server", bs(), "--describe", "--name", name).ok("kafka-client-metrics --describe")
            .shows("metrics=org.apache.kafka.producer.", "interval.ms=1000", "match=client_id=" + clientId);
        run("ConfigCommand", "--bootstrap-server", bs(), "--entity-type", "client-metrics", "--entity-name", name, "--describe")
            .ok("kafka-configs --describe client-metrics").shows("interval.ms=1000");

        String topic = Gateway.topic("cli-metrics", 1);
        Properties p = Gateway.producer();
        p.put("client.id", clientId);
        String pushed = "";
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (System.nanoTime() < deadline) {
                producer.send(new ProducerRecord<>(topic, "k", "v")).get(30, TimeUnit.SECONDS);
                pushed = pushedBy(clientId);
                if (!pushed.isEmpty()) {
                    break;
                }
                Thread.sleep(500);
            }
        }
        assertTrue(pushed.contains("kafka_client_org_apache_kafka_producer_"), "no producer metric of " + clientId + " on /metrics");
        assertTrue(pushed.contains("client_software_name=\"apache-kafka-java\""), "pushed series without the client's software:\n" + pushed);

        run("ClientMetricsCommand", "--bootstrap-server", bs(), "--delete", "--name", name).ok("kafka-client-metrics --delete");
        assertFalse(run("ClientMetricsCommand", "--bootstrap-server", bs(), "--list").ok("kafka-client-metrics --list").out().contains(name),
            "the deleted subscription is listed");
    }

    /** kafka-streams-groups lists and describes a Kafka Streams application's group of the Streams protocol. */
    @Test
    void streamsGroups() throws Exception {
        String in = Gateway.topic("cli-streams-in", 2);
        String out = Gateway.topic("cli-streams-out", 2);
        String appId = Gateway.unique("cli-streams");
        Properties p = WordCountApp.config(bs(), appId, Files.createTempDirectory("cli-streams").toString());
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in).to(out);
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            streams.start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (streams.state() != KafkaStreams.State.RUNNING && System.nanoTime() < deadline) {
                Thread.sleep(200);
            }
            assertEquals(KafkaStreams.State.RUNNING, streams.state(), "the application's state");
            run("streams.StreamsGroupCommand", "--bootstrap-server", bs(), "--list").ok("kafka-streams-groups --list").shows(appId);
            Result described = null;
            while (System.nanoTime() < deadline) {
                described = run("streams.StreamsGroupCommand", "--bootstrap-server", bs(), "--describe", "--group", appId, "--members");
                if (described.code() == 0 && described.out().contains("ACTIVE: 0:[0,1]")) {
                    break;
                }
                Thread.sleep(1000);
            }
            described.ok("kafka-streams-groups --describe --members").shows(appId, "ASSIGNMENTS", "ACTIVE: 0:[0,1]");
        }
    }

    /** The lines of the gateway's /metrics with the client id. */
    static String pushedBy(String clientId) throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        HttpResponse<String> resp = http.send(HttpRequest.newBuilder(URI.create(System.getProperty("kafka.monitor") + "/metrics")).build(),
            HttpResponse.BodyHandlers.ofString());
        StringBuilder out = new StringBuilder();
        for (String line : resp.body().split("\n")) {
            if (line.contains("client_id=\"" + clientId + "\"")) {
                out.append(line).append('\n');
            }
        }
        return out.toString();
    }

    @Test
    void groupsAclsAndTransactions() throws Exception {
        String topic = Gateway.topic("cli-groups", 2);
        String group = Gateway.unique("cli-group");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Gateway.producer())) {
            for (int i = 0; i < 6; i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, "k", "v" + i)).get(30, TimeUnit.SECONDS);
            }
        }
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Gateway.consumer(group))) {
            consumer.subscribe(List.of(topic));
            int read = 0;
            long deadline = System.currentTimeMillis() + Gateway.DEADLINE_MS;
            while (read < 6 && System.currentTimeMillis() < deadline) {
                read += consumer.poll(Gateway.POLL).count();
            }
            assertEquals(6, read, "records read by the group");
            consumer.commitSync();
        }
        run("consumer.group.ConsumerGroupCommand", "--bootstrap-server", bs(), "--list").ok("kafka-consumer-groups --list").shows(group);
        Result d = run("consumer.group.ConsumerGroupCommand", "--bootstrap-server", bs(), "--describe", "--group", group)
            .ok("kafka-consumer-groups --describe").shows(topic, "CURRENT-OFFSET", "LAG");
        Matcher m = Pattern.compile(Pattern.quote(group) + "\\s+" + Pattern.quote(topic) + "\\s+(\\d)\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)").matcher(d.out());
        int rows = 0;
        while (m.find()) {
            rows++;
            assertEquals("3", m.group(2), "committed offset of partition " + m.group(1));
            assertEquals("0", m.group(4), "lag of partition " + m.group(1));
        }
        assertEquals(2, rows, "partitions described");
        run("consumer.group.ConsumerGroupCommand", "--bootstrap-server", bs(), "--reset-offsets", "--group", group, "--topic", topic,
            "--to-earliest", "--execute").ok("kafka-consumer-groups --reset-offsets").shows("NEW-OFFSET");
        run("consumer.group.ConsumerGroupCommand", "--bootstrap-server", bs(), "--describe", "--group", group)
            .ok("kafka-consumer-groups --describe after the reset").shows(" 3 ");
        run("GroupsCommand", "--bootstrap-server", bs(), "--list").ok("kafka-groups --list").shows(group, "consumer");
        run("consumer.group.ShareGroupCommand", "--bootstrap-server", bs(), "--list").ok("kafka-share-groups --list");
        run("consumer.group.ConsumerGroupCommand", "--bootstrap-server", bs(), "--delete", "--group", group)
            .ok("kafka-consumer-groups --delete").shows("Deletion of requested consumer groups ('" + group + "') was successful.");

        String principal = "User:" + Gateway.unique("cli-acl");
        run("AclCommand", "--bootstrap-server", bs(), "--add", "--allow-principal", principal, "--operation", "Read", "--topic", topic)
            .ok("kafka-acls --add");
        run("AclCommand", "--bootstrap-server", bs(), "--list", "--topic", topic).ok("kafka-acls --list")
            .shows("principal=" + principal, "operation=READ", "permissionType=ALLOW");
        run("AclCommand", "--bootstrap-server", bs(), "--remove", "--allow-principal", principal, "--operation", "Read", "--topic", topic,
            "--force").ok("kafka-acls --remove");
        assertFalse(run("AclCommand", "--bootstrap-server", bs(), "--list", "--topic", topic).ok("kafka-acls --list").out().contains(principal),
            "the removed ACL is listed");

        run("TransactionsCommand", "--bootstrap-server", bs(), "list").ok("kafka-transactions list").shows("TransactionalId");
    }

    @Test
    void usersQuotasAndDelegationTokens() throws Exception {
        String user = Gateway.unique("cli-user");
        run("ConfigCommand", "--bootstrap-server", bs(), "--entity-type", "users", "--entity-name", user, "--alter",
            "--add-config", "SCRAM-SHA-256=[iterations=8192,password=cli-secret]").ok("kafka-configs --alter users SCRAM");
        run("ConfigCommand", "--bootstrap-server", bs(), "--entity-type", "users", "--entity-name", user, "--describe")
            .ok("kafka-configs --describe users").shows("SCRAM-SHA-256=iterations=8192");

        String client = Gateway.unique("cli-client");
        run("ConfigCommand", "--bootstrap-server", bs(), "--entity-type", "clients", "--entity-name", client, "--alter",
            "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152").ok("kafka-configs --alter clients");
        run("ConfigCommand", "--bootstrap-server", bs(), "--entity-type", "clients", "--entity-name", client, "--describe")
            .ok("kafka-configs --describe clients").shows("producer_byte_rate=1048576", "consumer_byte_rate=2097152");
        run("ConfigCommand", "--bootstrap-server", bs(), "--entity-type", "users", "--entity-default", "--alter",
            "--add-config", "request_percentage=50").ok("kafka-configs --alter the default user");
        run("ConfigCommand", "--bootstrap-server", bs(), "--entity-type", "users", "--entity-default", "--alter",
            "--delete-config", "request_percentage").ok("kafka-configs --delete-config the default user");
        run("ConfigCommand", "--bootstrap-server", bs(), "--entity-type", "clients", "--entity-name", client, "--alter",
            "--delete-config", "producer_byte_rate,consumer_byte_rate").ok("kafka-configs --delete-config clients");

        // Tokens are asked for by a user logged in with SASL.
        Path config = Files.createTempFile("sasl", ".properties");
        Properties p = SecurityTest.as(new Properties(), user, "cli-secret");
        p.remove("bootstrap.servers");
        try (var w = Files.newBufferedWriter(config)) {
            p.store(w, null);
        }
        String sasl = SecurityTest.saslBootstrap();
        Result created = run("DelegationTokenCommand", "--bootstrap-server", sasl, "--command-config", config.toString(), "--create",
            "--max-life-time-period", "-1", "--renewer-principal", "User:bob").ok("kafka-delegation-tokens --create").shows("User:" + user);
        Matcher hmac = Pattern.compile("\\n(\\S+)\\s+(\\S+)\\s+User:" + Pattern.quote(user)).matcher(created.out());
        assertTrue(hmac.find(), "no token id and HMAC in:\n" + created.out());
        String tokenID = hmac.group(1), tokenHMAC = hmac.group(2);
        // As against Kafka, --describe without --owner-principal asks for an empty owner list: no tokens.
        run("DelegationTokenCommand", "--bootstrap-server", sasl, "--command-config", config.toString(), "--describe",
            "--owner-principal", "User:" + user).ok("kafka-delegation-tokens --describe").shows(tokenID, "[User:bob]");
        run("DelegationTokenCommand", "--bootstrap-server", sasl, "--command-config", config.toString(), "--renew",
            "--renew-time-period", "-1", "--hmac", tokenHMAC).ok("kafka-delegation-tokens --renew").shows("Completed renew operation");
        run("DelegationTokenCommand", "--bootstrap-server", sasl, "--command-config", config.toString(), "--expire",
            "--expiry-time-period", "-1", "--hmac", tokenHMAC).ok("kafka-delegation-tokens --expire").shows("Completed expire operation");
        assertFalse(run("DelegationTokenCommand", "--bootstrap-server", sasl, "--command-config", config.toString(), "--describe",
            "--owner-principal", "User:" + user).ok("kafka-delegation-tokens --describe").out().contains(tokenID),
            "the expired token is described");
        try (Admin admin = Gateway.admin()) {
            admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
                new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), "other"))).all().get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void performanceAndVerifiableClients() throws Exception {
        String topic = Gateway.topic("cli-perf", 2);
        run("ProducerPerformance", "--topic", topic, "--num-records", "2000", "--record-size", "100", "--throughput", "-1",
            "--command-property", "bootstrap.servers=" + bs()).ok("kafka-producer-perf-test").shows("2000 records sent");
        run("ConsumerPerformance", "--bootstrap-server", bs(), "--topic", topic, "--num-records", "2000", "--timeout", "30000")
            .ok("kafka-consumer-perf-test").shows("start.time");
        Result produced = runProcess("VerifiableProducer", "--bootstrap-server", bs(), "--topic", topic, "--max-messages", "50")
            .ok("kafka-verifiable-producer").shows("\"name\":\"producer_send_success\"", "\"sent\":50", "\"acked\":50");
        assertFalse(produced.out().contains("producer_send_error"), "send errors");
        runProcess("VerifiableConsumer", "--bootstrap-server", bs(), "--topic", topic, "--group-id", Gateway.unique("cli-verifiable"),
            "--max-messages", "50", "--reset-policy", "earliest").ok("kafka-verifiable-consumer")
            .shows("\"name\":\"records_consumed\"", "\"name\":\"offsets_committed\"");
    }
}
