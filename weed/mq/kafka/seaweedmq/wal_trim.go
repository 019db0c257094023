package seaweedmq

// Trimming the write-ahead log: a file is removed once the partitions'
// segments hold everything in it, or its topic is gone.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// trimLoop removes log files whose records are all in the segments. It
// starts with the files an earlier run of this gateway left.
func (w *wal) trimLoop() {
	w.adoptOldFiles()
	t := time.NewTicker(walTrimEvery)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
			metrics.Guard("WALTrim", w.trim) //nolint:errcheck // logged and counted; trimmed again next round
		}
	}
}

// adoptOldFiles reads the files left by an earlier run of this gateway, so
// that they are trimmed like the ones it writes.
func (w *wal) adoptOldFiles() {
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		old, err := w.c.oldWALFiles(ctx, w.dir)
		cancel()
		if err == nil {
			w.filesMu.Lock()
			w.files = append(old, w.files...)
			w.filesMu.Unlock()
			return
		}
		if attempt%30 == 0 {
			glog.Warningf("kafka write-ahead log %s: reading the files of an earlier run: %v", w.dir, err)
		}
		select {
		case <-w.done:
			return
		case <-time.After(2 * time.Second):
		}
	}
}

// trim removes the closed files that the segments cover.
func (w *wal) trim() {
	w.filesMu.Lock()
	if !w.committing && w.cur != nil && time.Since(w.cur.created) > walFileAge {
		w.files = append(w.files, w.cur) // no commit came to close it
		w.cur = nil
	}
	files := append([]*walFile(nil), w.files...)
	w.filesMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	covered := map[string]bool{}
	var removed []*walFile
	for _, f := range files {
		if !w.c.walFileCovered(ctx, f, covered) {
			continue
		}
		err := w.c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
			return filer_pb.DoRemove(ctx, fc, w.dir, f.name, true, false, true, false, nil)
		})
		if err != nil && !errors.Is(err, filer_pb.ErrNotFound) {
			glog.V(1).Infof("kafka write-ahead log %s: removing %s: %v", w.dir, f.name, err)
			break
		}
		removed = append(removed, f)
	}
	if len(removed) == 0 {
		return
	}
	gone := map[*walFile]bool{}
	for _, f := range removed {
		gone[f] = true
	}
	w.filesMu.Lock()
	kept := w.files[:0]
	for _, f := range w.files {
		if !gone[f] {
			kept = append(kept, f)
		}
	}
	w.files = kept
	w.filesMu.Unlock()
	glog.V(2).Infof("kafka write-ahead log %s: removed %d files the segments cover", w.dir, len(removed))
}

// walGoneAfter is how old a log file must be before its uncovered
// partitions are checked for having gone (deleted or created anew): a live
// partition's file is covered a flush interval after it was written, so
// younger files need no topic lookups.
const walGoneAfter = time.Minute

// walFileCovered reports whether the segments hold everything a log file
// holds, or (for a file older than walGoneAfter) its partitions are gone.
// known caches the answers by partition dir and end.
func (c *Client) walFileCovered(ctx context.Context, f *walFile, known map[string]bool) bool {
	old := time.Since(f.created) > walGoneAfter
	for part, end := range f.ends {
		key := fmt.Sprintf("%s@%d@%v", part, end, old)
		ok, seen := known[key]
		if !seen {
			dir, _ := splitWALPartKey(part)
			ok = c.segmentsCover(ctx, dir, end) || old && c.partitionGone(ctx, part)
			known[key] = ok
		}
		if !ok {
			return false
		}
	}
	return true
}

// segmentsCover reports whether a partition's segments hold every offset
// below end.
func (c *Client) segmentsCover(ctx context.Context, dir string, end int64) bool {
	st, err := c.flushed(ctx, dir, false)
	return err == nil && st.end >= end
}

// partitionGone reports whether a partition's log key belongs to no
// current topic: its topic was deleted or created anew (the partition dirs
// of a topic's current version are created at its first flush, so a
// missing dir says nothing).
func (c *Client) partitionGone(ctx context.Context, part string) bool {
	dir, gen := splitWALPartKey(part)
	rest, ok := strings.CutPrefix(dir, filer.TopicsDir+"/"+Namespace+"/")
	name, _, _ := strings.Cut(rest, "/")
	if !ok || name == "" {
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
		if partitionDir(name, a) == dir && (gen < 0 || a.Partition.UnixTimeNs == gen) {
			return false
		}
	}
	return true
}

// walPartKey is a partition's name in the write-ahead log: its directory
// and, after '@', its topic's creation time in nanoseconds.
func walPartKey(dir string, created int64) string {
	return dir + "@" + strconv.FormatInt(created, 10)
}

// splitWALPartKey undoes walPartKey; gen is -1 for a bare directory (the
// logs of earlier versions).
func splitWALPartKey(part string) (dir string, gen int64) {
	dir, g, ok := strings.Cut(part, "@")
	if !ok {
		return part, -1
	}
	n, err := strconv.ParseInt(g, 10, 64)
	if err != nil {
		return part, -1
	}
	return dir, n
}
