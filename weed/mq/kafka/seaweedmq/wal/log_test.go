package wal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/logentry"
)

func startLog(t *testing.T, s *memStore, name string, covered func(context.Context, string, int64, bool) bool) *Log {
	t.Helper()
	if covered == nil {
		covered = func(context.Context, string, int64, bool) bool { return false }
	}
	w := New(Options{Store: s, Name: name, Covered: covered})
	w.Start()
	t.Cleanup(func() { w.Close(time.Second) })
	return w
}

// logSync adds a batch and waits for its commit.
func logSync(w *Log, b Batch) error {
	done := make(chan error, 1)
	w.Add(b, func(err error) { done <- err })
	return <-done
}

func termed(b Batch, term int64) Batch {
	b.Term = term
	return b
}

// values returns what entries hold, as "offset:value".
func values(t *testing.T, es []*filer_pb.LogEntry) string {
	t.Helper()
	var out []string
	for _, e := range es {
		out = append(out, fmt.Sprintf("%d:%s", e.Offset, e.Data))
	}
	return fmt.Sprint(out)
}

// TestLogRoundTrip: batches of two partitions, committed, read back from
// the store by any gateway: each partition's records at their offsets,
// from any offset on, and files that hold none of a partition not read.
func TestLogRoundTrip(t *testing.T) {
	s := newMemStore()
	w := startLog(t, s, "g1", nil)
	for _, b := range []Batch{
		walTestBatch("p1@1", 0, "a", "b"),
		walTestBatch("p2@1", 0, "x"),
		walTestBatch("p1@1", 2, "c"),
	} {
		if err := logSync(w, b); err != nil {
			t.Fatal(err)
		}
	}
	r := NewReader(s)
	ctx := context.Background()
	for _, c := range []struct {
		part string
		from int64
		want string
	}{{"p1@1", 0, "[0:a 1:b 2:c]"}, {"p1@1", 1, "[1:b 2:c]"}, {"p2@1", 0, "[0:x]"}, {"p1@1", 3, "[]"}, {"p3@1", 0, "[]"}} {
		es, err := r.Logged(ctx, c.part, c.from)
		if err != nil {
			t.Fatal(err)
		}
		if got := values(t, es); got != c.want {
			t.Errorf("%s from %d: %s, want %s", c.part, c.from, got, c.want)
		}
	}
	if files, err := r.ReadFor(ctx, Dir+"/g1", []string{"p3@1"}, 0); err != nil || len(files) != 0 {
		t.Fatalf("files read for a partition none holds: %d %v", len(files), err)
	}
	if es := s.files(Dir + "/g1"); len(es) != 1 {
		t.Fatalf("files %v, want one for three quick commits", es)
	}
}

// TestLogGroupCommit: batches that arrive while a commit is under way go
// into the store together, in one chunk and one filer update.
func TestLogGroupCommit(t *testing.T) {
	s := newMemStore()
	gate := make(chan struct{})
	s.saveGate = gate
	w := startLog(t, s, "g1", nil)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i := 0; i < 21; i++ {
		wg.Add(1)
		w.Add(walTestBatch("p@1", int64(i), fmt.Sprint("v", i)), func(err error) {
			if err != nil {
				failed.Add(1)
			}
			wg.Done()
		})
	}
	close(gate)
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d batches failed", failed.Load())
	}
	s.mu.Lock()
	saves := s.saves
	s.mu.Unlock()
	if saves > 2 {
		t.Fatalf("21 batches queued behind one commit took %d commits", saves)
	}
	es, err := NewReader(s).Logged(context.Background(), "p@1", 0)
	if err != nil || len(es) != 21 || es[20].Offset != 20 || string(es[20].Data) != "v20" {
		t.Fatalf("read back %d entries, %v", len(es), err)
	}
}

// TestLogRetries: a commit the store refuses is tried again until it
// takes it; the producer is told only then.
func TestLogRetries(t *testing.T) {
	s := newMemStore()
	s.failSaves = 3
	w := startLog(t, s, "g1", nil)
	if err := logSync(w, walTestBatch("p@1", 0, "a")); err != nil {
		t.Fatal(err)
	}
	if es, err := NewReader(s).Logged(context.Background(), "p@1", 0); err != nil || values(t, es) != "[0:a]" {
		t.Fatalf("read back %s %v", values(t, es), err)
	}
}

