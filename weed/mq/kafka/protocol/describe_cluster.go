package protocol

// DescribeCluster, versions 0-2. The cluster is this gateway; it is also the
// controller. Only the broker endpoint type (1) is served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	resp.ClusterID = h.cfg.ClusterID
	resp.ControllerID = h.cfg.NodeID
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID, b.Host, b.Port = h.cfg.NodeID, h.cfg.Host, h.cfg.Port
	resp.Brokers = append(resp.Brokers, b)
	resp.ClusterAuthorizedOperations = -2147483648
	return now(resp)
}
