package protocol

import (
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
)

// Cluster is the gateways serving one SeaweedFS cluster and what each owns:
// the leader of each partition, the coordinator of each group and
// transactional id (package membership).
type Cluster interface {
	// Members returns the live gateways, by node id.
	Members() []membership.Member
	// Controller returns the node id Metadata names as the controller.
	Controller() int32
	// Owner returns the gateway that owns key and the leader epoch; ok is
	// false while no gateway is known.
	Owner(key string) (owner membership.Member, epoch int64, ok bool)
}

// alone is the cluster of a gateway without others (unit tests): it owns
// everything.
type alone struct{ self membership.Member }

func (a alone) Members() []membership.Member { return []membership.Member{a.self} }
func (a alone) Controller() int32            { return a.self.NodeID }
func (a alone) Owner(string) (membership.Member, int64, bool) {
	return a.self, 0, true
}

// rackOf is a gateway's rack as Metadata and DescribeCluster give it:
// null without one.
func rackOf(m membership.Member) *string {
	if m.Rack == "" {
		return nil
	}
	rack := m.Rack
	return &rack
}

func (h *Handler) self() membership.Member {
	return membership.Member{NodeID: h.cfg.NodeID, Host: h.cfg.Host, Port: h.cfg.Port, Listeners: h.cfg.Listeners}
}

// brokers returns the gateways Metadata lists: the live ones, or this one
// while it knows of none (a client needs someone to ask again).
func (h *Handler) brokers() []membership.Member {
	if ms := h.cluster.Members(); len(ms) > 0 {
		return ms
	}
	return []membership.Member{h.self()}
}