// TestLogSaveLandingLate: a commit's save answered with an error that
// reaches the filer anyway. Landing after its retry (sent before a cut,
// say), it is refused: before, it replaced the file with its chunks, the
// filer deleted the retry's chunk, and the next commit listed that chunk
// again: the batch was gone and the file could not be read (a chunk
// missing before its last). Landing before its retry (its answer lost),
// it leaves the file with a chunk the log took back: the retry's save is
// refused and the log goes on in a new file, whose records win where the
// two disagree.
func TestLogSaveLandingLate(t *testing.T) {
	for _, afterRetry := range []bool{true, false} {
		s := newMemStore()
		w := startLog(t, s, "g1", nil)
		if err := logSync(w, walTestBatch("p@1", 0, "a")); err != nil {
			t.Fatal(err)
		}
		once := true
		s.hold = func() bool { h := once; once = false; return h }
		s.landNow = !afterRetry
		if err := logSync(w, walTestBatch("p@1", 1, "b")); err != nil {
			t.Fatal(err)
		}
		if errs := s.land(); afterRetry && (len(errs) != 1 || !errors.Is(errs[0], ErrChanged)) {
			t.Fatalf("the save landing after its retry: %v, want it refused", errs)
		}
		if err := logSync(w, walTestBatch("p@1", 2, "c")); err != nil {
			t.Fatal(err)
		}
		if es, err := NewReader(s).Logged(context.Background(), "p@1", 0); err != nil || values(t, es) != "[0:a 1:b 2:c]" {
			t.Fatalf("landing after the retry %v: read back %s %v", afterRetry, values(t, es), err)
		}
		files, err := s.List(context.Background(), Dir+"/g1")
		if want := map[bool]int{true: 1, false: 2}[afterRetry]; err != nil || len(files) != want {
			t.Fatalf("landing after the retry %v: %d log files (%v), want %d", afterRetry, len(files), err, want)
		}
	}
}

// TestLogClosed: a closed log commits what was queued and refuses more.
func TestLogClosed(t *testing.T) {
	s := newMemStore()
	w := startLog(t, s, "g1", nil)
	done := make(chan error, 1)
	w.Add(walTestBatch("p@1", 0, "a"), func(err error) { done <- err })
	w.Close(time.Second)
	if err := <-done; err != nil {
		t.Fatalf("a batch queued before Close: %v", err)
	}
	if err := logSync(w, walTestBatch("p@1", 1, "b")); !errors.Is(err, ErrClosed) {
		t.Fatalf("a batch added after Close: %v", err)
	}
}

