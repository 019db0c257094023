package offset

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
)

func TestCommitsInOrderAndDurable(t *testing.T) {
	// The first write waits until every commit is queued.
	gate := make(chan struct{})
	files := filerfstest.New()
	files.Gate(gate)
	s := NewStore(files)
	var waits []<-chan error
	for i := int64(0); i < 100; i++ {
		waits = append(waits, s.Commit("g", Topics{"t": {int32(i % 3): {Offset: i}}}))
	}
	close(gate)
	for _, w := range waits {
		if err := <-w; err != nil {
			t.Fatal(err)
		}
	}
	if files.Writes() > 2 {
		t.Errorf("%d writes for 100 commits, want at most 2: the first, then those queued behind it together", files.Writes())
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
	files := filerfstest.New()
	s := NewStore(files)
	long := strings.Repeat("g", 300)
	versions := map[string]string{}
	for _, name := range []string{"a/b", long} {
		data, _ := json.Marshal(map[string]string{"group": name})
		v, err := s.SaveState(context.Background(), name, data, "")
		if err != nil {
			t.Fatal(err)
		}
		versions[name] = v
	}
	states, err := s.States(context.Background())
	if err != nil || len(states) != 2 || states["a/b"] == nil || states[long] == nil {
		t.Fatalf("states: %v %v", states, err)
	}
	if err := s.DeleteGroup(context.Background(), long, versions[long]); err != nil {
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
	files := filerfstest.New()
	s := NewStore(files)
	ctx := context.Background()
	if err := <-s.Commit("g", Topics{"t": {0: {Offset: 0}}}); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	files.Gate(gate)
	done := s.Commit("g", Topics{"t": {0: {Offset: 1}}})
	s.Forget("g") // the write waits at the gate: busy
	gate <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Another gateway commits offset 5 for partition 1.
	other := NewStore(files)
	files.Gate(nil)
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
	*filerfstest.Files
	panicked bool
}

func (p *panicOnce) WriteFileIf(ctx context.Context, dir, name string, data []byte, version string) (string, error) {
	if !p.panicked {
		p.panicked = true
		panic("a bug under the offset writer")
	}
	return p.Files.WriteFileIf(ctx, dir, name, data, version)
}

// A panic while writing commits fails those commits (their clients retry)
// and the store goes on; it once ended the process.
func TestWritePanicFailsOnlyItsCommits(t *testing.T) {
	files := &panicOnce{Files: filerfstest.New()}
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

// movedGroup is group g with t/0 committed at 10 on old and then, the
// group moved to a gateway that read and committed it, at 50 on moved.
func movedGroup(t *testing.T) (*filerfstest.Files, *Store, *Store) {
	t.Helper()
	files := filerfstest.New()
	old := NewStore(files)
	if err := <-old.Commit("g", Topics{"t": {0: {Offset: 10}}}); err != nil {
		t.Fatal(err)
	}
	moved := NewStore(files)
	if err := <-moved.Commit("g", Topics{"t": {0: {Offset: 50}}}); err != nil {
		t.Fatal(err)
	}
	return files, old, moved
}

// A gateway whose copy of a group's offsets is stale (another gateway wrote
// them since it read them: it paused, and the group moved) cannot write
// over them: its commits fail, those it queued too, until it reads them
// again. Its late writes once took committed offsets back.
func TestStaleWritesRefused(t *testing.T) {
	files, old, moved := movedGroup(t)
	// The old one goes on with what it had accepted.
	if err := <-old.Commit("g", Topics{"t": {0: {Offset: 20}}}); !errors.Is(err, filerfs.ErrChanged) {
		t.Fatalf("a late commit on the old coordinator: %v, want filerfs.ErrChanged", err)
	}
	if err := <-old.Commit("g", Topics{"u": {0: {Offset: 1}}}); !errors.Is(err, filerfs.ErrChanged) {
		t.Fatalf("a later commit there, to another topic: %v, want filerfs.ErrChanged", err)
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
	if _, err := old.SaveState(context.Background(), "g", []byte(`{"group":"g","generation":1}`), v1); !errors.Is(err, filerfs.ErrChanged) {
		t.Fatalf("a stale state save: %v, want filerfs.ErrChanged", err)
	}
}

// OffsetDelete of a topic's last partitions removes its file only as the
// store read or wrote it: a removal by a gateway the group moved from
// (paused, and acting on what it held) leaves what the group's new
// coordinator committed since. Before, the removal was unconditional and
// took those offsets with it.
func TestStaleRemovalRefused(t *testing.T) {
	files, old, moved := movedGroup(t)
	if err := <-old.Delete("g", map[string][]int32{"t": {0}}); !errors.Is(err, filerfs.ErrChanged) {
		t.Fatalf("a late OffsetDelete on the old coordinator: %v, want filerfs.ErrChanged", err)
	}
	got, err := NewStore(files).Fetch(context.Background(), "g", nil)
	if err != nil || got["t"][0].Offset != 50 {
		t.Fatalf("offsets in the filer: %v %v, want t/0 at 50", got, err)
	}
	// The group's coordinator removes them.
	if err := <-moved.Delete("g", map[string][]int32{"t": {0}}); err != nil {
		t.Fatal(err)
	}
	if got, err := NewStore(files).Fetch(context.Background(), "g", nil); err != nil || len(got["t"]) != 0 {
		t.Fatalf("offsets after the coordinator's OffsetDelete: %v %v, want none", got, err)
	}
}

// A coordinator that lost its group without knowing it (paused or slow)
// and deletes it leaves what the group's new coordinator wrote in place:
// a commit written since it read the offsets, a topic's offsets it never
// read, or a state saved since. Its own copy is dropped. The group's
// coordinator deletes it whole.
func TestDeleteGroupLeavesSuccessorsWrites(t *testing.T) {
	ctx := context.Background()
	for name, successor := range map[string]func(*Store, string) error{
		"a commit since": func(s *Store, _ string) error { return <-s.Commit("g", Topics{"t": {0: {Offset: 42}}}) },
		"another topic":  func(s *Store, _ string) error { return <-s.Commit("g", Topics{"u": {0: {Offset: 42}}}) },
		"a state since": func(s *Store, version string) error {
			_, err := s.SaveState(ctx, "g", []byte(`{"group":"g","generation":2}`), version)
			return err
		},
	} {
		files := filerfstest.New()
		deposed := NewStore(files)
		if err := <-deposed.Commit("g", Topics{"t": {0: {Offset: 7}}}); err != nil {
			t.Fatal(err)
		}
		version, err := deposed.SaveState(ctx, "g", []byte(`{"group":"g","generation":1}`), "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := deposed.Fetch(ctx, "g", nil); err != nil {
			t.Fatal(err)
		}
		next := NewStore(files)
		if _, err := next.Fetch(ctx, "g", nil); err != nil {
			t.Fatal(err)
		}
		if err := successor(next, version); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := deposed.DeleteGroup(ctx, "g", version); !errors.Is(err, filerfs.ErrChanged) {
			t.Errorf("%s: the deposed coordinator's delete: %v, want ErrChanged", name, err)
		}
		got, err := NewStore(files).Fetch(ctx, "g", nil)
		if err != nil || got["t"][0].Offset != 7 && got["t"][0].Offset != 42 {
			t.Errorf("%s: offsets after the deposed delete: %v %v", name, got, err)
		}
		if state, _, err := NewStore(files).LoadState(ctx, "g"); err != nil || state == nil {
			t.Errorf("%s: the state after the deposed delete: %s %v", name, state, err)
		}
		// The group's coordinator, which read what is there, deletes it.
		fresh := NewStore(files)
		if _, err := fresh.Fetch(ctx, "g", nil); err != nil {
			t.Fatal(err)
		}
		_, v, err := fresh.LoadState(ctx, "g")
		if err != nil {
			t.Fatal(err)
		}
		if err := fresh.DeleteGroup(ctx, "g", v); err != nil {
			t.Errorf("%s: the coordinator's delete: %v", name, err)
		}
		if got, _ := NewStore(files).Fetch(ctx, "g", nil); len(got) != 0 {
			t.Errorf("%s: offsets after the coordinator's delete: %v", name, got)
		}
		if files.Len() != 0 {
			t.Errorf("%s: %d files left", name, files.Len())
		}
	}
}
