package seaweedmq

// Following partitions to live brokers. A topic's configuration names each
// partition's leader broker; when that broker dies, SeaweedMQ's balancer
// leader moves its partitions to live brokers once asked to check the
// topic's assignments (ConfigureTopic with the topic's own settings). The
// gateway asks when a partition's broker stops answering, then reads the
// topic again; the next write to a moved partition opens a stream to its
// new broker, which recovery (recover.go) first gives back what the dead
// broker had not flushed.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/mq/topic"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/schema_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// reassignEvery bounds how often one topic's assignments are checked.
const reassignEvery = 2 * time.Second

// brokerRPCTimeout bounds one call to an MQ broker, so that a broker that
// died without closing its connections fails calls instead of hanging them.
const brokerRPCTimeout = 10 * time.Second

type reassigner struct {
	mu   sync.Mutex
	last map[string]time.Time // by topic: when its assignments were last checked
}

// brokerUnreachable notes that a partition's leader broker did not answer:
// the balancer is asked (at most every reassignEvery per topic, in the
// background) to move the topic's partitions off brokers that are gone.
func (c *Client) brokerUnreachable(topicName, broker string, cause error) {
	if !isUnavailable(cause) {
		return
	}
	c.askBalancer(topicName, broker, cause)
}

// askBalancer has the balancer leader check a topic's assignments, at most
// every reassignEvery, in the background: a broker that refuses a
// partition's stream for want of an assignment (a balancer that restarted
// and cached the topic before the brokers registered with it) gets one.
func (c *Client) askBalancer(topicName, broker string, cause error) {
	c.reassign.mu.Lock()
	if c.reassign.last == nil {
		c.reassign.last = map[string]time.Time{}
	}
	if time.Since(c.reassign.last[topicName]) < reassignEvery {
		c.reassign.mu.Unlock()
		return
	}
	for t, at := range c.reassign.last {
		if time.Since(at) >= reassignEvery {
			delete(c.reassign.last, t) // only recent checks hold others back
		}
	}
	c.reassign.last[topicName] = time.Now()
	c.reassign.mu.Unlock()
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		var moved string
		err := metrics.Try("BrokerReassign", func() (err error) {
			moved, err = c.checkAssignments(ctx, topicName)
			return err
		})
		c.topics.forget(topicName)
		switch {
		case err != nil:
			glog.Warningf("kafka topic %s: broker %s does not answer (%v); asking the balancer to move its partitions failed: %v", topicName, broker, cause, err)
		case moved != "":
			glog.V(0).Infof("kafka topic %s: broker %s does not answer (%v); the balancer moved partitions: %s", topicName, broker, cause, moved)
		default:
			glog.V(1).Infof("kafka topic %s: broker %s does not answer (%v); the balancer keeps its partitions there", topicName, broker, cause)
		}
	}()
}

// checkAssignments asks the balancer leader to check a topic's partition
// assignments against the live brokers, and says what moved.
func (c *Client) checkAssignments(ctx context.Context, topicName string) (string, error) {
	var conf *mq_pb.ConfigureTopicResponse
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		var err error
		conf, err = topic.Topic{Namespace: Namespace, Name: topicName}.ReadConfFile(fc)
		return err
	})
	if err != nil {
		return "", err
	}
	var after *mq_pb.ConfigureTopicResponse
	err = c.withBalancer(ctx, func(mc mq_pb.SeaweedMessagingClient) error {
		var err error
		// The topic's own settings, so that only assignments change.
		after, err = mc.ConfigureTopic(ctx, &mq_pb.ConfigureTopicRequest{
			Topic:             &schema_pb.Topic{Namespace: Namespace, Name: topicName},
			PartitionCount:    int32(len(conf.BrokerPartitionAssignments)),
			MessageRecordType: conf.MessageRecordType,
			KeyColumns:        conf.KeyColumns,
			SchemaFormat:      conf.SchemaFormat,
		})
		return err
	})
	if err != nil {
		return "", err
	}
	before := map[int32]string{}
	for _, a := range conf.BrokerPartitionAssignments {
		before[a.Partition.RangeStart] = a.LeaderBroker
	}
	var moved []string
	for _, a := range after.BrokerPartitionAssignments {
		if old := before[a.Partition.RangeStart]; old != a.LeaderBroker {
			moved = append(moved, fmt.Sprintf("range %d-%d from %s to %s", a.Partition.RangeStart, a.Partition.RangeStop, old, a.LeaderBroker))
		}
	}
	return strings.Join(moved, ", "), nil
}
