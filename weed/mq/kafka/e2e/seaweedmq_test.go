package e2e

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/seaweedfs/seaweedfs/weed/mq/client/pub_client"
	"github.com/seaweedfs/seaweedfs/weed/mq/topic"
)

// TestSeaweedMQTopicIsKafkaTopic publishes with SeaweedMQ's own client to
// the kafka namespace and reads the records with a Kafka client.
func TestSeaweedMQTopicIsKafkaTopic(t *testing.T) {
	name := newTopic(t)
	pub, err := pub_client.NewTopicPublisher(&pub_client.PublisherConfiguration{
		Topic:          topic.NewTopic("kafka", name),
		PartitionCount: 1,
		Brokers:        []string{"127.0.0.1:" + strconv.Itoa(cluster.brokerPort)},
		PublisherName:  "e2e",
	})
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := 0; i < n; i++ {
		if err := pub.Publish([]byte(fmt.Sprintf("key-%d", i)), []byte(fmt.Sprintf("value-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	// pub_client's Shutdown waits for its partition jobs, which in this
	// SeaweedFS version never end; the records are acknowledged already.
	got := consumeN(t, name, n)
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Key) != fmt.Sprintf("key-%d", i) || string(r.Value) != fmt.Sprintf("value-%d", i) {
			t.Fatalf("record %d: offset %d key %q value %q", i, r.Offset, r.Key, r.Value)
		}
	}
}
