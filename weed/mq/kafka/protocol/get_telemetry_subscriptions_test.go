package protocol_test

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaSubscriptionID is the subscription id Kafka's broker gives a client
// instance when no client metrics subscription matches it: the CRC-32C of
// the empty metric set's Java string and the push interval, XORed with the
// instance id's Java hash code.
func kafkaSubscriptionID(id [16]byte) int32 {
	crc := crc32.Checksum([]byte("[]300000"), crc32.MakeTable(crc32.Castagnoli))
	hi, lo := binary.BigEndian.Uint64(id[:8]), binary.BigEndian.Uint64(id[8:])
	x := int64(hi ^ lo)
	return int32(crc) ^ (int32(x>>32) ^ int32(x))
}

// GetTelemetrySubscriptions v0 with no client metrics subscription,
// answered as a Kafka broker answers it: no metrics requested, Kafka's
// push interval (5 minutes), max bytes (1 MiB) and compression types, and
// cumulative temporality (the gateway's choice); a new random (v4)
// instance id for a client without one, a different one each time; a
// client asking again before its interval throttled; the subscription id
// Kafka computes (checked against values from Java).
func TestGetTelemetrySubscriptions(t *testing.T) {
	addr := inProcessGateway(t)
	servesVersions(t, addr, kmsg.NewPtrGetTelemetrySubscriptionsRequest(), 0, 0)
	areq := kmsg.NewPtrApiVersionsRequest()
	areq.ClientSoftwareName, areq.ClientSoftwareVersion = "protocol-test", "1"
	av := roundTrip(t, addr, areq, 3).(*kmsg.ApiVersionsResponse)
	if !slices.ContainsFunc(av.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == int16(kmsg.PushTelemetry) }) {
		t.Error("PushTelemetry not advertised")
	}

	c := dial(t, addr)
	get := func(id [16]byte) *kmsg.GetTelemetrySubscriptionsResponse {
		t.Helper()
		req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
		req.ClientInstanceID = id
		resp := c.do(req, 0).(*kmsg.GetTelemetrySubscriptionsResponse)
		code(t, "GetTelemetrySubscriptions", resp.ErrorCode, nil)
		if len(resp.RequestedMetrics) != 0 || resp.PushIntervalMillis != 300_000 || resp.TelemetryMaxBytes != 1<<20 ||
			resp.DeltaTemporality || !slices.Equal(resp.AcceptedCompressionTypes, []int8{4, 3, 1, 2}) {
			t.Errorf("subscription %+v", resp)
		}
		if resp.SubscriptionID != kafkaSubscriptionID(resp.ClientInstanceID) {
			t.Errorf("subscription id %d, Kafka's %d", resp.SubscriptionID, kafkaSubscriptionID(resp.ClientInstanceID))
		}
		return resp
	}
	first := get([16]byte{}).ClientInstanceID
	second := get([16]byte{}).ClientInstanceID
	if first == ([16]byte{}) || first == second || first[6]>>4 != 4 || first[8]>>6 != 2 {
		t.Errorf("new instance ids %x and %x", first, second)
	}
	again := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	again.ClientInstanceID = first
	code(t, "GetTelemetrySubscriptions before the interval", c.do(again, 0).(*kmsg.GetTelemetrySubscriptionsResponse).ErrorCode, kerr.ThrottlingQuotaExceeded)
	// Subscription ids computed by Java (java.util.zip.CRC32C and Kafka's
	// Uuid.hashCode) for two instance ids.
	for id, want := range map[[16]byte]int32{
		{0x12, 0x34, 15: 0x56}: -957129848,
		{0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10, 0x81, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}: 1422351326,
	} {
		resp := get(id)
		if resp.ClientInstanceID != id || resp.SubscriptionID != want {
			t.Errorf("instance %x answered as %x, subscription %d, want %d", id, resp.ClientInstanceID, resp.SubscriptionID, want)
		}
	}
}
