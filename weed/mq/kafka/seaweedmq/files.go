package seaweedmq

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
)

// The small files the gateway keeps in the filer (committed offsets, group
// state) are written whole, with their content inside the filer entry: a
// write is one filer call that replaces the entry, so a reader sees the old
// file or the new one, never a mix.

var _ offset.Files = (*Client)(nil)

// ReadFile implements offset.Files; a missing file is fs.ErrNotExist.
func (c *Client) ReadFile(ctx context.Context, dir, name string) ([]byte, error) {
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

// WriteFile implements offset.Files: it creates or replaces the file, and
// the directories above it, in one filer call.
func (c *Client) WriteFile(ctx context.Context, dir, name string, data []byte) error {
	now := time.Now().Unix()
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

// ListFiles implements offset.Files: the entries of dir with the content of
// its files; a missing directory has none.
func (c *Client) ListFiles(ctx context.Context, dir string) ([]offset.File, error) {
	var out []offset.File
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		out = out[:0]
		return filer_pb.SeaweedList(ctx, fc, dir, "", func(e *filer_pb.Entry, _ bool) error {
			out = append(out, offset.File{Name: e.Name, Dir: e.IsDirectory, Data: e.Content})
			return nil
		}, "", false, 1<<31-1)
	})
	if errors.Is(err, filer_pb.ErrNotFound) {
		return nil, nil
	}
	return out, err
}

// Remove implements offset.Files: it deletes a file or a directory with
// everything in it; a missing one is not an error.
func (c *Client) Remove(ctx context.Context, dir, name string) error {
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		return filer_pb.DoRemove(ctx, fc, dir, name, true, true, true, false, nil)
	})
	if errors.Is(err, filer_pb.ErrNotFound) {
		return nil
	}
	return err
}
