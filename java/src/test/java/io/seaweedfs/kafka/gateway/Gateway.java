package io.seaweedfs.kafka.gateway;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** The gateway under test and what every test needs of it. */
final class Gateway {
    private Gateway() {}

    /** The gateway's address, from -Dkafka.bootstrap. */
    static String bootstrap() {
        return System.getProperty("kafka.bootstrap", "127.0.0.1:9092");
    }

    /** A name no other test or run uses. */
    static String unique(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    static Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        return Admin.create(p);
    }

    /** Creates a topic of partitions partitions and returns its name. */
    static String topic(String prefix, int partitions, Map<String, String> configs) throws Exception {
        String name = unique(prefix);
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1).configs(configs)))
                .all().get(30, TimeUnit.SECONDS);
        }
        return name;
    }

    static String topic(String prefix, int partitions) throws Exception {
        return topic(prefix, partitions, Map.of());
    }

    /** A producer's settings: Kafka's defaults (idempotent, acks=all) but for the serializers. */
    static Properties producer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return p;
    }

    /** A consumer's settings: the classic group protocol, from the start, committing by hand. */
    static Properties consumer(String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        return p;
    }

    static final Duration POLL = Duration.ofMillis(500);
    static final long DEADLINE_MS = 60_000;
}
