package protocol

// GetTelemetrySubscriptions (KIP-714), version 0, answered as a Kafka
// broker with no client metrics subscriptions configured answers it: no
// metrics are requested (RequestedMetrics empty), so a client asks again
// after the push interval (Kafka's default, 5 minutes) and never pushes.
// A client without an instance id (zero) gets a new random one, a client
// with one gets it back; the subscription id is Kafka's for the empty
// subscription set (CRC-32C of "[]" and the interval, XORed with the
// instance id's Java hash), and the accepted compression types, the
// telemetry max bytes (1 MiB) and delta temporality are Kafka's defaults.
// Unlike Kafka, which remembers each client instance, nothing is kept: a
// client asking again before its push interval is not throttled
// (THROTTLING_QUOTA_EXCEEDED in Kafka).
//
// PushTelemetry (72) is not served: with no metrics requested, Kafka's
// clients never push (not even the terminating push when they close). Not
// advertising it also keeps franz-go, which uses client metrics only where
// both APIs are served, from asking at all.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"hash/crc32"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.GetTelemetrySubscriptions, 0, 0, (*Handler).handleGetTelemetrySubscriptions)
}

// Kafka's telemetry defaults with no subscription: the push interval
// (5 minutes), client.telemetry.max.bytes (1 MiB), and the compression
// types a broker accepts in PushTelemetry (zstd, lz4, gzip, snappy).
const (
	telemetryPushIntervalMillis = 5 * 60 * 1000
	telemetryMaxBytes           = 1 << 20
)

var telemetryCompressionTypes = []int8{4, 3, 1, 2}

func (h *Handler) handleGetTelemetrySubscriptions(_ context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := req.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	id := req.ClientInstanceID
	if id == ([16]byte{}) {
		id = newClientInstanceID()
	}
	resp.ClientInstanceID = id
	resp.SubscriptionID = telemetrySubscriptionID(id)
	resp.AcceptedCompressionTypes = telemetryCompressionTypes
	resp.PushIntervalMillis = telemetryPushIntervalMillis
	resp.TelemetryMaxBytes = telemetryMaxBytes
	resp.DeltaTemporality = true
	resp.RequestedMetrics = []string{}
	return now(resp)
}

// newClientInstanceID returns a random (version 4) UUID that, as Kafka's
// Uuid.randomUuid, is neither of the reserved ids (0 and 1) nor one whose
// base64 form begins with '-'.
func newClientInstanceID() [16]byte {
	for {
		var id [16]byte
		rand.Read(id[:]) //nolint:errcheck // crypto/rand.Read does not fail
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if id[0]>>2 != 62 { // base64url's '-'; the version bits rule out 0 and 1
			return id
		}
	}
}

// telemetrySubscriptionID is Kafka's subscription id of the empty
// subscription set with the default push interval for a client instance.
func telemetrySubscriptionID(id [16]byte) int32 {
	crc := crc32.Checksum([]byte("[]"+strconv.Itoa(telemetryPushIntervalMillis)), crc32.MakeTable(crc32.Castagnoli))
	x := binary.BigEndian.Uint64(id[:8]) ^ binary.BigEndian.Uint64(id[8:])
	return int32(crc) ^ (int32(x>>32) ^ int32(x))
}
