package iceberg

// Records as an Arrow batch of key_value mode's columns (and the
// dead-letter table's reason), which iceberg-go writes as Parquet.

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// keyValueRows returns the records as one Arrow batch of sc's columns
// (key_value's, or the dead-letter table's with reasons); the caller
// releases it.
func keyValueRows(sc *iceberg.Schema, recs []Record, reasons []string) (array.RecordReader, error) {
	as, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		return nil, err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for i, r := range recs {
		for j, f := range as.Fields() {
			switch fb := b.Field(j); {
			case f.Name == "reason":
				fb.(*array.StringBuilder).Append(reasons[i])
			case !appendColumn(fb, f.Name, r):
				fb.AppendNull()
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewRecordReader(as, []arrow.RecordBatch{rec})
}

// appendColumn appends a record's value of the column name (partition,
// offset, timestamp, key, value, headers); false for another name.
func appendColumn(fb array.Builder, name string, r Record) bool {
	switch name {
	case "partition":
		fb.(*array.Int32Builder).Append(r.Partition)
	case "offset":
		fb.(*array.Int64Builder).Append(r.Offset)
	case "timestamp":
		fb.(*array.TimestampBuilder).Append(arrow.Timestamp(r.Timestamp * 1000))
	case "key":
		appendBytes(fb.(*array.BinaryBuilder), r.Key)
	case "value":
		appendBytes(fb.(*array.BinaryBuilder), r.Value)
	case "headers":
		appendHeaders(fb.(*array.ListBuilder), r)
	default:
		return false
	}
	return true
}

// appendHeaders appends a record's headers, in order.
func appendHeaders(lb *array.ListBuilder, r Record) {
	lb.Append(true)
	sb := lb.ValueBuilder().(*array.StructBuilder)
	for _, h := range r.Headers {
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append(h.Key)
		appendBytes(sb.FieldBuilder(1).(*array.BinaryBuilder), h.Value)
	}
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
