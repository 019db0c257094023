package seaweedmq

import (
	"context"

	"github.com/seaweedfs/seaweedfs/weed/filer"
)

// PartitionSize implements storage.Backend: the bytes of the partition's
// log segments in the filer, and of its tail when this gateway holds it
// (logged, not yet in a segment; a tail written to a segment while this
// runs may be missed once).
func (c *Client) PartitionSize(ctx context.Context, topic string, index int32) (int64, error) {
	a, err := c.assignment(ctx, topic, index)
	if err != nil {
		return 0, err
	}
	st, err := c.flushed(ctx, c.partitionDir(topic, a), false)
	if err != nil {
		return 0, err
	}
	var size int64
	for _, s := range st.listing.segs {
		size += int64(filer.FileSize(s.entry))
	}
	c.parts.mu.Lock()
	p := c.parts.m[partKey{topic, index}]
	c.parts.mu.Unlock()
	if p != nil {
		p.notifyMu.Lock()
		size += int64(p.tailBytes)
		p.notifyMu.Unlock()
	}
	return size, nil
}
