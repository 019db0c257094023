package quota

import (
	"math"
	"time"
)

// rate is Kafka's sampled rate: samples of a window each, the oldest
// replaced when a new window begins.
type rate struct {
	samples []sample
	current int
	// since is the first sample's time; last the latest's.
	since, last time.Time
	// avg is the rate's moving average over a longer horizon, as of
	// last: what this gateway's share of a client's quota is made of.
	avg float64
}

type sample struct {
	start time.Time
	value float64
}

func (r *rate) record(v float64, now time.Time, window time.Duration, samples int) {
	r.avg = r.average(now, window, samples) + v/(window*time.Duration(samples)).Seconds()
	r.last = now
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{start: now})
	}
	if cur := &r.samples[r.current]; now.Sub(cur.start) >= window {
		r.current = (r.current + 1) % samples
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, sample{})
		}
		r.samples[r.current] = sample{start: now}
	}
	r.samples[r.current].value += v
}

// measure returns the rate per second and the window it is measured over:
// from the oldest sample kept to now, plus the whole windows it lacks of
// samples-1, as Kafka's Rate measures it (so that a client's first burst
// is spread over the whole window).
func (r *rate) measure(now time.Time, window time.Duration, samples int) (float64, time.Duration) {
	expire := window * time.Duration(samples)
	var total float64
	oldest := now
	for i := range r.samples {
		sm := &r.samples[i]
		if now.Sub(sm.start) >= expire {
			*sm = sample{start: now}
		}
		total += sm.value
		if sm.start.Before(oldest) {
			oldest = sm.start
		}
	}
	elapsed := now.Sub(oldest)
	if full := int64(elapsed / window); full < int64(samples-1) {
		elapsed += time.Duration(int64(samples-1)-full) * window
	}
	return total / elapsed.Seconds(), elapsed
}

// average returns the rate's exponentially weighted moving average at now,
// over a horizon of the whole window.
func (r *rate) average(now time.Time, window time.Duration, samples int) float64 {
	if r.last.IsZero() {
		return 0
	}
	tau := (window * time.Duration(samples)).Seconds()
	return r.avg * math.Exp(-max(now.Sub(r.last).Seconds(), 0)/tau)
}
