package wal

// Trimming the write-ahead log: a file is removed once the partitions'
// segments hold everything in it, or its topic is gone.

import (
	"context"
	"fmt"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
)

// trimLoop removes log files whose records are all in the segments. It
// starts with the files an earlier run of this gateway left.
func (w *Log) trimLoop() {
	w.adoptOldFiles()
	t := time.NewTicker(trimEvery)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
			guard.Run("WALTrim", w.trim) //nolint:errcheck // logged and counted; trimmed again next round
		}
	}
}

// adoptOldFiles reads the files left by an earlier run of this gateway, so
// that they are trimmed like the ones it writes.
func (w *Log) adoptOldFiles() {
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		old, err := w.oldFiles(ctx)
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
func (w *Log) trim() {
	w.filesMu.Lock()
	if !w.committing && w.cur != nil && time.Since(w.cur.created) > fileAge {
		w.files = append(w.files, w.cur) // no commit came to close it
		w.cur = nil
	}
	files := append([]*logFile(nil), w.files...)
	w.filesMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	covered := map[string]bool{}
	var removed []*logFile
	for _, f := range files {
		if !w.fileCovered(ctx, f, covered) {
			continue
		}
		err := w.opts.Store.Remove(ctx, w.dir, f.name)
		if err != nil {
			glog.V(1).Infof("kafka write-ahead log %s: removing %s: %v", w.dir, f.name, err)
			break
		}
		removed = append(removed, f)
	}
	if len(removed) == 0 {
		return
	}
	gone := map[*logFile]bool{}
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

// goneAfter is how old a log file must be before its uncovered
// partitions are checked for having gone (deleted or created anew): a live
// partition's file is covered a flush interval after it was written, so
// younger files need no topic lookups.
const goneAfter = time.Minute

// fileCovered reports whether the segments hold everything a log file
// holds, or (for a file older than goneAfter) its partitions are gone.
// known caches the answers by partition and end.
func (w *Log) fileCovered(ctx context.Context, f *logFile, known map[string]bool) bool {
	old := time.Since(f.created) > goneAfter
	for part, end := range f.ends {
		key := fmt.Sprintf("%s@%d@%v", part, end, old)
		ok, seen := known[key]
		if !seen {
			ok = w.opts.Covered(ctx, part, end, old)
			known[key] = ok
		}
		if !ok {
			return false
		}
	}
	return true
}
