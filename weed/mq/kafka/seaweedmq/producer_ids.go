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
	mu        sync.Mutex
	next, end int64
}

// NewProducerID implements storage.Backend.
func (c *Client) NewProducerID(ctx context.Context) (int64, error) {
	c.pids.mu.Lock()
	defer c.pids.mu.Unlock()
	if c.pids.next >= c.pids.end {
		first, err := c.reserveProducerIDs(ctx, producerIDBlock)
		if err != nil {
			return -1, err
		}
		c.pids.next, c.pids.end = first, first+producerIDBlock
	}
	id := c.pids.next
	c.pids.next++
	return id, nil
}

func (c *Client) reserveProducerIDs(ctx context.Context, n int64) (int64, error) {
	filer, err := c.filerAddr(ctx)
	if err != nil {
		return -1, err
	}
	host, _ := os.Hostname()
	lock := cluster.NewLockClient(c.opts.DialOption, filer).NewShortLivedLock(producerIDLock, fmt.Sprintf("kafka-gateway@%s/%d", host, os.Getpid()))
	if lock == nil {
		return -1, fmt.Errorf("%w: cannot take the filer lock %s", ErrUnavailable, producerIDLock)
	}
	defer lock.StopShortLivedLock() //nolint:errcheck // it expires anyway
	var first int64
	data, err := c.ReadFile(ctx, producerIDDir, producerIDFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return -1, err
	default:
		if first, err = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err != nil || first < 0 {
			return -1, fmt.Errorf("%s/%s holds %q, not a producer id", producerIDDir, producerIDFile, data)
		}
	}
	if err := c.WriteFile(ctx, producerIDDir, producerIDFile, []byte(strconv.FormatInt(first+n, 10))); err != nil {
		return -1, err
	}
	return first, nil
}
