package io.seaweedfs.kafka.gateway;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/** LineSource's task: the lines of the file past the stored offset. */
public class LineSourceTask extends SourceTask {
    private Path file;
    private String topic;
    private long next;

    @Override
    public void start(Map<String, String> props) {
        file = Path.of(props.get("file"));
        topic = props.get("topic");
        Map<String, Object> stored = context.offsetStorageReader().offset(Map.of("file", file.toString()));
        next = stored == null ? 0 : ((Number) stored.get("lines")).longValue();
    }

    @Override
    public List<SourceRecord> poll() throws InterruptedException {
        List<String> lines;
        try {
            lines = Files.readAllLines(file);
        } catch (IOException e) {
            throw new ConnectException(e);
        }
        if (lines.size() <= next) {
            Thread.sleep(200);
            return null;
        }
        List<SourceRecord> out = new ArrayList<>();
        for (long i = next; i < lines.size(); i++) {
            out.add(new SourceRecord(Map.of("file", file.toString()), Map.of("lines", i + 1),
                topic, null, null, null, Schema.STRING_SCHEMA, lines.get((int) i)));
        }
        next = lines.size();
        return out;
    }

    @Override
    public void stop() {}

    @Override
    public String version() {
        return "1";
    }
}
