package compaction

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/logentry"
)

// stored is a record as the writer stores it at offset.
func storedEntry(offset int64, r record.Record) *filer_pb.LogEntry {
	e := &filer_pb.LogEntry{Offset: offset, TsNs: r.Timestamp * int64(time.Millisecond), Key: r.Key}
	if record.Plain(&r, true) {
		e.Data = r.Value
	} else {
		e.Data = record.AppendEnvelope(nil, &r, false)
	}
	return e
}

func kv(offset int64, key, value string) *filer_pb.LogEntry {
	r := record.Record{Key: []byte(key), Timestamp: 1_700_000_000_000 + offset}
	if value != "<null>" {
		r.Value = []byte(value)
	}
	return storedEntry(offset, r)
}

func offsetsOf(es []*filer_pb.LogEntry) []int64 {
	var out []int64
	for _, e := range es {
		out = append(out, e.Offset)
	}
	return out
}

// The cleaner keeps the newest record of each key at its offset, drops
// superseded ones, tombstones only past delete.retention.ms, aborted
// transactions' records, keyless records and fillers; markers, a
// committed transaction's records and foreign messages stay; copies of
// offsets an interrupted cleaning left are dropped without counting as
// removed records; segments merge while what they keep fits.
func TestPlanClean(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tombstone := func(offset int64, key string, at time.Time) *filer_pb.LogEntry {
		return storedEntry(offset, record.Record{Key: []byte(key), Timestamp: at.UnixMilli()})
	}
	txn := func(offset int64, pid int64, key, value string) *filer_pb.LogEntry {
		return storedEntry(offset, record.Record{Key: []byte(key), Value: []byte(value), Timestamp: 1,
			Txn: &record.TxnMark{ProducerID: pid, Control: record.NotControl}})
	}
	marker := func(offset, pid int64, control int8) *filer_pb.LogEntry {
		return storedEntry(offset, record.Record{Key: record.ControlKey(control), Value: record.ControlValue(0), Timestamp: 1,
			Txn: &record.TxnMark{ProducerID: pid, Control: control}})
	}
	segs := []cleanSeg{
		{entries: []*filer_pb.LogEntry{
			kv(0, "a", "a0"), kv(1, "b", "b1"), kv(2, "c", "c2"), kv(3, "gone", "g3"),
			storedEntry(4, record.Record{Value: []byte("keyless"), Timestamp: 1}),
			logentry.Filler(5, 1),
		}},
		{entries: []*filer_pb.LogEntry{
			kv(6, "a", "a6"), tombstone(7, "gone", now.Add(-2*time.Hour)),
			txn(8, 42, "b", "aborted"), marker(9, 42, record.ControlAbort),
			txn(10, 43, "c", "c10"), marker(11, 43, record.ControlCommit),
			{Offset: 12, Key: []byte("k"), Data: []byte("\x00KGW\x09?")}, // not a Kafka record
		}},
		{entries: []*filer_pb.LogEntry{
			kv(11, "c", "copy"), // a copy of offset 11, left by an interrupted cleaning
			tombstone(13, "fresh", now.Add(-time.Minute)), kv(14, "d", "d14"), kv(15, "d", "d15"),
		}},
	}
	aborted := []Aborted{{ProducerID: 42, FirstOffset: 8, LastOffset: 9}}
	groups := planClean(segs, newCleaner(aborted, now.Add(-time.Hour), 1<<20, false))
	if len(groups) != 1 || groups[0].lo != 0 || groups[0].hi != 2 {
		t.Fatalf("groups %+v, want the three segments merged", groups)
	}
	want := []int64{1, 6, 9, 10, 11, 12, 13, 15}
	if got := offsetsOf(groups[0].kept); !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	if groups[0].removed != 8 { // 0 2 3 4 5 7 8 14
		t.Errorf("%d removed, want 8", groups[0].removed)
	}

	// Segments of a few bytes each do not merge past mergeBytes.
	groups = planClean(segs, newCleaner(aborted, now.Add(-time.Hour), 1, false))
	if len(groups) != 3 {
		t.Fatalf("%d groups, want 3", len(groups))
	}
	for i, want := range [][]int64{{1}, {6, 9, 10, 11, 12}, {13, 15}} {
		if got := offsetsOf(groups[i].kept); !slices.Equal(got, want) {
			t.Errorf("segment %d keeps %v, want %v", i, got, want)
		}
	}

	// A long delete.retention.ms keeps the old tombstone.
	if got := offsetsOf(planClean(segs, newCleaner(aborted, now.Add(-3*time.Hour), 1<<20, false))[0].kept); !slices.Contains(got, 7) {
		t.Errorf("kept %v: the tombstone at 7 went before delete.retention.ms", got)
	}
}

