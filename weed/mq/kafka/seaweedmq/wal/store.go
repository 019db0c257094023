package wal

import (
	"context"
	"errors"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
)

// Store is where logs are kept: files of the SeaweedFS filer whose chunks
// are on the volume servers, written a chunk at a time. The SeaweedMQ
// adapter implements it over the filer and volume servers, the package's
// tests in memory.
type Store interface {
	// Assign reserves file ids on a volume server for chunks of files
	// under dir, kept with replication's copies: about count of them,
	// each expected to hold about size bytes.
	Assign(ctx context.Context, dir string, replication Replication, count int, size uint64) (Assignment, error)
	// Upload stores a chunk under a file id reserved by a.
	Upload(ctx context.Context, a Assignment, fid string, data []byte) error
	// Save creates a file's entry, its chunks listed in it, or replaces
	// it, only if the file holds exactly e's first prior chunks (none
	// and no file when prior is 0); ErrChanged if it does not. A save
	// that timed out and lands late (sent before a cut, say) then never
	// replaces the saves after it, nor makes the filer delete their
	// chunks.
	Save(ctx context.Context, dir string, e *filer_pb.Entry, prior int) error
	// List returns the entries of dir, files and directories (none if
	// dir does not exist).
	List(ctx context.Context, dir string) ([]*filer_pb.Entry, error)
	// ReadChunk reads a chunk; the error wraps ErrMissing if no volume
	// server holds it.
	ReadChunk(ctx context.Context, fid string) ([]byte, error)
	// Remove deletes a file with its chunks; a file already gone is no
	// error.
	Remove(ctx context.Context, dir, name string) error
}

// Assignment is a run of file ids reserved on one volume server.
type Assignment struct {
	// FileID is the first id; the others follow it (the needle key
	// counts up).
	FileID string
	Count  int
	URL    string
	// Auth signs the writes (then only FileID may be written); Fsync
	// asks the volume server to sync each write.
	Auth  string
	Fsync bool
}

// ErrChanged is a Save refused: the file is not as the log last saved it.
var ErrChanged = errors.New("the log file changed since the log saved it")

// ErrMissing is a chunk no volume server holds.
var ErrMissing = errors.New("chunk not found")
