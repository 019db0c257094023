package protocol_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
)

// DescribeCluster v0-2: the cluster id, this gateway as the one broker
// (at the address the client came to) and controller; the endpoint type
// is the broker's (v1+: another is UNSUPPORTED_ENDPOINT_TYPE); no broker is
// fenced (v2); the authorized operations when asked for.
func TestDescribeClusterVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrDescribeClusterRequest(), 0, 2)
	host, portStr, _ := net.SplitHostPort(g.addr)
	port, _ := strconv.Atoi(portStr)
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.EndpointType, req.IncludeFencedBrokers = 1, true
		resp := roundTrip(t, g.addr, req, v).(*kmsg.DescribeClusterResponse)
		code(t, "DescribeCluster", resp.ErrorCode, nil)
		if resp.ClusterID != "in-process" || resp.ControllerID != 0 || len(resp.Brokers) != 1 ||
			resp.Brokers[0].NodeID != 0 || resp.Brokers[0].Host != host || resp.Brokers[0].Port != int32(port) || resp.Brokers[0].IsFenced {
			t.Errorf("v%d: %+v", v, resp)
		}
		if v >= 1 && resp.EndpointType != 1 {
			t.Errorf("v%d: endpoint type %d", v, resp.EndpointType)
		}
		if resp.ClusterAuthorizedOperations != -2147483648 {
			t.Errorf("v%d: authorized operations %b, not asked for", v, resp.ClusterAuthorizedOperations)
		}
		req.IncludeClusterAuthorizedOperations = true
		all := int32(0)
		for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationCreate, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationClusterAction,
			kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite} {
			all |= 1 << op
		}
		if ops := roundTrip(t, g.addr, req, v).(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations; ops != all {
			t.Errorf("v%d: authorized operations %b without an authorizer, want %b", v, ops, all)
		}
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 2
	code(t, "controller endpoints", roundTrip(t, g.addr, req, 1).(*kmsg.DescribeClusterResponse).ErrorCode, kerr.UnsupportedEndpointType)
}

// With an authorizer the authorized operations are the principal's.
func TestDescribeClusterAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{
		binding(anonymous, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, acl.ClusterName),
	}})
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = true
	resp := roundTrip(t, g.addr, req, 0).(*kmsg.DescribeClusterResponse)
	if code(t, "DescribeCluster", resp.ErrorCode, nil); resp.ClusterAuthorizedOperations != 1<<kmsg.ACLOperationAlter|1<<kmsg.ACLOperationDescribe {
		t.Errorf("authorized operations %b, want Alter and Describe", resp.ClusterAuthorizedOperations)
	}
}

// In a cluster of gateways: every live gateway, and the controller the
// cluster names.
func TestDescribeClusterMembers(t *testing.T) {
	g := startGateway(t, gatewayOptions{cluster: newFakeCluster(1, nil)})
	resp := roundTrip(t, g.addr, kmsg.NewPtrDescribeClusterRequest(), 2).(*kmsg.DescribeClusterResponse)
	if resp.ControllerID != 1 || len(resp.Brokers) != 2 || resp.Brokers[1].NodeID != 1 || resp.Brokers[1].Host != "10.0.0.1" || resp.Brokers[1].Port != 19092 {
		t.Errorf("controller %d, brokers %+v", resp.ControllerID, resp.Brokers)
	}
}

// A gateway's rack (-rack) is its broker's rack in DescribeCluster and
// Metadata, as broker.rack is Kafka's; a gateway without one has a null
// rack.
func TestBrokerRacks(t *testing.T) {
	c := newFakeCluster(1, nil)
	c.other.Rack = "zone-b"
	g := startGateway(t, gatewayOptions{cluster: c})
	dc := roundTrip(t, g.addr, kmsg.NewPtrDescribeClusterRequest(), 2).(*kmsg.DescribeClusterResponse)
	md := roundTrip(t, g.addr, kmsg.NewPtrMetadataRequest(), 12).(*kmsg.MetadataResponse)
	if len(dc.Brokers) != 2 || len(md.Brokers) != 2 {
		t.Fatalf("brokers: %+v %+v", dc.Brokers, md.Brokers)
	}
	if dc.Brokers[0].Rack != nil || md.Brokers[0].Rack != nil {
		t.Errorf("a gateway without a rack: %v %v", dc.Brokers[0].Rack, md.Brokers[0].Rack)
	}
	if r := dc.Brokers[1].Rack; r == nil || *r != "zone-b" {
		t.Errorf("DescribeCluster's rack of node 1: %v", r)
	}
	if r := md.Brokers[1].Rack; r == nil || *r != "zone-b" {
		t.Errorf("Metadata's rack of node 1: %v", r)
	}
}