// TestLogTornLastChunk: a file whose last chunk never reached a volume
// server (its gateway died between the filer update and the upload; the
// commit was never acknowledged) reads as the frames before it; any other
// chunk missing is an error, not a silent gap.
func TestLogTornLastChunk(t *testing.T) {
	s := newMemStore()
	var lose atomic.Bool
	s.lose = func(string) bool { return lose.Load() }
	w := startLog(t, s, "g1", nil)
	for i, v := range []string{"a", "b", "c"} {
		lose.Store(i == 2)
		if err := logSync(w, walTestBatch("p@1", int64(i), v)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	es, err := NewReader(s).Logged(ctx, "p@1", 0)
	if err != nil || values(t, es) != "[0:a 1:b]" {
		t.Fatalf("read back %s %v", values(t, es), err)
	}
	files := s.files(Dir + "/g1")
	s.mu.Lock()
	delete(s.chunks, s.entries[Dir+"/g1/"+files[0]].Chunks[0].FileId)
	s.mu.Unlock()
	if _, err := NewReader(s).Logged(ctx, "p@1", 0); !errors.Is(err, ErrMissing) {
		t.Fatalf("a file without its first chunk: %v", err)
	}
}

// TestLogTrim: a closed file goes once the segments cover every partition
// in it, not before; its chunks go with it.
func TestLogTrim(t *testing.T) {
	s := newMemStore()
	var mu sync.Mutex
	covered := map[string]int64{}
	w := startLog(t, s, "g1", func(_ context.Context, part string, end int64, _ bool) bool {
		mu.Lock()
		defer mu.Unlock()
		return covered[part] >= end
	})
	for _, b := range []Batch{walTestBatch("p1@1", 0, "a", "b"), walTestBatch("p2@1", 5, "x")} {
		if err := logSync(w, b); err != nil {
			t.Fatal(err)
		}
	}
	w.filesMu.Lock()
	w.cur.created = time.Now().Add(-time.Hour) // closed by the next trim
	w.filesMu.Unlock()
	for _, c := range []struct {
		cover map[string]int64
		kept  int
	}{{map[string]int64{}, 1}, {map[string]int64{"p1@1": 2, "p2@1": 5}, 1}, {map[string]int64{"p1@1": 2, "p2@1": 6}, 0}} {
		mu.Lock()
		covered = c.cover
		mu.Unlock()
		w.trim()
		if got := len(s.files(Dir + "/g1")); got != c.kept {
			t.Fatalf("segments covering %v: %d files kept, want %d", c.cover, got, c.kept)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.chunks) != 0 {
		t.Fatalf("%d chunks left", len(s.chunks))
	}
}

// TestLogAdoptsOldFiles: the files a gateway's earlier run left are trimmed
// like its own, also one whose entry lost the list of its partitions (it
// is read to know).
func TestLogAdoptsOldFiles(t *testing.T) {
	s := newMemStore()
	w := New(Options{Store: s, Name: "g1", Covered: func(context.Context, string, int64, bool) bool { return false }})
	w.Start()
	if err := logSync(w, walTestBatch("p@1", 0, "a", "b", "c")); err != nil {
		t.Fatal(err)
	}
	w.Close(time.Second)
	s.mu.Lock()
	for _, e := range s.entries {
		delete(e.Extended, partitionsAttr)
	}
	s.mu.Unlock()
	var mu sync.Mutex
	asked := map[string]int64{}
	w = startLog(t, s, "g1", func(_ context.Context, part string, end int64, orGone bool) bool {
		mu.Lock()
		defer mu.Unlock()
		asked[part] = end
		return orGone // an old file whose partition is gone
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.filesMu.Lock()
		n := len(w.files)
		w.filesMu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d files adopted", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.trim()
	if got := s.files(Dir + "/g1"); len(got) != 0 {
		t.Fatalf("files left: %v", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked["p@1"] != 3 || len(asked) != 1 {
		t.Fatalf("asked about %v, want p@1 up to 3", asked)
	}
}

// TestLoggedTerms: where the logs of two gateways hold an offset, the
// record of the later term is taken (a deposed leader's late write never
// replaces its successor's), in one term the later file's; a batch entry
// that overlaps a later term's record gives way whole. Batches logged
// under the bare directory (earlier versions) count; those of another
// generation of the topic do not.
func TestLoggedTerms(t *testing.T) {
	s := newMemStore()
	g1 := startLog(t, s, "g1", nil)
	g2 := startLog(t, s, "g2", nil)
	batchEntry := func(dir string, base int64, n int, term int64) Batch {
		b := walTestBatchEntry(dir, base, n)
		b.Term = term
		return b
	}
	for _, c := range []struct {
		w *Log
		b Batch
	}{
		{g1, termed(walTestBatch("p@1", 0, "a0", "a1", "a2"), 1)},
		{g2, termed(walTestBatch("p@1", 1, "b1"), 2)},
		{g2, termed(walTestBatch("p@1", 2, "b2"), 1)}, // same term, later file
		{g1, batchEntry("p@1", 10, 5, 1)},
		{g2, termed(walTestBatch("p@1", 12, "b12"), 2)},
		{g1, walTestBatch("p", 20, "old")},
		{g1, termed(walTestBatch("p@2", 21, "other generation"), 3)},
	} {
		if err := logSync(c.w, c.b); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // file names order the commits
	}
	es, err := NewReader(s).Logged(context.Background(), "p@1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, fmt.Sprintf("%d:%s/%d", e.Offset, e.Data, logentry.SpanOf(e)))
	}
	if want := "[0:a0/1 1:b1/1 2:b2/1 12:b12/1 20:old/1]"; fmt.Sprint(got) != want {
		t.Fatalf("logged %v, want %s", got, want)
	}
}
