package iceberg

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/bufbuild/protocompile"
	"github.com/hamba/avro/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

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
func (s *memSource) Read(_ context.Context, _ string, p int32, from int64, maxBytes int, into []Record) ([]Record, int64, error) {
	size, n := 0, 0
	for _, r := range s.parts[p][from:] {
		if size >= maxBytes {
			break
		}
		into = append(into, r)
		size += Size(&r.Record)
		n++
	}
	return into, from + int64(n), nil
}

// memCatalog is tables whose commits are compare-and-swap on their
// version, as the REST catalog's are on the snapshot; before, if set,
// runs between a table's read and its commit (another gateway's commit).
type memCatalog struct {
	mu     sync.Mutex
	tables map[string]*memTableState
	before func()
}

// memTableState is a table: its schema, rows and offsets.
type memTableState struct {
	version int
	schema  *iceberg.Schema
	rows    []map[string]any // column -> value (the kafka struct flattened as kafka.<field>)
	offsets map[int32]int64
}

type memTable struct {
	c       *memCatalog
	name    string
	version int
	schema  *iceberg.Schema
	offsets map[int32]int64
}

func (c *memCatalog) table(name string) *memTableState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tables[name]
}

func (c *memCatalog) Table(_ context.Context, name string, schema *iceberg.Schema, _ string) (Table, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tables == nil {
		c.tables = map[string]*memTableState{}
	}
	st := c.tables[name]
	if st == nil {
		st = &memTableState{schema: schema, offsets: map[int32]int64{}}
		c.tables[name] = st
	}
	return &memTable{c: c, name: name, version: st.version, schema: st.schema, offsets: maps.Clone(st.offsets)}, nil
}

func (t *memTable) Offsets() (map[int32]int64, error) { return maps.Clone(t.offsets), nil }
func (t *memTable) Schema() *iceberg.Schema           { return t.schema }
func (t *memTable) Fits(*iceberg.Schema) error        { return nil }

// Evolve adds the top-level columns of with the table has not.
func (t *memTable) Evolve(_ context.Context, with *iceberg.Schema) (Table, error) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	st := t.c.tables[t.name]
	if st.version != t.version {
		return nil, errConflict
	}
	var added []iceberg.NestedField
	for _, f := range with.Fields() {
		if _, ok := st.schema.FindFieldByName(f.Name); !ok {
			added = append(added, f)
		}
	}
	next := 0
	counter := func() int { next++; return next }
	had, err := iceberg.AssignFreshSchemaIDs(st.schema, counter)
	if err != nil {
		return nil, err
	}
	more, err := iceberg.AssignFreshSchemaIDs(iceberg.NewSchema(0, added...), counter)
	if err != nil {
		return nil, err
	}
	sc := iceberg.NewSchema(0, append(had.Fields(), more.Fields()...)...)
	st.schema = sc
	return &memTable{c: t.c, name: t.name, version: st.version, schema: sc, offsets: maps.Clone(st.offsets)}, nil
}

