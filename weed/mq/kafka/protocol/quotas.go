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
//
// request_percentage counts the time the gateway works on a request: its
// handler on the connection's reader and its reply on the writer, less
// the time either waits for something to happen (a fetch's long-poll for
// records, a produce's wait for its write to be durable, a group's wait
// for its members), as Kafka counts a request thread's time and not the
// time a request waits in purgatory. The gateways' own requests to one
// another, ApiVersions, the SASL exchange and WriteTxnMarkers (Kafka's
// cluster actions) are exempt, as in Kafka.

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
	if r.Conn != nil {
		r.Conn.Mute(d)
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

// mutations is a request's controller mutation quota (KIP-599): the
// partitions CreateTopics, CreatePartitions and DeleteTopics create or
// delete count against the client's controller_mutation_rate, strictly
// from the version that knows THROTTLING_QUOTA_EXCEEDED (a topic is then
// refused while the client is in debt), permissively before it (the
// request is done and the client throttled).
type mutations struct {
	h        *Handler
	r        *Request
	strict   bool
	throttle time.Duration
}

func (h *Handler) mutations(r *Request, strictSince int16) *mutations {
	return &mutations{h: h, r: r, strict: r.Version >= strictSince}
}

// applies reports whether the client has a controller_mutation_rate: the
// partitions a deletion counts are looked up only then.
func (m *mutations) applies() bool {
	_, _, ok := m.h.cfg.Quotas.Quota(quota.ControllerMutationRate, quota.UserName(m.r.Principal), m.r.ClientID)
	return ok
}

// take counts n partitions; false: the topic is refused
// (THROTTLING_QUOTA_EXCEEDED, throttleMessage).
func (m *mutations) take(n int32) bool {
	ok, d := m.h.cfg.Quotas.Mutate(m.r.Principal, m.r.ClientID, int(n), m.strict)
	m.throttle = max(m.throttle, d)
	return ok
}

// throttleMessage is Kafka's message of THROTTLING_QUOTA_EXCEEDED.
const throttleMessage = "The throttling quota has been exceeded."

// done puts the throttle in the response and mutes the connection for it.
func (m *mutations) done(resp kmsg.Response) {
	if m.throttle > 0 {
		setThrottle(resp, m.throttle)
		m.r.mute(m.throttle)
	}
}

// requestQuota reports whether r's time is measured against a
// request_percentage.
func (h *Handler) requestQuota(r *Request) bool {
	switch kmsg.Key(r.Key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate, kmsg.WriteTxnMarkers:
		return false
	}
	return r.Principal != "User:"+GatewayUser && h.cfg.Quotas.HasRequestQuota(r.Principal, r.ClientID)
}

// timed wraps a reply to count the request's work, handled taking the
// handler's part, against the client's request_percentage.
func (h *Handler) timed(r *Request, reply Reply, handled time.Duration) Reply {
	return func() (kmsg.Response, error) {
		start := time.Now()
		resp, err := reply()
		work := handled + time.Since(start) - r.waited
		if d := h.cfg.Quotas.RecordTime(r.Principal, r.ClientID, max(work, 0)); d > 0 && err == nil {
			r.mute(d)
			if resp != nil {
				setThrottle(resp, d)
			}
		}
		return resp, err
	}
}

// waitedSince counts the time since start as waiting.
func (r *Request) waitedSince(start time.Time) { r.waited += time.Since(start) }
