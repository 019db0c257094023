package protocol_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// shareFetchReq is a member's ShareFetch of one partition (acks: first,
// last and type of each batch).
func shareFetchReq(group, member string, epoch int32, id [16]byte, partition, maxRecords int32, acks ...[3]int64) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &group, &member, epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 200, 1, 1<<20, maxRecords, maxRecords
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.Partition = partition
	for _, a := range acks {
		b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = a[0], a[1], []int8{int8(a[2])}
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
	}
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID, rt.Partitions = id, []kmsg.ShareFetchRequestTopicPartition{rp}
	req.Topics = []kmsg.ShareFetchRequestTopic{rt}
	return req
}

// acquired is what a ShareFetch answer acquired: [first, last, count].
func acquired(resp *kmsg.ShareFetchResponse) [][3]int64 {
	var out [][3]int64
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			for _, a := range p.AcquiredRecords {
				out = append(out, [3]int64{a.FirstOffset, a.LastOffset, int64(a.DeliveryCount)})
			}
		}
	}
	return out
}

func shareFetchOK(t *testing.T, c *rawConn, req *kmsg.ShareFetchRequest) *kmsg.ShareFetchResponse {
	t.Helper()
	resp := c.do(req, 2).(*kmsg.ShareFetchResponse)
	code(t, "ShareFetch of "+*req.MemberID, resp.ErrorCode, nil)
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			code(t, "its partition", p.ErrorCode, nil)
			code(t, "its acknowledgements", p.AcknowledgeErrorCode, nil)
			if p.Records == nil {
				t.Fatalf("ShareFetch: null records")
			}
		}
	}
	return resp
}

