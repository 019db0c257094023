package protocol_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

// TxnOffsetCommit v0-6: the offsets are the group's once the transaction
// commits, and dropped if it aborts; until then the group's commits stay
// as they were. v6 may name topics by id.
func TestTxnOffsetCommitVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrTxnOffsetCommitRequest(), 0, 6)
	info := g.topic(t, "toc", 2, nil)
	for v := int16(0); v <= 6; v++ {
		groupID := "toc-v" + strconv.Itoa(int(v))
		roundTrip(t, g.addr, offsetCommit(groupID, -1, "", "toc", map[int32]int64{0: 1, 1: 1}), 8)
		for _, commit := range []bool{false, true} {
			p := initTxn(t, g.addr, "toc-"+groupID)
			code(t, "AddOffsetsToTxn", p.addOffsets(t, g.addr, groupID), nil)
			req := txnOffsetCommit(p, groupID, "toc", map[int32]int64{0: 10 + int64(v)})
			req.Topics[0].Partitions[0].Metadata = kmsg.StringPtr("txn")
			if v >= 6 {
				req.Topics[0].Topic, req.Topics[0].TopicID = "", info.ID
			}
			resp := roundTrip(t, g.addr, req, v).(*kmsg.TxnOffsetCommitResponse)
			if codes := txnCommitCodes(resp); !slices.Equal(codes, []int16{0}) {
				t.Fatalf("v%d: %v", v, codes)
			}
			if v >= 6 && resp.Topics[0].TopicID != info.ID {
				t.Errorf("v%d: answered for topic id %x", v, resp.Topics[0].TopicID)
			}
			if got := committed(t, g.addr, groupID, "toc", 0, 1); !slices.Equal(got, []int64{1, 1}) {
				t.Errorf("v%d: before the transaction ends: %v", v, got)
			}
			code(t, "EndTxn", p.end(t, g.addr, commit), nil)
			want := []int64{1, 1}
			if commit {
				want = []int64{10 + int64(v), 1}
			}
			if got := committed(t, g.addr, groupID, "toc", 0, 1); !slices.Equal(got, want) {
				t.Errorf("v%d commit=%v: %v, want %v", v, commit, got, want)
			}
		}
	}
}

// Errors per partition: an unknown topic (or partition)
// UNKNOWN_TOPIC_OR_PARTITION, an unknown topic id (v6)
// UNKNOWN_TOPIC_ID, metadata over 4096 bytes OFFSET_METADATA_TOO_LARGE;
// an empty group id INVALID_GROUP_ID; from v3 the committing member is
// checked like an OffsetCommit's (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
// FENCED_INSTANCE_ID).
func TestTxnOffsetCommitErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "toce", 1, nil)
	p := initTxn(t, g.addr, "toce")
	p.addOffsets(t, g.addr, "toce-g")
	req := txnOffsetCommit(p, "toce-g", "toce", map[int32]int64{0: 1, 3: 1})
	unknown := txnOffsetCommit(p, "", "toce-none", map[int32]int64{0: 1}).Topics[0]
	big := txnOffsetCommit(p, "", "toce", map[int32]int64{0: 2}).Topics[0]
	big.Partitions[0].Metadata = kmsg.StringPtr(strings.Repeat("x", 4097))
	req.Topics = append(req.Topics, unknown, big)
	want := []int16{0, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.OffsetMetadataTooLarge.Code}
	if codes := txnCommitCodes(roundTrip(t, g.addr, req, 3)); !slices.Equal(codes, want) {
		t.Errorf("codes %v, want %v", codes, want)
	}
	byID := txnOffsetCommit(p, "toce-g", "", map[int32]int64{0: 1})
	byID.Topics[0].TopicID = [16]byte{3}
	code(t, "an unknown topic id", txnCommitCodes(roundTrip(t, g.addr, byID, 6))[0], kerr.UnknownTopicID)
	code(t, "no group id", txnCommitCodes(roundTrip(t, g.addr, txnOffsetCommit(p, "", "toce", map[int32]int64{0: 1}), 3))[0], kerr.InvalidGroupID)

	_, id, gen := stableMember(t, g.addr, "toce-members", "toce")
	p.addOffsets(t, g.addr, "toce-members")
	member := func(generation int32, memberID string) *kmsg.TxnOffsetCommitRequest {
		req := txnOffsetCommit(p, "toce-members", "toce", map[int32]int64{0: 5})
		req.Generation, req.MemberID = generation, memberID
		return req
	}
	code(t, "the member", txnCommitCodes(roundTrip(t, g.addr, member(gen, id), 3))[0], nil)
	code(t, "a stranger", txnCommitCodes(roundTrip(t, g.addr, member(gen, "stranger"), 3))[0], kerr.UnknownMemberID)
	code(t, "another generation", txnCommitCodes(roundTrip(t, g.addr, member(gen+1, id), 3))[0], kerr.IllegalGeneration)
	code(t, "v2 names no member", txnCommitCodes(roundTrip(t, g.addr, member(gen+1, "stranger"), 2))[0], nil)

	// A static member's older incarnation: FENCED_INSTANCE_ID.
	instance := "toce-inst"
	old := dial(t, g.addr).do(joinRequest("toce-static", "", &instance, "toce"), 5).(*kmsg.JoinGroupResponse)
	roundTrip(t, g.addr, syncRequest("toce-static", old.MemberID, old.Generation, nil), 3)
	dial(t, g.addr).do(joinRequest("toce-static", "", &instance, "toce"), 5)
	p.addOffsets(t, g.addr, "toce-static")
	fenced := txnOffsetCommit(p, "toce-static", "toce", map[int32]int64{0: 1})
	fenced.Generation, fenced.MemberID, fenced.InstanceID = old.Generation, old.MemberID, &instance
	code(t, "an older incarnation", txnCommitCodes(roundTrip(t, g.addr, fenced, 3))[0], kerr.FencedInstanceID)
}

// With an authorizer: Write on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), Read on the group
// (GROUP_AUTHORIZATION_FAILED), Read on each topic
// (TOPIC_AUTHORIZATION_FAILED).
func TestTxnOffsetCommitAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, "toca"),
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "toca-g"),
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "toca-read"),
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "toca-described"),
	}})
	g.topic(t, "toca-read", 1, nil)
	g.topic(t, "toca-described", 1, nil)
	p := initTxn(t, g.addr, "toca")
	p.addOffsets(t, g.addr, "toca-g")
	req := txnOffsetCommit(p, "toca-g", "toca-read", map[int32]int64{0: 1})
	req.Topics = append(req.Topics, txnOffsetCommit(p, "", "toca-described", map[int32]int64{0: 1}).Topics[0])
	if codes := txnCommitCodes(roundTrip(t, g.addr, req, 3)); !slices.Equal(codes, []int16{0, kerr.TopicAuthorizationFailed.Code}) {
		t.Errorf("codes %v", codes)
	}
	req.Group = "toca-other"
	if codes := txnCommitCodes(roundTrip(t, g.addr, req, 3)); !slices.Equal(codes, []int16{kerr.GroupAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code}) {
		t.Errorf("without Read on the group: %v", codes)
	}
	req.Group, req.TransactionalID = "toca-g", "toca-theirs"
	if codes := txnCommitCodes(roundTrip(t, g.addr, req, 3)); !slices.Equal(codes, []int16{kerr.TransactionalIDAuthorizationFailed.Code, kerr.TransactionalIDAuthorizationFailed.Code}) {
		t.Errorf("without Write on the id: %v", codes)
	}
}
