package protocol

// GetTelemetrySubscriptions (72's companion, KIP-714), version 0: the
// client metrics subscriptions the client matches, answered by package
// telemetry as Kafka's ClientMetricsManager answers them. The client is
// matched by its instance id, client id, the software name and version it
// gave in ApiVersions ("unknown" without, as Kafka), and its address and
// port. Clients are asked for cumulative sums (DeltaTemporality false):
// the gateway serves the pushed metrics on /metrics, where counters are
// cumulative.
//
// Without a telemetry manager (in-process tests) no metric is requested,
// as Kafka with no subscription: the client asks again after 5 minutes.

import (
	"context"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/telemetry"
)

func init() {
	register(kmsg.GetTelemetrySubscriptions, 0, 0, (*Handler).handleGetTelemetrySubscriptions)
}

// unknownSoftware is what Kafka calls a client that did not say.
const unknownSoftware = "unknown"

func (h *Handler) handleGetTelemetrySubscriptions(_ context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := req.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	c := telemetryClient(r, req.ClientInstanceID)
	sub := telemetry.Subscription{InstanceID: c.InstanceID, IntervalMillis: telemetry.DefaultIntervalMs, Metrics: []string{}}
	if h.cfg.ClientMetrics != nil {
		var e *kerr.Error
		if sub, e = h.cfg.ClientMetrics.Subscribe(c); e != nil {
			resp.ErrorCode = e.Code
			return now(resp)
		}
	} else if sub.InstanceID == ([16]byte{}) {
		sub.InstanceID = telemetry.NewInstanceID()
	}
	resp.ClientInstanceID = sub.InstanceID
	resp.SubscriptionID = sub.ID
	resp.AcceptedCompressionTypes = telemetry.AcceptedCompression
	resp.PushIntervalMillis = sub.IntervalMillis
	resp.TelemetryMaxBytes = telemetry.MaxBytes
	resp.DeltaTemporality = false
	resp.RequestedMetrics = sub.Metrics
	return now(resp)
}

// telemetryClient is the request's client as subscriptions match it.
func telemetryClient(r *Request, id [16]byte) telemetry.Client {
	c := telemetry.Client{InstanceID: id, ClientID: r.ClientID, SoftwareName: unknownSoftware, SoftwareVersion: unknownSoftware}
	if r.Conn == nil {
		return c
	}
	if name, version := r.Conn.ClientSoftware(); name != "" {
		c.SoftwareName, c.SoftwareVersion = name, version
	}
	if addr, ok := r.Conn.RemoteAddr().(*net.TCPAddr); ok {
		c.Address, c.Port = addr.IP.String(), strconv.Itoa(addr.Port)
	}
	return c
}