// ShareFetch and ShareAcknowledge as Kafka serves them: records acquired
// by one member at a time with the group's lock duration, accepted,
// released (back with their delivery count raised) or rejected (never
// again), archived once delivered the most times; acknowledgements only by
// the member that acquired them; share session epochs; a session closed
// (or its connection) releases what its member holds.
func TestShareFetch(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	id := g.topic(t, "sf", 1, nil).ID
	g.write(t, "sf", 0, 0, "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9")
	setGroupConfigs(t, g.addr, "sf-g", "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "400", "share.delivery.count.limit", "2")
	c1, c2 := dial(t, g.addr), dial(t, g.addr)

	r := shareFetchOK(t, c1, shareFetchReq("sf-g", "m1", 0, id, 0, 4))
	if got := acquired(r); !slices.Equal(got, [][3]int64{{0, 3, 1}}) || r.AcquisitionLockTimeoutMillis != 400 || len(r.Topics[0].Partitions[0].Records) == 0 {
		t.Fatalf("m1's first fetch: %v, lock %d ms, %d bytes", got, r.AcquisitionLockTimeoutMillis, len(r.Topics[0].Partitions[0].Records))
	}
	if got := acquired(shareFetchOK(t, c2, shareFetchReq("sf-g", "m2", 0, id, 0, 4))); !slices.Equal(got, [][3]int64{{4, 7, 1}}) {
		t.Fatalf("m2's first fetch: %v", got)
	}
	// m1 accepts 0-1, releases 2, rejects 3, and fetches again: 2 comes
	// back (second delivery) and 8-9.
	r = shareFetchOK(t, c1, shareFetchReq("sf-g", "m1", 1, id, 0, 4, [3]int64{0, 1, 1}, [3]int64{2, 2, 2}, [3]int64{3, 3, 3}))
	if got := acquired(r); !slices.Equal(got, [][3]int64{{2, 2, 2}, {8, 9, 1}}) {
		t.Fatalf("m1's second fetch: %v", got)
	}
	// Not m2's to acknowledge: the partition's acknowledgement error.
	r = c2.do(shareFetchReq("sf-g", "m2", 1, id, 0, 0, [3]int64{8, 8, 1}), 2).(*kmsg.ShareFetchResponse)
	code(t, "acknowledging another member's record", r.Topics[0].Partitions[0].AcknowledgeErrorCode, kerr.InvalidRecordState)

	// Session epochs.
	code(t, "an epoch out of turn", c1.do(shareFetchReq("sf-g", "m1", 7, id, 0, 4), 2).(*kmsg.ShareFetchResponse).ErrorCode, kerr.InvalidShareSessionEpoch)
	code(t, "no session", c1.do(shareFetchReq("sf-g", "nobody", 1, id, 0, 4), 2).(*kmsg.ShareFetchResponse).ErrorCode, kerr.ShareSessionNotFound)
	code(t, "acknowledging in a new session", c1.do(shareFetchReq("sf-g", "m9", 0, id, 0, 4, [3]int64{0, 0, 1}), 2).(*kmsg.ShareFetchResponse).ErrorCode, kerr.InvalidRequest)
	ack0 := kmsg.NewPtrShareAcknowledgeRequest()
	ack0.GroupID, ack0.MemberID = kmsg.StringPtr("sf-g"), kmsg.StringPtr("m1")
	code(t, "ShareAcknowledge at epoch 0", c1.do(ack0, 2).(*kmsg.ShareAcknowledgeResponse).ErrorCode, kerr.InvalidShareSessionEpoch)
	bad := shareFetchReq("sf-g", "", 0, id, 0, 4)
	code(t, "no member id", c1.do(bad, 2).(*kmsg.ShareFetchResponse).ErrorCode, kerr.InvalidRequest)

	// m2 closes its session (ShareAcknowledge at epoch -1): its 4-7 go
	// back to the group; m1 gets them on its next fetch, second delivery.
	closeReq := kmsg.NewPtrShareAcknowledgeRequest()
	closeReq.GroupID, closeReq.MemberID, closeReq.ShareSessionEpoch = kmsg.StringPtr("sf-g"), kmsg.StringPtr("m2"), -1
	code(t, "closing m2's session", c2.do(closeReq, 2).(*kmsg.ShareAcknowledgeResponse).ErrorCode, nil)
	// m1 accepts 2 and 8-9 in an acknowledgement-only fetch (no
	// records), then fetches.
	r = shareFetchOK(t, c1, shareFetchReq("sf-g", "m1", 2, id, 0, 0, [3]int64{2, 2, 1}, [3]int64{8, 9, 1}))
	if got := acquired(r); got != nil || len(r.Topics) != 1 {
		t.Fatalf("an acknowledgement-only fetch acquired %v (partitions answered: %d)", got, len(r.Topics))
	}
	r = shareFetchOK(t, c1, shareFetchReq("sf-g", "m1", 3, id, 0, 10))
	if got := acquired(r); !slices.Equal(got, [][3]int64{{4, 7, 2}}) {
		t.Fatalf("after m2's session closed: %v", got)
	}
	// m1 lets their locks run out: delivered twice, the limit, they are
	// archived and the group is done with the partition.
	time.Sleep(600 * time.Millisecond)
	r = shareFetchOK(t, c1, shareFetchReq("sf-g", "m1", 4, id, 0, 10))
	if got := acquired(r); got != nil {
		t.Fatalf("records delivered the most times came again: %v", got)
	}
	offs := describeShareOffsets(t, g.addr, "sf-g", "sf")
	if offs.StartOffset != 10 || offs.Lag != 0 {
		t.Fatalf("the group's start offset %d, lag %d; want 10, 0", offs.StartOffset, offs.Lag)
	}

	// A member's connection closing ends its session and releases its
	// records.
	g.write(t, "sf", 0, 0, "r10", "r11")
	c3 := dial(t, g.addr)
	if got := acquired(shareFetchOK(t, c3, shareFetchReq("sf-g", "m3", 0, id, 0, 10))); !slices.Equal(got, [][3]int64{{10, 11, 1}}) {
		t.Fatalf("m3 acquired %v", got)
	}
	c3.nc.Close()
	eventually(t, "m3's records released when its connection closed", func() bool {
		r := c1.do(shareFetchReq("sf-g", "m1", 5, id, 0, 10), 2).(*kmsg.ShareFetchResponse)
		if r.ErrorCode != 0 {
			t.Fatalf("m1's fetch: %s", errName(r.ErrorCode))
		}
		if got := acquired(r); got != nil {
			if !slices.Equal(got, [][3]int64{{10, 11, 2}}) {
				t.Fatalf("after m3's connection closed: %v", got)
			}
			return true
		}
		c1.do(shareFetchReq("sf-g", "m1", 0, id, 0, 0), 2) // a new session at epoch 0, then try again at 1
		return false
	})
}

// describeShareOffsets is a share group's offsets of partition 0 of a topic
// (DescribeShareGroupOffsets v1).
func describeShareOffsets(t *testing.T, addr, group, topic string) kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	rg.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}
	req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{rg}
	resp := roundTrip(t, addr, req, 1).(*kmsg.DescribeShareGroupOffsetsResponse)
	if len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeShareGroupOffsets: %+v", resp)
	}
	return resp.Groups[0].Topics[0].Partitions[0]
}

