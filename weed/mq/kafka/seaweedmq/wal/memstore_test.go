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
	// hold, if it returns true for a Save, answers it with an error and
	// keeps it, to land later (land) or at once (landNow): a save whose
	// answer was lost, or that reaches the filer after a cut.
	hold    func() bool
	landNow bool
	held    []heldSave
}

type heldSave struct {
	dir   string
	e     *filer_pb.Entry
	prior int
}

func newMemStore() *memStore {
	return &memStore{entries: map[string]*filer_pb.Entry{}, chunks: map[string][]byte{}, nextKey: 1}
}

var errInjected = errors.New("injected failure")

func (m *memStore) Assign(_ context.Context, _ string, _ Replication, count int, _ uint64) (Assignment, error) {
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

func (m *memStore) Save(_ context.Context, dir string, e *filer_pb.Entry, prior int) error {
	if m.saveGate != nil {
		<-m.saveGate
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failSaves > 0 {
		m.failSaves--
		return errInjected
	}
	if m.hold != nil && m.hold() {
		h := heldSave{dir, proto.Clone(e).(*filer_pb.Entry), prior}
		if m.landNow {
			m.saveLocked(h) //nolint:errcheck // its answer is lost
		} else {
			m.held = append(m.held, h)
		}
		return errInjected
	}
	return m.saveLocked(heldSave{dir, proto.Clone(e).(*filer_pb.Entry), prior})
}

// saveLocked saves as the filer's conditional create does: only over the
// file holding the entry's first prior chunks; a replaced entry's chunks
// that the new one does not hold are deleted.
func (m *memStore) saveLocked(h heldSave) error {
	p := path.Join(h.dir, h.e.Name)
	cur, exists := m.entries[p]
	if h.prior == 0 && exists || h.prior > 0 && (!exists || len(cur.Chunks) != h.prior) {
		return ErrChanged
	}
	for i := 0; i < h.prior; i++ {
		if cur.Chunks[i].FileId != h.e.Chunks[i].FileId {
			return ErrChanged
		}
	}
	if exists {
		keep := map[string]bool{}
		for _, c := range h.e.Chunks {
			keep[c.FileId] = true
		}
		for _, c := range cur.Chunks {
			if !keep[c.FileId] {
				delete(m.chunks, c.FileId)
			}
		}
	}
	m.saves++
	m.entries[p] = h.e
	return nil
}

// land saves the held saves now, in order, and returns their outcomes.
func (m *memStore) land() []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, h := range m.held {
		errs = append(errs, m.saveLocked(h))
	}
	m.held = nil
	return errs
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
