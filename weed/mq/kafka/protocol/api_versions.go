package protocol

// ApiVersions, versions 0-5.
//
// The response lists exactly the registry's keys and versions. As in Kafka,
// a request newer than we serve is answered in v0 format with
// UNSUPPORTED_VERSION and the full table, so the client can retry with a
// version we know; the response header is always the non-flexible v0.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ApiVersions, 0, 5, (*Handler).handleApiVersions) }

func (h *Handler) handleApiVersions(_ context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if r.versionTooNew {
		resp.SetVersion(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	} else {
		resp.SetVersion(r.Version)
	}
	for key, a := range apis {
		if a == nil {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = int16(key), a.min, a.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return now(resp)
}