// The share offsets' admin calls and the group's configs: a group that
// never had members gets its start set (AlterShareGroupOffsets makes it an
// empty share group), and fetches start there; a group with members
// refuses (NON_EMPTY_GROUP); DeleteShareGroupOffsets removes what the
// group kept of a topic (UNKNOWN_TOPIC_OR_PARTITION for a topic it has
// nothing of), and deleting a topic removes every group's share-partitions
// of it. DescribeConfigs shows a group's configs with their source,
// IncrementalAlterConfigs refuses values out of bounds.
func TestShareGroupOffsetsAdmin(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	id := g.topic(t, "sfa", 1, nil).ID
	g.topic(t, "sfa-other", 1, nil)
	g.write(t, "sfa", 0, 0, "a", "b", "c", "d", "e")
	c := dial(t, g.addr)

	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = "sfa-g"
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic, at.Partitions = "sfa", []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 3}, {Partition: 5, StartOffset: 0}}
	alter.Topics = append(alter.Topics, at)
	ar := c.do(alter, 0).(*kmsg.AlterShareGroupOffsetsResponse)
	code(t, "AlterShareGroupOffsets", ar.ErrorCode, nil)
	code(t, "its partition", ar.Topics[0].Partitions[0].ErrorCode, nil)
	code(t, "a partition the topic has not", ar.Topics[0].Partitions[1].ErrorCode, kerr.UnknownTopicOrPartition)
	if o := describeShareOffsets(t, g.addr, "sfa-g", "sfa"); o.StartOffset != 3 || o.Lag != 2 {
		t.Fatalf("after the start was set: start %d, lag %d; want 3, 2", o.StartOffset, o.Lag)
	}
	if got := acquired(shareFetchOK(t, c, shareFetchReq("sfa-g", "m", 0, id, 0, 10))); !slices.Equal(got, [][3]int64{{3, 4, 1}}) {
		t.Fatalf("fetched from the start set: %v", got)
	}
	sg(t, c, sgHeartbeat("sfa-g", "m", 0, "sfa"), nil)
	code(t, "altering a group with members", c.do(alter, 0).(*kmsg.AlterShareGroupOffsetsResponse).ErrorCode, kerr.NonEmptyGroup)
	sg(t, c, sgHeartbeat("sfa-g", "m", -1), nil)

	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = "sfa-g"
	del.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "sfa"}, {Topic: "sfa-other"}}
	dr := c.do(del, 0).(*kmsg.DeleteShareGroupOffsetsResponse)
	code(t, "DeleteShareGroupOffsets", dr.ErrorCode, nil)
	code(t, "a topic with share-partitions", dr.Topics[0].ErrorCode, nil)
	code(t, "a topic without", dr.Topics[1].ErrorCode, kerr.UnknownTopicOrPartition)
	if o := describeShareOffsets(t, g.addr, "sfa-g", "sfa"); o.StartOffset != -1 {
		t.Fatalf("after the deletion: start %d, want -1", o.StartOffset)
	}
	del.GroupID = "sfa-none"
	code(t, "deleting offsets of no group", c.do(del, 0).(*kmsg.DeleteShareGroupOffsetsResponse).ErrorCode, kerr.GroupIDNotFound)

	// Deleting a topic removes every group's share-partitions of it.
	for _, grp := range []string{"sfa-g", "sfa-g2"} {
		alter.GroupID = grp
		at.Topic, at.Partitions = "sfa-other", []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 0}}
		alter.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{at}
		code(t, "AlterShareGroupOffsets of "+grp, c.do(alter, 0).(*kmsg.AlterShareGroupOffsetsResponse).Topics[0].Partitions[0].ErrorCode, nil)
	}
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.TopicNames = []string{"sfa-other"}
	code(t, "DeleteTopics", c.do(dt, 4).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, nil)
	for _, grp := range []string{"sfa-g", "sfa-g2"} {
		if topics, err := g.shares.GroupTopics(t.Context(), grp); err != nil || len(topics) != 0 {
			t.Fatalf("%s's share-partitions after the topic's deletion: %v (%v)", grp, topics, err)
		}
	}

	// Group configs.
	setGroupConfigs(t, g.addr, "sfa-g", "share.record.lock.duration.ms", "15000")
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sfa-g"
	dreq.Resources = append(dreq.Resources, rr)
	got := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, cfg := range c.do(dreq, 4).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		got[cfg.Name] = cfg
	}
	if lock := got["share.record.lock.duration.ms"]; *lock.Value != "15000" || lock.Source != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("the lock duration set: %+v", lock)
	}
	if reset := got["share.auto.offset.reset"]; *reset.Value != "latest" || reset.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("the default offset reset: %+v", reset)
	}
	for _, kv := range [][2]string{{"share.record.lock.duration.ms", "10"}, {"share.auto.offset.reset", "soon"}, {"share.delivery.count.limit", "11"}, {"no.such.config", "1"}} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sfa-g"
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = kv[0], kmsg.StringPtr(kv[1])
		res.Configs = append(res.Configs, cfg)
		req.Resources = append(req.Resources, res)
		code(t, kv[0]+"="+kv[1], c.do(req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode, kerr.InvalidConfig)
	}
	setGroupConfigs(t, g.addr, "sfa-g", "share.auto.offset.reset", "by_duration:PT1H30M")
}

