package protocol_test

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func describeGroups(groups ...string) *kmsg.DescribeGroupsRequest {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = groups
	return req
}

// DescribeGroups v0-6: a stable group's state, protocol type and protocol,
// its members with client id and host, metadata and assignment, groups in
// request order; a group that does not exist is Dead, with
// GROUP_ID_NOT_FOUND from v6; group.instance.id from v4.
func TestDescribeGroupsVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrDescribeGroupsRequest(), 0, 6)
	instance := "dg-inst"
	c := dial(t, g.addr)
	j := c.do(joinRequest("dg", "", &instance, "t1", "t2"), 5).(*kmsg.JoinGroupResponse)
	c.do(syncRequest("dg", j.MemberID, j.Generation, map[string][]byte{j.MemberID: []byte("assigned")}), 3)
	for v := int16(0); v <= 6; v++ {
		resp := roundTrip(t, g.addr, describeGroups("dg", "dg-none"), v).(*kmsg.DescribeGroupsResponse)
		if len(resp.Groups) != 2 || resp.Groups[0].Group != "dg" || resp.Groups[1].Group != "dg-none" {
			t.Fatalf("v%d: groups %+v", v, resp.Groups)
		}
		d := resp.Groups[0]
		if d.ErrorCode != 0 || d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "range" || len(d.Members) != 1 {
			t.Fatalf("v%d: %s %s %q %q, %d members", v, errName(d.ErrorCode), d.State, d.ProtocolType, d.Protocol, len(d.Members))
		}
		m := d.Members[0]
		if m.MemberID != j.MemberID || m.ClientID != "raw-client" || m.ClientHost != "/127.0.0.1" ||
			!bytes.Equal(m.ProtocolMetadata, subscription("t1", "t2")) || string(m.MemberAssignment) != "assigned" {
			t.Errorf("v%d: member %+v", v, m)
		}
		if v >= 4 && (m.InstanceID == nil || *m.InstanceID != instance) {
			t.Errorf("v%d: instance id %v", v, m.InstanceID)
		}
		none := resp.Groups[1]
		want := (*kerr.Error)(nil)
		if v >= 6 {
			want = kerr.GroupIDNotFound
		}
		if code(t, "an unknown group", none.ErrorCode, want); none.State != "Dead" || len(none.Members) != 0 {
			t.Errorf("v%d: unknown group %s with %d members", v, none.State, len(none.Members))
		}
		if v >= 3 && d.AuthorizedOperations != -2147483648 {
			t.Errorf("v%d: authorized operations %d, not asked for", v, d.AuthorizedOperations)
		}
	}
	// As a client sees it.
	described, err := kadm.NewClient(client(t, g.addr)).DescribeGroups(ctxFor(t), "dg")
	if err != nil || described["dg"].State != "Stable" || len(described["dg"].Members) != 1 {
		t.Fatalf("kadm: %+v %v", described, err)
	}
}

// While a group rebalances its state says so and neither its protocol nor
// the members' metadata and assignments are shown; a group that only
// commits offsets is Empty.
func TestDescribeGroupsRebalancing(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "dg-t", 1, nil)
	leader, leaderID, gen := stableMember(t, g.addr, "dg-rb", "t")
	newcomer := dial(t, g.addr)
	nj := newcomer.do(joinRequest("dg-rb", "", nil, "t"), 5).(*kmsg.JoinGroupResponse)
	joined := make(chan error, 1)
	go func() {
		_, err := newcomer.send(joinRequest("dg-rb", nj.MemberID, nil, "t"), 5)
		joined <- err
	}()
	eventually(t, "PreparingRebalance", func() bool { return describeGroup(t, g.addr, "dg-rb").State == "PreparingRebalance" })
	d := describeGroup(t, g.addr, "dg-rb")
	if d.Protocol != "" || len(d.Members) == 0 {
		t.Errorf("preparing: protocol %q, %d members", d.Protocol, len(d.Members))
	}
	for _, m := range d.Members {
		if len(m.ProtocolMetadata) != 0 || len(m.MemberAssignment) != 0 {
			t.Errorf("preparing: member %s shows metadata %x assignment %x", m.MemberID, m.ProtocolMetadata, m.MemberAssignment)
		}
	}
	leader.do(joinRequest("dg-rb", leaderID, nil, "t"), 5)
	if err := <-joined; err != nil {
		t.Fatal(err)
	}
	if d := describeGroup(t, g.addr, "dg-rb"); d.State != "CompletingRebalance" || d.Protocol != "" || len(d.Members) != 2 {
		t.Errorf("completing (generation %d): %s protocol %q, %d members", gen+1, d.State, d.Protocol, len(d.Members))
	}
	commit := offsetCommit("dg-simple", -1, "", "dg-t", map[int32]int64{0: 1})
	code(t, "a simple commit", roundTrip(t, g.addr, commit, 8).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)
	if d := describeGroup(t, g.addr, "dg-simple"); d.ErrorCode != 0 || d.State != "Empty" || len(d.Members) != 0 {
		t.Errorf("a group that only commits: %s %s, %d members", errName(d.ErrorCode), d.State, len(d.Members))
	}
}

// Authorized operations (v3+, asked for): everything a group has without an
// authorizer, the principal's with one; a group it may not describe gets
// GROUP_AUTHORIZATION_FAILED.
func TestDescribeGroupsAuthorization(t *testing.T) {
	all := int32(1<<kmsg.ACLOperationRead | 1<<kmsg.ACLOperationDelete | 1<<kmsg.ACLOperationDescribe)
	open := startGateway(t, gatewayOptions{})
	req := describeGroups("any")
	req.IncludeAuthorizedOperations = true
	if ops := roundTrip(t, open.addr, req, 3).(*kmsg.DescribeGroupsResponse).Groups[0].AuthorizedOperations; ops != all {
		t.Errorf("without an authorizer: operations %b, want %b", ops, all)
	}
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "readable")}})
	req = describeGroups("readable", "hidden")
	req.IncludeAuthorizedOperations = true
	resp := roundTrip(t, g.addr, req, 6).(*kmsg.DescribeGroupsResponse)
	code(t, "readable", resp.Groups[0].ErrorCode, kerr.GroupIDNotFound)
	if ops := resp.Groups[0].AuthorizedOperations; ops != 1<<kmsg.ACLOperationRead|1<<kmsg.ACLOperationDescribe {
		t.Errorf("readable: operations %b, want Read and Describe", ops)
	}
	code(t, "hidden", resp.Groups[1].ErrorCode, kerr.GroupAuthorizationFailed)
	if resp.Groups[1].AuthorizedOperations != 0 {
		t.Errorf("hidden: operations %b", resp.Groups[1].AuthorizedOperations)
	}
}
