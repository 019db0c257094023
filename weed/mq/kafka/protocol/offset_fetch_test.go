package protocol_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

type fetchedOffset struct {
	offset int64
	epoch  int32
	meta   string
	code   int16
}

// fetchedOffsets flattens an OffsetFetch answer of any version:
// "topic/partition" (topics by id from v10 as "id/partition").
func fetchedOffsets(resp *kmsg.OffsetFetchResponse) map[string]fetchedOffset {
	out := map[string]fetchedOffset{}
	add := func(topic string, p int32, o int64, e int32, m *string, c int16) {
		f := fetchedOffset{o, e, "<null>", c}
		if m != nil {
			f.meta = *m
		}
		out[topic+"/"+strconv.Itoa(int(p))] = f
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			add(t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode)
		}
	}
	for _, g := range resp.Groups {
		for _, t := range g.Topics {
			name := t.Topic
			if t.TopicID != [16]byte{} {
				name = string(t.TopicID[:2])
			}
			for _, p := range t.Partitions {
				add(g.Group+":"+name, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode)
			}
		}
	}
	return out
}

// OffsetFetch v0-10: the partitions named, a partition without a commit at
// -1 (empty metadata); from v2 every committed topic when none are named,
// and a top-level error; leader epochs from v5; several groups from v8
// (an unknown one has no commits); a member id and epoch (v9+) ignored, as
// by Kafka for classic groups; topics by id from v10.
func TestOffsetFetchVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrOffsetFetchRequest(), 0, 10)
	a := g.topic(t, "of-a", 3, nil)
	b := g.topic(t, "of-b", 1, nil)
	commit := offsetCommit("of", -1, "", "of-a", map[int32]int64{0: 5, 2: 9})
	commit.Topics[0].Partitions[0].Metadata = kmsg.StringPtr("m0")
	commit.Topics[0].Partitions[0].LeaderEpoch = 4
	commit.Topics = append(commit.Topics, offsetCommit("", -1, "", "of-b", map[int32]int64{0: 1}).Topics[0])
	if codes := commitCodes(roundTrip(t, g.addr, commit, 9)); !slices.Equal(codes, []int16{0, 0, 0}) {
		t.Fatalf("commit: %v", codes)
	}
	for v := int16(0); v <= 7; v++ {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = "of"
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "of-a", Partitions: []int32{2, 1, 0}}}
		resp := roundTrip(t, g.addr, req, v).(*kmsg.OffsetFetchResponse)
		got := fetchedOffsets(resp)
		epoch := int32(-1)
		if v >= 5 {
			epoch = 4
		}
		want := map[string]fetchedOffset{"of-a/2": {9, -1, "", 0}, "of-a/1": {-1, -1, "", 0}, "of-a/0": {5, epoch, "m0", 0}}
		if len(got) != 3 || got["of-a/0"] != want["of-a/0"] || got["of-a/1"] != want["of-a/1"] || got["of-a/2"].offset != 9 {
			t.Errorf("v%d: %+v", v, got)
		}
		if ps := resp.Topics[0].Partitions; ps[0].Partition != 2 || ps[2].Partition != 0 {
			t.Errorf("v%d: partitions answered out of request order: %+v", v, ps)
		}
		if v >= 2 {
			req.Topics = nil
			all := fetchedOffsets(roundTrip(t, g.addr, req, v).(*kmsg.OffsetFetchResponse))
			if len(all) != 3 || all["of-a/0"].offset != 5 || all["of-a/2"].offset != 9 || all["of-b/0"].offset != 1 {
				t.Errorf("v%d, every topic: %+v", v, all)
			}
		}
	}
	for _, v := range []int16{8, 9, 10} {
		req := kmsg.NewPtrOffsetFetchRequest()
		topic := kmsg.NewOffsetFetchRequestGroupTopic()
		topic.Topic, topic.Partitions = "of-a", []int32{0, 1}
		if v >= 10 {
			topic.Topic, topic.TopicID = "", a.ID
		}
		req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "of", Topics: []kmsg.OffsetFetchRequestGroupTopic{topic}}, {Group: "of-nobody", Topics: []kmsg.OffsetFetchRequestGroupTopic{topic}}, {Group: "of"}}
		if v >= 9 {
			// The new consumer protocol's member id and epoch (KIP-848):
			// classic groups ignore them.
			req.Groups[0].MemberID, req.Groups[0].MemberEpoch = kmsg.StringPtr("someone"), 7
		}
		resp := roundTrip(t, g.addr, req, v).(*kmsg.OffsetFetchResponse)
		if len(resp.Groups) != 3 || resp.Groups[0].Group != "of" || resp.Groups[1].Group != "of-nobody" {
			t.Fatalf("v%d: groups %+v", v, resp.Groups)
		}
		name := "of-a"
		if v >= 10 {
			name = string(a.ID[:2])
			if resp.Groups[0].Topics[0].TopicID != a.ID {
				t.Errorf("v%d: topic id %x", v, resp.Groups[0].Topics[0].TopicID)
			}
		}
		got := fetchedOffsets(resp)
		if got["of:"+name+"/0"] != (fetchedOffset{5, 4, "m0", 0}) || got["of:"+name+"/1"].offset != -1 || got["of-nobody:"+name+"/0"] != (fetchedOffset{-1, -1, "", 0}) {
			t.Errorf("v%d: %+v", v, got)
		}
		if all := resp.Groups[2].Topics; len(all) != 2 || (v < 10 && (all[0].Topic != "of-a" || all[1].Topic != "of-b")) || (v >= 10 && (all[0].TopicID != a.ID || all[1].TopicID != b.ID)) {
			t.Errorf("v%d: every topic of the group: %+v", v, all)
		}
	}
	// An unknown topic id is a topic without commits.
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "of", Topics: []kmsg.OffsetFetchRequestGroupTopic{{TopicID: [16]byte{1}, Partitions: []int32{0}}}}}
	resp := roundTrip(t, g.addr, req, 10).(*kmsg.OffsetFetchResponse)
	if p := resp.Groups[0].Topics[0].Partitions[0]; p.Offset != -1 || p.ErrorCode != 0 || resp.Groups[0].Topics[0].TopicID != [16]byte{1} {
		t.Errorf("an unknown topic id: %+v", resp.Groups[0].Topics[0])
	}
}

