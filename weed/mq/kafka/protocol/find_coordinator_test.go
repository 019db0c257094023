package protocol_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
)

// FindCoordinator v0-6: this gateway, at the address the client came to,
// for groups (type 0) and transactional ids (type 1, v1+); one key before
// v4, a batch of keys answered in order from v4. Share-group keys (type 2)
// get INVALID_REQUEST.
func TestFindCoordinatorVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrFindCoordinatorRequest(), 0, 6)
	host, portStr, _ := net.SplitHostPort(g.addr)
	port, _ := strconv.Atoi(portStr)
	for v := int16(0); v <= 3; v++ {
		for _, typ := range []int8{0, 1} {
			if v == 0 && typ == 1 {
				continue // v0 finds groups only
			}
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey, req.CoordinatorType = "fc-key", typ
			resp := roundTrip(t, g.addr, req, v).(*kmsg.FindCoordinatorResponse)
			if resp.ErrorCode != 0 || resp.NodeID != 0 || resp.Host != host || resp.Port != int32(port) {
				t.Errorf("v%d type %d: %s node %d at %s:%d, want node 0 at %s", v, typ, errName(resp.ErrorCode), resp.NodeID, resp.Host, resp.Port, g.addr)
			}
		}
	}
	for _, v := range []int16{4, 6} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKeys = []string{"b", "a", "c"}
		resp := roundTrip(t, g.addr, req, v).(*kmsg.FindCoordinatorResponse)
		if len(resp.Coordinators) != 3 {
			t.Fatalf("v%d: %d coordinators for 3 keys", v, len(resp.Coordinators))
		}
		for i, c := range resp.Coordinators {
			if c.Key != req.CoordinatorKeys[i] || c.ErrorCode != 0 || c.NodeID != 0 || c.Host != host || c.Port != int32(port) {
				t.Errorf("v%d: key %d: %+v", v, i, c)
			}
		}
	}
	share := kmsg.NewPtrFindCoordinatorRequest()
	share.CoordinatorKey, share.CoordinatorType = "s", 2
	resp := roundTrip(t, g.addr, share, 3).(*kmsg.FindCoordinatorResponse)
	if code(t, "share group, v3", resp.ErrorCode, kerr.InvalidRequest); resp.NodeID != -1 {
		t.Errorf("share group: node %d", resp.NodeID)
	}
	share.CoordinatorKeys = []string{"s"}
	resp = roundTrip(t, g.addr, share, 6).(*kmsg.FindCoordinatorResponse)
	code(t, "share group, v6", resp.Coordinators[0].ErrorCode, kerr.InvalidRequest)

	// As a client finds them.
	adm := kadm.NewClient(client(t, g.addr))
	found := adm.FindGroupCoordinators(ctxFor(t), "app")
	if found["app"].Err != nil || found["app"].NodeID != 0 {
		t.Fatalf("kadm: %+v", found)
	}
}

// With an authorizer: Describe on the group or transactional id, or
// GROUP_ / TRANSACTIONAL_ID_AUTHORIZATION_FAILED (node -1), key by key.
func TestFindCoordinatorAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "mine"),
		binding(anonymous, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, "my-txn"),
	}})
	for _, tc := range []struct {
		typ  int8
		keys []string
		want []*kerr.Error
	}{
		{0, []string{"mine", "theirs"}, []*kerr.Error{nil, kerr.GroupAuthorizationFailed}},
		{1, []string{"their-txn", "my-txn"}, []*kerr.Error{kerr.TransactionalIDAuthorizationFailed, nil}},
	} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKeys = tc.typ, tc.keys
		resp := roundTrip(t, g.addr, req, 5).(*kmsg.FindCoordinatorResponse)
		for i, c := range resp.Coordinators {
			code(t, c.Key, c.ErrorCode, tc.want[i])
			if tc.want[i] != nil && c.NodeID != -1 {
				t.Errorf("%s: node %d", c.Key, c.NodeID)
			}
		}
		req.CoordinatorKey = tc.keys[1]
		old := roundTrip(t, g.addr, req, 2).(*kmsg.FindCoordinatorResponse)
		code(t, tc.keys[1]+" (v2)", old.ErrorCode, tc.want[1])
	}
}

// In a cluster of gateways the coordinator is the gateway that owns the
// group or transactional id, at its address; while no gateway is known
// for a key, COORDINATOR_NOT_AVAILABLE (node -1).
func TestFindCoordinatorOwners(t *testing.T) {
	fc := newFakeCluster(0, map[string]fakeOwner{
		membership.GroupKey("fc-other"): {1, 0},
		membership.TxnKey("fc-mine"):    {0, 0},
	})
	g := startGateway(t, gatewayOptions{cluster: fc})
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKeys = []string{"fc-other", "fc-unknown"}
	resp := roundTrip(t, g.addr, req, 4).(*kmsg.FindCoordinatorResponse)
	if c := resp.Coordinators[0]; c.ErrorCode != 0 || c.NodeID != 1 || c.Host != "10.0.0.1" || c.Port != 19092 {
		t.Errorf("a group of the other gateway: %+v", c)
	}
	if c := resp.Coordinators[1]; c.ErrorCode != kerr.CoordinatorNotAvailable.Code || c.NodeID != -1 {
		t.Errorf("a group no gateway is known for: %s node %d", errName(c.ErrorCode), c.NodeID)
	}
	req.CoordinatorType, req.CoordinatorKey = 1, "fc-mine"
	old := roundTrip(t, g.addr, req, 3).(*kmsg.FindCoordinatorResponse)
	if old.ErrorCode != 0 || old.NodeID != 0 || old.Host+":"+strconv.Itoa(int(old.Port)) != g.addr {
		t.Errorf("a transactional id of this gateway (v3): %s node %d at %s:%d", errName(old.ErrorCode), old.NodeID, old.Host, old.Port)
	}
	req.CoordinatorType, req.CoordinatorKey = 0, "fc-unknown"
	code(t, "v3, no gateway known", roundTrip(t, g.addr, req, 3).(*kmsg.FindCoordinatorResponse).ErrorCode, kerr.CoordinatorNotAvailable)
}
