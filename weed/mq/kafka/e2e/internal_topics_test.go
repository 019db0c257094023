package e2e

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestInternalTopics: against SeaweedFS, Kafka's internal topics are listed
// as Kafka lists them, by kadm with internal topics and by kcat -L (50
// partitions, each led by the gateway), and by DescribeTopicPartitions;
// producing to one is refused with INVALID_TOPIC_EXCEPTION and leaves no
// SeaweedMQ topic in the filer.
func TestInternalTopics(t *testing.T) {
	cl := newClient(t, kgo.RecordRetries(1))
	md, err := kadm.NewClient(cl).BrokerMetadata(ctxT(t))
	if err != nil || len(md.Brokers) != 1 {
		t.Fatalf("metadata: %v %+v", err, md.Brokers)
	}
	id := md.Brokers[0].NodeID
	listed, err := kadm.NewClient(cl).ListTopicsWithInternal(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"__consumer_offsets", "__transaction_state"} {
		d := listed[name]
		if !d.IsInternal || len(d.Partitions) != 50 || d.Partitions[49].Leader != id {
			t.Errorf("%s: internal %v, %d partitions", name, d.IsInternal, len(d.Partitions))
		}
	}
	list := kcat(t, "", "-L", "-t", "__consumer_offsets")
	if !strings.Contains(list, `topic "__consumer_offsets" with 50 partitions`) ||
		!strings.Contains(list, "partition 49, leader "+strconv.Itoa(int(id))) {
		t.Errorf("kcat -L -t __consumer_offsets:\n%s", list)
	}

	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = 60
	req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "__transaction_state"}, {Topic: "__consumer_offsets"}}
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 2 || *resp.Topics[0].Topic != "__consumer_offsets" || !resp.Topics[0].IsInternal ||
		len(resp.Topics[0].Partitions) != 50 || len(resp.Topics[1].Partitions) != 10 ||
		resp.NextCursor == nil || resp.NextCursor.Topic != "__transaction_state" || resp.NextCursor.Partition != 10 {
		t.Errorf("DescribeTopicPartitions: %d topics, cursor %+v", len(resp.Topics), resp.NextCursor)
	}

	err = cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "__consumer_offsets", Value: []byte("v")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Errorf("produce to __consumer_offsets: %v", err)
	}
	dir := "http://127.0.0.1:" + strconv.Itoa(cluster.filerPort) + "/topics/kafka/__consumer_offsets/"
	hr, err := http.Get(dir)
	if err != nil {
		t.Fatal(err)
	}
	hr.Body.Close()
	if hr.StatusCode != http.StatusNotFound {
		t.Errorf("the filer has %s: %s", dir, hr.Status)
	}
}
