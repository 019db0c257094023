package protocol

// FindCoordinator, versions 0-6. This gateway coordinates every group and
// transaction it is asked about; v4+ answers each of a batch of keys.
// Share-group keys (type 2) are refused with INVALID_REQUEST: share groups
// are not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.FindCoordinator, 0, 6, (*Handler).handleFindCoordinator) }

func (h *Handler) handleFindCoordinator(_ context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	code := int16(0)
	if req.CoordinatorType != 0 && req.CoordinatorType != 1 {
		code = kerr.InvalidRequest.Code
	}
	if r.Version < 4 {
		resp.ErrorCode = code
		if code == 0 {
			resp.NodeID, resp.Host, resp.Port = h.cfg.NodeID, h.cfg.Host, h.cfg.Port
		} else {
			resp.NodeID = -1
		}
		return now(resp)
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.ErrorCode = key, code
		if code == 0 {
			c.NodeID, c.Host, c.Port = h.cfg.NodeID, h.cfg.Host, h.cfg.Port
		} else {
			c.NodeID = -1
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return now(resp)
}
