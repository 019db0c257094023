// Package filerfstest is an in-memory filer for unit tests: the one fake of
// filerfs.VersionedFiles every package's tests share. Each file's version is
// bumped by every write, so conditional writes behave as the filer's do;
// writes and listings are counted, and a gate can hold writes back. Locks
// are the filer's locks, on a clock the test may drive.
package filerfstest

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
)

// Files is an in-memory filerfs.VersionedFiles. Directories exist as the
// prefixes of files; removing one removes everything under it.
type Files struct {
	mu       sync.Mutex
	files    map[string][]byte // full path -> content
	versions map[string]int    // bumped by every write
	writes   int
	listings int
	gate     chan struct{}
	before   func()
}

// New returns an empty filer.
func New() *Files { return &Files{files: map[string][]byte{}, versions: map[string]int{}} }

// Gate makes every later write wait for a receive from (or the close of)
// gate before it happens; nil lets writes through again.
func (m *Files) Gate(gate chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gate = gate
}

// BeforeNextWriteIf runs fn before the next conditional write or removal,
// once: another gateway's write landing between a read and the write
// after it.
func (m *Files) BeforeNextWriteIf(fn func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.before = fn
}

// Len is the number of files held.
func (m *Files) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.files)
}

// Writes counts the writes done.
func (m *Files) Writes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writes
}

// Listings counts the directory listings done.
func (m *Files) Listings() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.listings
}

// Get returns the file at the full path p.
func (m *Files) Get(p string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.files[p]
	return d, ok
}

// Paths lists the full paths of every file, sorted.
func (m *Files) Paths() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for p := range m.files {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func (m *Files) versionLocked(p string) string {
	if _, ok := m.files[p]; !ok {
		return ""
	}
	return fmt.Sprint("v", m.versions[p])
}

func (m *Files) wait() {
	m.mu.Lock()
	gate := m.gate
	m.mu.Unlock()
	if gate != nil {
		<-gate
	}
}

func (m *Files) writeLocked(p string, data []byte) {
	m.writes++
	m.versions[p]++
	m.files[p] = append([]byte(nil), data...)
}

func (m *Files) ReadFile(ctx context.Context, dir, name string) ([]byte, error) {
	d, _, err := m.ReadFileVersion(ctx, dir, name)
	return d, err
}

func (m *Files) ReadFileVersion(_ context.Context, dir, name string) ([]byte, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := path.Join(dir, name)
	d, ok := m.files[p]
	if !ok {
		return nil, "", fs.ErrNotExist
	}
	return d, m.versionLocked(p), nil
}

func (m *Files) WriteFile(_ context.Context, dir, name string, data []byte) error {
	m.wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writeLocked(path.Join(dir, name), data)
	return nil
}

// runBefore runs, once, what BeforeNextWriteIf set.
func (m *Files) runBefore() {
	m.mu.Lock()
	before := m.before
	m.before = nil
	m.mu.Unlock()
	if before != nil {
		before()
	}
}

func (m *Files) WriteFileIf(_ context.Context, dir, name string, data []byte, version string) (string, error) {
	m.runBefore()
	m.wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	p := path.Join(dir, name)
	if m.versionLocked(p) != version {
		return "", filerfs.ErrChanged
	}
	m.writeLocked(p, data)
	return m.versionLocked(p), nil
}

func (m *Files) ListFiles(_ context.Context, dir string) ([]filerfs.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.listings++
	seen := map[string]bool{}
	var out []filerfs.File
	for _, p := range slices.Sorted(maps.Keys(m.files)) {
		rest, ok := strings.CutPrefix(p, dir+"/")
		if !ok {
			continue
		}
		name, _, isDir := strings.Cut(rest, "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		f := filerfs.File{Name: name, Dir: isDir}
		if !isDir {
			f.Data, f.Version = m.files[p], m.versionLocked(p)
		}
		out = append(out, f)
	}
	return out, nil
}

func (m *Files) RemoveIf(_ context.Context, dir, name, version string) error {
	m.runBefore()
	m.mu.Lock()
	defer m.mu.Unlock()
	p := path.Join(dir, name)
	if _, ok := m.files[p]; !ok {
		// A directory is implicit: gone once empty.
		for f := range m.files {
			if strings.HasPrefix(f, p+"/") {
				return filerfs.ErrChanged
			}
		}
		return nil
	}
	if m.versionLocked(p) != version {
		return filerfs.ErrChanged
	}
	delete(m.files, p)
	return nil
}

func (m *Files) Remove(_ context.Context, dir, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	full := path.Join(dir, name)
	for p := range m.files {
		if p == full || strings.HasPrefix(p, full+"/") {
			delete(m.files, p)
		}
	}
	return nil
}
