package seaweedmq

// A new publish stream is trusted only once its first acknowledged offset
// agrees with the records stored: the broker's offset counter may be behind
// them (fillers move it past) or ahead (the hole is filled with a segment),
// so that no offset is handed out twice and readers get past every gap.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// appendVerifying is the first append on a new stream. The broker's offset
// counter cannot be read reliably (its reported high watermark also counts
// the stored data), so the first record goes alone and its acknowledged
// offset is compared with the end of the stored records. If the broker is
// behind, that copy sits at an offset already taken, where readers never
// see it (they keep the first message stored at an offset); fillers then
// use up the offsets up to the end, and the records are sent again.
//
// A broker ahead of the stored records (its counter came back from a
// checkpoint past what it had flushed, of records it lost) would leave a
// hole: fillers are written there as a segment.
func (c *Client) appendVerifying(ctx context.Context, p *partition, pub *publisher, records []record.Record, durable bool) *protocol.Appended {
	lastTs := p.lastTsNs
	// The probe goes into the write-ahead log only once its offset is
	// known to be its own.
	pb, probe := p.sendBatch(ctx, pub, records[:1], false, true)
	select {
	case <-probe.Done:
	case <-ctx.Done():
		pub.fail(ctx.Err())
		probe.Then(func(probe *protocol.Appended) {
			if probe.Err == nil {
				p.mark(pb, batchFailed) // in the broker, not acknowledged: recovery logs it
			}
		})
		return protocol.FailedAppend(ctx.Err())
	}
	if probe.Err != nil {
		return protocol.FailedAppend(probe.Err)
	}
	base := probe.Base
	if base < p.storedEnd {
		p.mark(pb, batchFailed) // a copy at an offset taken already: readers never see it
		if err := c.fillGap(ctx, p, pub, base+1, p.storedEnd); err != nil {
			pub.fail(err)
			glog.Errorf("kafka partition %s/%d: broker %s assigned offset %d but records are stored up to offset %d, and moving it past them failed (%v); refusing writes so that no offset is handed out twice",
				p.topic, p.index, pub.leader, base, p.storedEnd-1, err)
			return protocol.FailedAppend(fmt.Errorf("%w: broker offset counter behind stored data", kerr.LeaderNotAvailable))
		}
		pub.verified, pub.next = true, p.storedEnd
		return p.send(ctx, pub, records, durable)
	}
	if base > p.storedEnd {
		glog.Warningf("kafka partition %s/%d: broker %s assigned offset %d but the stored records end at offset %d; filling the %d offsets between so that readers get past them",
			p.topic, p.index, pub.leader, base, p.storedEnd, base-p.storedEnd)
		if err := c.fillOffsets(ctx, p.dir, p.storedEnd, base, lastTs); err != nil {
			p.mark(pb, batchFailed)
			pub.fail(err)
			glog.Errorf("kafka partition %s/%d: filling offsets %d-%d failed: %v", p.topic, p.index, p.storedEnd, base-1, err)
			return protocol.FailedAppend(fmt.Errorf("%w: filling a hole in the offsets", kerr.LeaderNotAvailable))
		}
	}
	pub.verified, pub.next = true, base+1
	app := protocol.NewAppended()
	// Alone and durable, the probe is done once the log holds it; with
	// more records, once they are (in order behind it).
	durableProbe := durable && len(records) == 1
	p.mark(pb, batchAcked)
	c.wal.add(walBatch{dir: p.dir, base: base, n: 1, recs: pb.wal.buf}, func(err error) {
		p.walDone(pb, err)
		if !durableProbe {
			return
		}
		if err != nil {
			app.Finish(-1, err)
		} else {
			app.Finish(base, nil)
		}
	})
	switch {
	case len(records) > 1:
		p.send(ctx, pub, records[1:], durable).Then(func(rest *protocol.Appended) { app.Finish(base, rest.Err) })
	case !durable:
		app.Finish(base, nil)
	}
	return app
}

// fillGap moves a broker whose offset counter restarted behind the stored
// records (it recovers it from a checkpoint saved every two seconds) to the
// end of them, by publishing fillers for the offsets from..to-1. Readers keep
// the first message stored at an offset, the real record, so fillers are
// never read; the broker then assigns new records the offsets after them.
func (c *Client) fillGap(ctx context.Context, p *partition, pub *publisher, from, to int64) error {
	n := to - from
	if n > maxFillerGap {
		return fmt.Errorf("gap of %d offsets", n)
	}
	if n <= 0 {
		return nil
	}
	glog.Warningf("kafka partition %s/%d: broker would assign offset %d but records are stored up to offset %d; using up %d offsets with fillers so that none is handed out twice",
		p.topic, p.index, from, to-1, n)
	app := protocol.NewAppended()
	if err := pub.enqueue(ctx, &pendingBatch{n: int(n), app: app, part: p}); err != nil { // not logged
		return err
	}
	pub.data.Key = nil
	pub.data.Value = record.AppendFiller(pub.buf[:0])
	for i := int64(0); i < n; i++ {
		pub.data.TsNs, _ = p.nextTs(-1)
		if err := pub.stream.Send(&pub.req); err != nil {
			pub.fail(err)
			break
		}
	}
	select {
	case <-app.Done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if app.Err != nil {
		return app.Err
	}
	if app.Base != from {
		return fmt.Errorf("fillers got offsets from %d, expected %d", app.Base, from)
	}
	return nil
}
