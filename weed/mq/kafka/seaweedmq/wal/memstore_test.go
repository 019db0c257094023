package wal

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/storage/needle"
)

// memStore is a Store in memory: a filer's entries by path and a volume
// server's chunks by file id, with faults to inject.
type memStore struct {
	mu      sync.Mutex
	entries map[string]*filer_pb.Entry // by dir/name
	chunks  map[string][]byte
	nextKey uint64
	saves   int

	// failSaves fails that many Saves to come; lose drops the upload of
	// a chunk (a gateway that died before it); saveGate, if set, is
	// received from before each Save.
	failSaves int
	lose      func(fid string) bool
	saveGate  chan struct{}
}

func newMemStore() *memStore {
	return &memStore{entries: map[string]*filer_pb.Entry{}, chunks: map[string][]byte{}, nextKey: 1}
}

var errInjected = errors.New("injected failure")

func (m *memStore) Assign(_ context.Context, _ string, count int, _ uint64) (Assignment, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fid := needle.NewFileId(7, m.nextKey, 0x5eed).String()
	m.nextKey += uint64(count)
	return Assignment{FileID: fid, Count: count, URL: "volume:8080"}, nil
}

func (m *memStore) Upload(_ context.Context, _ Assignment, fid string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lose != nil && m.lose(fid) {
		return nil
	}
	m.chunks[fid] = append([]byte(nil), data...)
	return nil
}

func (m *memStore) Save(_ context.Context, dir string, e *filer_pb.Entry) error {
	if m.saveGate != nil {
		<-m.saveGate
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failSaves > 0 {
		m.failSaves--
		return errInjected
	}
	m.saves++
	m.entries[path.Join(dir, e.Name)] = proto.Clone(e).(*filer_pb.Entry)
	return nil
}

func (m *memStore) List(_ context.Context, dir string) ([]*filer_pb.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]*filer_pb.Entry{}
	for p, e := range m.entries {
		rest, ok := strings.CutPrefix(p, dir+"/")
		if !ok {
			continue
		}
		if sub, _, deeper := strings.Cut(rest, "/"); deeper {
			seen[sub] = &filer_pb.Entry{Name: sub, IsDirectory: true}
		} else {
			seen[rest] = proto.Clone(e).(*filer_pb.Entry)
		}
	}
	var out []*filer_pb.Entry
	for _, e := range seen {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (m *memStore) ReadChunk(_ context.Context, fid string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.chunks[fid]
	if !ok {
		return nil, fmt.Errorf("%s: %w", fid, ErrMissing)
	}
	return data, nil
}

func (m *memStore) Remove(_ context.Context, dir, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[path.Join(dir, name)]
	if !ok {
		return nil
	}
	for _, c := range e.Chunks {
		delete(m.chunks, c.FileId)
	}
	delete(m.entries, path.Join(dir, name))
	return nil
}

// files returns the names of the files of dir.
func (m *memStore) files(dir string) []string {
	es, _ := m.List(context.Background(), dir)
	var out []string
	for _, e := range es {
		if !e.IsDirectory {
			out = append(out, e.Name)
		}
	}
	return out
}
