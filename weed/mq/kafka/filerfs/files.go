// Package filerfs is the gateway's view of the SeaweedFS filer as a store of
// small files: group state and offsets, transactional ids, producer state,
// topic settings, ACLs, users and the gateways' membership all live in such
// files. It holds the interface (implemented over the filer by package
// seaweedmq, in memory by package filerfstest for unit tests) and the escape
// that turns Kafka names into file names.
package filerfs

import (
	"context"
	"errors"
)

// File is one entry of a directory listing.
type File struct {
	Name string
	Dir  bool
	Data []byte
	// Version is the file's version, as VersionedFiles.WriteFileIf takes
	// it (empty for a directory).
	Version string
}

// Files is small-file storage: the SeaweedFS filer. A missing file reads as
// fs.ErrNotExist.
type Files interface {
	ReadFile(ctx context.Context, dir, name string) ([]byte, error)
	WriteFile(ctx context.Context, dir, name string, data []byte) error
	ListFiles(ctx context.Context, dir string) ([]File, error)
	Remove(ctx context.Context, dir, name string) error
}

// VersionedFiles are Files whose writes can be conditional: what only one
// gateway may write (a group's offsets and state, a transactional id's
// state) is written only if the file is still at the version its writer
// last read or wrote. A gateway that lost a group, paused or slow, and acts
// on what it held then, cannot overwrite what the group's new coordinator
// wrote since (the filer checks, atomically with the write).
type VersionedFiles interface {
	Files
	// ReadFileVersion is ReadFile with the file's version.
	ReadFileVersion(ctx context.Context, dir, name string) ([]byte, string, error)
	// WriteFileIf writes the file if it is at version ("": if it does
	// not exist) and returns its new version; ErrChanged if it is not.
	WriteFileIf(ctx context.Context, dir, name string, data []byte, version string) (string, error)
	// RemoveIf removes the file if it is at version, as WriteFileIf
	// writes it; ErrChanged if it is at another. A missing file is
	// removed already. A directory (version "") is removed only if it
	// is empty: ErrChanged if it holds anything.
	RemoveIf(ctx context.Context, dir, name, version string) error
}

// ErrChanged is a conditional write's refusal: the file changed since its
// writer read it (another gateway wrote it).
var ErrChanged = errors.New("changed since it was read")
