package seaweedmq

import (
	"context"

	"github.com/seaweedfs/seaweedfs/weed/filer"
)

// PartitionSize implements storage.Backend: the bytes of the partition's
// log segments in the filer (what the broker still holds unflushed is not
// counted).
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
	return size, nil
}
