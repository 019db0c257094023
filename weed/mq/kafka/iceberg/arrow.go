package iceberg

// Records as an Arrow batch of key_value mode's columns, which iceberg-go
// writes as Parquet.

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var headerType = arrow.StructOf(
	arrow.Field{Name: "key", Type: arrow.BinaryTypes.String},
	arrow.Field{Name: "value", Type: arrow.BinaryTypes.Binary, Nullable: true},
)

var keyValueArrow = arrow.NewSchema([]arrow.Field{
	{Name: "partition", Type: arrow.PrimitiveTypes.Int32},
	{Name: "offset", Type: arrow.PrimitiveTypes.Int64},
	{Name: "timestamp", Type: arrow.FixedWidthTypes.Timestamp_us},
	{Name: "key", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "value", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "headers", Type: arrow.ListOfNonNullable(headerType), Nullable: true},
}, nil)

// recordReader returns the records as one Arrow batch; the caller
// releases it.
func recordReader(recs []Record) (array.RecordReader, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, keyValueArrow)
	defer b.Release()
	parts := b.Field(0).(*array.Int32Builder)
	offsets := b.Field(1).(*array.Int64Builder)
	stamps := b.Field(2).(*array.TimestampBuilder)
	keys := b.Field(3).(*array.BinaryBuilder)
	values := b.Field(4).(*array.BinaryBuilder)
	headers := b.Field(5).(*array.ListBuilder)
	header := headers.ValueBuilder().(*array.StructBuilder)
	hkeys := header.FieldBuilder(0).(*array.StringBuilder)
	hvalues := header.FieldBuilder(1).(*array.BinaryBuilder)
	for _, r := range recs {
		parts.Append(r.Partition)
		offsets.Append(r.Offset)
		stamps.Append(arrow.Timestamp(r.Timestamp * 1000))
		appendBytes(keys, r.Key)
		appendBytes(values, r.Value)
		headers.Append(true)
		for _, h := range r.Headers {
			header.Append(true)
			hkeys.Append(h.Key)
			appendBytes(hvalues, h.Value)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewRecordReader(keyValueArrow, []arrow.RecordBatch{rec})
}

// appendBytes appends b, null for nil (a null key or value, as Kafka
// tells them from empty).
func appendBytes(bb *array.BinaryBuilder, b []byte) {
	if b == nil {
		bb.AppendNull()
		return
	}
	bb.Append(b)
}