// A deleted topic's commits are gone from its groups, as Kafka removes
// them: not listed, -1 when named.
func TestOffsetFetchDeletedTopic(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "of-gone", 1, nil)
	g.topic(t, "of-kept", 1, nil)
	roundTrip(t, g.addr, offsetCommit("ofd", -1, "", "of-gone", map[int32]int64{0: 3}), 8)
	roundTrip(t, g.addr, offsetCommit("ofd", -1, "", "of-kept", map[int32]int64{0: 4}), 8)
	if err := g.backend.DeleteTopic(context.Background(), "of-gone"); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = "ofd"
	all := fetchedOffsets(roundTrip(t, g.addr, req, 6).(*kmsg.OffsetFetchResponse))
	if len(all) != 1 || all["of-kept/0"].offset != 4 {
		t.Errorf("every topic after one was deleted: %+v", all)
	}
	if got := committed(t, g.addr, "ofd", "of-gone", 0); !slices.Equal(got, []int64{-1}) {
		t.Errorf("the deleted topic named: %v", got)
	}
}

// RequireStable (v7+): a partition whose offset an open transaction
// commits gets UNSTABLE_OFFSET_COMMIT, which clients retry; without it the
// last committed offset; once the transaction commits, its offset.
func TestOffsetFetchRequireStable(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "ofs", 2, nil)
	roundTrip(t, g.addr, offsetCommit("ofs-g", -1, "", "ofs", map[int32]int64{0: 1, 1: 1}), 8)
	p := initTxn(t, g.addr, "ofs-txn")
	addOffsets := kmsg.NewPtrAddOffsetsToTxnRequest()
	addOffsets.TransactionalID, addOffsets.ProducerID, addOffsets.ProducerEpoch, addOffsets.Group = p.id, p.pid, p.epoch, "ofs-g"
	code(t, "AddOffsetsToTxn", roundTrip(t, g.addr, addOffsets, 3).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, nil)
	txnCommit := txnOffsetCommit(p, "ofs-g", "ofs", map[int32]int64{0: 50})
	if codes := txnCommitCodes(roundTrip(t, g.addr, txnCommit, 3)); !slices.Equal(codes, []int16{0}) {
		t.Fatalf("TxnOffsetCommit: %v", codes)
	}
	fetch := func(stable bool, v int16) map[string]fetchedOffset {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.RequireStable = stable
		if v >= 8 {
			req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "ofs-g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "ofs", Partitions: []int32{0, 1}}}}}
		} else {
			req.Group = "ofs-g"
			req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "ofs", Partitions: []int32{0, 1}}}
		}
		return fetchedOffsets(roundTrip(t, g.addr, req, v).(*kmsg.OffsetFetchResponse))
	}
	got := fetch(true, 7)
	code(t, "the transaction's partition", got["ofs/0"].code, kerr.UnstableOffsetCommit)
	code(t, "the other partition", got["ofs/1"].code, nil)
	if got := fetch(true, 8); got["ofs-g:ofs/0"].code != kerr.UnstableOffsetCommit.Code {
		t.Errorf("v8: %+v", got)
	}
	if got := fetch(false, 7); got["ofs/0"].offset != 1 || got["ofs/0"].code != 0 {
		t.Errorf("without RequireStable: %+v", got["ofs/0"])
	}
	code(t, "EndTxn", p.end(t, g.addr, true), nil)
	if got := fetch(true, 7); got["ofs/0"].offset != 50 || got["ofs/0"].code != 0 {
		t.Errorf("after the commit: %+v", got["ofs/0"])
	}
}

