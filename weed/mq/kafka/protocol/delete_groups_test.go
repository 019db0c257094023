package protocol_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func deleteGroups(groups ...string) *kmsg.DeleteGroupsRequest {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = groups
	return req
}

// DeleteGroups v0-3: an empty group goes with its committed offsets; a
// group with members gets NON_EMPTY_GROUP, an unknown one (or one deleted)
// GROUP_ID_NOT_FOUND; answers in request order.
func TestDeleteGroupsVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrDeleteGroupsRequest(), 0, 3)
	g.topic(t, "dlg-t", 2, nil)
	stableMember(t, g.addr, "dlg-busy", "dlg-t")
	for v := int16(0); v <= 3; v++ {
		roundTrip(t, g.addr, offsetCommit("dlg-empty", -1, "", "dlg-t", map[int32]int64{0: 4, 1: 5}), 8)
		if got := committed(t, g.addr, "dlg-empty", "dlg-t", 0, 1); !slices.Equal(got, []int64{4, 5}) {
			t.Fatalf("v%d: committed %v", v, got)
		}
		resp := roundTrip(t, g.addr, deleteGroups("dlg-none", "dlg-empty", "dlg-busy"), v).(*kmsg.DeleteGroupsResponse)
		if len(resp.Groups) != 3 || resp.Groups[0].Group != "dlg-none" || resp.Groups[1].Group != "dlg-empty" || resp.Groups[2].Group != "dlg-busy" {
			t.Fatalf("v%d: answers %+v", v, resp.Groups)
		}
		code(t, "an unknown group", resp.Groups[0].ErrorCode, kerr.GroupIDNotFound)
		code(t, "an empty group", resp.Groups[1].ErrorCode, nil)
		code(t, "a group with a member", resp.Groups[2].ErrorCode, kerr.NonEmptyGroup)
		if got := committed(t, g.addr, "dlg-empty", "dlg-t", 0, 1); !slices.Equal(got, []int64{-1, -1}) {
			t.Errorf("v%d: offsets after the deletion %v", v, got)
		}
		if d := describeGroup(t, g.addr, "dlg-empty"); d.State != "Dead" {
			t.Errorf("v%d: deleted group %s", v, d.State)
		}
		again := roundTrip(t, g.addr, deleteGroups("dlg-empty"), v).(*kmsg.DeleteGroupsResponse)
		code(t, "deleted again", again.Groups[0].ErrorCode, kerr.GroupIDNotFound)
	}
	if d := describeGroup(t, g.addr, "dlg-busy"); d.State != "Stable" {
		t.Errorf("the refused group: %s", d.State)
	}
}

// With an authorizer DeleteGroups needs Delete on the group
// (GROUP_AUTHORIZATION_FAILED), and the group stays.
func TestDeleteGroupsAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "dlg-a"),
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "dlg-b"),
		binding(anonymous, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeGroup, "dlg-b"),
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "dlg-t"),
	}})
	g.topic(t, "dlg-t", 1, nil)
	for _, id := range []string{"dlg-a", "dlg-b"} {
		roundTrip(t, g.addr, offsetCommit(id, -1, "", "dlg-t", map[int32]int64{0: 1}), 8)
	}
	resp := roundTrip(t, g.addr, deleteGroups("dlg-a", "dlg-b"), 2).(*kmsg.DeleteGroupsResponse)
	code(t, "without Delete", resp.Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
	code(t, "with Delete", resp.Groups[1].ErrorCode, nil)
	if got := committed(t, g.addr, "dlg-a", "dlg-t", 0); !slices.Equal(got, []int64{1}) {
		t.Errorf("the refused group's offsets: %v", got)
	}
}
