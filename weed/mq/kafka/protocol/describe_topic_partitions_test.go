package protocol_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

// describeTopicPartitions is a DescribeTopicPartitions request for topics
// (none: every topic), with a partition limit and a cursor (topic "": none).
func describeTopicPartitions(limit int32, cursorTopic string, cursorPartition int32, topics ...string) *kmsg.DescribeTopicPartitionsRequest {
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = limit
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	if cursorTopic != "" {
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: cursorTopic, Partition: cursorPartition}
	}
	return req
}

// describedPages pages through the topics as Kafka's admin client does,
// from the cursor of each answer until there is none, and returns every
// partition answered ("topic/partition", in order), the topics answered
// with an error (topic: error; once, or the test fails), and the number of
// pages.
func describedPages(t *testing.T, c *rawConn, limit int32, topics ...string) (partitions []string, failed map[string]int16, pages int) {
	t.Helper()
	failed = map[string]int16{}
	req := describeTopicPartitions(limit, "", 0, topics...)
	for {
		pages++
		if pages > 1000 {
			t.Fatal("the cursor never ends")
		}
		resp := c.do(req, 0).(*kmsg.DescribeTopicPartitionsResponse)
		for _, st := range resp.Topics {
			if st.ErrorCode != 0 {
				if _, again := failed[*st.Topic]; again {
					t.Errorf("%s answered with an error on two pages", *st.Topic)
				}
				failed[*st.Topic] = st.ErrorCode
				continue
			}
			for _, p := range st.Partitions {
				partitions = append(partitions, fmt.Sprintf("%s/%d", *st.Topic, p.Partition))
			}
		}
		if resp.NextCursor == nil {
			return partitions, failed, pages
		}
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
}

func partitionsOf(topic string, n int) []string {
	var out []string
	for p := range n {
		out = append(out, fmt.Sprintf("%s/%d", topic, p))
	}
	return out
}

// DescribeTopicPartitions v0 only; each partition as Metadata shows it:
// the gateway as leader (epoch 0), only replica and in-sync replica, no
// eligible leader replicas; the topic's id; every operation authorized
// (no authorizer); topics in name order whatever the request's order.
func TestDescribeTopicPartitionsFields(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrDescribeTopicPartitionsRequest(), 0, 0)
	b := g.topic(t, "dtpf-b", 2, nil)
	a := g.topic(t, "dtpf-a", 3, nil)
	resp := roundTrip(t, g.addr, describeTopicPartitions(100, "", 0, "dtpf-b", "dtpf-a", "dtpf-b"), 0).(*kmsg.DescribeTopicPartitionsResponse)
	if resp.NextCursor != nil || len(resp.Topics) != 2 {
		t.Fatalf("cursor %+v, %d topics", resp.NextCursor, len(resp.Topics))
	}
	for i, want := range []struct {
		name string
		id   [16]byte
		n    int
	}{{"dtpf-a", a.ID, 3}, {"dtpf-b", b.ID, 2}} {
		st := resp.Topics[i]
		code(t, want.name, st.ErrorCode, nil)
		if *st.Topic != want.name || st.TopicID != want.id || st.IsInternal || len(st.Partitions) != want.n {
			t.Fatalf("topic %d: %s id %x internal %v, %d partitions", i, *st.Topic, st.TopicID, st.IsInternal, len(st.Partitions))
		}
		if st.AuthorizedOperations == -2147483648 || st.AuthorizedOperations&(1<<kmsg.ACLOperationDescribe) == 0 {
			t.Errorf("%s: authorized operations %b", want.name, st.AuthorizedOperations)
		}
		for j, p := range st.Partitions {
			if p.ErrorCode != 0 || p.Partition != int32(j) || p.LeaderID != 0 || p.LeaderEpoch != 0 ||
				!slices.Equal(p.Replicas, []int32{0}) || !slices.Equal(p.ISR, []int32{0}) ||
				len(p.EligibleLeaderReplicas) != 0 || len(p.LastKnownELR) != 0 || len(p.OfflineReplicas) != 0 {
				t.Errorf("%s: partition %+v", want.name, p)
			}
		}
	}
}

