package iceberg

// What a table's rows are, by iceberg.mode: key_value's columns (the
// record's partition, offset, timestamp, key, value, headers), or
// value_schema_id_prefix's: the value decoded by the Avro or Protobuf
// schema its Confluent prefix names (values.go), its fields as columns, and the record's
// metadata in a struct column kafka. Records that cannot be rows go to
// the dead-letter table (key_value's columns and the reason).

import (
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/hamba/avro/v2"
)

func headersType(first int) *iceberg.ListType {
	return &iceberg.ListType{ElementID: first, ElementRequired: true,
		Element: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: first + 1, Name: "key", Type: iceberg.PrimitiveTypes.String, Required: true},
			{ID: first + 2, Name: "value", Type: iceberg.PrimitiveTypes.Binary},
		}}}
}

// keyValueSchema is the table of key_value mode: each record's
// partition, offset, timestamp, key, value and headers.
func keyValueSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "partition", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: 2, Name: "offset", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 3, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 4, Name: "key", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 5, Name: "value", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 6, Name: "headers", Type: headersType(7)},
	)
}

// deadLetterSchema is key_value's and why the record is not a row.
func deadLetterSchema() *iceberg.Schema {
	return iceberg.NewSchema(0, append(keyValueSchema().Fields(),
		iceberg.NestedField{ID: 10, Name: "reason", Type: iceberg.PrimitiveTypes.String, Required: true})...)
}

// kafkaColumn is the column of a decoded record's metadata.
const kafkaColumn = "kafka"

// valueSchemaBase is the table of the schema modes before any value's
// columns are added: the record's metadata.
func valueSchemaBase() *iceberg.Schema {
	return iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: kafkaColumn, Required: true, Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 2, Name: "partition", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		{ID: 3, Name: "offset", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		{ID: 4, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		{ID: 5, Name: "key", Type: iceberg.PrimitiveTypes.Binary},
		{ID: 6, Name: "headers", Type: headersType(7)},
	}}})
}

// invalid is a record that is no row, and why.
type invalid struct {
	Record
	reason string
}

// valueSchema is the Iceberg schema of an Avro record's fields, each
// optional (rows of other versions of the schema may not have it).
func valueSchema(rs *avro.RecordSchema) (*iceberg.Schema, error) {
	ids := 1
	fields, err := avroFields(rs, &ids)
	if err != nil {
		return nil, err
	}
	return iceberg.NewSchema(0, fields...), nil
}

func avroFields(rs *avro.RecordSchema, ids *int) ([]iceberg.NestedField, error) {
	var out []iceberg.NestedField
	for _, f := range rs.Fields() {
		if f.Name() == kafkaColumn {
			return nil, fmt.Errorf("a field named %s (the metadata's column)", kafkaColumn)
		}
		id := *ids
		*ids++
		t, err := avroType(f.Type(), ids)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name(), err)
		}
		out = append(out, iceberg.NestedField{ID: id, Name: f.Name(), Type: t})
	}
	return out, nil
}

