package io.seaweedfs.kafka.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;
import org.junit.jupiter.api.Test;

/**
 * A Java application using the gateway's schema registry through its REST
 * API, as Confluent's Avro serializers do: the writer registers its schema
 * under the topic's subject and frames each record with the magic byte and
 * the schema's id; the reader looks each id up and resolves the writer's
 * schema against its own (Apache Avro's schema resolution).
 */
class SchemaRegistryTest {
    static final ObjectMapper JSON = new ObjectMapper();
    static final HttpClient HTTP = HttpClient.newHttpClient();

    static String registry() {
        return System.getProperty("kafka.registry", "http://127.0.0.1:8081");
    }

    /** A registry call: the status and the body as JSON. */
    record Reply(int status, JsonNode body) {}

    static Reply call(String method, String path, Object body) {
        try {
            HttpRequest.Builder q = HttpRequest.newBuilder(URI.create(registry() + path))
                .header("Content-Type", "application/vnd.schemaregistry.v1+json");
            q.method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)));
            HttpResponse<String> r = HTTP.send(q.build(), HttpResponse.BodyHandlers.ofString());
            return new Reply(r.statusCode(), JSON.readTree(r.body()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    static String subjectPath(String subject) {
        return "/subjects/" + URLEncoder.encode(subject, StandardCharsets.UTF_8);
    }

    /** Registers schema under subject and returns its id, or the registry's error. */
    static Reply register(String subject, Schema schema) {
        return call("POST", subjectPath(subject) + "/versions", Map.of("schema", schema.toString()));
    }

    /** Confluent's framing: magic byte 0, the schema id (4 bytes, big endian), Avro's binary. */
    static final class AvroSerializer implements Serializer<GenericRecord> {
        final Map<String, Integer> ids = new ConcurrentHashMap<>();

        @Override
        public byte[] serialize(String topic, GenericRecord record) {
            Schema schema = record.getSchema();
            int id = ids.computeIfAbsent(topic + "\0" + schema, k -> {
                Reply r = register(topic + "-value", schema);
                if (r.status() != 200) {
                    throw new IllegalStateException("register: " + r);
                }
                return r.body().get("id").asInt();
            });
            try {
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                out.write(0);
                out.write(ByteBuffer.allocate(4).putInt(id).array());
                BinaryEncoder enc = EncoderFactory.get().binaryEncoder(out, null);
                new GenericDatumWriter<GenericRecord>(schema).write(record, enc);
                enc.flush();
                return out.toByteArray();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    /** Reads Confluent's framing, the writer's schema by its id, into the reader's schema. */
    static final class AvroDeserializer implements Deserializer<GenericRecord> {
        final Schema reader;
        final Map<Integer, Schema> writers = new ConcurrentHashMap<>();

        AvroDeserializer(Schema reader) {
            this.reader = reader;
        }

        @Override
        public GenericRecord deserialize(String topic, byte[] data) {
            ByteBuffer b = ByteBuffer.wrap(data);
            if (b.get() != 0) {
                throw new IllegalStateException("no magic byte");
            }
            int id = b.getInt();
            Schema writer = writers.computeIfAbsent(id, k -> {
                Reply r = call("GET", "/schemas/ids/" + k, null);
                if (r.status() != 200) {
                    throw new IllegalStateException("schema " + k + ": " + r);
                }
                return new Schema.Parser().parse(r.body().get("schema").asText());
            });
            try {
                return new GenericDatumReader<GenericRecord>(writer, reader)
                    .read(null, DecoderFactory.get().binaryDecoder(data, 5, data.length - 5, null));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    static final Schema V1 = new Schema.Parser().parse(
        "{\"type\":\"record\",\"name\":\"Trade\",\"namespace\":\"java\",\"fields\":["
            + "{\"name\":\"symbol\",\"type\":\"string\"},{\"name\":\"qty\",\"type\":\"int\"}]}");
    static final Schema V2 = new Schema.Parser().parse(
        "{\"type\":\"record\",\"name\":\"Trade\",\"namespace\":\"java\",\"fields\":["
            + "{\"name\":\"symbol\",\"type\":\"string\"},{\"name\":\"qty\",\"type\":\"int\"},"
            + "{\"name\":\"venue\",\"type\":\"string\",\"default\":\"XNAS\"}]}");
    static final Schema BAD = new Schema.Parser().parse(
        "{\"type\":\"record\",\"name\":\"Trade\",\"namespace\":\"java\",\"fields\":["
            + "{\"name\":\"symbol\",\"type\":\"long\"},{\"name\":\"qty\",\"type\":\"int\"}]}");

    @Test
    void avroThroughTheRegistry() throws Exception {
        String topic = Gateway.topic("java-sr", 2);
        int n = 30;
        Properties p = Gateway.producer();
        try (KafkaProducer<String, GenericRecord> producer =
                 new KafkaProducer<>(p, new org.apache.kafka.common.serialization.StringSerializer(), new AvroSerializer())) {
            for (int i = 0; i < n; i++) {
                GenericRecord r = new GenericData.Record(V1);
                r.put("symbol", "S" + i);
                r.put("qty", i * 10);
                producer.send(new ProducerRecord<>(topic, "k" + i, r)).get();
            }
        }
        String subject = topic + "-value";
        Reply latest = call("GET", subjectPath(subject) + "/versions/latest", null);
        assertEquals(200, latest.status(), latest.toString());
        assertEquals(1, latest.body().get("version").asInt());
        int id1 = latest.body().get("id").asInt();

        // A compatible evolution (a field with a default) registered; a reader
        // on it reads the old records with the default filled in.
        Reply v2 = register(subject, V2);
        assertEquals(200, v2.status(), v2.toString());
        assertNotEquals(id1, v2.body().get("id").asInt());
        Reply bad = register(subject, BAD);
        assertEquals(409, bad.status(), bad.toString());
        assertEquals(409, bad.body().get("error_code").asInt());
        Reply check = call("POST", "/compatibility" + subjectPath(subject) + "/versions/latest",
            Map.of("schema", BAD.toString()));
        assertEquals(false, check.body().get("is_compatible").asBoolean(), check.toString());

        Properties c = Gateway.consumer(Gateway.unique("java-sr"));
        List<GenericRecord> got = new ArrayList<>();
        try (KafkaConsumer<String, GenericRecord> consumer = new KafkaConsumer<>(c,
                 new org.apache.kafka.common.serialization.StringDeserializer(), new AvroDeserializer(V2))) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + Gateway.DEADLINE_MS;
            while (got.size() < n && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, GenericRecord> r : consumer.poll(Gateway.POLL)) {
                    assertEquals("k" + r.value().get("symbol").toString().substring(1), r.key());
                    got.add(r.value());
                }
            }
        }
        assertEquals(n, got.size());
        got.sort((a, b) -> Integer.compare((Integer) a.get("qty"), (Integer) b.get("qty")));
        for (int i = 0; i < n; i++) {
            assertEquals("S" + i, got.get(i).get("symbol").toString());
            assertEquals(i * 10, got.get(i).get("qty"));
            assertEquals("XNAS", got.get(i).get("venue").toString());
        }
    }

    @Test
    void validatedTopicRefusesRecordsWithoutARegisteredSchema() throws Exception {
        String topic = Gateway.topic("java-srv", 1, Map.of("confluent.value.schema.validation", "true"));
        Properties p = Gateway.producer();
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.RETRIES_CONFIG, "0");
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(p)) {
            ExecutionException e = assertThrows(ExecutionException.class,
                () -> producer.send(new ProducerRecord<>(topic, "k", "plain text".getBytes(StandardCharsets.UTF_8))).get());
            assertInstanceOf(InvalidRecordException.class, e.getCause(), e.toString());
            assertTrue(e.getCause().getMessage().contains("magic"), e.getCause().getMessage());
        }
        GenericRecord r = new GenericData.Record(V1);
        r.put("symbol", "OK");
        r.put("qty", 1);
        try (KafkaProducer<String, GenericRecord> producer =
                 new KafkaProducer<>(Gateway.producer(), new org.apache.kafka.common.serialization.StringSerializer(), new AvroSerializer())) {
            assertEquals(0, producer.send(new ProducerRecord<>(topic, "k", r)).get().offset());
        }
        Properties c = Gateway.consumer(null);
        c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10");
        try (KafkaConsumer<String, GenericRecord> consumer = new KafkaConsumer<>(c,
                 new org.apache.kafka.common.serialization.StringDeserializer(), new AvroDeserializer(V1))) {
            consumer.assign(List.of(new org.apache.kafka.common.TopicPartition(topic, 0)));
            List<GenericRecord> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + Gateway.DEADLINE_MS;
            while (got.isEmpty() && System.currentTimeMillis() < deadline) {
                consumer.poll(Gateway.POLL).forEach(x -> got.add(x.value()));
            }
            assertEquals(1, got.size());
            assertEquals("OK", got.get(0).get("symbol").toString());
        }
    }
}