// A share-partition whose start the log no longer has (DeleteRecords)
// moves to the log's start: the first records acquired are there, and
// once they are accepted the group is at the log's end. One
// whose start is past the log's end (AlterShareGroupOffsets ahead of it)
// acquires nothing, without an error, until records reach it.
func TestShareFetchOutsideTheLog(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	id := g.topic(t, "sfo", 1, nil).ID
	g.write(t, "sfo", 0, 0, "a", "b", "c", "d", "e", "f")
	c := dial(t, g.addr)
	setStart := func(group string, offset int64) {
		alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		alter.GroupID = group
		at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		at.Topic, at.Partitions = "sfo", []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: offset}}
		alter.Topics = append(alter.Topics, at)
		code(t, "AlterShareGroupOffsets", c.do(alter, 0).(*kmsg.AlterShareGroupOffsetsResponse).Topics[0].Partitions[0].ErrorCode, nil)
	}
	setStart("sfo-behind", 0)
	setStart("sfo-ahead", 8)
	del := kmsg.NewPtrDeleteRecordsRequest()
	dt := kmsg.NewDeleteRecordsRequestTopic()
	dt.Topic, dt.Partitions = "sfo", []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 4}}
	del.Topics, del.TimeoutMillis = append(del.Topics, dt), 5000
	code(t, "DeleteRecords", c.do(del, 2).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode, nil)

	resp := shareFetchOK(t, c, shareFetchReq("sfo-behind", "m", 0, id, 0, 10))
	if got := acquired(resp); !slices.Equal(got, [][3]int64{{4, 5, 1}}) {
		t.Fatalf("acquired after the log's start moved past the group's: %v, want 4-5", got)
	}
	if got := recordValues(t, resp); !slices.Equal(got, []string{"4:e", "5:f"}) {
		t.Fatalf("records %v, want 4:e 5:f", got)
	}
	shareFetchOK(t, c, shareFetchReq("sfo-behind", "m", 1, id, 0, 10, [3]int64{4, 5, 1}))
	if o := describeShareOffsets(t, g.addr, "sfo-behind", "sfo"); o.StartOffset != 6 || o.Lag != 0 {
		t.Fatalf("after 4-5 were accepted: start %d, lag %d; want 6, 0", o.StartOffset, o.Lag)
	}

	if got := acquired(shareFetchOK(t, c, shareFetchReq("sfo-ahead", "m", 0, id, 0, 10))); len(got) != 0 {
		t.Fatalf("acquired with the start past the log's end: %v", got)
	}
	g.write(t, "sfo", 0, 0, "g", "h", "i")
	resp = shareFetchOK(t, c, shareFetchReq("sfo-ahead", "m", 1, id, 0, 10))
	if got := acquired(resp); !slices.Equal(got, [][3]int64{{8, 8, 1}}) {
		t.Fatalf("acquired once records reached the start: %v, want 8", got)
	}
	if got := recordValues(t, resp); !slices.Equal(got, []string{"8:i"}) {
		t.Fatalf("records %v, want 8:i", got)
	}
}

