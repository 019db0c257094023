package wal

// Reading the write-ahead logs back, of this gateway or any other: the
// files of a log, the partitions each names, their frames chunk by chunk.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/logentry"
)

// File is a log file read back, of any gateway.
type File struct {
	Name    string
	Entry   *filer_pb.Entry
	Batches []Batch
}

// Ends returns, for each partition in the file, one past the highest
// offset it holds there.
func (f *File) Ends() map[string]int64 {
	ends := map[string]int64{}
	for _, b := range f.Batches {
		ends[b.Dir] = max(ends[b.Dir], b.Base+int64(b.N))
	}
	return ends
}

// Reader reads logs back, keeping the files it read by name and size (a
// log file only grows, by whole frames, until it is removed).
type Reader struct {
	store Store
	mu    sync.Mutex
	files map[string]*File
}

// NewReader returns a Reader of the logs in store.
func NewReader(store Store) *Reader { return &Reader{store: store, files: map[string]*File{}} }

// ReadFor reads the files of the log in dir that may hold records of a
// partition under one of its names parts (PartKey, or the bare directory
// of earlier versions) from offset from on; all of the log's files with no
// parts.
func (r *Reader) ReadFor(ctx context.Context, dir string, parts []string, from int64) ([]*File, error) {
	entries, err := listFiles(ctx, r.store, dir)
	if err != nil {
		return nil, err
	}
	r.forgetMissing(dir, entries)
	var out []*File
	for _, e := range entries {
		if ends, ok := decodeEnds(e.Extended[partitionsAttr]); ok && len(parts) > 0 {
			held := false
			for _, part := range parts {
				held = held || ends[part] > from
			}
			if !held {
				continue
			}
		}
		f, err := r.read(ctx, dir, e)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// read reads one log file, from the cache when it has not grown.
func (r *Reader) read(ctx context.Context, dir string, e *filer_pb.Entry) (*File, error) {
	key := fmt.Sprintf("%s/%s@%d", dir, e.Name, filer.FileSize(e))
	r.mu.Lock()
	f, ok := r.files[key]
	r.mu.Unlock()
	if ok {
		return f, nil
	}
	f, err := readFile(ctx, r.store, dir, e)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Files that grew are dropped once a newer read is kept.
	for k := range r.files {
		if strings.HasPrefix(k, dir+"/"+e.Name+"@") {
			delete(r.files, k)
		}
	}
	r.files[key] = f
	return f, nil
}

// forgetMissing drops the files of dir that its listing no longer holds.
func (r *Reader) forgetMissing(dir string, entries []*filer_pb.Entry) {
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, f := range r.files {
		if strings.HasPrefix(k, dir+"/") && !names[f.Name] {
			delete(r.files, k)
		}
	}
}

// listFiles lists the files of one gateway's log.
func listFiles(ctx context.Context, store Store, dir string) ([]*filer_pb.Entry, error) {
	entries, err := store.List(ctx, dir)
	if err != nil {
		return nil, err
	}
	files := entries[:0]
	for _, e := range entries {
		if !e.IsDirectory && len(e.Chunks) > 0 {
			files = append(files, e)
		}
	}
	return files, nil
}

// readFile reads one log file's frames. A frame that did not arrive whole
// was never committed (its batches were not acknowledged): it and what
// follows are left out.
func readFile(ctx context.Context, store Store, dir string, e *filer_pb.Entry) (*File, error) {
	data, err := readChunks(ctx, store, e)
	if err != nil {
		return nil, fmt.Errorf("read write-ahead log %s/%s: %w", dir, e.Name, err)
	}
	batches, err := ParseFrames(data)
	if err != nil {
		glog.Warningf("kafka write-ahead log %s/%s: %v; using the %d batches before it", dir, e.Name, err, len(batches))
	}
	return &File{Name: e.Name, Entry: e, Batches: batches}, nil
}

// readChunks reads a log file's chunks in order. Its last chunk may be
// missing (a gateway died between the filer update and the upload of its
// last commit, which was never acknowledged): that one is left out. Any
// other chunk that cannot be read is an error, to be tried again.
func readChunks(ctx context.Context, store Store, e *filer_pb.Entry) ([]byte, error) {
	chunks := append([]*filer_pb.FileChunk(nil), e.Chunks...)
	sort.Slice(chunks, func(i, j int) bool { return chunks[i].Offset < chunks[j].Offset })
	var out []byte
	for i, ch := range chunks {
		data, err := store.ReadChunk(ctx, ch.FileId)
		if errors.Is(err, ErrMissing) && i == len(chunks)-1 {
			break
		}
		if err != nil {
			return nil, err
		}
		out = append(out, data...)
	}
	return out, nil
}

// Logged returns what the logs of every gateway hold of a partition (its
// name in the logs, PartKey) from offset from on, ascending:
// its batches under that key, and those of earlier versions under its
// directory alone.
func (r *Reader) Logged(ctx context.Context, key string, from int64) ([]*filer_pb.LogEntry, error) {
	dir, _ := SplitPartKey(key)
	entries, err := r.store.List(ctx, Dir)
	if err != nil {
		return nil, err
	}
	var gateways []string
	for _, e := range entries {
		if e.IsDirectory {
			gateways = append(gateways, e.Name)
		}
	}
	// Where logs disagree, the record of the later term wins (a deposed
	// leader's late write never replaces its successor's); in one term,
	// the later file's (files by name are oldest first).
	byOffset := map[int64]*filer_pb.LogEntry{}
	type source struct {
		term int64
		file string
	}
	sources := map[int64]source{}
	for _, g := range gateways {
		files, err := r.ReadFor(ctx, Dir+"/"+g, []string{key, dir}, from)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			for i := range f.Batches {
				b := &f.Batches[i]
				if (b.Dir != key && b.Dir != dir) || b.Base+int64(b.N) <= from {
					continue
				}
				es, err := b.Entries(from)
				if err != nil {
					return nil, err
				}
				for _, e := range es {
					s, ok := sources[e.Offset]
					if !ok || b.Term > s.term || (b.Term == s.term && f.Name >= s.file) {
						byOffset[e.Offset], sources[e.Offset] = e, source{b.Term, f.Name}
					}
				}
			}
		}
	}
	all := make([]*filer_pb.LogEntry, 0, len(byOffset))
	for _, e := range byOffset {
		all = append(all, e)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Offset < all[j].Offset })
	// A batch entry takes several offsets: where entries of two logs
	// overlap (not at one offset), the later term's stand, the earlier's
	// go.
	out := all[:0]
	for _, e := range all {
		keep := true
		for len(out) > 0 {
			last := out[len(out)-1]
			if last.Offset+logentry.SpanOf(last) <= e.Offset {
				break
			}
			if sources[e.Offset].term <= sources[last.Offset].term {
				keep = false
				break
			}
			out = out[:len(out)-1]
		}
		if keep {
			out = append(out, e)
		}
	}
	return out, nil
}

// oldFiles returns the files of this gateway's log with what they hold,
// from their entries' attribute, or read where it is missing.
func (w *Log) oldFiles(ctx context.Context) ([]*logFile, error) {
	entries, err := listFiles(ctx, w.opts.Store, w.dir)
	if err != nil {
		return nil, err
	}
	var out []*logFile
	for _, e := range entries {
		ends, ok := decodeEnds(e.Extended[partitionsAttr])
		if !ok {
			f, err := readFile(ctx, w.opts.Store, w.dir, e)
			if err != nil {
				return nil, err
			}
			ends = f.Ends()
		}
		out = append(out, &logFile{name: e.Name, entry: e, ends: ends})
	}
	return out, nil
}