// Paging through named topics with a small partition limit returns every
// partition exactly once, in order: a topic split across pages continues
// at the cursor's partition, a topic that ends at the limit is followed by
// a cursor at the next topic's partition 0; unknown topics and names no
// topic can have are answered once, with their errors. Every topic (an
// empty list) pages the same way, the internal topics with them.
func TestDescribeTopicPartitionsPaging(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	sizes := map[string]int{"dtp-a": 3, "dtp-b": 1, "dtp-c": 4, "dtp-d": 2}
	for name, n := range sizes {
		g.topic(t, name, int32(n), nil)
	}
	var want []string
	for _, name := range []string{"dtp-a", "dtp-b", "dtp-c", "dtp-d"} {
		want = append(want, partitionsOf(name, sizes[name])...)
	}
	c := dial(t, g.addr)
	for _, limit := range []int32{1, 2, 3, 4, 100} {
		got, failed, pages := describedPages(t, c, limit, "dtp-d", "dtp-missing", "dtp-c", "dtp-b", "bad name", "dtp-a")
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: %v, want %v", limit, got, want)
		}
		if len(failed) != 2 || failed["dtp-missing"] != kerr.UnknownTopicOrPartition.Code || failed["bad name"] != kerr.InvalidTopicException.Code {
			t.Errorf("limit %d: errors %v", limit, failed)
		}
		if limit == 100 && pages != 1 {
			t.Errorf("limit 100: %d pages", pages)
		}
	}

	// The page boundaries, as Kafka draws them.
	resp := c.do(describeTopicPartitions(2, "", 0, "dtp-a", "dtp-b", "dtp-c"), 0).(*kmsg.DescribeTopicPartitionsResponse)
	if nc := resp.NextCursor; nc == nil || nc.Topic != "dtp-a" || nc.Partition != 2 || len(resp.Topics) != 1 {
		t.Errorf("first page of 2: cursor %+v, %d topics", nc, len(resp.Topics))
	}
	resp = c.do(describeTopicPartitions(2, "dtp-a", 2, "dtp-a", "dtp-b", "dtp-c"), 0).(*kmsg.DescribeTopicPartitionsResponse)
	if nc := resp.NextCursor; nc == nil || nc.Topic != "dtp-c" || nc.Partition != 0 || len(resp.Topics) != 2 ||
		len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Partition != 2 {
		t.Errorf("second page of 2: cursor %+v, topics %+v", nc, resp.Topics)
	}
	// A cursor beyond the topic's partitions: the topic with none.
	resp = c.do(describeTopicPartitions(10, "dtp-b", 5, "dtp-b", "dtp-c"), 0).(*kmsg.DescribeTopicPartitionsResponse)
	if resp.NextCursor != nil || len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 0 || len(resp.Topics[1].Partitions) != 4 {
		t.Errorf("cursor past dtp-b's partitions: %+v", resp.Topics)
	}

	// Every topic: the backend's and the internal ones (50 partitions each).
	var all []string
	for _, name := range []string{"__consumer_offsets", "__transaction_state", "dtp-a", "dtp-b", "dtp-c", "dtp-d"} {
		n, ok := sizes[name]
		if !ok {
			n = 50
		}
		all = append(all, partitionsOf(name, n)...)
	}
	for _, limit := range []int32{7, 50, 2000} {
		got, failed, _ := describedPages(t, c, limit)
		if !slices.Equal(got, all) || len(failed) != 0 {
			t.Errorf("every topic, limit %d: %d partitions (want %d), errors %v", limit, len(got), len(all), failed)
		}
	}
	resp = c.do(describeTopicPartitions(2000, "", 0), 0).(*kmsg.DescribeTopicPartitionsResponse)
	for _, st := range resp.Topics {
		if st.IsInternal != internal(*st.Topic) {
			t.Errorf("%s: internal %v", *st.Topic, st.IsInternal)
		}
	}
	// The response limit is at most 2000 and at least 1.
	for limit, n := range map[int32]int{0: 1, -5: 1} {
		resp := c.do(describeTopicPartitions(limit, "", 0), 0).(*kmsg.DescribeTopicPartitionsResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != n || resp.NextCursor == nil {
			t.Errorf("limit %d: %d topics, cursor %+v", limit, len(resp.Topics), resp.NextCursor)
		}
	}
}