// recordValues are the values of a ShareFetch answer's records, with
// their offsets ("offset:value").
func recordValues(t *testing.T, resp *kmsg.ShareFetchResponse) []string {
	t.Helper()
	var out []string
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			batches, err := record.ParseBatches(p.Records, 1<<30)
			if err != nil {
				t.Fatalf("the records returned: %v", err)
			}
			for _, b := range batches {
				for i, r := range b.Records {
					out = append(out, fmt.Sprintf("%d:%s", b.Header.FirstOffset+int64(i), r.Value))
				}
			}
		}
	}
	return out
}

// A share session's partitions, as Kafka's share session cache keeps them:
// the full fetch (epoch 0) answers every partition it names; an incremental
// one answers a partition without records only the first time it is in the
// session, partitions named later join it, and forgotten ones leave it
// (their records are no longer fetched).
func TestShareSessionPartitions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	id := g.topic(t, "sfs", 3, nil).ID
	c := dial(t, g.addr)
	sg(t, c, sgHeartbeat("sfs-g", "m", 0, "sfs"), nil)
	fetch := func(epoch int32, named []int32, forgotten []int32) []int32 {
		t.Helper()
		req := shareFetchReq("sfs-g", "m", epoch, id, 0, 10)
		req.MaxWaitMillis = 50
		req.Topics[0].Partitions = nil
		for _, p := range named {
			rp := kmsg.NewShareFetchRequestTopicPartition()
			rp.Partition = p
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
		}
		if len(named) == 0 {
			req.Topics = nil
		}
		if len(forgotten) > 0 {
			req.ForgottenTopicsData = []kmsg.ShareFetchRequestForgottenTopicsData{{TopicID: id, Partitions: forgotten}}
		}
		var answered []int32
		for _, tp := range shareFetchOK(t, c, req).Topics {
			for _, p := range tp.Partitions {
				answered = append(answered, p.Partition)
			}
		}
		slices.Sort(answered)
		return answered
	}
	if got := fetch(0, []int32{0, 1}, nil); !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("the full fetch answered %v, want 0 1", got)
	}
	if got := fetch(1, nil, nil); len(got) != 0 {
		t.Fatalf("an incremental fetch without records answered %v", got)
	}
	if got := fetch(2, []int32{2}, nil); !slices.Equal(got, []int32{2}) {
		t.Fatalf("with partition 2 added: %v, want 2", got)
	}
	if got := fetch(3, nil, []int32{1}); len(got) != 0 {
		t.Fatalf("with partition 1 forgotten: %v", got)
	}
	g.write(t, "sfs", 1, 0, "one")
	g.write(t, "sfs", 2, 0, "two")
	req := shareFetchReq("sfs-g", "m", 4, id, 0, 10)
	req.Topics = nil
	resp := shareFetchOK(t, c, req)
	if got := acquired(resp); !slices.Equal(got, [][3]int64{{0, 0, 1}}) || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].Partition != 2 {
		t.Fatalf("records of partitions 1 (forgotten) and 2: acquired %v in %+v, want offset 0 of partition 2", got, resp.Topics)
	}
}

// With every share session slot taken, a new session's fetch is answered
// SHARE_SESSION_LIMIT_REACHED once its wait is over, as Kafka answers it
// (the wait is the reply's, on the connection's writer; it once slept on
// the reader).
func TestShareSessionLimitWaits(t *testing.T) {
	g := startGateway(t, gatewayOptions{shareSessions: 1})
	id := g.topic(t, "ssl", 1, nil).ID
	c1 := dial(t, g.addr)
	sg(t, c1, sgHeartbeat("ssl-g", "m1", 0, "ssl"), nil)
	first := shareFetchReq("ssl-g", "m1", 0, id, 0, 10)
	first.MaxWaitMillis = 10
	shareFetchOK(t, c1, first)
	c2 := dial(t, g.addr)
	sg(t, c2, sgHeartbeat("ssl-g", "m2", 0, "ssl"), nil)
	req := shareFetchReq("ssl-g", "m2", 0, id, 0, 10)
	req.MaxWaitMillis = 300
	start := time.Now()
	resp := c2.do(req, 2).(*kmsg.ShareFetchResponse)
	code(t, "a session over the limit", resp.ErrorCode, kerr.ShareSessionLimitReached)
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("answered after %v, before the fetch's wait of 300 ms", waited)
	}
	// The next request on that connection is answered as usual.
	if _, err := c2.send(kmsg.NewPtrApiVersionsRequest(), 3); err != nil {
		t.Fatal(err)
	}
}
