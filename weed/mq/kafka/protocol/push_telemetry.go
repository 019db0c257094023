package protocol

// PushTelemetry (KIP-714), version 0: a client's metrics, as OpenTelemetry
// MetricsData compressed with one of the accepted types, checked and kept
// by package telemetry as Kafka's ClientMetricsManager checks them, and
// served on the gateway's /metrics. Served only where the gateway keeps
// client metrics.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.PushTelemetry, 0, 0, (*Handler).handlePushTelemetry)
}

func (h *Handler) handlePushTelemetry(_ context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.PushTelemetryRequest)
	resp := req.ResponseKind().(*kmsg.PushTelemetryResponse)
	if h.cfg.ClientMetrics == nil {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return now(resp)
	}
	c := telemetryClient(r, req.ClientInstanceID)
	if e := h.cfg.ClientMetrics.Push(c, req.SubscriptionID, req.Terminating, req.CompressionType, req.Metrics); e != nil {
		resp.ErrorCode = e.Code
	}
	return now(resp)
}
