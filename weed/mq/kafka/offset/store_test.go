package offset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"
	"testing"
)

// memFiles is an in-memory Files that counts writes.
type memFiles struct {
	mu       sync.Mutex
	files    map[string][]byte
	versions map[string]int // bumped by every write
	writes   int
	gate     chan struct{} // if set, each write waits for it
}

func (m *memFiles) versionLocked(p string) string {
	if _, ok := m.files[p]; !ok {
		return ""
	}
	return fmt.Sprint("v", m.versions[p])
}

func (m *memFiles) ReadFileVersion(_ context.Context, dir, name string) ([]byte, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := path.Join(dir, name)
	d, ok := m.files[p]
	if !ok {
		return nil, "", fs.ErrNotExist
	}
	return d, m.versionLocked(p), nil
}

func (m *memFiles) WriteFileIf(ctx context.Context, dir, name string, data []byte, version string) (string, error) {
	if m.gate != nil {
		<-m.gate
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p := path.Join(dir, name)
	if m.versionLocked(p) != version {
		return "", ErrChanged
	}
	m.writeLocked(p, data)
	return m.versionLocked(p), nil
}

func (m *memFiles) writeLocked(p string, data []byte) {
	if m.versions == nil {
		m.versions = map[string]int{}
	}
	m.writes++
	m.versions[p]++
	m.files[p] = append([]byte(nil), data...)
}

func (m *memFiles) ReadFile(_ context.Context, dir, name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.files[path.Join(dir, name)]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return d, nil
}

func (m *memFiles) WriteFile(_ context.Context, dir, name string, data []byte) error {
	if m.gate != nil {
		<-m.gate
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writeLocked(path.Join(dir, name), data)
	return nil
}

func (m *memFiles) ListFiles(_ context.Context, dir string) ([]File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	var out []File
	for p, d := range m.files {
		rest, ok := strings.CutPrefix(p, dir+"/")
		if !ok {
			continue
		}
		name, _, isDir := strings.Cut(rest, "/")
		if !seen[name] {
			seen[name] = true
			f := File{Name: name, Dir: isDir}
			if !isDir {
				f.Data, f.Version = d, m.versionLocked(p)
			}
			out = append(out, f)
		}
	}
	return out, nil
}

func (m *memFiles) Remove(_ context.Context, dir, name string) error {
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

func TestEscape(t *testing.T) {
	for _, name := range []string{"group", "my.group-1_x", "a/b", "..", ".", ".hidden", "100%", "ü", " ", strings.Repeat("x", 200)} {
		e := Escape(name)
		if strings.ContainsAny(e, "/ ") || e == "." || e == ".." || strings.HasPrefix(e, ".") {
			t.Errorf("Escape(%q) = %q is not a safe file name", name, e)
		}
		if back, ok := unescape(e); !ok || back != name {
			t.Errorf("unescape(Escape(%q)) = %q, %v", name, back, ok)
		}
	}
	long := strings.Repeat("/", 100)
	if e := Escape(long); len(e) > maxEscaped || e[0] != '~' {
		t.Errorf("a long name escapes to %q", e)
	}
	if _, ok := unescape(Escape(long)); ok {
		t.Error("a hashed name reads back")
	}
}

func FuzzEscape(f *testing.F) {
	f.Add("group")
	f.Add("../x")
	f.Fuzz(func(t *testing.T, name string) {
		e := Escape(name)
		if len(e) > maxEscaped+1 || strings.Contains(e, "/") || e == "." || e == ".." || e == "" {
			t.Fatalf("Escape(%q) = %q", name, e)
		}
		if back, ok := unescape(e); ok && back != name {
			t.Fatalf("unescape(Escape(%q)) = %q", name, back)
		}
	})
}

func TestCommitsInOrderAndDurable(t *testing.T) {
	// The first write waits until every commit is queued.
	files := &memFiles{files: map[string][]byte{}, gate: make(chan struct{})}
	s := NewStore(files)
	var waits []<-chan error
	for i := int64(0); i < 100; i++ {
		waits = append(waits, s.Commit("g", Topics{"t": {int32(i % 3): {Offset: i}}}))
	}
	close(files.gate)
	for _, w := range waits {
		if err := <-w; err != nil {
			t.Fatal(err)
		}
	}
	if files.writes > 2 {
		t.Errorf("%d writes for 100 commits, want at most 2: the first, then those queued behind it together", files.writes)
	}
	// A fresh store reads what the filer holds: the last commit of each
	// partition.
	got, err := NewStore(files).Fetch(context.Background(), "g", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got["t"][0].Offset != 99 || got["t"][1].Offset != 97 || got["t"][2].Offset != 98 {
		t.Fatalf("offsets read back: %v", got)
	}
	if err := <-s.Delete("g", map[string][]int32{"t": {0, 1, 2}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := NewStore(files).Fetch(context.Background(), "g", nil); len(got) != 0 {
		t.Fatalf("offsets after delete: %v", got)
	}
}

func TestStatesByName(t *testing.T) {
	files := &memFiles{files: map[string][]byte{}}
	s := NewStore(files)
	long := strings.Repeat("g", 300)
	for _, name := range []string{"a/b", long} {
		data, _ := json.Marshal(map[string]string{"group": name})
		if _, err := s.SaveState(context.Background(), name, data, ""); err != nil {
			t.Fatal(err)
		}
	}
	states, err := s.States(context.Background())
	if err != nil || len(states) != 2 || states["a/b"] == nil || states[long] == nil {
		t.Fatalf("states: %v %v", states, err)
	}
	if err := s.DeleteGroup(context.Background(), long); err != nil {
		t.Fatal(err)
	}
	if states, _ := s.States(context.Background()); len(states) != 1 {
		t.Fatalf("states after delete: %d", len(states))
	}
}

// TestForgetWhileWriting: a group forgotten (its coordinator moved away)
// while a write of it is still going on is read again from the filer before
// its next use, so what another gateway wrote meanwhile is not lost.
func TestForgetWhileWriting(t *testing.T) {
	files := &memFiles{files: map[string][]byte{}}
	s := NewStore(files)
	ctx := context.Background()
	if err := <-s.Commit("g", Topics{"t": {0: {Offset: 0}}}); err != nil {
		t.Fatal(err)
	}
	files.gate = make(chan struct{})
	done := s.Commit("g", Topics{"t": {0: {Offset: 1}}})
	s.Forget("g") // the write waits at the gate: busy
	files.gate <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Another gateway commits offset 5 for partition 1.
	other := NewStore(files)
	files.gate = nil
	if err := <-other.Commit("g", Topics{"t": {1: {Offset: 5}}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Fetch(ctx, "g", nil)
	if err != nil || got["t"][0].Offset != 1 || got["t"][1].Offset != 5 {
		t.Fatalf("after Forget while writing: %v %v, want partition 0 at 1 and 1 at 5", got, err)
	}
}

// panicOnce is a Files whose first write panics.
type panicOnce struct {
	*memFiles
	panicked bool
}

func (p *panicOnce) WriteFileIf(ctx context.Context, dir, name string, data []byte, version string) (string, error) {
	if !p.panicked {
		p.panicked = true
		panic("a bug under the offset writer")
	}
	return p.memFiles.WriteFileIf(ctx, dir, name, data, version)
}

// A panic while writing commits fails those commits (their clients retry)
// and the store goes on; it once ended the process.
func TestWritePanicFailsOnlyItsCommits(t *testing.T) {
	files := &panicOnce{memFiles: &memFiles{files: map[string][]byte{}}}
	s := NewStore(files)
	if err := <-s.Commit("g", Topics{"t": {0: {Offset: 5}}}); err == nil || !strings.Contains(err.Error(), "panic") {
		t.Fatalf("commit under a panic: %v", err)
	}
	if err := <-s.Commit("g", Topics{"t": {0: {Offset: 6}}}); err != nil {
		t.Fatalf("the next commit: %v", err)
	}
	got, err := NewStore(files).Fetch(context.Background(), "g", nil)
	if err != nil || got["t"][0].Offset != 6 {
		t.Fatalf("offsets read back: %v %v", got, err)
	}
}

// A gateway whose copy of a group's offsets is stale (another gateway wrote
// them since it read them: it paused, and the group moved) cannot write
// over them: its commits fail, those it queued too, until it reads them
// again. Its late writes once took committed offsets back.
func TestStaleWritesRefused(t *testing.T) {
	files := &memFiles{files: map[string][]byte{}}
	old := NewStore(files)
	if err := <-old.Commit("g", Topics{"t": {0: {Offset: 10}}}); err != nil {
		t.Fatal(err)
	}
	// The group moves: its new coordinator reads and commits.
	moved := NewStore(files)
	if err := <-moved.Commit("g", Topics{"t": {0: {Offset: 50}}}); err != nil {
		t.Fatal(err)
	}
	// The old one goes on with what it had accepted.
	if err := <-old.Commit("g", Topics{"t": {0: {Offset: 20}}}); !errors.Is(err, ErrChanged) {
		t.Fatalf("a late commit on the old coordinator: %v, want ErrChanged", err)
	}
	if err := <-old.Commit("g", Topics{"u": {0: {Offset: 1}}}); !errors.Is(err, ErrChanged) {
		t.Fatalf("a later commit there, to another topic: %v, want ErrChanged", err)
	}
	got, err := NewStore(files).Fetch(context.Background(), "g", nil)
	if err != nil || got["t"][0].Offset != 50 || got["u"] != nil {
		t.Fatalf("offsets in the filer: %v %v, want t/0 at 50 only", got, err)
	}
	// Once it reads them again (the group came back), it commits.
	old.Forget("g")
	if err := <-old.Commit("g", Topics{"t": {0: {Offset: 60}}}); err != nil {
		t.Fatalf("a commit after reading again: %v", err)
	}
	// A group's state the same way.
	v1, err := old.SaveState(context.Background(), "g", []byte(`{"group":"g"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	_, v2, _ := moved.LoadState(context.Background(), "g")
	if _, err := moved.SaveState(context.Background(), "g", []byte(`{"group":"g","generation":2}`), v2); err != nil {
		t.Fatal(err)
	}
	if _, err := old.SaveState(context.Background(), "g", []byte(`{"group":"g","generation":1}`), v1); !errors.Is(err, ErrChanged) {
		t.Fatalf("a stale state save: %v, want ErrChanged", err)
	}
}