func (t *memTable) Append(_ context.Context, rdr array.RecordReader, n int, next map[int32]int64) (int, error) {
	if f := t.c.before; f != nil {
		t.c.before = nil
		f()
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	st := t.c.tables[t.name]
	if st.version != t.version {
		return 0, errConflict
	}
	st.version++
	for rdr.Next() {
		b := rdr.RecordBatch()
		for i := 0; i < int(b.NumRows()); i++ {
			row := map[string]any{}
			for j, f := range b.Schema().Fields() {
				col := b.Column(j)
				if st, ok := col.(*array.Struct); ok {
					for k, sf := range st.DataType().(*arrow.StructType).Fields() {
						row[f.Name+"."+sf.Name] = st.Field(k).GetOneForMarshal(i)
					}
					continue
				}
				row[f.Name] = col.GetOneForMarshal(i)
			}
			st.rows = append(st.rows, row)
		}
	}
	if len(st.rows) < n {
		return 0, fmt.Errorf("%d rows read, %d appended", len(st.rows), n)
	}
	st.offsets = maps.Clone(next)
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
	cat := &memCatalog{}
	tables := New(Options{Source: src, Catalog: cat, MaxBytes: 25 * (8 + recordOverhead)}) // about 25 records a commit
	tp := Topic{Name: "t", Partitions: 2, Configs: map[string]string{ConfigMode: ModeKeyValue}}
	// Another gateway commits partition 1's first 10 records between this
	// one's read and its commit.
	cat.before = func() {
		cat.mu.Lock()
		defer cat.mu.Unlock()
		st := cat.tables["t"]
		st.version++
		for _, r := range src.parts[1][:10] {
			st.rows = append(st.rows, map[string]any{"partition": r.Partition, "offset": r.Offset, "value": r.Value})
		}
		st.offsets = map[int32]int64{1: 10}
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
	st := cat.table("t")
	seen := map[string]int{}
	for _, r := range st.rows {
		p, o := fmt.Sprint(r["partition"]), fmt.Sprint(r["offset"])
		seen[p+"/"+o]++
		want := "p" + p + "-" + o
		if v := fmt.Sprint(r["value"]); v != want && string(toBytes(r["value"])) != want {
			t.Fatalf("row %s/%s holds %v, want %q", p, o, r["value"], want)
		}
	}
	if len(seen) != 80 || len(st.rows) != 80 {
		t.Fatalf("%d rows, %d distinct, want 80 each", len(st.rows), len(seen))
	}
	if st.offsets[0] != 50 || st.offsets[1] != 30 {
		t.Fatalf("offsets %v, want 0:50 1:30", st.offsets)
	}
}

// A table behind by many commits' MaxBytes catches up in one round (its
// target lag is no pause between commits), and every commit takes its
// share of each partition: a busy partition holds none back.
func TestRoundCatchesUp(t *testing.T) {
	src := &memSource{parts: map[int32][]Record{0: records(0, 400), 1: records(1, 400), 2: records(2, 40)}}
	cat := &memCatalog{}
	tables := New(Options{Source: src, Catalog: cat, MaxBytes: 75 * (8 + recordOverhead)}) // about 25 records of each partition a commit
	tables.round(time.Now())
	st := cat.table("t")
	if st == nil {
		t.Fatal("no table after a round")
	}
	if len(st.rows) != 840 || st.offsets[0] != 400 || st.offsets[1] != 400 || st.offsets[2] != 40 {
		t.Fatalf("after one round: %d rows, offsets %v; want 840, 0:400 1:400 2:40", len(st.rows), st.offsets)
	}
	if st.version < 16 {
		t.Fatalf("%d commits, want one of at most MaxBytes for each share", st.version)
	}
	// Partition 2's 40 records are in the first commits, not after the
	// busy partitions' 800.
	last2 := 0
	for i, r := range st.rows {
		if fmt.Sprint(r["partition"]) == "2" {
			last2 = i
		}
	}
	if last2 > 200 {
		t.Fatalf("partition 2's last record is row %d: held back by the busy partitions", last2)
	}
}

// growingSource is a memSource whose partition 0 gets a record more at
// each read: producers writing while the table catches up.
type growingSource struct{ memSource }

func (s *growingSource) Read(ctx context.Context, topic string, p int32, from int64, maxBytes int, into []Record) ([]Record, int64, error) {
	out, next, err := s.memSource.Read(ctx, topic, p, from, maxBytes, into)
	if p == 0 {
		n := int64(len(s.parts[0]))
		s.parts[0] = append(s.parts[0], Record{Partition: 0, Offset: n, Record: record.Record{Key: []byte("k"), Value: []byte(fmt.Sprintf("p0-%d", n))}})
	}
	return out, next, err
}

// The writer rests between catch-up commits while producers write to the
// partitions, and not once they have stopped.
func TestRoundRestsOnlyUnderProducers(t *testing.T) {
	for _, growing := range []bool{false, true} {
		parts := map[int32][]Record{0: records(0, 400), 1: records(1, 400)}
		var src Source = &memSource{parts: parts}
		if growing {
			src = &growingSource{memSource{parts: parts}}
		}
		rests := 0
		tables := New(Options{Source: src, Catalog: &memCatalog{}, MaxBytes: 50 * (8 + recordOverhead),
			rest: func(time.Duration) time.Duration { rests++; return 0 }})
		tables.round(time.Now())
		if growing && rests == 0 {
			t.Error("no rest between commits while the partitions grew")
		}
		if !growing && rests != 0 {
			t.Errorf("%d rests between commits of partitions that did not grow", rests)
		}
	}
}

func toBytes(v any) []byte {
	switch v := v.(type) {
	case []byte:
		return v
	case string:
		return []byte(v)
	}
	return nil
}

func TestTableName(t *testing.T) {
	for topic, want := range map[string]string{"orders": "orders", "Orders.V1": "orders_v1", "_internal": "t_internal", "a-b_c": "a-b_c"} {
		if got := TableName(topic); got != want {
			t.Errorf("%s: %s, want %s", topic, got, want)
		}
	}
}

func TestCheckMode(t *testing.T) {
	for _, ok := range []string{ModeDisabled, ModeKeyValue, ModeValueSchemaIDPrefix, ModeValueSchemaLatest} {
		if err := CheckMode(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "KEY_VALUE", "value_schema"} {
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
		{Partition: 3, Offset: 1, Record: record.Record{Key: []byte("k"), Value: []byte{}, Timestamp: 1700000000125,
			Headers: []kmsg.Header{{Key: "h3", Value: []byte{}}}}},
	}
	rdr, err := keyValueRows(keyValueSchema(), recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		t.Fatal("no batch")
	}
	b := rdr.RecordBatch()
	if b.NumRows() != 3 {
		t.Fatalf("%d rows", b.NumRows())
	}
	keys := b.Column(3).(*array.Binary)
	values := b.Column(4).(*array.Binary)
	if !keys.IsNull(0) || string(keys.Value(1)) != "k" || string(values.Value(0)) != "v" || !values.IsNull(1) {
		t.Fatalf("keys %v values %v", keys, values)
	}
	if got := b.Column(1).(*array.Int64).Int64Values(); !slices.Equal(got, []int64{7, 8, 1}) {
		t.Fatalf("offsets %v", got)
	}
	if got := b.Column(0).(*array.Int32).Int32Values(); !slices.Equal(got, []int32{2, 2, 3}) {
		t.Fatalf("partitions %v", got)
	}
	if values.IsNull(2) || len(values.Value(2)) != 0 {
		t.Fatal("an empty value is not kept apart from a null one")
	}
	if us := b.Column(2).(*array.Timestamp).Value(0); int64(us) != 1700000000123000 {
		t.Fatalf("timestamp %d µs", us)
	}
	headers := b.Column(5).(*array.List)
	start, end := headers.ValueOffsets(0)
	if end-start != 2 {
		t.Fatalf("record 0 has %d headers", end-start)
	}
	for i, want := range [][2]int64{{0, 2}, {2, 2}, {2, 3}} {
		if start, end := headers.ValueOffsets(i); start != want[0] || end != want[1] || headers.IsNull(i) {
			t.Fatalf("record %d's headers at %d-%d (null %v), want %v", i, start, end, headers.IsNull(i), want)
		}
	}
	hk := headers.ListValues().(*array.Struct).Field(0).(*array.String)
	hv := headers.ListValues().(*array.Struct).Field(1).(*array.Binary)
	if hk.Value(0) != "h1" || hk.Value(1) != "h2" || hk.Value(2) != "h3" {
		t.Fatalf("header keys %v", hk)
	}
	if string(hv.Value(0)) != "x" || !hv.IsNull(1) || hv.IsNull(2) {
		t.Fatalf("header values %v", hv)
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
		"( identity(offset) , month(timestamp) )":  {"offset", "timestamp_month"},
		"(hour(kafka.timestamp), kafka.partition)": {"kafka_timestamp_hour", "kafka_partition"},
	} {
		schema := keyValueSchema()
		if strings.Contains(spec, "kafka.") {
			schema = valueSchemaBase()
		}
		s, err := partitionSpec(spec, schema)
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

// memSchemas are a registry's schemas by id: Avro's text, a compiled
// Protobuf file or a compiled JSON Schema.
type memSchemas map[int]any

func (m memSchemas) Latest(string) (int, error) {
	latest := 0
	for id := range m {
		latest = max(latest, id)
	}
	if latest == 0 {
		return 0, fmt.Errorf("no versions")
	}
	return latest, nil
}

func (m memSchemas) Schema(id int) (any, error) {
	switch s := m[id].(type) {
	case string:
		return avro.Parse(s)
	case protoreflect.FileDescriptor, *jsonschema.Schema:
		return s, nil
	}
	return nil, fmt.Errorf("schema id %d is not registered", id)
}

func (m memSchemas) avro(t *testing.T, id int) avro.Schema {
	t.Helper()
	s, err := m.Schema(id)
	if err != nil {
		t.Fatal(err)
	}
	return s.(avro.Schema)
}

func framed(t *testing.T, schemas memSchemas, id int, v any) []byte {
	t.Helper()
	b, err := avro.Marshal(schemas.avro(t, id), v)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{0, 0, 0, 0, byte(id)}, b...)
}

// value_schema_id_prefix: values decoded by their schema ids into
// columns; a newer schema's field added as a column (null in the older
// rows); records with no schema id or an unknown one in the dead-letter
// table with why, each once, or dropped.
func TestValueSchemaIDPrefix(t *testing.T) {
	schemas := memSchemas{
		1: `{"type":"record","name":"Trade","fields":[{"name":"symbol","type":"string"},{"name":"qty","type":"int"},{"name":"tags","type":{"type":"array","items":"string"}},{"name":"venue","type":["null",{"type":"record","name":"Venue","fields":[{"name":"mic","type":"string"}]}]}]}`,
		2: `{"type":"record","name":"Trade","fields":[{"name":"symbol","type":"string"},{"name":"qty","type":"int"},{"name":"tags","type":{"type":"array","items":"string"}},{"name":"venue","type":["null",{"type":"record","name":"Venue","fields":[{"name":"mic","type":"string"}]}]},{"name":"price","type":["null","double"],"default":null}]}`,
	}
	recs := []Record{
		{Offset: 0, Record: record.Record{Value: framed(t, schemas, 1, map[string]any{"symbol": "A", "qty": 1, "tags": []any{"x"}, "venue": map[string]any{"Venue": map[string]any{"mic": "XNAS"}}}), Timestamp: 1}},
		{Offset: 1, Record: record.Record{Value: []byte("plain"), Timestamp: 2}},
		{Offset: 2, Record: record.Record{Value: framed(t, schemas, 2, map[string]any{"symbol": "B", "qty": 2, "tags": []any{}, "venue": nil, "price": 9.5}), Timestamp: 3}},
		{Offset: 3, Record: record.Record{Value: []byte{0, 0, 0, 0, 7, 1}, Timestamp: 4}},
	}
	for _, action := range []string{ActionDLQ, ActionDrop} {
		src := &memSource{parts: map[int32][]Record{0: recs}}
		cat := &memCatalog{}
		tables := New(Options{Source: src, Catalog: cat, Schemas: schemas})
		tp := Topic{Name: "trades", Partitions: 1, Configs: map[string]string{ConfigMode: ModeValueSchemaIDPrefix, ConfigInvalidAction: action}}
		for range 2 { // the second commit finds nothing more, nor writes dead letters twice
			if _, err := tables.Commit(context.Background(), tp, []int32{0}); err != nil {
				t.Fatal(err)
			}
		}
		main := cat.table("trades")
		if len(main.rows) != 2 || main.offsets[0] != 4 {
			t.Fatalf("%s: %d rows, offsets %v; want 2 rows, next offset 4", action, len(main.rows), main.offsets)
		}
		first, second := main.rows[0], main.rows[1]
		if first["symbol"] != "A" || fmt.Sprint(first["qty"]) != "1" || first["price"] != nil || fmt.Sprint(first["kafka.offset"]) != "0" {
			t.Errorf("%s: the first row %v", action, first)
		}
		if second["symbol"] != "B" || fmt.Sprint(second["price"]) != "9.5" || second["venue"] != nil || fmt.Sprint(second["kafka.offset"]) != "2" {
			t.Errorf("%s: the second row %v", action, second)
		}
		if _, ok := main.schema.FindFieldByName("venue.mic"); !ok {
			t.Errorf("%s: no column venue.mic in %v", action, main.schema)
		}
		if f, ok := main.schema.FindFieldByName("qty"); !ok || !f.Type.Equals(iceberg.PrimitiveTypes.Int64) && !f.Type.Equals(iceberg.PrimitiveTypes.Int32) {
			t.Errorf("%s: qty %v", action, f)
		}
		dlq := cat.table("trades_dlq")
		if action == ActionDrop {
			if dlq != nil {
				t.Errorf("drop: a dead-letter table with %d rows", len(dlq.rows))
			}
			continue
		}
		if dlq == nil || len(dlq.rows) != 2 {
			t.Fatalf("dlq_table: dead letters %v", dlq)
		}
		if fmt.Sprint(dlq.rows[0]["offset"]) != "1" || !strings.Contains(fmt.Sprint(dlq.rows[0]["reason"]), "no schema id") ||
			fmt.Sprint(dlq.rows[1]["offset"]) != "3" || !strings.Contains(fmt.Sprint(dlq.rows[1]["reason"]), "7 is not registered") {
			t.Errorf("dead letters %v", dlq.rows)
		}
	}
}

// An Avro schema's types as columns; what no column can be, refused.
func TestValueSchema(t *testing.T) {
	s := avro.MustParse(`{"type":"record","name":"R","fields":[
		{"name":"b","type":"boolean"},{"name":"i","type":"int"},{"name":"l","type":"long"},{"name":"f","type":"float"},{"name":"d","type":"double"},
		{"name":"s","type":"string"},{"name":"by","type":"bytes"},{"name":"e","type":{"type":"enum","name":"E","symbols":["A"]}},
		{"name":"fx","type":{"type":"fixed","name":"F","size":4}},{"name":"m","type":{"type":"map","values":"int"}},
		{"name":"day","type":{"type":"int","logicalType":"date"}},{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"o","type":["null","string"]}]}`).(*avro.RecordSchema)
	vs, err := valueSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]iceberg.Type{"b": iceberg.PrimitiveTypes.Bool, "i": iceberg.PrimitiveTypes.Int32, "l": iceberg.PrimitiveTypes.Int64,
		"f": iceberg.PrimitiveTypes.Float32, "d": iceberg.PrimitiveTypes.Float64, "s": iceberg.PrimitiveTypes.String, "by": iceberg.PrimitiveTypes.Binary,
		"e": iceberg.PrimitiveTypes.String, "fx": iceberg.PrimitiveTypes.Binary, "day": iceberg.PrimitiveTypes.Date,
		"ts": iceberg.PrimitiveTypes.TimestampTz, "o": iceberg.PrimitiveTypes.String}
	for name, typ := range want {
		if f, ok := vs.FindFieldByName(name); !ok || !f.Type.Equals(typ) || f.Required {
			t.Errorf("%s: %v, want optional %v", name, f, typ)
		}
	}
	for _, bad := range []string{
		`{"type":"record","name":"R","fields":[{"name":"u","type":["null"]}]}`,
		`{"type":"record","name":"R","fields":[{"name":"kafka","type":"int"}]}`,
		`{"type":"record","name":"R","fields":[{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":40,"scale":2}}]}`,
	} {
		if _, err := valueSchema(avro.MustParse(bad).(*avro.RecordSchema)); err == nil {
			t.Errorf("%s: made columns", bad)
		}
	}
}

// An Avro union of several types is a struct column of one optional field
// per type but null (member0, member1, ... in the union's order, as Spark
// reads Avro unions); each row sets the member its value is of, or none
// for null.
func TestValueAvroUnion(t *testing.T) {
	// u has a record among its types, p only primitives: hamba decodes
	// u's values wrapped in a map of their type's name, p's bare.
	schemas := memSchemas{6: `{"type":"record","name":"Ev","fields":[{"name":"u","type":["null","int","string",
		{"type":"record","name":"Pt","fields":[{"name":"x","type":"int"}]},{"type":"long","logicalType":"timestamp-millis"}]},
		{"name":"p","type":["null","string","long","double"]}]}`}
	values := []any{map[string]any{"int": 7}, map[string]any{"string": "s"}, map[string]any{"Pt": map[string]any{"x": 3}},
		map[string]any{"long.timestamp-millis": int64(1500)}, nil}
	prims := []any{"a", int64(2), 2.5, nil, "e"}
	var recs []Record
	for i, v := range values {
		recs = append(recs, Record{Offset: int64(i), Record: record.Record{Value: framed(t, schemas, 6, map[string]any{"u": v, "p": prims[i]})}})
	}
	cat := &memCatalog{}
	tables := New(Options{Source: &memSource{parts: map[int32][]Record{0: recs}}, Catalog: cat, Schemas: schemas})
	tp := Topic{Name: "events", Partitions: 1, Configs: map[string]string{ConfigMode: ModeValueSchemaIDPrefix}}
	if _, err := tables.Commit(context.Background(), tp, []int32{0}); err != nil {
		t.Fatal(err)
	}
	main := cat.table("events")
	if main == nil || len(main.rows) != len(values) {
		t.Fatalf("rows %v, dead letters %v", main, cat.table("events_dlq"))
	}
	for col, typ := range map[string]iceberg.Type{"u.member0": iceberg.PrimitiveTypes.Int32, "u.member1": iceberg.PrimitiveTypes.String,
		"u.member2.x": iceberg.PrimitiveTypes.Int32, "u.member3": iceberg.PrimitiveTypes.TimestampTz} {
		if f, ok := main.schema.FindFieldByName(col); !ok || !f.Type.Equals(typ) || f.Required {
			t.Errorf("column %s: %v, want optional %v", col, f, typ)
		}
	}
	want := []map[string]string{
		{"u.member0": "7", "u.member1": "<nil>", "u.member2": "<nil>", "u.member3": "<nil>", "p.member0": "a", "p.member1": "<nil>", "p.member2": "<nil>"},
		{"u.member0": "<nil>", "u.member1": "s", "u.member2": "<nil>", "u.member3": "<nil>", "p.member0": "<nil>", "p.member1": "2", "p.member2": "<nil>"},
		{"u.member0": "<nil>", "u.member1": "<nil>", "u.member2": "map[x:3]", "u.member3": "<nil>", "p.member0": "<nil>", "p.member1": "<nil>", "p.member2": "2.5"},
		{"u.member0": "<nil>", "u.member1": "<nil>", "u.member2": "<nil>", "u.member3": "1970-01-01T00:00:01.5Z", "p.member0": "<nil>", "p.member1": "<nil>", "p.member2": "<nil>"},
		{"u.member0": "<nil>", "u.member1": "<nil>", "u.member2": "<nil>", "u.member3": "<nil>", "p.member0": "e", "p.member1": "<nil>", "p.member2": "<nil>"},
	}
	for i, w := range want {
		for col, v := range w {
			if got := fmt.Sprint(main.rows[i][col]); got != v {
				t.Errorf("row %d, %s: %s, want %s", i, col, got, v)
			}
		}
	}
}

// value_schema_latest: values without a prefix, decoded by the subject's
// latest schema.
func TestValueSchemaLatest(t *testing.T) {
	schemas := memSchemas{3: `{"type":"record","name":"P","fields":[{"name":"x","type":"int"}]}`}
	v, err := avro.Marshal(schemas.avro(t, 3), map[string]any{"x": 7})
	if err != nil {
		t.Fatal(err)
	}
	src := &memSource{parts: map[int32][]Record{0: {{Offset: 0, Record: record.Record{Value: v}}, {Offset: 1, Record: record.Record{Value: nil}}}}}
	cat := &memCatalog{}
	tables := New(Options{Source: src, Catalog: cat, Schemas: schemas})
	tp := Topic{Name: "p", Partitions: 1, Configs: map[string]string{ConfigMode: ModeValueSchemaLatest}}
	if _, err := tables.Commit(context.Background(), tp, []int32{0}); err != nil {
		t.Fatal(err)
	}
	main, dlq := cat.table("p"), cat.table("p_dlq")
	if len(main.rows) != 1 || fmt.Sprint(main.rows[0]["x"]) != "7" {
		t.Fatalf("rows %v", main.rows)
	}
	if dlq == nil || len(dlq.rows) != 1 || !strings.Contains(fmt.Sprint(dlq.rows[0]["reason"]), "null value") {
		t.Fatalf("dead letters %v", dlq)
	}
}

const orderProto = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
message Other { string x = 1; }
message Order {
  enum Status { NEW = 0; PAID = 1; }
  message Line { string sku = 1; double price = 2; }
  string id = 1;
  int64 qty = 2;
  uint32 small = 3;
  Status status = 4;
  repeated string tags = 5;
  map<string, int32> counts = 6;
  Line line = 7;
  google.protobuf.Timestamp at = 8;
  google.protobuf.StringValue note = 9;
  optional int32 maybe = 10;
  repeated Line lines = 11;
  message Chain { Chain next = 1; }
}
message Node { Node next = 1; }
`

func compileProto(t testing.TB, text string) protoreflect.FileDescriptor {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"order.proto": text})})}
	files, err := c.Compile(context.Background(), "order.proto")
	if err != nil {
		t.Fatal(err)
	}
	return files[0]
}

// Protobuf values as Confluent's serializer frames them (the schema id,
// the message's indexes in its file): the message's fields as columns,
// well-known types as their values; a message that contains itself, an
// index past the file's messages and bytes that are no message are dead
// letters.
func TestValueProtobuf(t *testing.T) {
	fd := compileProto(t, orderProto)
	schemas := memSchemas{4: fd}
	order := fd.Messages().ByName("Order")
	m := dynamicpb.NewMessage(order)
	set := func(m *dynamicpb.Message, name string, v protoreflect.Value) {
		m.Set(m.Descriptor().Fields().ByName(protoreflect.Name(name)), v)
	}
	set(m, "id", protoreflect.ValueOfString("o-1"))
	set(m, "qty", protoreflect.ValueOfInt64(-3))
	set(m, "small", protoreflect.ValueOfUint32(4000000000))
	set(m, "status", protoreflect.ValueOfEnum(1))
	tags := m.Mutable(order.Fields().ByName("tags")).List()
	tags.Append(protoreflect.ValueOfString("a"))
	tags.Append(protoreflect.ValueOfString("b"))
	m.Mutable(order.Fields().ByName("counts")).Map().Set(protoreflect.ValueOfString("k").MapKey(), protoreflect.ValueOfInt32(5))
	line := dynamicpb.NewMessage(order.Messages().ByName("Line"))
	set(line, "sku", protoreflect.ValueOfString("s1"))
	set(line, "price", protoreflect.ValueOfFloat64(2.5))
	set(m, "line", protoreflect.ValueOfMessage(line))
	m.Mutable(order.Fields().ByName("lines")).List().Append(protoreflect.ValueOfMessage(line))
	at := dynamicpb.NewMessage(order.Fields().ByName("at").Message())
	set(at, "seconds", protoreflect.ValueOfInt64(1700000000))
	set(at, "nanos", protoreflect.ValueOfInt32(5000))
	set(m, "at", protoreflect.ValueOfMessage(at))
	note := dynamicpb.NewMessage(order.Fields().ByName("note").Message())
	set(note, "value", protoreflect.ValueOfString("hello"))
	set(m, "note", protoreflect.ValueOfMessage(note))
	full, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := proto.Marshal(dynamicpb.NewMessage(order))
	var h sr.ConfluentHeader
	frame := func(index []int, payload []byte) []byte {
		b, err := h.AppendEncode(nil, 4, index)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, payload...)
	}
	recs := []Record{
		{Offset: 0, Record: record.Record{Value: frame([]int{1}, full), Timestamp: 1}},
		{Offset: 1, Record: record.Record{Value: frame([]int{1}, empty), Timestamp: 2}},
		{Offset: 2, Record: record.Record{Value: frame([]int{2}, nil), Timestamp: 3}},
		{Offset: 3, Record: record.Record{Value: frame([]int{1, 2}, nil), Timestamp: 4}},
		{Offset: 4, Record: record.Record{Value: frame([]int{7}, nil), Timestamp: 5}},
		{Offset: 5, Record: record.Record{Value: frame([]int{1}, []byte{0xff, 0xff}), Timestamp: 6}},
	}
	src := &memSource{parts: map[int32][]Record{0: recs}}
	cat := &memCatalog{}
	tables := New(Options{Source: src, Catalog: cat, Schemas: schemas})
	tp := Topic{Name: "orders", Partitions: 1, Configs: map[string]string{ConfigMode: ModeValueSchemaIDPrefix}}
	if _, err := tables.Commit(context.Background(), tp, []int32{0}); err != nil {
		t.Fatal(err)
	}
	main, dlq := cat.table("orders"), cat.table("orders_dlq")
	if len(main.rows) != 2 {
		t.Fatalf("%d rows, want 2: %v", len(main.rows), main.rows)
	}
	first, second := main.rows[0], main.rows[1]
	want := map[string]string{"id": "o-1", "qty": "-3", "small": "4000000000", "status": "PAID", "tags": `["a","b"]`,
		"counts": `[{"key":"k","value":5}]`, "line.sku": "s1", "line.price": "2.5", "lines": `[{"price":2.5,"sku":"s1"}]`,
		"at": "2023-11-14T22:13:20.000005Z", "note": "hello", "maybe": "<nil>", "kafka.offset": "0"}
	for col, v := range want {
		got := fmt.Sprint(first[col])
		if raw, ok := first[col].(json.RawMessage); ok {
			got = string(raw)
		}
		if got != v {
			t.Errorf("%s: %s, want %s", col, got, v)
		}
	}
	// An empty message: proto3's defaults, absent messages and optionals null.
	if second["id"] != "" || fmt.Sprint(second["qty"]) != "0" || second["status"] != "NEW" || second["note"] != nil || second["maybe"] != nil || second["at"] != nil {
		t.Errorf("the empty message's row %v", second)
	}
	for col, typ := range map[string]iceberg.Type{"qty": iceberg.PrimitiveTypes.Int64, "small": iceberg.PrimitiveTypes.Int64,
		"status": iceberg.PrimitiveTypes.String, "at": iceberg.PrimitiveTypes.TimestampTz, "note": iceberg.PrimitiveTypes.String,
		"line.price": iceberg.PrimitiveTypes.Float64} {
		if f, ok := main.schema.FindFieldByName(col); !ok || !f.Type.Equals(typ) {
			t.Errorf("column %s: %v, want %v", col, f, typ)
		}
	}
	if dlq == nil || len(dlq.rows) != 4 {
		t.Fatalf("dead letters %v", dlq)
	}
	for i, why := range []string{"contains itself", "contains itself", "no message at index", "does not decode as schema id 4 (message shop.Order)"} {
		if !strings.Contains(fmt.Sprint(dlq.rows[i]["reason"]), why) {
			t.Errorf("dead letter %d: %v, want %q", i, dlq.rows[i]["reason"], why)
		}
	}
}

// Avro decimals, as bytes and as fixed, are decimal columns of their
// precision and scale, their values exact.
func TestValueDecimal(t *testing.T) {
	schemas := memSchemas{5: `{"type":"record","name":"Price","fields":[
		{"name":"b","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
		{"name":"f","type":["null",{"type":"fixed","name":"F","size":16,"logicalType":"decimal","precision":38,"scale":10}]}]}`}
	v := framed(t, schemas, 5, map[string]any{"b": big.NewRat(-12345, 100), "f": map[string]any{"F": big.NewRat(1, 8)}})
	src := &memSource{parts: map[int32][]Record{0: {{Offset: 0, Record: record.Record{Value: v}}}}}
	cat := &memCatalog{}
	tables := New(Options{Source: src, Catalog: cat, Schemas: schemas})
	tp := Topic{Name: "prices", Partitions: 1, Configs: map[string]string{ConfigMode: ModeValueSchemaIDPrefix}}
	if _, err := tables.Commit(context.Background(), tp, []int32{0}); err != nil {
		t.Fatal(err)
	}
	main := cat.table("prices")
	if main == nil || len(main.rows) != 1 {
		t.Fatalf("rows %v, dead letters %v", main, cat.table("prices_dlq"))
	}
	if got := fmt.Sprint(main.rows[0]["b"]); got != "-123.45" {
		t.Errorf("b: %s, want -123.45", got)
	}
	if got := fmt.Sprint(main.rows[0]["f"]); got != "0.125" {
		t.Errorf("f: %s, want 0.125", got)
	}
	for col, typ := range map[string]iceberg.Type{"b": iceberg.DecimalTypeOf(9, 2), "f": iceberg.DecimalTypeOf(38, 10)} {
		if f, ok := main.schema.FindFieldByName(col); !ok || !f.Type.Equals(typ) {
			t.Errorf("column %s: %v, want %v", col, f, typ)
		}
	}
}

const readingJSON = `{"type": "object",
  "properties": {
    "sensor": {"type": "string"}, "value": {"type": "number"}, "count": {"type": "integer"}, "ok": {"type": "boolean"},
    "at": {"type": "string", "format": "date-time"}, "day": {"type": "string", "format": "date"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "loc": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}},
    "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
    "any": {}, "unit": {"enum": ["C", "F"]}, "first-name": {"type": ["null", "string"]},
    "ref": {"$ref": "#/definitions/P"}},
  "definitions": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}}}}`

// JSON Schema values: an object's properties as columns (typed as the
// schema says, a $ref followed, a name that is no column's made one, a
// value of no one type as its JSON text); a value of another type than
// its schema's, and text that is no JSON, dead letters.
func TestValueJSON(t *testing.T) {
	sch := compileJSON(t, "reading.json", readingJSON)
	frame := func(v string) []byte { return append([]byte{0, 0, 0, 0, 6}, v...) }
	recs := []Record{
		{Offset: 0, Record: record.Record{Value: frame(`{"sensor": "s1", "value": 21.5, "count": 3, "ok": true, "at": "2024-01-02T03:04:05.000006Z",
			"day": "2024-01-02", "tags": ["a"], "loc": {"lat": 1.5, "lon": 2}, "attrs": {"k": 7}, "any": {"z": [1, 2]}, "unit": "C",
			"first-name": "Ann", "ref": {"x": 9}}`)}},
		{Offset: 1, Record: record.Record{Value: frame(`{"sensor": "s2", "count": 4.0}`)}},
		{Offset: 2, Record: record.Record{Value: frame(`{"count": "three"}`)}},
		{Offset: 3, Record: record.Record{Value: frame(`not json`)}},
	}
	src := &memSource{parts: map[int32][]Record{0: recs}}
	cat := &memCatalog{}
	tables := New(Options{Source: src, Catalog: cat, Schemas: memSchemas{6: sch}})
	tp := Topic{Name: "readings", Partitions: 1, Configs: map[string]string{ConfigMode: ModeValueSchemaIDPrefix}}
	if _, err := tables.Commit(context.Background(), tp, []int32{0}); err != nil {
		t.Fatal(err)
	}
	main, dlq := cat.table("readings"), cat.table("readings_dlq")
	if main == nil || len(main.rows) != 2 {
		t.Fatalf("rows %v, dead letters %v", main, dlq)
	}
	want := map[string]string{"sensor": "s1", "value": "21.5", "count": "3", "ok": "true", "at": "2024-01-02T03:04:05.000006Z",
		"day": "2024-01-02", "tags": `["a"]`, "loc.lat": "1.5", "loc.lon": "2", "attrs": `[{"key":"k","value":7}]`,
		"any": `{"z":[1,2]}`, "unit": "C", "first_name": "Ann", "ref.x": "9"}
	for col, v := range want {
		got := fmt.Sprint(main.rows[0][col])
		if raw, ok := main.rows[0][col].(json.RawMessage); ok {
			got = string(raw)
		}
		if got != v {
			t.Errorf("%s: %s, want %s", col, got, v)
		}
	}
	if second := main.rows[1]; second["sensor"] != "s2" || fmt.Sprint(second["count"]) != "4" || second["value"] != nil || second["at"] != nil {
		t.Errorf("the second row %v", second)
	}
	for col, typ := range map[string]iceberg.Type{"count": iceberg.PrimitiveTypes.Int64, "value": iceberg.PrimitiveTypes.Float64,
		"at": iceberg.PrimitiveTypes.TimestampTz, "day": iceberg.PrimitiveTypes.Date, "any": iceberg.PrimitiveTypes.String,
		"ref.x": iceberg.PrimitiveTypes.Int64} {
		if f, ok := main.schema.FindFieldByName(col); !ok || !f.Type.Equals(typ) {
			t.Errorf("column %s: %v, want %v", col, f, typ)
		}
	}
	if dlq == nil || len(dlq.rows) != 2 || !strings.Contains(fmt.Sprint(dlq.rows[0]["reason"]), "count") ||
		!strings.Contains(fmt.Sprint(dlq.rows[1]["reason"]), "does not decode") {
		t.Fatalf("dead letters %v", dlq)
	}
}

// combinedJSON combines schemas with allOf, oneOf and anyOf.
const combinedJSON = `{"type": "object",
  "allOf": [{"$ref": "#/definitions/Base"}, {"properties": {"extra": {"type": "boolean"}, "id": {"type": "integer"}}}],
  "properties": {
    "id": {"type": "string"},
    "size": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    "shape": {"anyOf": [{"$ref": "#/definitions/Circle"}, {"$ref": "#/definitions/Square"}]},
    "same": {"oneOf": [{"type": "string", "maxLength": 2}, {"type": "string", "minLength": 5}]}},
  "definitions": {
    "Base": {"type": "object", "properties": {"name": {"type": "string"}}},
    "Circle": {"type": "object", "properties": {"r": {"type": "number"}}},
    "Square": {"type": "object", "properties": {"side": {"type": "number"}, "rotated": {"type": "boolean"}}}}}`

// compileJSON compiles a JSON Schema as the registry does.
func compileJSON(t testing.TB, name, src string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	if err := c.AddResource("https://schemas.invalid/"+name, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("https://schemas.invalid/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// JSON Schema combinations: an allOf of objects is one object of all their
// properties (one two members type differently is its JSON text); a oneOf
// or anyOf of schemas of different types is a struct with a field per
// schema, the value in its JSON type's (of two objects, the one whose
// properties it has); one of two schemas of one type is its JSON text.
func TestValueJSONCombinations(t *testing.T) {
	sch := compileJSON(t, "combined.json", combinedJSON)
	frame := func(v string) []byte { return append([]byte{0, 0, 0, 0, 6}, v...) }
	recs := []Record{
		{Offset: 0, Record: record.Record{Value: frame(`{"name": "a", "extra": true, "id": "x1", "size": 3, "shape": {"r": 1.5}, "same": "ab"}`)}},
		{Offset: 1, Record: record.Record{Value: frame(`{"name": "b", "size": "XL", "shape": {"side": 2, "rotated": false}, "id": 7}`)}},
	}
	cat := &memCatalog{}
	tables := New(Options{Source: &memSource{parts: map[int32][]Record{0: recs}}, Catalog: cat, Schemas: memSchemas{6: sch}})
	tp := Topic{Name: "shapes", Partitions: 1, Configs: map[string]string{ConfigMode: ModeValueSchemaIDPrefix}}
	if _, err := tables.Commit(context.Background(), tp, []int32{0}); err != nil {
		t.Fatal(err)
	}
	main := cat.table("shapes")
	if main == nil || len(main.rows) != 2 {
		t.Fatalf("rows %v, dead letters %v", main, cat.table("shapes_dlq"))
	}
	for col, typ := range map[string]iceberg.Type{"name": iceberg.PrimitiveTypes.String, "extra": iceberg.PrimitiveTypes.Bool,
		"id": iceberg.PrimitiveTypes.String, "size.member0": iceberg.PrimitiveTypes.Int64, "size.member1": iceberg.PrimitiveTypes.String,
		"shape.member0.r": iceberg.PrimitiveTypes.Float64, "shape.member1.side": iceberg.PrimitiveTypes.Float64,
		"shape.member1.rotated": iceberg.PrimitiveTypes.Bool, "same": iceberg.PrimitiveTypes.String} {
		if f, ok := main.schema.FindFieldByName(col); !ok || !f.Type.Equals(typ) || f.Required {
			t.Errorf("column %s: %v, want optional %v", col, f, typ)
		}
	}
	want := []map[string]string{
		{"name": "a", "extra": "true", "id": `"x1"`, "size.member0": "3", "size.member1": "<nil>", "shape.member0": "map[r:1.5]", "shape.member1": "<nil>", "same": `"ab"`},
		{"name": "b", "extra": "<nil>", "id": "7", "size.member0": "<nil>", "size.member1": "XL", "shape.member0": "<nil>",
			"shape.member1": "map[rotated:false side:2]", "same": "<nil>"},
	}
	for i, w := range want {
		for col, v := range w {
			if got := fmt.Sprint(main.rows[i][col]); got != v {
				t.Errorf("row %d, %s: %s, want %s", i, col, got, v)
			}
		}
	}
}

// A commit's MaxBytes counts what holding a record takes, not its key and
// value alone: a commit of empty records is bounded too.
func TestCommitBoundsEmptyRecords(t *testing.T) {
	parts := map[int32][]Record{0: make([]Record, 1000)}
	for i := range parts[0] {
		parts[0][i].Offset = int64(i)
	}
	tables := New(Options{Source: &memSource{parts: parts}, Catalog: &memCatalog{}, MaxBytes: 10 * recordOverhead})
	tp := Topic{Name: "t", Partitions: 1, Configs: map[string]string{ConfigMode: ModeKeyValue}}
	res, err := tables.Commit(context.Background(), tp, []int32{0})
	if err != nil {
		t.Fatal(err)
	}
	if res.Records == 0 || res.Records > 10 || !res.More {
		t.Fatalf("a commit took %d of 1000 empty records (more: %v), want at most 10 and more to come", res.Records, res.More)
	}
}