// avroType is the Iceberg type of an Avro type. A union of null and one
// type is that type (optional); a union of several types is a struct of
// one optional field per type but null, member0, member1, ... in the
// union's order (as Spark reads Avro unions), of which a row sets the one
// its value is of.
func avroType(s avro.Schema, ids *int) (iceberg.Type, error) {
	switch s := s.(type) {
	case *avro.RefSchema:
		return avroType(s.Schema(), ids)
	case *avro.UnionSchema:
		if t := nonNull(s); t != nil {
			return avroType(t, ids)
		}
		ms := unionMembers(s)
		if len(ms) == 0 {
			return nil, fmt.Errorf("a union of null alone is no column")
		}
		fields := make([]iceberg.NestedField, 0, len(ms))
		for i, m := range ms {
			id := *ids
			*ids++
			t, err := avroType(m, ids)
			if err != nil {
				return nil, fmt.Errorf("union member %d: %w", i, err)
			}
			fields = append(fields, iceberg.NestedField{ID: id, Name: unionField(i), Type: t})
		}
		return &iceberg.StructType{FieldList: fields}, nil
	case *avro.PrimitiveSchema:
		logical := ""
		if l := s.Logical(); l != nil {
			logical = string(l.Type())
		}
		switch {
		case s.Type() == avro.Int && logical == "date":
			return iceberg.PrimitiveTypes.Date, nil
		case s.Type() == avro.Long && (logical == "timestamp-millis" || logical == "timestamp-micros"):
			return iceberg.PrimitiveTypes.TimestampTz, nil
		case s.Type() == avro.Long && (logical == "local-timestamp-millis" || logical == "local-timestamp-micros"):
			return iceberg.PrimitiveTypes.Timestamp, nil
		case logical == "decimal":
			return decimalType(s.Logical())
		}
		switch s.Type() {
		case avro.Boolean:
			return iceberg.PrimitiveTypes.Bool, nil
		case avro.Int:
			return iceberg.PrimitiveTypes.Int32, nil
		case avro.Long:
			return iceberg.PrimitiveTypes.Int64, nil
		case avro.Float:
			return iceberg.PrimitiveTypes.Float32, nil
		case avro.Double:
			return iceberg.PrimitiveTypes.Float64, nil
		case avro.String:
			return iceberg.PrimitiveTypes.String, nil
		case avro.Bytes:
			return iceberg.PrimitiveTypes.Binary, nil
		}
		return nil, fmt.Errorf("type %s is no column", s.Type())
	case *avro.EnumSchema:
		return iceberg.PrimitiveTypes.String, nil
	case *avro.FixedSchema:
		switch l := s.Logical(); {
		case l == nil:
			return iceberg.PrimitiveTypes.Binary, nil
		case l.Type() == avro.Decimal:
			return decimalType(l)
		}
		return nil, fmt.Errorf("fixed %s values are not served yet", s.Logical().Type())
	case *avro.RecordSchema:
		fields, err := avroFields(s, ids)
		if err != nil {
			return nil, err
		}
		return &iceberg.StructType{FieldList: fields}, nil
	case *avro.ArraySchema:
		id := *ids
		*ids++
		t, err := avroType(s.Items(), ids)
		if err != nil {
			return nil, err
		}
		return &iceberg.ListType{ElementID: id, Element: t}, nil
	case *avro.MapSchema:
		kid, vid := *ids, *ids+1
		*ids += 2
		t, err := avroType(s.Values(), ids)
		if err != nil {
			return nil, err
		}
		return &iceberg.MapType{KeyID: kid, KeyType: iceberg.PrimitiveTypes.String, ValueID: vid, ValueType: t}, nil
	}
	return nil, fmt.Errorf("type %s is no column", s.Type())
}

// decimalType is the column of an Avro decimal: Iceberg's decimals hold
// 38 digits.
func decimalType(l avro.LogicalSchema) (iceberg.Type, error) {
	d, ok := l.(*avro.DecimalLogicalSchema)
	if !ok {
		return nil, fmt.Errorf("a decimal without precision")
	}
	if d.Precision() < 1 || d.Precision() > 38 || d.Scale() < 0 || d.Scale() > d.Precision() {
		return nil, fmt.Errorf("a decimal of precision %d and scale %d is no column (precision 1 to 38)", d.Precision(), d.Scale())
	}
	return iceberg.DecimalTypeOf(d.Precision(), d.Scale()), nil
}

// unionMembers are a union's types but null, in its order.
func unionMembers(u *avro.UnionSchema) []avro.Schema {
	var out []avro.Schema
	for _, t := range u.Types() {
		if t.Type() != avro.Null {
			out = append(out, t)
		}
	}
	return out
}

// bareUnions caches bareUnion's answers, by union: the decoding resolver
// is asked once per union, not per value. Unions live as long as the
// schemas they are part of, cached per schema id.
var bareUnions sync.Map // *avro.UnionSchema -> bool

// bareUnion reports whether hamba decodes the union's values bare (every
// member a Go type of its own in the resolver) rather than keyed by their
// member's name.
func bareUnion(u *avro.UnionSchema) bool {
	if b, ok := bareUnions.Load(u); ok {
		return b.(bool)
	}
	bare := true
	for _, m := range unionMembers(u) {
		if _, err := avroDecoding.TypeOf(unionName(m)); err != nil {
			bare = false
			break
		}
	}
	bareUnions.Store(u, bare)
	return bare
}