// A cursor on a topic the request does not name, or at a negative
// partition, gets every named topic INVALID_REQUEST, as Kafka answers.
func TestDescribeTopicPartitionsBadCursor(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "dtpc", 2, nil)
	for _, req := range []*kmsg.DescribeTopicPartitionsRequest{
		describeTopicPartitions(10, "dtpc-other", 0, "dtpc", "dtpc-x"),
		describeTopicPartitions(10, "dtpc", -1, "dtpc", "dtpc-x"),
	} {
		resp := roundTrip(t, g.addr, req, 0).(*kmsg.DescribeTopicPartitionsResponse)
		if len(resp.Topics) != 2 || resp.NextCursor != nil {
			t.Fatalf("cursor %+v: %+v", req.Cursor, resp.Topics)
		}
		for _, st := range resp.Topics {
			code(t, *st.Topic, st.ErrorCode, kerr.InvalidRequest)
			if len(st.Partitions) != 0 {
				t.Errorf("%s: %d partitions", *st.Topic, len(st.Partitions))
			}
		}
	}
	resp := roundTrip(t, g.addr, describeTopicPartitions(10, "dtpc", -1), 0).(*kmsg.DescribeTopicPartitionsResponse)
	if len(resp.Topics) != 0 {
		t.Errorf("every topic, negative cursor: %+v", resp.Topics)
	}
}

// Topics the principal may not describe: named, TOPIC_AUTHORIZATION_FAILED
// without an id, after the others, whether they exist or not, once across
// pages; asked for every topic, they are left out. The authorized
// operations are the principal's.
func TestDescribeTopicPartitionsAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "dtpa-open"),
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "dtpa-z"),
	}})
	g.topic(t, "dtpa-open", 2, nil)
	g.topic(t, "dtpa-secret", 2, nil)
	g.topic(t, "dtpa-z", 1, nil)
	resp := roundTrip(t, g.addr, describeTopicPartitions(10, "", 0, "dtpa-secret", "dtpa-open", "dtpa-absent"), 0).(*kmsg.DescribeTopicPartitionsResponse)
	if len(resp.Topics) != 3 || *resp.Topics[0].Topic != "dtpa-open" {
		t.Fatalf("%+v", resp.Topics)
	}
	code(t, "dtpa-open", resp.Topics[0].ErrorCode, nil)
	if ops := resp.Topics[0].AuthorizedOperations; ops != 1<<kmsg.ACLOperationDescribe {
		t.Errorf("authorized operations %b, want Describe only", ops)
	}
	for _, st := range resp.Topics[1:] {
		code(t, *st.Topic, st.ErrorCode, kerr.TopicAuthorizationFailed)
		if st.TopicID != ([16]byte{}) || len(st.Partitions) != 0 {
			t.Errorf("%s: id %x, %d partitions", *st.Topic, st.TopicID, len(st.Partitions))
		}
	}
	c := dial(t, g.addr)
	got, failed, _ := describedPages(t, c, 1, "dtpa-z", "dtpa-secret", "dtpa-open")
	if want := []string{"dtpa-open/0", "dtpa-open/1", "dtpa-z/0"}; !slices.Equal(got, want) ||
		len(failed) != 1 || failed["dtpa-secret"] != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("pages of 1: %v, errors %v", got, failed)
	}
	got, failed, _ = describedPages(t, c, 1)
	if want := []string{"dtpa-open/0", "dtpa-open/1", "dtpa-z/0"}; !slices.Equal(got, want) || len(failed) != 0 {
		t.Errorf("every topic, pages of 1: %v, errors %v", got, failed)
	}
}
