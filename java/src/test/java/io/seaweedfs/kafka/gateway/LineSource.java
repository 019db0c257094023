package io.seaweedfs.kafka.gateway;

import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * A source connector that sends each line of a file to a topic, once: its
 * task's offset is the number of lines sent (what FileStreamSource does;
 * connect-file is not served where these tests run).
 */
public class LineSource extends SourceConnector {
    static final ConfigDef CONFIG = new ConfigDef()
        .define("file", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "the file read")
        .define("topic", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "the topic written");

    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return LineSourceTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        return List.of(props);
    }

    @Override
    public void stop() {}

    @Override
    public ConfigDef config() {
        return CONFIG;
    }

    @Override
    public String version() {
        return "1";
    }
}
