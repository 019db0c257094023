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
	b.Reserve(len(recs))
	// Column by column, each builder's buffers sized once, fixed-size
	// values appended as one slice.
	for j, f := range as.Fields() {
		fb := b.Field(j)
		switch f.Name {
		case "reason":
			sb := fb.(*array.StringBuilder)
			for i := range recs {
				sb.Append(reasons[i])
			}
		case "key", "value":
			bb := fb.(*array.BinaryBuilder)
			size := 0
			for i := range recs {
				size += len(column(f.Name, &recs[i]))
			}
			bb.ReserveData(size)
			for i := range recs {
				appendBytes(bb, column(f.Name, &recs[i]))
			}
		case "partition":
			vs := make([]int32, len(recs))
			for i := range recs {
				vs[i] = recs[i].Partition
			}
			fb.(*array.Int32Builder).AppendValues(vs, nil)
		case "offset":
			vs := make([]int64, len(recs))
			for i := range recs {
				vs[i] = recs[i].Offset
			}
			fb.(*array.Int64Builder).AppendValues(vs, nil)
		case "timestamp":
			vs := make([]arrow.Timestamp, len(recs))
			for i := range recs {
				vs[i] = arrow.Timestamp(recs[i].Timestamp * 1000)
			}
			fb.(*array.TimestampBuilder).AppendValues(vs, nil)
		case "headers":
			// The lists' offsets as one slice, their headers appended
			// to the values' builders.
			lb := fb.(*array.ListBuilder)
			sb := lb.ValueBuilder().(*array.StructBuilder)
			kb, vb := sb.FieldBuilder(0).(*array.StringBuilder), sb.FieldBuilder(1).(*array.BinaryBuilder)
			offsets, valid := make([]int32, len(recs)), make([]bool, len(recs))
			n := int32(sb.Len())
			for i := range recs {
				offsets[i], valid[i] = n, true
				for _, h := range recs[i].Headers {
					sb.Append(true)
					kb.Append(h.Key)
					appendBytes(vb, h.Value)
					n++
				}
			}
			lb.AppendValues(offsets, valid)
		default:
			for range recs {
				fb.AppendNull()
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewRecordReader(as, []arrow.RecordBatch{rec})
}

// column is a record's key or value.
func column(name string, r *Record) []byte {
	if name == "key" {
		return r.Key
	}
	return r.Value
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
		appendHeaders(fb.(*array.ListBuilder), &r)
	default:
		return false
	}
	return true
}

// appendHeaders appends a record's headers, in order.
func appendHeaders(lb *array.ListBuilder, r *Record) {
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
