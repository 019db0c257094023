package io.seaweedfs.kafka.gateway;

import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StandbyUpdateListener;
import org.apache.kafka.streams.processor.TaskId;

/**
 * A Kafka Streams word count with exactly-once processing, run as a process
 * of its own by StreamsTest so that it can be killed: records of the input
 * topic are words; they are repartitioned by word (a repartition topic),
 * counted in a RocksDB store (a compacted changelog topic) and each new
 * count goes to the output topic. The cache is off, so every input gives
 * one output record. What its standby tasks do is printed (standby batch,
 * standby suspended with the reason: PROMOTED when the standby becomes the
 * task's active copy), for StreamsTest to check.
 *
 * <p>Arguments: bootstrap servers, application id, input topic, output
 * topic, state directory, and optionally the group protocol ("streams" for
 * the Streams group protocol of KIP-1071; the classic one otherwise).
 */
public final class WordCountApp {
    private WordCountApp() {}

    static Properties config(String bootstrap, String appId, String stateDir) {
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        // A killed instance's member is dropped after 10 s, not 45.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10_000);
        return p;
    }

    public static void main(String[] args) throws Exception {
        Properties p = config(args[0], args[1], args[4]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        if (args.length > 5) {
            p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, args[5]);
        }
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream(args[2])
            .groupBy((key, word) -> word)
            .count(Materialized.as("counts"))
            .toStream()
            .mapValues(String::valueOf)
            .to(args[3], Produced.with(Serdes.String(), Serdes.String()));
        KafkaStreams streams = new KafkaStreams(b.build(), p);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("state " + before + " -> " + now);
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                done.countDown();
            }
        });
        streams.setStandbyUpdateListener(new StandbyUpdateListener() {
            @Override
            public void onUpdateStart(TopicPartition tp, String store, long startingOffset) {
                System.out.println("standby start " + tp + " at " + startingOffset);
            }

            @Override
            public void onBatchLoaded(TopicPartition tp, String store, TaskId task, long batchEndOffset, long batchSize, long currentEndOffset) {
                System.out.println("standby batch " + tp + " " + batchSize + " records to " + batchEndOffset);
            }

            @Override
            public void onUpdateSuspended(TopicPartition tp, String store, long storeOffset, long currentEndOffset, SuspendReason reason) {
                System.out.println("standby suspended " + tp + " at " + storeOffset + " of " + currentEndOffset + ": " + reason);
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(streams::close));
        streams.start();
        done.await();
        System.exit(1);
    }
}
