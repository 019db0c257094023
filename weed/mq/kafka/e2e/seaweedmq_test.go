package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/mq/client/pub_client"
	"github.com/seaweedfs/seaweedfs/weed/mq/topic"
)

// mqPublisher publishes to a new one-partition topic of the kafka
// namespace with SeaweedMQ's own client.
type mqPublisher struct {
	t    *testing.T
	name string
	pub  *pub_client.TopicPublisher
}

// seaweedMQPublisher returns a publisher of a new topic. The gateway
// serves without an MQ broker, so it may be ready before the cluster's
// broker leads its balancer (after TestReadiness stopped the cluster, for
// one): the publisher is made again until the broker takes the topic.
func seaweedMQPublisher(t *testing.T, name string) *mqPublisher {
	t.Helper()
	p := &mqPublisher{t: t, name: name}
	p.connect()
	return p
}

func (p *mqPublisher) connect() {
	p.t.Helper()
	eventually(p.t, time.Minute, "a SeaweedMQ publisher", func() error {
		var err error
		p.pub, err = pub_client.NewTopicPublisher(&pub_client.PublisherConfiguration{
			Topic:          topic.NewTopic("kafka", p.name),
			PartitionCount: 1,
			Brokers:        []string{"127.0.0.1:" + strconv.Itoa(cluster.brokerPort)},
			PublisherName:  "e2e",
		})
		return err
	})
}

// publish publishes one record. The client takes its partitions from the
// broker in the background: until it has them a record is refused, not
// queued ("no input buffer found"), and is sent again. A publisher made
// while the broker did not lead its balancer never gets them (its
// configure failed with "missing address"): after 15 s it is made again
// (the one given up keeps its goroutines: its Shutdown never returns in
// this SeaweedFS version).
func (p *mqPublisher) publish(key, value []byte) {
	p.t.Helper()
	for attempt := 0; ; attempt++ {
		deadline := time.Now().Add(15 * time.Second)
		for {
			err := p.pub.Publish(key, value)
			if err == nil {
				return
			}
			if !strings.Contains(err.Error(), "no input buffer found") {
				p.t.Fatal(err)
			}
			if time.Now().After(deadline) {
				if attempt == 3 {
					p.t.Fatalf("the SeaweedMQ publisher's partitions: %v", err)
				}
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		p.connect()
	}
}

// TestSeaweedMQTopicIsKafkaTopic publishes with SeaweedMQ's own client to
// the kafka namespace and reads the records with a Kafka client.
func TestSeaweedMQTopicIsKafkaTopic(t *testing.T) {
	name := newTopic(t)
	pub := seaweedMQPublisher(t, name)
	const n = 50
	for i := 0; i < n; i++ {
		pub.publish([]byte(fmt.Sprintf("key-%d", i)), []byte(fmt.Sprintf("value-%d", i)))
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

// A stored record no Kafka client could read (a SeaweedMQ client's value
// that looks like the gateway's envelope, of an unknown version) is left
// out of fetches: it once failed every fetch of its partition with
// CORRUPT_MESSAGE, so no consumer got past it.
func TestUndecodableRecordSkipped(t *testing.T) {
	name := newTopic(t)
	pub := seaweedMQPublisher(t, name)
	for _, v := range [][]byte{[]byte("before"), {0x00, 'K', 'G', 'W', 0x7f, 0x00}, []byte("after")} {
		pub.publish([]byte("k"), v)
	}
	got := consumeN(t, name, 2)
	if got[0].Offset != 0 || string(got[0].Value) != "before" || got[1].Offset != 2 || string(got[1].Value) != "after" {
		t.Fatalf("read %d %q, %d %q; want 0 before, 2 after", got[0].Offset, got[0].Value, got[1].Offset, got[1].Value)
	}
}
