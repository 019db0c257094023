package seaweedmq

// Where the gateway reads and writes chunks: the volume servers at their
// address inside the cluster or at their public one, or the filer's HTTP
// port as a proxy (Options.VolumeAccess). Every read carries the token
// the cluster's security.toml asks for: a volume server's read JWT, or
// the filer's when it proxies.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/operation"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/security"
	util_http "github.com/seaweedfs/seaweedfs/weed/util/http"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/wal"
)

// volumes caches the servers of the volumes the gateway reads from.
type volumes struct {
	mu    sync.Mutex
	hosts map[string][]string // volume id → its servers' addresses, as last looked up
}

// volumeHost is the address of a volume server the gateway uses.
func (c *Client) volumeHost(l *filer_pb.Location) string {
	if c.opts.VolumeAccess == AccessPublicURL && l.PublicUrl != "" {
		return l.PublicUrl
	}
	return l.Url
}

// volumeHosts returns the servers of a volume.
func (c *Client) volumeHosts(ctx context.Context, vid string) ([]string, error) {
	c.vols.mu.Lock()
	hosts, ok := c.vols.hosts[vid]
	c.vols.mu.Unlock()
	if ok {
		return hosts, nil
	}
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		resp, err := fc.LookupVolume(ctx, &filer_pb.LookupVolumeRequest{VolumeIds: []string{vid}})
		if err != nil {
			return err
		}
		hosts = hosts[:0]
		for _, l := range resp.LocationsMap[vid].GetLocations() {
			hosts = append(hosts, c.volumeHost(l))
		}
		return nil
	})
	if err != nil || len(hosts) == 0 {
		return hosts, err // a volume no server holds is looked up again next time
	}
	c.vols.mu.Lock()
	if c.vols.hosts == nil {
		c.vols.hosts = map[string][]string{}
	}
	c.vols.hosts[vid] = hosts
	c.vols.mu.Unlock()
	return hosts, nil
}

// forgetVolume drops a volume's servers from the cache: they are looked
// up again next time (the volume moved, perhaps).
func (c *Client) forgetVolume(fid string) {
	vid, _, _ := strings.Cut(fid, ",")
	c.vols.mu.Lock()
	delete(c.vols.hosts, vid)
	c.vols.mu.Unlock()
}

// chunkURLs are the URLs a chunk is read from, in the order to try them:
// its volume's servers, or the filer's proxy. filer.ChunkReadJwt gives
// the token each needs.
func (c *Client) chunkURLs(ctx context.Context, fid string) ([]string, error) {
	if c.opts.VolumeAccess == AccessFilerProxy {
		f, err := c.filerAddr(ctx)
		if err != nil {
			return nil, err
		}
		return []string{util_http.ProxyChunkUrl(f.ToHttpAddress(), fid)}, nil
	}
	vid, _, _ := strings.Cut(fid, ",")
	hosts, err := c.volumeHosts(ctx, vid)
	if err != nil {
		return nil, fmt.Errorf("look up volume %s: %w", vid, err)
	}
	urls := make([]string, len(hosts))
	for i, h := range hosts {
		urls[i] = "http://" + h + "/" + fid
	}
	return urls, nil
}

// chunkUpload returns the URL and token of an upload of chunk fid
// assigned to the volume server at host with the filer's token auth.
func (c *Client) chunkUpload(ctx context.Context, host, fid string, auth security.EncodedJwt) (string, security.EncodedJwt, error) {
	if c.opts.VolumeAccess != AccessFilerProxy {
		return "http://" + host + "/" + fid, auth, nil
	}
	f, err := c.filerAddr(ctx)
	if err != nil {
		return "", "", err
	}
	// The filer checks its own token and signs the volume server's.
	return util_http.ProxyChunkUrl(f.ToHttpAddress(), fid), security.EncodedJwt(util_http.JwtForFilerServer(true)), nil
}

// uploadSegment uploads the bytes of a segment file at path as one chunk
// of the topics' collection, kept with replication: assigned and sent
// again on another volume when the one assigned refuses it, at most
// uploadAttempts times, all within ctx.
func (c *Client) uploadSegment(ctx context.Context, path string, r wal.Replication, buf []byte) (string, *operation.UploadResult, error) {
	replication, err := c.replicationNow(ctx, r)
	if err != nil {
		return "", nil, err
	}
	var last error
	for attempt := range uploadAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return "", nil, ctx.Err()
			case <-time.After(time.Duration(attempt) * 250 * time.Millisecond):
			}
		}
		a, err := c.assign(ctx, &filer_pb.AssignVolumeRequest{Count: 1, Collection: "topics", Replication: replication, Path: path, ExpectedDataSize: uint64(len(buf))})
		if err != nil {
			last = err
			continue
		}
		res, err := c.upload(ctx, a, a.FileID, buf, segmentMimeType)
		if err == nil {
			return a.FileID, res, nil
		}
		last = err
		c.lookAgain()
		if ctx.Err() != nil || !operation.ShouldReassignUpload(err) {
			break
		}
	}
	return "", nil, last
}

// uploadAttempts bounds the volumes a segment's upload is tried on.
const uploadAttempts = 3

// readFile reads a file's bytes (a log segment's, a compacted one's) into
// one buffer of its size.
func (c *Client) readFile(ctx context.Context, e *filer_pb.Entry) ([]byte, error) {
	size := int64(filer.FileSize(e))
	if size < 0 || size > 1<<31 {
		return nil, fmt.Errorf("file of %d bytes", size)
	}
	buf := make([]byte, size)
	var r io.Reader
	if len(e.Content) > 0 {
		r = bytes.NewReader(e.Content)
	} else {
		r = filer.NewChunkStreamReaderFromLookup(ctx, c.chunkURLs, e.GetChunks())
	}
	n, err := io.ReadFull(r, buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil // shorter than its size says: what is there
	}
	if err != nil {
		for _, ch := range e.GetChunks() {
			c.forgetVolume(ch.GetFileIdString())
		}
	}
	return buf[:n], err
}

// FilerServes reports whether the filer's HTTP port serves the directory
// dir to anyone, with no token: the URL asked, and whether it answered
// with the listing.
func (c *Client) FilerServes(ctx context.Context, dir string) (string, bool, error) {
	f, err := c.filerAddr(ctx)
	if err != nil {
		return "", false, err
	}
	hc := util_http.GetGlobalHttpClient()
	url := hc.GetHttpScheme() + "://" + f.ToHttpAddress() + dir + "/?limit=1"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return url, false, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return url, false, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16)) //nolint:errcheck // only the status matters
	resp.Body.Close()
	return url, resp.StatusCode == http.StatusOK, nil
}
