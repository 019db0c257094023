package compaction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
)

// memLog is a partition's segments in memory, each a file with a size and
// an mtime, and the cleaner's checkpoint.
type memLog struct {
	segs       []memSeg
	checkpoint int64
	// changed makes Replace find the file changed since it was listed.
	changed bool
	reads   int
	// sealed marks every segment a gateway's (Segment.Sealed).
	sealed bool
}

type memSeg struct {
	name    string
	mtime   time.Time
	entries []*filer_pb.LogEntry
}

func (m *memLog) entry(s memSeg) *filer_pb.Entry {
	size := 0
	for _, e := range s.entries {
		size += int(storedSize(e))
	}
	return &filer_pb.Entry{Name: s.name, Attributes: &filer_pb.FuseAttributes{Mtime: s.mtime.Unix(), FileSize: uint64(size)}}
}

func (m *memLog) find(name string) int {
	return slices.IndexFunc(m.segs, func(s memSeg) bool { return s.name == name })
}

func (m *memLog) Segments(context.Context) ([]Segment, error) {
	var out []Segment
	for _, s := range m.segs {
		max := int64(-1)
		if n := len(s.entries); n > 0 {
			max = s.entries[n-1].Offset
		}
		out = append(out, Segment{Entry: m.entry(s), MaxOffset: max, Sealed: m.sealed})
	}
	return out, nil
}

func (m *memLog) End(_ context.Context, s Segment) (int64, error) {
	es := m.segs[m.find(s.Entry.Name)].entries
	return es[len(es)-1].Offset + 1, nil
}

func (m *memLog) Read(_ context.Context, s Segment) ([]*filer_pb.LogEntry, error) {
	m.reads++
	return m.segs[m.find(s.Entry.Name)].entries, nil
}

func (m *memLog) Replace(_ context.Context, group []Segment, kept []*filer_pb.LogEntry, _, _ *filer_pb.LogEntry) error {
	if m.changed {
		return errors.New("changed since it was listed")
	}
	i := m.find(group[0].Entry.Name)
	m.segs[i].entries = kept
	return nil
}

func (m *memLog) Remove(_ context.Context, s Segment) error {
	m.segs = slices.Delete(m.segs, m.find(s.Entry.Name), m.find(s.Entry.Name)+1)
	return nil
}

func (m *memLog) Checkpoint(context.Context) (int64, error) { return m.checkpoint, nil }

func (m *memLog) SetCheckpoint(_ context.Context, offset int64) error {
	m.checkpoint = offset
	return nil
}

// offsets returns each segment's offsets.
func (m *memLog) offsets() string {
	var out [][]int64
	for _, s := range m.segs {
		out = append(out, offsetsOf(s.entries))
	}
	return fmt.Sprint(out)
}

// fourSegments: keys a and b written over and over, one segment a minute,
// the last being written.
func fourSegments(now time.Time) *memLog {
	m := &memLog{}
	off := int64(0)
	for i := 0; i < 4; i++ {
		var es []*filer_pb.LogEntry
		for _, k := range []string{"a", "b"} {
			es = append(es, kv(off, k, fmt.Sprint(k, off)))
			off++
		}
		m.segs = append(m.segs, memSeg{name: fmt.Sprintf("seg-%d", i), mtime: now.Add(time.Duration(i-4) * time.Minute), entries: es})
	}
	return m
}

// TestClean: a partition whose closed segments are dirty enough is
// cleaned to the newest record of each key, in the first segment's file
// (the others removed), the open segment left alone; the checkpoint moves
// past what was cleaned, and a second cleaning finds nothing dirty.
func TestClean(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m := fourSegments(now)
	p := Partition{Name: "t/0", Log: m, Bound: 1 << 62}
	res, err := Clean(context.Background(), p, now)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cleaned || res.DirtyRatio != 1 || res.Segments != 3 || res.Kept != 1 || res.RemovedRecords != 4 {
		t.Fatalf("result %+v", res)
	}
	if got := m.offsets(); got != "[[4 5] [6 7]]" {
		t.Fatalf("segments after cleaning %s", got)
	}
	if m.checkpoint != 6 {
		t.Fatalf("checkpoint %d, want 6", m.checkpoint)
	}
	m.reads = 0
	if res, err := Clean(context.Background(), p, now); err != nil || res.Cleaned || res.DirtyRatio != 0 || m.reads != 0 {
		t.Fatalf("second cleaning: %+v %v, %d segment reads", res, err, m.reads)
	}
}

// TestCleanHonoursSettings: nothing is cleaned below
// min.cleanable.dirty.ratio (unless the dirt is older than
// max.compaction.lag.ms), nothing written less than min.compaction.lag.ms
// ago, nothing at or past the bound (an open transaction, the producers'
// saved state), and a segment whose file changed while it was cleaned
// stays as it was.
func TestCleanHonoursSettings(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		configs map[string]string
		bound   int64
		changed bool
		want    string
		fails   bool
	}{
		{"dirty ratio", map[string]string{"min.cleanable.dirty.ratio": "1.01"}, 1 << 62, false, "[[0 1] [2 3] [4 5] [6 7]]", false},
		{"max lag", map[string]string{"min.cleanable.dirty.ratio": "1.01", "max.compaction.lag.ms": "60000"}, 1 << 62, false, "[[4 5] [6 7]]", false},
		{"min lag", map[string]string{"min.compaction.lag.ms": "150000"}, 1 << 62, false, "[[2 3] [4 5] [6 7]]", false},
		{"bound", nil, 4, false, "[[2 3] [4 5] [6 7]]", false},
		{"changed", nil, 1 << 62, true, "[[0 1] [2 3] [4 5] [6 7]]", true},
	} {
		m := fourSegments(now)
		m.changed = c.changed
		_, err := Clean(ctx, Partition{Name: "t/0", Log: m, Configs: c.configs, Bound: c.bound}, now)
		if (err != nil) != c.fails {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := m.offsets(); got != c.want {
			t.Errorf("%s: segments %s, want %s", c.name, got, c.want)
		}
	}
}

// A segment named for a time moments ago is cleaned once a newer one
// exists if a gateway wrote it (it never appends to it again), and
// otherwise only closedAfter past its name's time (an MQ broker may still
// append to the file of its second). Rolled names ("….000001") read as
// their second.
func TestCleanRecentSegments(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, sealed := range []bool{false, true} {
		m := fourSegments(now)
		m.sealed = sealed
		for i := range m.segs {
			m.segs[i].name = now.Add(-2*time.Second).UTC().Format("2006-01-02-15-04-05") + fmt.Sprintf(".%06d", i+1)
		}
		if _, err := Clean(context.Background(), Partition{Name: "t/0", Log: m, Bound: 1 << 62}, now); err != nil {
			t.Fatal(err)
		}
		want := "[[0 1] [2 3] [4 5] [6 7]]"
		if sealed {
			want = "[[4 5] [6 7]]"
		}
		if got := m.offsets(); got != want {
			t.Errorf("sealed %v: segments %s, want %s", sealed, got, want)
		}
	}
}
