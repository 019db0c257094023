package protocol

// Client quotas (KIP-13, KIP-219): a Produce counts its request's bytes
// against the client's producer_byte_rate when it is read, a Fetch its
// response's record bytes against consumer_byte_rate when it is answered.
// A client over its quota gets the throttle time in the response's
// throttle_time_ms and its connection reads no request for that long, as
// Kafka mutes the channel; a client honouring KIP-219 waits on its side
// too. Unlike Kafka, a fetch over the quota still carries its records
// (Kafka answers it empty): the throttle that follows holds the client to
// its rate all the same.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/quota"
)

// throttled wraps a Produce's or Fetch's reply with its quota.
func (h *Handler) throttled(r *Request, reply Reply) Reply {
	switch kmsg.Key(r.Key) {
	case kmsg.Produce:
		d := h.cfg.Quotas.Record(quota.ProducerByteRate, "produce", r.Principal, r.ClientID, int64(r.Size))
		if d <= 0 {
			return reply
		}
		r.mute(d)
		return func() (kmsg.Response, error) {
			resp, err := reply()
			setThrottle(resp, d)
			return resp, err
		}
	case kmsg.Fetch:
		return func() (kmsg.Response, error) {
			resp, err := reply()
			fr, ok := resp.(*kmsg.FetchResponse)
			if err != nil || !ok {
				return resp, err
			}
			var n int64
			for i := range fr.Topics {
				for j := range fr.Topics[i].Partitions {
					n += int64(len(fr.Topics[i].Partitions[j].RecordBatches))
				}
			}
			if d := h.cfg.Quotas.Record(quota.ConsumerByteRate, "fetch", r.Principal, r.ClientID, n); d > 0 {
				r.mute(d)
				setThrottle(resp, d)
			}
			return resp, nil
		}
	}
	return reply
}

func (r *Request) mute(d time.Duration) {
	if r.Mute != nil {
		r.Mute(d)
	}
}

// setThrottle sets a response's throttle_time_ms (the larger, if it has
// one already).
func setThrottle(resp kmsg.Response, d time.Duration) {
	t, ok := resp.(interface {
		kmsg.ThrottleResponse
		kmsg.SetThrottleResponse
	})
	if !ok {
		return
	}
	ms := int32(min(d.Milliseconds(), 1<<31-1))
	if cur, _ := t.Throttle(); cur < ms {
		t.SetThrottle(ms)
	}
}
