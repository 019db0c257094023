package protocol_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func updateFeatures(c *rawConn, version int16, validateOnly bool, updates ...kmsg.UpdateFeaturesRequestFeatureUpdate) *kmsg.UpdateFeaturesResponse {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.FeatureUpdates, req.ValidateOnly = updates, validateOnly
	return c.do(req, version).(*kmsg.UpdateFeaturesResponse)
}

func featureUpdate(name string, level int16, upgradeType int8) kmsg.UpdateFeaturesRequestFeatureUpdate {
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, upgradeType
	u.AllowDowngrade = upgradeType != 1
	return u
}

// finalized is ApiVersions' finalized levels and epoch.
func finalized(t *testing.T, addr string) (map[string]int16, int64) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "protocol-test", "1"
	resp := roundTrip(t, addr, req, 3).(*kmsg.ApiVersionsResponse)
	out := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		out[f.Name] = f.MaxVersionLevel
	}
	return out, resp.FinalizedFeaturesEpoch
}

// UpdateFeatures v0-2: levels moved for the cluster and answered by
// ApiVersions one epoch further; downgrades need a downgrade type;
// Kafka's refusals change nothing; group.version and share.version 0 turn
// their protocols off.
func TestUpdateFeatures(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrUpdateFeaturesRequest(), 0, 2)
	c := dial(t, g.addr)
	levels, epoch := finalized(t, g.addr)
	if levels["transaction.version"] != 2 || levels["group.version"] != 1 || levels["share.version"] != 1 || epoch != 1 {
		t.Fatalf("before any update: %v at epoch %d", levels, epoch)
	}

	// A downgrade without a downgrade type is refused, at every version.
	for v := int16(0); v <= 2; v++ {
		r := updateFeatures(c, v, false, featureUpdate("transaction.version", 1, 1))
		if code(t, "a downgrade as an upgrade", r.ErrorCode, kerr.InvalidUpdateVersion); r.ErrorMessage == nil {
			t.Errorf("v%d: no message", v)
		}
		if v < 2 && (len(r.Results) != 1 || r.Results[0].ErrorCode != kerr.InvalidUpdateVersion.Code) {
			t.Errorf("v%d: results %+v", v, r.Results)
		}
	}
	// Kafka's other refusals; nothing of a refused request is made.
	for _, tc := range []struct {
		what    string
		updates []kmsg.UpdateFeaturesRequestFeatureUpdate
	}{
		{"an unknown feature", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("metadata.version", 30, 1)}},
		{"past the supported range", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("transaction.version", 3, 1)}},
		{"streams.version 2", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("streams.version", 2, 1)}},
		{"an upgrade as a downgrade", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("group.version", 1, 2), featureUpdate("share.version", 2, 2)}},
		{"a feature twice", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("share.version", 0, 2), featureUpdate("share.version", 1, 1)}},
		{"one good, one bad", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("share.version", 0, 2), featureUpdate("transaction.version", 9, 1)}},
	} {
		code(t, tc.what, updateFeatures(c, 1, false, tc.updates...).ErrorCode, kerr.InvalidUpdateVersion)
	}
	if levels, epoch = finalized(t, g.addr); levels["share.version"] != 1 || levels["transaction.version"] != 2 || epoch != 1 {
		t.Fatalf("after refused updates: %v at epoch %d", levels, epoch)
	}
	// validate_only changes nothing.
	code(t, "validate only", updateFeatures(c, 1, true, featureUpdate("transaction.version", 1, 2)).ErrorCode, nil)
	if levels, _ = finalized(t, g.addr); levels["transaction.version"] != 2 {
		t.Fatalf("validate_only changed transaction.version to %d", levels["transaction.version"])
	}

	// Downgrades: transaction.version to 1, group.version and share.version off.
	code(t, "downgrade", updateFeatures(c, 1, false, featureUpdate("transaction.version", 1, 2), featureUpdate("group.version", 0, 3),
		featureUpdate("share.version", 0, 2)).ErrorCode, nil)
	levels, epoch = finalized(t, g.addr)
	if _, on := levels["group.version"]; on || levels["transaction.version"] != 1 || epoch != 2 {
		t.Fatalf("after the downgrade: %v at epoch %d", levels, epoch)
	}
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberEpoch, hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = "fg", 0, 30000, []string{"t"}
	code(t, "ConsumerGroupHeartbeat with group.version 0", c.do(hb, 0).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.UnsupportedVersion)
	shb := kmsg.NewPtrShareGroupHeartbeatRequest()
	shb.GroupID, shb.MemberID, shb.SubscribedTopicNames = "fs", "m1234567890123456789", []string{"t"}
	code(t, "ShareGroupHeartbeat with share.version 0", c.do(shb, 1).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode, kerr.UnsupportedVersion)

	// And back (v0: an upgrade).
	code(t, "upgrade", updateFeatures(c, 0, false, featureUpdate("transaction.version", 2, 1), featureUpdate("group.version", 1, 1),
		featureUpdate("share.version", 1, 1)).ErrorCode, nil)
	if levels, epoch = finalized(t, g.addr); levels["group.version"] != 1 || levels["share.version"] != 1 || levels["transaction.version"] != 2 || epoch != 3 {
		t.Fatalf("after the upgrade: %v at epoch %d", levels, epoch)
	}
	if got := c.do(hb, 0).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; got == kerr.UnsupportedVersion.Code {
		t.Error("ConsumerGroupHeartbeat still refused with group.version 1")
	}
}

// Only a principal with ALTER on the cluster updates features.
func TestUpdateFeaturesAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{sasl: true, authorizer: true, users: map[string]string{"alice": "alice-pw", "bob": "bob-pw"},
		acls: []acl.Binding{binding("User:alice", kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, acl.ClusterName)}})
	r := updateFeatures(g.as(t, "bob"), 1, false, featureUpdate("transaction.version", 1, 2))
	if code(t, "bob", r.ErrorCode, kerr.ClusterAuthorizationFailed); len(r.Results) != 1 || r.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("bob's results %+v", r.Results)
	}
	code(t, "alice", updateFeatures(g.as(t, "alice"), 1, false, featureUpdate("transaction.version", 1, 2)).ErrorCode, nil)
}
