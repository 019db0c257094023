package quota

// A tenant's quota across the gateways it talks to: each gateway shares
// the moving averages of the rates it measures of the clients that have a
// quota, in a file of its own under UsageDir written every ShareEvery, and
// reads the others'. Each gateway holds a client to its share of the
// quota, its part of the averages (share): a producer spread over n
// gateways is held to its quota in all, not n times it, and so are its
// bursts after a quiet while, which each gateway allows from its share.
// The shares add up to the whole: each gateway shares its own, and a
// share grows only into what the others' leave. Each gateway also shares
// the rates as it measures them against the quota, and throttles a
// client over its quota in all as one broker would (the least share a
// gateway keeps of a client may make more than the whole). Connection
// creation rates stay each gateway's own.
//
// A gateway's file counts in full while it changes. One that stayed as
// it was for usageStale (its gateway stopped, paused or cut off from the
// filer, or the filer slow) fades from then on as its moving averages
// would with nothing more measured, whatever the clocks of the two
// gateways say: a write held up for a few seconds does not hand the
// others the whole quota at once, and a gateway gone hands its share
// over within the averages' horizon. One unchanged for usageForget is
// removed.

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"strings"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
)

// UsageDir is where the gateways share the rates they measure.
const UsageDir = "/etc/kafka-gateway/quota-usage"

// ShareEvery is how often a gateway shares its rates and reads the others'.
const ShareEvery = time.Second

const (
	usageStale  = 3 * ShareEvery
	usageForget = time.Minute
)

// usage is one gateway's file.
type usage struct {
	Seq   uint64      `json:"seq"`
	Rates []usageRate `json:"rates"`
}

type usageRate struct {
	Sensor
	// Rate is the rate's moving average (rate.average).
	Rate float64 `json:"rate"`
	// Measured is the rate as measured against the quota (rate.measure).
	Measured float64 `json:"measured,omitempty"`
	// Share is the gateway's share of the quota (Store.shareLocked).
	Share float64 `json:"share,omitempty"`
}

// others is what the other gateways share of a sensor, summed.
type others struct {
	avg, measured, share float64
}

// peerUsage is what this gateway knows of another's file.
type peerUsage struct {
	seq     uint64
	changed time.Time // by this gateway's clock
	rates   []usageRate
}

// share reads the other gateways' rates and writes this gateway's.
func (s *Store) share(ctx context.Context) {
	if s.opts.Node == "" {
		return
	}
	// Read first: what this gateway shares is its share as of now.
	if err := s.readUsage(ctx); err != nil {
		glog.V(1).Infof("kafka quotas: reading the rates other gateways measured: %v", err)
	}
	if err := s.publish(ctx); err != nil {
		glog.V(1).Infof("kafka quotas: sharing the rates measured here: %v", err)
	}
}

func (s *Store) usageName() string { return filerfs.Escape(s.opts.Node) + ".json" }

// publish writes the rates this gateway measures of quota'd clients, or
// removes its file when it has none left.
func (s *Store) publish(ctx context.Context) error {
	now := s.opts.Now()
	var u usage
	s.ratesMu.Lock()
	quiet := s.quietFor()
	for sensor, r := range s.rates {
		if sensor.IP != "" || now.Sub(r.last) > quiet {
			continue
		}
		if v := r.average(now, s.opts.Window, s.opts.Samples); v > 0 {
			measured, _ := r.measure(now, s.opts.Window, s.opts.Samples)
			u.Rates = append(u.Rates, usageRate{Sensor: sensor, Rate: v, Measured: measured, Share: s.shareLocked(sensor, r, now)})
		}
	}
	s.ratesMu.Unlock()
	if len(u.Rates) == 0 {
		if !s.published {
			return nil
		}
		if err := s.opts.Files.Remove(ctx, UsageDir, s.usageName()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		s.published = false
		return nil
	}
	s.seq++
	u.Seq = s.seq
	data, err := json.Marshal(u)
	if err != nil {
		return err
	}
	if err := s.opts.Files.WriteFile(ctx, UsageDir, s.usageName(), data); err != nil {
		return err
	}
	s.published = true
	return nil
}

// readUsage reads the other gateways' rates, while there are quotas.
func (s *Store) readUsage(ctx context.Context) error {
	s.mu.RLock()
	none := len(s.entries) == 0
	s.mu.RUnlock()
	if none && len(s.peers) == 0 {
		return nil
	}
	files, err := s.opts.Files.ListFiles(ctx, UsageDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	now := s.opts.Now()
	seen := map[string]bool{}
	for _, f := range files {
		if f.Dir || f.Name == s.usageName() || !strings.HasSuffix(f.Name, ".json") {
			continue
		}
		var u usage
		if err := json.Unmarshal(f.Data, &u); err != nil {
			continue
		}
		seen[f.Name] = true
		p := s.peers[f.Name]
		switch {
		case p == nil:
			// First read: counted from the next change, as it may be
			// the file of a gateway long gone.
			s.peers[f.Name] = &peerUsage{seq: u.Seq, changed: now.Add(-usageStale)}
		case p.seq != u.Seq:
			p.seq, p.changed, p.rates = u.Seq, now, u.Rates
		case now.Sub(p.changed) > usageForget:
			if err := s.opts.Files.Remove(ctx, UsageDir, f.Name); err == nil || errors.Is(err, fs.ErrNotExist) {
				delete(s.peers, f.Name)
			}
		}
	}
	remote := map[Sensor]others{}
	horizon := s.opts.Window * time.Duration(s.opts.Samples)
	for name, p := range s.peers {
		if !seen[name] {
			delete(s.peers, name)
			continue
		}
		fade := 1.0
		if age := now.Sub(p.changed); age > usageStale {
			fade = math.Exp(-(age - usageStale).Seconds() / horizon.Seconds())
		}
		for _, r := range p.rates {
			o := remote[r.Sensor]
			o.avg += r.Rate * fade
			o.measured += r.Measured * fade
			o.share += r.Share * fade
			remote[r.Sensor] = o
		}
	}
	// The shares, as of now, until the next read: a burst on this gateway
	// does not raise its own share before the others have heard of it.
	// Nor do the shares add up to more than the whole when the gateways'
	// averages move at once (each reads its own at once, the others' as
	// of their last share): a share grows only into what the others'
	// last shares leave.
	shares := map[Sensor]float64{}
	s.ratesMu.Lock()
	for sensor, o := range remote {
		if r := s.rates[sensor]; r != nil {
			sh := shareOf(r.average(now, s.opts.Window, s.opts.Samples), o.avg)
			if o.share > 0 {
				sh = min(sh, max(s.shareLocked(sensor, r, now), 1-o.share, minShare))
			}
			shares[sensor] = sh
		}
	}
	s.remote, s.shares = remote, shares
	s.ratesMu.Unlock()
	return nil
}
