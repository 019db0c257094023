package io.seaweedfs.kafka.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.connect.cli.ConnectDistributed;
import org.apache.kafka.connect.runtime.Connect;
import org.junit.jupiter.api.Test;

/** Kafka Connect in distributed mode, its config, offset and status topics on the gateway. */
class ConnectTest {

    static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static Connect<?> worker(String group, int port) {
        return worker(group, port, true);
    }

    /**
     * A distributed worker; factorOne sets its three topics' replication factor to 1, else they
     * have Connect's default (3).
     */
    static Connect<?> worker(String group, int port, boolean factorOne) {
        Map<String, String> p = new HashMap<>();
        p.put("bootstrap.servers", Gateway.bootstrap());
        p.put("group.id", group);
        p.put("config.storage.topic", group + "-configs");
        p.put("offset.storage.topic", group + "-offsets");
        p.put("status.storage.topic", group + "-status");
        if (factorOne) {
            p.put("config.storage.replication.factor", "1");
            p.put("offset.storage.replication.factor", "1");
            p.put("status.storage.replication.factor", "1");
        }
        p.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        p.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
        p.put("offset.flush.interval.ms", "500");
        p.put("listeners", "http://127.0.0.1:" + port);
        return new ConnectDistributed().startConnect(p);
    }

    static void putConnector(int port, String name, String json) throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/connectors/" + name + "/config"))
                .header("Content-Type", "application/json").PUT(HttpRequest.BodyPublishers.ofString(json)).build(),
                HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() / 100 == 2) {
                return;
            }
            // 409 while the worker joins its group and reads the config topic
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("PUT connector " + name + ": " + r.statusCode() + " " + r.body());
            }
            Thread.sleep(500);
        }
    }

    static List<String> awaitLines(Path file, int n, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        List<String> lines = List.of();
        while (System.currentTimeMillis() < deadline) {
            lines = Files.exists(file) ? Files.readAllLines(file) : List.of();
            if (lines.size() >= n) {
                break;
            }
            Thread.sleep(250);
        }
        Thread.sleep(2_000); // nothing more comes
        return Files.exists(file) ? Files.readAllLines(file) : lines;
    }

    static void appendLines(Path file, int from, int to) throws Exception {
        StringBuilder b = new StringBuilder();
        for (int i = from; i < to; i++) {
            b.append("line ").append(i).append(" of the file\n");
        }
        Files.writeString(file, b, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    /**
     * A distributed worker with a file source and a file sink connector: a
     * file goes through a topic and out into another file unchanged; the
     * worker stopped and started again (a new process would do the same)
     * reads its connectors from the config topic and resumes from its
     * stored offsets: lines added meanwhile come out once, none twice. Its
     * three topics are compacted, as Connect requires.
     */
    @Test
    void fileThroughATopicAcrossARestart() throws Exception {
        String group = Gateway.unique("connect");
        String topic = Gateway.topic("connect-lines", 1);
        Path dir = Files.createTempDirectory("connect");
        Path in = dir.resolve("in.txt");
        Path out = dir.resolve("out.txt");
        appendLines(in, 0, 1000);
        int port = freePort();
        Connect<?> connect = worker(group, port);
        try {
            putConnector(port, "lines-in", "{\"connector.class\":\"" + LineSource.class.getName() + "\",\"tasks.max\":\"1\","
                + "\"file\":\"" + in + "\",\"topic\":\"" + topic + "\"}");
            putConnector(port, "lines-out", "{\"connector.class\":\"" + LineSink.class.getName() + "\",\"tasks.max\":\"1\","
                + "\"file\":\"" + out + "\",\"topics\":\"" + topic + "\"}");
            assertEquals(Files.readAllLines(in), awaitLines(out, 1000, 120_000), "the file through the topic");
        } finally {
            connect.stop();
            connect.awaitStop();
        }
        appendLines(in, 1000, 2000);
        connect = worker(group, port);
        try {
            List<String> got = awaitLines(out, 2000, 120_000);
            List<String> want = Files.readAllLines(in);
            assertEquals(want.size(), got.size(), "lines out after the restart");
            assertEquals(want, got, "the file through the topic after the restart");
        } finally {
            connect.stop();
            connect.awaitStop();
        }
        try (Admin admin = Gateway.admin()) {
            List<ConfigResource> rs = new ArrayList<>();
            for (String t : List.of("-configs", "-offsets", "-status")) {
                rs.add(new ConfigResource(ConfigResource.Type.TOPIC, group + t));
            }
            Map<ConfigResource, Config> cs = admin.describeConfigs(rs).all().get(30, TimeUnit.SECONDS);
            for (ConfigResource r : rs) {
                assertEquals("compact", cs.get(r).get("cleanup.policy").value(), r.name() + "'s cleanup.policy");
            }
            assertTrue(admin.listTopics().names().get(30, TimeUnit.SECONDS).contains(group + "-offsets"));
        }
    }
}
