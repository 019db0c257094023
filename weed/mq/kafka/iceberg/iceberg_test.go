package iceberg

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// memSource is partitions in memory, all led by this gateway.
type memSource struct{ parts map[int32][]Record }

func (s *memSource) Topics(context.Context) ([]Topic, error) {
	return []Topic{{Name: "t", Partitions: int32(len(s.parts)), Configs: map[string]string{ConfigMode: ModeKeyValue}}}, nil
}
func (s *memSource) Leads(string, int32) bool { return true }
func (s *memSource) End(_ context.Context, _ string, p int32) (int64, error) {
	return int64(len(s.parts[p])), nil
}
func (s *memSource) Read(_ context.Context, _ string, p int32, from int64, maxBytes int) ([]Record, int64, error) {
	var out []Record
	size := 0
	for _, r := range s.parts[p][from:] {
		if size >= maxBytes {
			break
		}
		out = append(out, r)
		size += len(r.Key) + len(r.Value)
	}
	return out, from + int64(len(out)), nil
}

// memCatalog is one table whose commits are compare-and-swap on its
// version, as the REST catalog's are on the snapshot; before, if set,
// runs between a table's read and its commit (another gateway's commit).
type memCatalog struct {
	mu      sync.Mutex
	version int
	rows    []Record
	offsets map[int32]int64
	before  func()
}

type memTable struct {
	c       *memCatalog
	version int
	offsets map[int32]int64
}

func (c *memCatalog) Table(context.Context, string, string) (Table, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &memTable{c: c, version: c.version, offsets: maps.Clone(c.offsets)}, nil
}

func (t *memTable) Offsets() (map[int32]int64, error) { return maps.Clone(t.offsets), nil }

func (t *memTable) Append(_ context.Context, recs []Record, next map[int32]int64) (int, error) {
	if f := t.c.before; f != nil {
		t.c.before = nil
		f()
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.c.version != t.version {
		return 0, errConflict
	}
	t.c.version++
	t.c.rows = append(t.c.rows, recs...)
	t.c.offsets = maps.Clone(next)
	return 1, nil
}

func records(p int32, n int) []Record {
	out := make([]Record, n)
	for i := range out {
		out[i] = Record{Partition: p, Offset: int64(i), Record: record.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("p%d-%d", p, i)), Timestamp: 1700000000000 + int64(i)}}
	}
	return out
}

// Every record once, whatever commits of others come in between: a
// conflicting commit is read and the batch made again from its offsets.
func TestCommitExactlyOnce(t *testing.T) {
	src := &memSource{parts: map[int32][]Record{0: records(0, 50), 1: records(1, 30)}}
	cat := &memCatalog{offsets: map[int32]int64{}}
	tables := New(Options{Source: src, Catalog: cat, MaxBytes: 200})
	tp := Topic{Name: "t", Partitions: 2}
	// Another gateway commits partition 1's first 10 records between this
	// one's read and its commit.
	cat.before = func() {
		cat.mu.Lock()
		defer cat.mu.Unlock()
		cat.version++
		cat.rows = append(cat.rows, src.parts[1][:10]...)
		cat.offsets = map[int32]int64{1: 10}
	}
	for range 20 {
		res, err := tables.Commit(context.Background(), tp, []int32{0, 1})
		if err != nil {
			t.Fatal(err)
		}
		if res.Records == 0 {
			break
		}
	}
	seen := map[string]int{}
	for _, r := range cat.rows {
		seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]++
	}
	if len(seen) != 80 || len(cat.rows) != 80 {
		t.Fatalf("%d rows, %d distinct, want 80 each", len(cat.rows), len(seen))
	}
	if cat.offsets[0] != 50 || cat.offsets[1] != 30 {
		t.Fatalf("offsets %v, want 0:50 1:30", cat.offsets)
	}
	for _, r := range cat.rows {
		if want := fmt.Sprintf("p%d-%d", r.Partition, r.Offset); string(r.Value) != want {
			t.Fatalf("row %d/%d holds %q, want %q", r.Partition, r.Offset, r.Value, want)
		}
	}
}

