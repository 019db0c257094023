package protocol

// DescribeCluster, versions 0-2: the live gateways, and the one Metadata
// names as controller. Only the broker endpoint type (1) is served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

func init() { register(kmsg.DescribeCluster, 0, 2, (*Handler).handleDescribeCluster) }

func (h *Handler) handleDescribeCluster(_ context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if r.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return now(resp)
	}
	resp.EndpointType = 1
	resp.ClusterID = h.cfg.ClusterID()
	resp.ControllerID = h.cluster.Controller()
	for _, m := range h.brokers() {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID = m.NodeID
		b.Host, b.Port = m.Endpoint(r.Listener)
		b.Rack = rackOf(m)
		resp.Brokers = append(resp.Brokers, b)
	}
	resp.ClusterAuthorizedOperations = h.authorizedOperations(r, req.IncludeClusterAuthorizedOperations, kmsg.ACLResourceTypeCluster, acl.ClusterName)
	return now(resp)
}
