package seaweedmq

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/seaweedfs/seaweedfs/weed/cluster"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
)

// Producer ids are handed out from blocks reserved in the filer: the file
// producerIDDir/next holds the first id no gateway has reserved, and is
// changed under a filer lock, so ids are unique across gateways and
// restarts. A block not used up when a gateway stops is skipped.
const (
	producerIDDir   = "/etc/kafka-gateway/producer-ids"
	producerIDFile  = "next"
	producerIDLock  = "kafka-gateway/producer-ids"
	producerIDBlock = 1000
)

type producerIDs struct {
	reserving turn // one reservation at a time
	mu        sync.Mutex
	next, end int64
}

// NewProducerID implements storage.Backend: the next id of the block
// reserved, a block reserved in the filer first when it is used up.
func (c *Client) NewProducerID(ctx context.Context) (int64, error) {
	if id, ok := c.pids.take(); ok {
		return id, nil
	}
	if err := c.pids.reserving.take(ctx); err != nil {
		return -1, err
	}
	defer c.pids.reserving.give()
	if id, ok := c.pids.take(); ok { // reserved while this one waited
		return id, nil
	}
	first, err := c.reserveProducerIDs(ctx, producerIDBlock)
	if err != nil {
		return -1, err
	}
	c.pids.mu.Lock()
	defer c.pids.mu.Unlock()
	c.pids.next, c.pids.end = first+1, first+producerIDBlock
	return first, nil
}

// take hands out the next id reserved, if one is left.
func (p *producerIDs) take() (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.end {
		return -1, false
	}
	p.next++
	return p.next - 1, true
}

func (c *Client) reserveProducerIDs(ctx context.Context, n int64) (int64, error) {
	filer, err := c.filerAddr(ctx)
	if err != nil {
		return -1, err
	}
	host, _ := os.Hostname()
	lock := cluster.NewLockClient(c.opts.Security.DialOption, filer).NewShortLivedLock(c.l.named(producerIDLock), fmt.Sprintf("kafka-gateway@%s/%d", host, os.Getpid()))
	if lock == nil {
		return -1, fmt.Errorf("%w: cannot take the filer lock %s", ErrUnavailable, producerIDLock)
	}
	defer lock.StopShortLivedLock() //nolint:errcheck // it expires anyway
	return claimProducerIDs(ctx, c, n)
}

// claimProducerIDs moves the next free id n on and returns where it was.
// The lock (5 s, not renewed) keeps the gateways from doing so at once;
// the write is conditional on the file as read, for a write that lands
// after the lock expired (slow, or sent before a cut) over another
// gateway's reservation, which would hand its ids out again.
func claimProducerIDs(ctx context.Context, files filerfs.VersionedFiles, n int64) (int64, error) {
	for attempt := 1; ; attempt++ {
		var first int64
		data, version, err := files.ReadFileVersion(ctx, producerIDDir, producerIDFile)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return -1, err
		default:
			if first, err = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err != nil || first < 0 {
				return -1, fmt.Errorf("%s/%s holds %q, not a producer id", producerIDDir, producerIDFile, data)
			}
		}
		_, err = files.WriteFileIf(ctx, producerIDDir, producerIDFile, []byte(strconv.FormatInt(first+n, 10)), version)
		switch {
		case err == nil:
			return first, nil
		case !errors.Is(err, filerfs.ErrChanged) || attempt == 5:
			return -1, err
		}
	}
}