// unionField is the name of the struct field of a union's i-th member
// (null not counted).
func unionField(i int) string { return "member" + strconv.Itoa(i) }

// unionName is the name hamba keys a decoded union value by: a named
// type's full name, else the type, with its logical type after a dot.
func unionName(s avro.Schema) string {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	name := string(s.Type())
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		name += "." + string(l.Logical().Type())
	}
	return name
}

// nonNull is the one type of a union of null and it, else nil.
func nonNull(u *avro.UnionSchema) avro.Schema {
	var other avro.Schema
	for _, t := range u.Types() {
		if t.Type() == avro.Null {
			continue
		}
		if other != nil {
			return nil
		}
		other = t
	}
	return other
}

// valueRows returns the decoded records as rows of the table's schema.
func valueRows(sc *iceberg.Schema, recs []decoded) (array.RecordReader, error) {
	as, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		return nil, err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for _, r := range recs {
		for i, f := range as.Fields() {
			fb := b.Field(i)
			if f.Name == kafkaColumn {
				appendMetadata(fb.(*array.StructBuilder), r.Record)
				continue
			}
			field, ok := fieldByName(r.schema, f.Name)
			if !ok {
				fb.AppendNull()
				continue
			}
			if err := appendAvro(fb, field.Type(), r.value[f.Name]); err != nil {
				return nil, fmt.Errorf("partition %d offset %d, field %s: %w", r.Partition, r.Offset, f.Name, err)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewRecordReader(as, []arrow.RecordBatch{rec})
}

// appendMetadata appends the kafka column of a record.
func appendMetadata(sb *array.StructBuilder, r Record) {
	sb.Append(true)
	st := sb.Type().(*arrow.StructType)
	for i, f := range st.Fields() {
		if fb := sb.FieldBuilder(i); !appendColumn(fb, f.Name, r) {
			fb.AppendNull()
		}
	}
}

// appendAvro appends a value Avro decoded (hamba's: records and maps as
// map[string]any, arrays as []any, a union's named member wrapped in a
// map of its name) to the builder of its column.
func appendAvro(b array.Builder, s avro.Schema, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch st := s.(type) {
	case *avro.RefSchema:
		return appendAvro(b, st.Schema(), v)
	case *avro.UnionSchema:
		t := nonNull(st)
		if t == nil {
			return appendUnion(b, st, v)
		}
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			if n, ok := t.(avro.NamedSchema); ok {
				if inner, ok := m[n.FullName()]; ok {
					v = inner
				}
			}
		}
		return appendAvro(b, t, v)
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		sb, sok := b.(*array.StructBuilder)
		if !ok || !sok {
			return fmt.Errorf("a record decoded as %T into %T", v, b)
		}
		sb.Append(true)
		for i, f := range sb.Type().(*arrow.StructType).Fields() {
			field, ok := fieldByName(st, f.Name)
			if !ok {
				sb.FieldBuilder(i).AppendNull()
				continue
			}
			if err := appendAvro(sb.FieldBuilder(i), field.Type(), m[f.Name]); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
		}
		return nil
	case *avro.ArraySchema:
		items, ok := v.([]any)
		lb, lok := b.(*array.ListBuilder)
		if !ok || !lok {
			return fmt.Errorf("an array decoded as %T into %T", v, b)
		}
		lb.Append(true)
		for _, x := range items {
			if err := appendAvro(lb.ValueBuilder(), st.Items(), x); err != nil {
				return err
			}
		}
		return nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		mb, mok := b.(*array.MapBuilder)
		if !ok || !mok {
			return fmt.Errorf("a map decoded as %T into %T", v, b)
		}
		mb.Append(true)
		for k, x := range m {
			mb.KeyBuilder().(*array.StringBuilder).Append(k)
			if err := appendAvro(mb.ItemBuilder(), st.Values(), x); err != nil {
				return err
			}
		}
		return nil
	}
	return appendScalar(b, v)
}

// appendUnion appends the value of a union of several types to the
// union's struct: the field of the member it is of set, the others null.
func appendUnion(b array.Builder, u *avro.UnionSchema, v any) error {
	sb, ok := b.(*array.StructBuilder)
	if !ok {
		return fmt.Errorf("a union into %T", b)
	}
	set, inner, err := unionBranch(u, v)
	if err != nil {
		return err
	}
	sb.Append(true)
	for i, f := range sb.Type().(*arrow.StructType).Fields() {
		if f.Name != unionField(set) {
			sb.FieldBuilder(i).AppendNull()
			continue
		}
		if err := appendAvro(sb.FieldBuilder(i), unionMembers(u)[set], inner); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
	}
	return nil
}

// unionBranch finds the member (null not counted) a decoded value of a
// union of several types is of. hamba gives the value bare when it knows
// a Go type for every member's name (the primitives and their logical
// types), else wrapped in a map of the member's name.
func unionBranch(u *avro.UnionSchema, v any) (int, any, error) {
	ms := unionMembers(u)
	if !bareUnion(u) {
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return -1, nil, fmt.Errorf("a union value decoded as %T", v)
		}
		for name, inner := range m {
			if i := slices.IndexFunc(ms, func(t avro.Schema) bool { return unionName(t) == name }); i >= 0 {
				return i, inner, nil
			}
			return -1, nil, fmt.Errorf("a union value of type %s, not among the union's", name)
		}
	}
	vt := reflect.TypeOf(v)
	for i, m := range ms {
		if t, err := avroDecoding.TypeOf(unionName(m)); err == nil && t.Type1() == vt {
			return i, v, nil
		}
	}
	return -1, nil, fmt.Errorf("a union value of Go type %T, of none of the union's types", v)
}

// appendScalar appends a primitive, enum or fixed value to its builder,
// widening as the table's column may have been widened.
func appendScalar(b array.Builder, v any) error {
	switch b := b.(type) {
	case *array.BooleanBuilder:
		if x, ok := v.(bool); ok {
			b.Append(x)
			return nil
		}
	case *array.Int32Builder:
		if x, ok := v.(int); ok {
			b.Append(int32(x))
			return nil
		}
		if x, ok := v.(int32); ok {
			b.Append(x)
			return nil
		}
	case *array.Int64Builder:
		switch x := v.(type) {
		case int64:
			b.Append(x)
			return nil
		case int:
			b.Append(int64(x))
			return nil
		case int32:
			b.Append(int64(x))
			return nil
		}
	case *array.Float32Builder:
		if x, ok := v.(float32); ok {
			b.Append(x)
			return nil
		}
	case *array.Float64Builder:
		switch x := v.(type) {
		case float64:
			b.Append(x)
			return nil
		case float32:
			b.Append(float64(x))
			return nil
		}
	case *array.StringBuilder:
		if x, ok := v.(string); ok {
			b.Append(x)
			return nil
		}
	case *array.BinaryBuilder:
		if x, ok := v.([]byte); ok {
			b.Append(x)
			return nil
		}
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Array && rv.Type().Elem().Kind() == reflect.Uint8 {
			out := make([]byte, rv.Len())
			reflect.Copy(reflect.ValueOf(out), rv)
			b.Append(out)
			return nil
		}
	case *array.Decimal128Builder:
		if x, ok := v.(*big.Rat); ok {
			scale := b.Type().(*arrow.Decimal128Type).Scale
			n := new(big.Int).Mul(x.Num(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
			n.Quo(n, x.Denom()) // exact: the value was read at this scale
			b.Append(decimal128.FromBigInt(n))
			return nil
		}
	case *array.Date32Builder:
		if x, ok := v.(time.Time); ok {
			b.Append(arrow.Date32FromTime(x))
			return nil
		}
	case *array.TimestampBuilder:
		if x, ok := v.(time.Time); ok {
			b.Append(arrow.Timestamp(x.UnixMicro()))
			return nil
		}
	}
	return fmt.Errorf("a %T value for a column of %s", v, b.Type())
}

// fieldByName is a record schema's field of a name.
func fieldByName(rs *avro.RecordSchema, name string) (*avro.Field, bool) {
	for _, f := range rs.Fields() {
		if f.Name() == name {
			return f, true
		}
	}
	return nil, false
}
