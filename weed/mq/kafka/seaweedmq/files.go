package seaweedmq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/s3api/s3_constants"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
)

// The small files the gateway keeps in the filer (committed offsets, group
// state) are written whole, with their content inside the filer entry: a
// write is one filer call that replaces the entry, so a reader sees the old
// file or the new one, never a mix.

var _ filerfs.VersionedFiles = (*Client)(nil)

// A file's version is a token the gateway writes with it, in the attribute
// the filer's conditional writes compare as the entry's ETag: a write
// names the version its writer last read or wrote, and the filer refuses it
// (atomically, under its lock of the path) if the file has another.
const versionAttr = s3_constants.ExtETagKey

// fileVersion is an entry's version: "v:" and its ETag as the filer's
// conditions see it: the token, or for a file written before versions were
// kept what the filer takes instead (its MD5, its chunks, or nothing).
func fileVersion(e *filer_pb.Entry) string {
	switch {
	case len(e.Extended[versionAttr]) > 0:
		return "v:" + strings.Trim(string(e.Extended[versionAttr]), `"`)
	case e.Attributes != nil && len(e.Attributes.Md5) > 0:
		return fmt.Sprintf("v:%x", e.Attributes.Md5)
	case len(e.Chunks) > 0:
		return "v:" + strings.Trim(filer.ETagChunks(e.Chunks), `"`)
	}
	return "v:"
}

// ReadFileVersion implements filerfs.VersionedFiles.
func (c *Client) ReadFileVersion(ctx context.Context, dir, name string) ([]byte, string, error) {
	dir = c.l.at(dir)
	var data []byte
	var version string
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		resp, err := filer_pb.LookupEntry(ctx, fc, &filer_pb.LookupDirectoryEntryRequest{Directory: dir, Name: name})
		if err != nil {
			return err
		}
		data, version = resp.Entry.Content, fileVersion(resp.Entry)
		return nil
	})
	if errors.Is(err, filer_pb.ErrNotFound) {
		return nil, "", fs.ErrNotExist
	}
	return data, version, err
}

// errPrecondition is a conditional create the filer refused: the entry
// is not as the condition says.
var errPrecondition = errors.New("precondition failed")

// createIf creates or replaces dir's entry e if cond holds, which the
// filer checks atomically with the write; errPrecondition if it does not.
func createIf(ctx context.Context, fc filer_pb.SeaweedFilerClient, dir string, e *filer_pb.Entry, cond *filer_pb.WriteCondition_Clause) error {
	resp, err := fc.CreateEntry(ctx, &filer_pb.CreateEntryRequest{
		Directory: dir, Entry: e,
		Condition: &filer_pb.WriteCondition{Clauses: []*filer_pb.WriteCondition_Clause{cond}},
	})
	switch {
	case err != nil:
		return err
	case resp.ErrorCode == filer_pb.FilerError_PRECONDITION_FAILED:
		return errPrecondition
	case resp.Error != "":
		return errors.New(resp.Error)
	}
	return nil
}

// WriteFileIf implements filerfs.VersionedFiles: one conditional filer call.
func (c *Client) WriteFileIf(ctx context.Context, dir, name string, data []byte, version string) (string, error) {
	dir = c.l.at(dir)
	var token [12]byte
	rand.Read(token[:]) //nolint:errcheck // crypto/rand does not fail
	next := hex.EncodeToString(token[:])
	clause := &filer_pb.WriteCondition_Clause{Kind: filer_pb.WriteCondition_IF_NOT_EXISTS}
	if was, ok := strings.CutPrefix(version, "v:"); ok {
		clause = &filer_pb.WriteCondition_Clause{Kind: filer_pb.WriteCondition_IF_ETAG_MATCH, Etags: []string{was}}
	}
	now := clock.Now().Unix()
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		err := createIf(ctx, fc, dir, &filer_pb.Entry{
			Name:       name,
			Content:    data,
			Attributes: &filer_pb.FuseAttributes{Mtime: now, Crtime: now, FileMode: 0o644, FileSize: uint64(len(data))},
			Extended:   map[string][]byte{versionAttr: []byte(next)},
		}, clause)
		if errors.Is(err, errPrecondition) {
			return filerfs.ErrChanged
		}
		return err
	})
	if err != nil {
		// A write that landed though its answer did not come back (a
		// timeout, a connection lost) holds this write's own token:
		// it is this write, not another gateway's.
		lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, v, lerr := c.ReadFileVersion(lctx, dir, name); lerr == nil && v == "v:"+next {
			return v, nil
		}
		return "", err
	}
	return "v:" + next, nil
}

