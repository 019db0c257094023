package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
)

// FormatVersion is the version of the cluster's state this gateway
// reads and writes: what it keeps in the filer (topics' segments and
// write-ahead log, groups, transactions, users, ACLs, links, ...) and
// what gateways ask of one another. A change an older gateway would
// misread raises it; the cluster's state then records the highest
// version a gateway wrote, and older gateways refuse to join.
//
// 1: the state as of the first stated version (2026-12).
const FormatVersion = 1

// formatFile keeps the cluster's format: {"version": N}.
const formatFile = "format"

// ErrNewerFormat is a cluster whose state is of a newer format than this
// gateway understands, or whose format file it cannot read: it must not
// join either.
var ErrNewerFormat = errors.New("the cluster's state is of a newer format")

type format struct {
	Version int `json:"version"`
}

// EnsureFormat checks the cluster's format against FormatVersion: an
// older one (or none: a new cluster, or one of gateways from before the
// format was stated) is raised to this gateway's, a newer one is
// ErrNewerFormat.
func EnsureFormat(ctx context.Context, files filerfs.VersionedFiles) (int, error) {
	for range 3 {
		data, version, err := files.ReadFileVersion(ctx, idDir, formatFile)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, err
		}
		var f format
		if err == nil {
			if jerr := json.Unmarshal(data, &f); jerr != nil {
				return 0, fmt.Errorf("%w, or unreadable: %s/%s: %v", ErrNewerFormat, idDir, formatFile, jerr)
			}
			if f.Version > FormatVersion {
				return f.Version, fmt.Errorf("%w: version %d, and this gateway reads and writes version %d: upgrade it to a release of format %d or later", ErrNewerFormat, f.Version, FormatVersion, f.Version)
			}
			if f.Version == FormatVersion {
				return f.Version, nil
			}
		}
		ours, _ := json.Marshal(format{Version: FormatVersion})
		if _, err := files.WriteFileIf(ctx, idDir, formatFile, ours, version); err == nil {
			return FormatVersion, nil
		} else if !errors.Is(err, filerfs.ErrChanged) {
			return 0, err
		}
	}
	return 0, errors.New("the cluster's format changes as it is read")
}