// With an authorizer: a group the principal may not describe gets
// GROUP_AUTHORIZATION_FAILED (top-level from v2, on each partition before);
// a topic it may not describe TOPIC_AUTHORIZATION_FAILED when named, and is
// left out of every committed topic.
func TestOffsetFetchAuthorization(t *testing.T) {
	hidden := binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "ofa-hidden")
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "ofa"),
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "ofa-seen"), hidden,
	}})
	g.topic(t, "ofa-seen", 1, nil)
	g.topic(t, "ofa-hidden", 1, nil)
	for _, topic := range []string{"ofa-seen", "ofa-hidden"} {
		roundTrip(t, g.addr, offsetCommit("ofa", -1, "", topic, map[int32]int64{0: 2}), 8)
	}
	g.revoke(t, hidden)
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = "ofa"
	if all := fetchedOffsets(roundTrip(t, g.addr, req, 7).(*kmsg.OffsetFetchResponse)); len(all) != 1 || all["ofa-seen/0"].offset != 2 {
		t.Errorf("every topic: %+v", all)
	}
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "ofa-hidden", Partitions: []int32{0}}, {Topic: "ofa-seen", Partitions: []int32{0}}}
	named := fetchedOffsets(roundTrip(t, g.addr, req, 7).(*kmsg.OffsetFetchResponse))
	if code(t, "a hidden topic", named["ofa-hidden/0"].code, kerr.TopicAuthorizationFailed); named["ofa-hidden/0"].offset != -1 || named["ofa-seen/0"].offset != 2 {
		t.Errorf("named: %+v", named)
	}
	req.Group = "ofa-other"
	for _, v := range []int16{1, 2, 7} {
		resp := roundTrip(t, g.addr, req, v).(*kmsg.OffsetFetchResponse)
		if v >= 2 {
			code(t, "another group", resp.ErrorCode, kerr.GroupAuthorizationFailed)
		}
		for k, f := range fetchedOffsets(resp) {
			code(t, "another group: "+k, f.code, kerr.GroupAuthorizationFailed)
		}
	}
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "ofa-other"}}
	resp := roundTrip(t, g.addr, req, 8).(*kmsg.OffsetFetchResponse)
	code(t, "another group (v8)", resp.Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
}
