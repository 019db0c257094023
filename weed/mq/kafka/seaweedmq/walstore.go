package seaweedmq

// The write-ahead log's store: files of the filer whose chunks go straight
// to the volume servers, and the log's question of whether a file may go.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/operation"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/security"
	util_http "github.com/seaweedfs/seaweedfs/weed/util/http"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/wal"
)

// walStore is wal.Store over the cluster's filer and volume servers.
type walStore struct {
	c *Client
}

var _ wal.Store = (*walStore)(nil)

func (s *walStore) Assign(ctx context.Context, dir string, r wal.Replication, count int, size uint64) (wal.Assignment, error) {
	replication, err := s.c.replicationNow(ctx, r)
	if err != nil {
		return wal.Assignment{}, err
	}
	return s.c.assign(ctx, &filer_pb.AssignVolumeRequest{Count: int32(count), Path: s.c.l.at(dir), Replication: replication, ExpectedDataSize: size})
}

// assign asks the filer for file ids on a volume server, within ctx.
func (c *Client) assign(ctx context.Context, req *filer_pb.AssignVolumeRequest) (wal.Assignment, error) {
	var resp *filer_pb.AssignVolumeResponse
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		var err error
		resp, err = fc.AssignVolume(ctx, req)
		if err == nil && resp.Error != "" {
			err = errors.New(resp.Error)
		}
		return err
	})
	if err != nil {
		c.lookAgain()
		return wal.Assignment{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return wal.Assignment{FileID: resp.FileId, Count: int(resp.Count), URL: c.volumeHost(resp.Location), Auth: resp.Auth, Fsync: resp.Fsync}, nil
}

func (s *walStore) Upload(ctx context.Context, a wal.Assignment, fid string, data []byte) error {
	_, err := s.c.upload(ctx, a, fid, data, "application/octet-stream")
	return err
}

// upload writes data as chunk fid where a assigned it, once, within ctx
// (SeaweedFS's own retrying upload runs on past its caller's deadline).
func (c *Client) upload(ctx context.Context, a wal.Assignment, fid string, data []byte, mime string) (*operation.UploadResult, error) {
	url, jwt, err := c.chunkUpload(ctx, a.URL, fid, security.EncodedJwt(a.Auth))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if a.Fsync {
		url = util_http.AppendQueryParameter(url, "fsync", "true")
	}
	uploader, err := operation.NewUploader()
	if err != nil {
		return nil, err
	}
	res, err := uploader.UploadData(ctx, data, &operation.UploadOption{
		UploadUrl: url, Jwt: jwt, MaxAttempts: 1, MimeType: mime,
	})
	if err == nil && res.Error != "" {
		err = errors.New(res.Error)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return res, nil
}

func (s *walStore) Save(ctx context.Context, dir string, e *filer_pb.Entry, prior int) error {
	cond := &filer_pb.WriteCondition_Clause{Kind: filer_pb.WriteCondition_IF_NOT_EXISTS}
	if prior > 0 {
		cond = &filer_pb.WriteCondition_Clause{Kind: filer_pb.WriteCondition_IF_CHUNKS_EQUAL}
		for _, ch := range e.Chunks[:prior] {
			cond.Fids = append(cond.Fids, ch.GetFileIdString())
		}
	}
	return s.c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		err := createIf(ctx, fc, s.c.l.at(dir), e, cond)
		if errors.Is(err, errPrecondition) {
			return wal.ErrChanged
		}
		return err
	})
}

func (s *walStore) List(ctx context.Context, dir string) ([]*filer_pb.Entry, error) {
	var entries []*filer_pb.Entry
	err := s.c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		entries = entries[:0]
		return filer_pb.SeaweedList(ctx, fc, s.c.l.at(dir), "", func(e *filer_pb.Entry, _ bool) error {
			entries = append(entries, e)
			return nil
		}, "", false, 1<<31-1)
	})
	if errors.Is(err, filer_pb.ErrNotFound) {
		return nil, nil
	}
	return entries, err
}

func (s *walStore) Remove(ctx context.Context, dir, name string) error {
	err := s.c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		return filer_pb.DoRemove(ctx, fc, s.c.l.at(dir), name, true, false, true, false, nil)
	})
	if errors.Is(err, filer_pb.ErrNotFound) {
		return nil
	}
	return err
}

// ReadChunk reads a chunk from the first of its volume servers (or the
// filer proxying them) that has it, with the token the cluster asks for.
func (s *walStore) ReadChunk(ctx context.Context, fid string) ([]byte, error) {
	urls, err := s.c.chunkURLs(ctx, fid)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("%w: no volume server holds %s", ErrUnavailable, fid)
	}
	jwt := filer.ChunkReadJwt(urls, fid)
	missing := true
	for _, u := range urls {
		req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if rerr != nil {
			return nil, rerr
		}
		if jwt != "" {
			req.Header.Set("Authorization", security.BearerPrefix+jwt)
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
			err = fmt.Errorf("%s: not found at %s", fid, u)
		case resp.StatusCode == http.StatusUnauthorized:
			// Not a missing chunk: a token the server does not take.
			missing, err = false, fmt.Errorf("%w: %s refuses the gateway's read of %s (%s): is jwt.signing.read.key (or jwt.filer_signing.read.key) of the gateway's security.toml the cluster's?", ErrSecurity, u, fid, body)
		case resp.StatusCode != http.StatusOK || rerr != nil:
			missing, err = false, fmt.Errorf("%s at %s: %s %v", fid, u, resp.Status, rerr)
		default:
			return body, nil
		}
	}
	s.c.forgetVolume(fid)
	if missing {
		return nil, fmt.Errorf("%w: %w: %v", ErrUnavailable, wal.ErrMissing, err)
	}
	return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
}

// walCovered is the log's wal.Options.Covered: whether a partition's
// segments hold every offset below end, or (orGone) it belongs to no
// current topic.
func (c *Client) walCovered(ctx context.Context, part string, end int64, orGone bool) bool {
	dir, _ := wal.SplitPartKey(part)
	if st, err := c.flushed(ctx, dir, false); err == nil && st.end >= end {
		return true
	}
	return orGone && c.partitionGone(ctx, part)
}

// partitionGone reports whether a partition's name in the logs belongs to
// no current topic: its topic was deleted or created anew (the partition
// dirs of a topic's current version are created at its first flush, so a
// missing dir says nothing).
func (c *Client) partitionGone(ctx context.Context, part string) bool {
	dir, gen := wal.SplitPartKey(part)
	name := c.l.topicOf(dir)
	if name == "" {
		return false
	}
	e, err := c.topic(ctx, name)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return true
	}
	if err != nil {
		return false
	}
	for _, a := range e.parts {
		if c.partitionDir(name, a) == dir && (gen < 0 || a.Partition.UnixTimeNs == gen) {
			return false
		}
	}
	return true
}
