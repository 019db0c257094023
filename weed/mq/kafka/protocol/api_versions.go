package protocol

// ApiVersions, versions 0-5.
//
// The response lists exactly the registry's keys and versions. As in Kafka,
// a request newer than we serve is answered in v0 format with
// UNSUPPORTED_VERSION and the full table, so the client can retry with a
// version we know; the response header is always the non-flexible v0.
// v3+ carries the features (KIP-584): those the gateways support and the
// cluster's finalized levels with their epoch, as UpdateFeatures last set
// them (see the feature package): group.version 1 (the consumer group
// protocol of KIP-848), share.version 1 (share groups, KIP-932) and
// transaction.version 2 (KIP-890) unless changed.

import (
	"context"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/feature"
)

func init() { register(kmsg.ApiVersions, 0, 5, (*Handler).handleApiVersions) }

// softwareName is what v3+ clients may call themselves and their version
// (KIP-511), as Kafka checks it.
var softwareName = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (h *Handler) handleApiVersions(_ context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if r.versionTooNew {
		resp.SetVersion(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	} else {
		resp.SetVersion(r.Version)
		if r.Version >= 3 && (!softwareName.MatchString(req.ClientSoftwareName) || !softwareName.MatchString(req.ClientSoftwareVersion)) {
			resp.ErrorCode = kerr.InvalidRequest.Code // as Kafka (KIP-511), with no keys
			return now(resp)
		}
	}
	if r.Version >= 3 && r.Conn != nil && resp.ErrorCode == 0 {
		r.Conn.SetClientSoftware(req.ClientSoftwareName, req.ClientSoftwareVersion)
	}
	if r.Version >= 3 {
		// Clients read the finalized levels only from an epoch of 0 or
		// more.
		levels := h.features()
		for _, name := range feature.Names() {
			sf := kmsg.NewApiVersionsResponseSupportedFeature()
			sf.Name, sf.MinVersion, sf.MaxVersion = name, feature.Supported[name].Min, feature.Supported[name].Max
			resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
			if l := levels.Level(name); l > 0 {
				ff := kmsg.NewApiVersionsResponseFinalizedFeature()
				ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, l, l
				resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
			}
		}
		resp.FinalizedFeaturesEpoch = levels.Epoch
	}
	for key, a := range apis {
		if a == nil || key == int(kmsg.PushTelemetry) && h.cfg.ClientMetrics == nil {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = int16(key), a.min, a.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return now(resp)
}