func TestTableName(t *testing.T) {
	for topic, want := range map[string]string{"orders": "orders", "Orders.V1": "orders_v1", "_internal": "t_internal", "a-b_c": "a-b_c"} {
		if got := TableName(topic); got != want {
			t.Errorf("%s: %s, want %s", topic, got, want)
		}
	}
}

func TestCheckMode(t *testing.T) {
	for _, ok := range []string{ModeDisabled, ModeKeyValue} {
		if err := CheckMode(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "KEY_VALUE", "value_schema_id_prefix"} {
		if CheckMode(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The Arrow batch holds each record's columns: nulls for a null key or
// value, headers in order.
func TestRecordReader(t *testing.T) {
	recs := []Record{
		{Partition: 2, Offset: 7, Record: record.Record{Key: nil, Value: []byte("v"), Timestamp: 1700000000123,
			Headers: []kmsg.Header{{Key: "h1", Value: []byte("x")}, {Key: "h2"}}}},
		{Partition: 2, Offset: 8, Record: record.Record{Key: []byte("k"), Value: nil, Timestamp: 1700000000124}},
	}
	rdr, err := recordReader(recs)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		t.Fatal("no batch")
	}
	b := rdr.RecordBatch()
	if b.NumRows() != 2 {
		t.Fatalf("%d rows", b.NumRows())
	}
	keys := b.Column(3).(*array.Binary)
	values := b.Column(4).(*array.Binary)
	if !keys.IsNull(0) || string(keys.Value(1)) != "k" || string(values.Value(0)) != "v" || !values.IsNull(1) {
		t.Fatalf("keys %v values %v", keys, values)
	}
	if got := b.Column(1).(*array.Int64).Int64Values(); !slices.Equal(got, []int64{7, 8}) {
		t.Fatalf("offsets %v", got)
	}
	if us := b.Column(2).(*array.Timestamp).Value(0); int64(us) != 1700000000123000 {
		t.Fatalf("timestamp %d µs", us)
	}
	headers := b.Column(5).(*array.List)
	start, end := headers.ValueOffsets(0)
	if end-start != 2 {
		t.Fatalf("record 0 has %d headers", end-start)
	}
	hk := headers.ListValues().(*array.Struct).Field(0).(*array.String)
	if hk.Value(0) != "h1" || hk.Value(1) != "h2" {
		t.Fatalf("header keys %v", hk)
	}
}

func TestOffsetsFormat(t *testing.T) {
	m := map[int32]int64{0: 5, 12: 99}
	got, err := parseOffsets(formatOffsets(m))
	if err != nil || !maps.Equal(got, m) {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := parseOffsets(`{"x":1}`); err == nil {
		t.Fatal("a partition that is no number accepted")
	}
}

func TestPartitionSpec(t *testing.T) {
	for spec, want := range map[string][]string{
		"":                                      {"timestamp_hour"},
		"(hour(timestamp))":                     {"timestamp_hour"},
		"()":                                    nil,
		"(day(timestamp), partition)":           {"timestamp_day", "partition"},
		"(bucket(16, key), truncate(4, value))": {"key_bucket_16", "value_trunc_4"},
		"( identity(offset) , month(timestamp) )": {"offset", "timestamp_month"},
	} {
		s, err := partitionSpec(spec, keyValueSchema())
		if err != nil {
			t.Errorf("%q: %v", spec, err)
			continue
		}
		var names []string
		for _, f := range s.Fields() {
			names = append(names, f.Name)
		}
		if !slices.Equal(names, want) {
			t.Errorf("%q: fields %v, want %v", spec, names, want)
		}
	}
	for _, bad := range []string{"hour(timestamp)", "(hour(nope))", "(week(timestamp))", "(bucket(0, key))", "(bucket(key))", "(hour(key))", "(hour(timestamp)"} {
		if err := CheckPartitionSpec(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
