package seaweedmq

// Reading the write-ahead logs back, of this gateway or any other: the
// files of a log, the partitions each names, their frames chunk by chunk.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	util_http "github.com/seaweedfs/seaweedfs/weed/util/http"
)

// walLogFile is a log file read back, of any gateway.
type walLogFile struct {
	name    string
	entry   *filer_pb.Entry
	batches []walBatch
}

func (f *walLogFile) ends() map[string]int64 {
	ends := map[string]int64{}
	for _, b := range f.batches {
		ends[b.dir] = max(ends[b.dir], b.base+int64(b.n))
	}
	return ends
}

// oldWALFiles returns the files of a log with what they hold, from their
// entries' attribute, or read where it is missing.
func (c *Client) oldWALFiles(ctx context.Context, dir string) ([]*walFile, error) {
	entries, err := c.listWALDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	var out []*walFile
	for _, e := range entries {
		ends, ok := decodeWALEnds(e.Extended[walPartitionsAttr])
		if !ok {
			lf, err := c.readWALFile(ctx, dir, e)
			if err != nil {
				return nil, err
			}
			ends = lf.ends()
		}
		out = append(out, &walFile{name: e.Name, entry: e, ends: ends})
	}
	return out, nil
}

// listWALDir lists the files of one gateway's log.
func (c *Client) listWALDir(ctx context.Context, dir string) ([]*filer_pb.Entry, error) {
	var entries []*filer_pb.Entry
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		entries = entries[:0]
		return filer_pb.SeaweedList(ctx, fc, dir, "", func(e *filer_pb.Entry, _ bool) error {
			if !e.IsDirectory && len(e.Chunks) > 0 {
				entries = append(entries, e)
			}
			return nil
		}, "", false, 1<<31-1)
	})
	if errors.Is(err, filer_pb.ErrNotFound) {
		return nil, nil
	}
	return entries, err
}

// readWALDirFor reads the files of one gateway's log that may hold records
// of a partition under one of its log keys parts from offset from on (all
// files with none).
func (c *Client) readWALDirFor(ctx context.Context, dir string, parts []string, from int64) ([]*walLogFile, error) {
	entries, err := c.listWALDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name] = true
	}
	c.walCache.forgetMissing(dir, names)
	var out []*walLogFile
	for _, e := range entries {
		if ends, ok := decodeWALEnds(e.Extended[walPartitionsAttr]); ok && len(parts) > 0 {
			held := false
			for _, part := range parts {
				held = held || ends[part] > from
			}
			if !held {
				continue
			}
		}
		f, err := c.readWALFile(ctx, dir, e)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// readWALFile reads one log file, from the cache when it has not grown.
func (c *Client) readWALFile(ctx context.Context, dir string, e *filer_pb.Entry) (*walLogFile, error) {
	key := fmt.Sprintf("%s/%s@%d", dir, e.Name, filer.FileSize(e))
	c.walCache.mu.Lock()
	if f, ok := c.walCache.files[key]; ok {
		c.walCache.mu.Unlock()
		return f, nil
	}
	c.walCache.mu.Unlock()
	data, err := c.readWALChunks(ctx, e)
	if err != nil {
		return nil, fmt.Errorf("%w: read write-ahead log %s/%s: %v", ErrUnavailable, dir, e.Name, err)
	}
	batches, err := parseWALFrames(data)
	if err != nil {
		// A frame that did not arrive whole was never committed: its
		// batches were not acknowledged.
		glog.Warningf("kafka write-ahead log %s/%s: %v; using the %d batches before it", dir, e.Name, err, len(batches))
	}
	f := &walLogFile{name: e.Name, entry: e, batches: batches}
	c.walCache.mu.Lock()
	defer c.walCache.mu.Unlock()
	if c.walCache.files == nil {
		c.walCache.files = map[string]*walLogFile{}
	}
	// Files that grew or went away are dropped once a newer read is kept.
	for k := range c.walCache.files {
		if strings.HasPrefix(k, dir+"/"+e.Name+"@") {
			delete(c.walCache.files, k)
		}
	}
	c.walCache.files[key] = f
	return f, nil
}

// readWALChunks reads a log file's chunks in order. Its last chunk may be
// missing (a gateway died between the filer update and the upload of its
// last commit, which was never acknowledged): that one is left out. Any
// other chunk that cannot be read is an error, to be tried again.
func (c *Client) readWALChunks(ctx context.Context, e *filer_pb.Entry) ([]byte, error) {
	chunks := append([]*filer_pb.FileChunk(nil), e.Chunks...)
	sort.Slice(chunks, func(i, j int) bool { return chunks[i].Offset < chunks[j].Offset })
	urls := map[string][]string{}
	var out []byte
	for i, ch := range chunks {
		vid, _, _ := strings.Cut(ch.FileId, ",")
		if _, ok := urls[vid]; !ok {
			err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
				resp, err := fc.LookupVolume(ctx, &filer_pb.LookupVolumeRequest{VolumeIds: []string{vid}})
				if err != nil {
					return err
				}
				for _, l := range resp.LocationsMap[vid].GetLocations() {
					urls[vid] = append(urls[vid], l.Url)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
		data, missing, err := fetchChunk(ctx, urls[vid], ch.FileId)
		if missing && i == len(chunks)-1 {
			break
		}
		if err != nil {
			return nil, err
		}
		out = append(out, data...)
	}
	return out, nil
}

// fetchChunk reads a chunk from the first of its volume servers that has
// it; missing says every one answered that it has no such file.
func fetchChunk(ctx context.Context, urls []string, fid string) (data []byte, missing bool, err error) {
	if len(urls) == 0 {
		return nil, false, fmt.Errorf("no volume server holds %s", fid)
	}
	missing = true
	for _, u := range urls {
		req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+u+"/"+fid, nil)
		if rerr != nil {
			return nil, false, rerr
		}
		resp, derr := util_http.GetGlobalHttpClient().Do(req)
		if derr != nil {
			missing, err = false, derr
			continue
		}
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusNotFound:
			err = fmt.Errorf("%s: not found on %s", fid, u)
		case resp.StatusCode != http.StatusOK || rerr != nil:
			missing, err = false, fmt.Errorf("%s on %s: %s %v", fid, u, resp.Status, rerr)
		default:
			return body, false, nil
		}
	}
	return nil, missing, err
}

// walCache keeps log files read back, by name and size.
type walCache struct {
	mu    sync.Mutex
	files map[string]*walLogFile
}

// forgetMissing drops cached files of dir not in names.
func (wc *walCache) forgetMissing(dir string, names map[string]bool) {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	for k, f := range wc.files {
		if strings.HasPrefix(k, dir+"/") && !names[f.name] {
			delete(wc.files, k)
		}
	}
}