// The partition's first segment stays, with a filler at its last offset,
// when every record in it is superseded (it holds where the partition
// starts); a segment that keeps nothing joins the group before it, whose
// file stays, and goes.
func TestPlanCleanKeepsTheFirstSegment(t *testing.T) {
	segs := []cleanSeg{
		{entries: []*filer_pb.LogEntry{kv(0, "a", "0"), kv(1, "a", "1")}},
		{entries: []*filer_pb.LogEntry{kv(2, "a", "2"), kv(3, "a", "3")}},
		{entries: []*filer_pb.LogEntry{kv(4, "a", "4")}},
	}
	groups := planClean(segs, newCleaner(nil, time.Now(), 1, true))
	var got [][]int64
	for _, g := range groups {
		got = append(got, offsetsOf(g.kept))
	}
	if fmt.Sprint(got) != "[[3] [4]]" {
		t.Fatalf("kept %v, want [[3] [4]]", got)
	}
	if _, err := record.FromStored(groups[0].kept[0].Key, groups[0].kept[0].Data, 0); !errors.Is(err, record.ErrFiller) {
		t.Errorf("the first segment keeps a record (%v), not a filler", err)
	}
	if groups[0].lo != 0 || groups[0].hi != 1 || !groups[0].changes() || groups[1].changes() {
		t.Errorf("groups %+v, want the first two segments in one, the third unchanged", groups)
	}
}

// Many versions of many keys: the newest of each, whatever the segments.
func TestPlanCleanNewestPerKey(t *testing.T) {
	var segs []cleanSeg
	newest := map[string]int64{}
	off := int64(0)
	for s := 0; s < 10; s++ {
		var es []*filer_pb.LogEntry
		for i := 0; i < 100; i++ {
			k := fmt.Sprintf("k%d", (s*37+i*11)%50)
			es = append(es, kv(off, k, fmt.Sprint(off)))
			newest[k] = off
			off++
		}
		segs = append(segs, cleanSeg{entries: es})
	}
	groups := planClean(segs, newCleaner(nil, time.Now(), 512, false))
	got := map[string]int64{}
	prev := int64(-1)
	for _, g := range groups {
		for _, e := range g.kept {
			if e.Offset <= prev {
				t.Fatalf("offset %d after %d", e.Offset, prev)
			}
			prev = e.Offset
			if _, dup := got[string(e.Key)]; dup {
				t.Errorf("key %s kept twice", e.Key)
			}
			got[string(e.Key)] = e.Offset
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(newest) {
		t.Errorf("kept %v, want %v", got, newest)
	}
	if len(groups) < 2 {
		t.Errorf("%d groups: mergeBytes not applied", len(groups))
	}
}

// planClean is a cleaning of segments held in memory: what each keeps,
// and how they merge.
func planClean(segs []cleanSeg, c *cleaner) []cleanGroup {
	for _, s := range segs {
		c.learn(s.entries)
	}
	var groups []cleanGroup
	for i, s := range segs {
		if g := c.clean(i, s.entries); g != nil {
			groups = append(groups, *g)
		}
	}
	if g := c.end(); g != nil {
		groups = append(groups, *g)
	}
	return groups
}
