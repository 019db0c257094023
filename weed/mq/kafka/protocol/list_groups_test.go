package protocol_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func listGroups(t *testing.T, addr string, version int16, states, types []string) map[string]kmsg.ListGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrListGroupsRequest()
	req.StatesFilter, req.TypesFilter = states, types
	resp := roundTrip(t, addr, req, version).(*kmsg.ListGroupsResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("ListGroups v%d: %s", version, errName(resp.ErrorCode))
	}
	out := map[string]kmsg.ListGroupsResponseGroup{}
	for _, g := range resp.Groups {
		out[g.Group] = g
	}
	return out
}

func groupNames(gs map[string]kmsg.ListGroupsResponseGroup) []string {
	var out []string
	for name := range gs {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// ListGroups v0-5: every group with its protocol type; its state from v4
// and its type ("classic") from v5; filters on states (v4+) and types
// (v5+) match regardless of case. A deleted group is not listed.
func TestListGroupsVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrListGroupsRequest(), 0, 5)
	g.topic(t, "lg-t", 1, nil)
	stableMember(t, g.addr, "lg-stable", "lg-t")
	roundTrip(t, g.addr, offsetCommit("lg-empty", -1, "", "lg-t", map[int32]int64{0: 3}), 8)
	roundTrip(t, g.addr, offsetCommit("lg-deleted", -1, "", "lg-t", map[int32]int64{0: 3}), 8)
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"lg-deleted"}
	roundTrip(t, g.addr, del, 2)

	for v := int16(0); v <= 5; v++ {
		gs := listGroups(t, g.addr, v, nil, nil)
		if got := groupNames(gs); !slices.Equal(got, []string{"lg-empty", "lg-stable"}) {
			t.Fatalf("v%d: groups %v", v, got)
		}
		if gs["lg-stable"].ProtocolType != "consumer" || gs["lg-empty"].ProtocolType != "" {
			t.Errorf("v%d: protocol types %q and %q", v, gs["lg-stable"].ProtocolType, gs["lg-empty"].ProtocolType)
		}
		if v >= 4 && (gs["lg-stable"].GroupState != "Stable" || gs["lg-empty"].GroupState != "Empty") {
			t.Errorf("v%d: states %q and %q", v, gs["lg-stable"].GroupState, gs["lg-empty"].GroupState)
		}
		if v >= 5 && (gs["lg-stable"].GroupType != "classic" || gs["lg-empty"].GroupType != "classic") {
			t.Errorf("v%d: types %q and %q", v, gs["lg-stable"].GroupType, gs["lg-empty"].GroupType)
		}
	}
	if got := groupNames(listGroups(t, g.addr, 4, []string{"stable"}, nil)); !slices.Equal(got, []string{"lg-stable"}) {
		t.Errorf("state filter stable: %v", got)
	}
	if got := groupNames(listGroups(t, g.addr, 4, []string{"Empty", "Dead"}, nil)); !slices.Equal(got, []string{"lg-empty"}) {
		t.Errorf("state filter Empty, Dead: %v", got)
	}
	if got := groupNames(listGroups(t, g.addr, 5, nil, []string{"Classic"})); len(got) != 2 {
		t.Errorf("type filter Classic: %v", got)
	}
	if got := groupNames(listGroups(t, g.addr, 5, nil, []string{"consumer"})); len(got) != 0 {
		t.Errorf("type filter consumer (KIP-848 groups are not served): %v", got)
	}
}

// With an authorizer: every group with Describe on the cluster, else only
// the groups the principal may describe.
func TestListGroupsAuthorization(t *testing.T) {
	theirs := binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "lg-theirs")
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "lg-mine"), theirs,
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "lg-t"),
	}})
	g.topic(t, "lg-t", 1, nil)
	for _, id := range []string{"lg-mine", "lg-theirs"} {
		resp := roundTrip(t, g.addr, offsetCommit(id, -1, "", "lg-t", map[int32]int64{0: 1}), 8).(*kmsg.OffsetCommitResponse)
		code(t, "commit for "+id, resp.Topics[0].Partitions[0].ErrorCode, nil)
	}
	g.revoke(t, theirs)
	if got := groupNames(listGroups(t, g.addr, 5, nil, nil)); !slices.Equal(got, []string{"lg-mine"}) {
		t.Errorf("without Describe on the cluster: %v", got)
	}
	g.allow(t, binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, acl.ClusterName))
	if got := groupNames(listGroups(t, g.addr, 5, nil, nil)); !slices.Equal(got, []string{"lg-mine", "lg-theirs"}) {
		t.Errorf("with Describe on the cluster: %v", got)
	}
}