// RemoveIf implements filerfs.VersionedFiles. The filer deletes under a
// condition on extended attributes alone: the file is looked up, and the
// delete names the version token it holds (none for a file written before
// tokens were kept), which every conditional write replaces.
func (c *Client) RemoveIf(ctx context.Context, dir, name, version string) error {
	dir = c.l.at(dir)
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		resp, err := filer_pb.LookupEntry(ctx, fc, &filer_pb.LookupDirectoryEntryRequest{Directory: dir, Name: name})
		if err != nil {
			return err
		}
		if resp.Entry.IsDirectory {
			// Removed only empty: the filer refuses a directory
			// with entries when not asked to recurse.
			if version != "" {
				return filerfs.ErrChanged
			}
			del, err := fc.DeleteEntry(ctx, &filer_pb.DeleteEntryRequest{Directory: dir, Name: name, IsDeleteData: true})
			switch {
			case err != nil:
				return err
			case del.Error != "":
				return fmt.Errorf("%w: %s", filerfs.ErrChanged, del.Error)
			}
			return nil
		}
		if fileVersion(resp.Entry) != version {
			return filerfs.ErrChanged
		}
		token := resp.Entry.Extended[versionAttr]
		if token == nil {
			token = []byte{}
		}
		del, err := fc.DeleteEntry(ctx, &filer_pb.DeleteEntryRequest{
			Directory: dir, Name: name, IsDeleteData: true,
			ExpectedExtended: map[string][]byte{versionAttr: token},
		})
		switch {
		case status.Code(err) == codes.FailedPrecondition:
			return filerfs.ErrChanged
		case err != nil:
			return err
		case del.Error != "":
			return errors.New(del.Error)
		}
		return nil
	})
	if errors.Is(err, filer_pb.ErrNotFound) {
		return nil
	}
	return err
}

// ReadFile implements filerfs.Files; a missing file is fs.ErrNotExist.
func (c *Client) ReadFile(ctx context.Context, dir, name string) ([]byte, error) {
	dir = c.l.at(dir)
	var data []byte
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		resp, err := filer_pb.LookupEntry(ctx, fc, &filer_pb.LookupDirectoryEntryRequest{Directory: dir, Name: name})
		if err != nil {
			return err
		}
		data = resp.Entry.Content
		return nil
	})
	if errors.Is(err, filer_pb.ErrNotFound) {
		return nil, fs.ErrNotExist
	}
	return data, err
}

// WriteFile implements filerfs.Files: it creates or replaces the file, and
// the directories above it, in one filer call.
func (c *Client) WriteFile(ctx context.Context, dir, name string, data []byte) error {
	dir = c.l.at(dir)
	now := clock.Now().Unix()
	return c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		return filer_pb.CreateEntry(ctx, fc, &filer_pb.CreateEntryRequest{
			Directory: dir,
			Entry: &filer_pb.Entry{
				Name:       name,
				Content:    data,
				Attributes: &filer_pb.FuseAttributes{Mtime: now, Crtime: now, FileMode: 0o644, FileSize: uint64(len(data))},
			},
		})
	})
}

// ListFiles implements filerfs.Files: the entries of dir with the content of
// its files; a missing directory has none.
func (c *Client) ListFiles(ctx context.Context, dir string) ([]filerfs.File, error) {
	dir = c.l.at(dir)
	var out []filerfs.File
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		out = out[:0]
		return filer_pb.SeaweedList(ctx, fc, dir, "", func(e *filer_pb.Entry, _ bool) error {
			f := filerfs.File{Name: e.Name, Dir: e.IsDirectory, Data: e.Content}
			if !e.IsDirectory {
				f.Version = fileVersion(e)
			}
			out = append(out, f)
			return nil
		}, "", false, 1<<31-1)
	})
	if errors.Is(err, filer_pb.ErrNotFound) {
		return nil, nil
	}
	return out, err
}

// Remove implements filerfs.Files: it deletes a file or a directory with
// everything in it; a missing one is not an error.
func (c *Client) Remove(ctx context.Context, dir, name string) error {
	dir = c.l.at(dir)
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		return filer_pb.DoRemove(ctx, fc, dir, name, true, true, true, false, nil)
	})
	if errors.Is(err, filer_pb.ErrNotFound) {
		return nil
	}
	return err
}
