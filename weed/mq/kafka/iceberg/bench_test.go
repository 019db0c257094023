package iceberg

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/table"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// benchRecords are n records of 4 partitions with keys of 1,000 values and
// 100-byte values, random (incompressible) or JSON text.
func benchRecords(n int, text bool) []Record {
	rnd := rand.New(rand.NewPCG(1, 2))
	recs := make([]Record, n)
	for i := range recs {
		v := make([]byte, 100)
		for j := range v {
			v[j] = byte(rnd.Uint32())
		}
		if text {
			v = fmt.Appendf(nil, `{"id":%d,"user":"user-%d","amount":%d.%02d,"country":"c%d","ok":true}`, i, i%5000, i%997, i%100, i%40)
		}
		recs[i] = Record{Partition: int32(i % 4), Offset: int64(i),
			Record: record.Record{Timestamp: 1_700_000_000_000 + int64(i/100), Key: fmt.Appendf(nil, "key-%d", i%1000), Value: v}}
	}
	return recs
}

// The records of a commit as key_value's Arrow batch.
func BenchmarkKeyValueRows(b *testing.B) {
	recs := benchRecords(100_000, false)
	for b.Loop() {
		rdr, err := keyValueRows(keyValueSchema(), recs, nil)
		if err != nil {
			b.Fatal(err)
		}
		rdr.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
}

// A key_value batch written as Parquet with the writer settings iceberg-go
// takes from a table's properties: Iceberg's defaults (Zstandard at its
// default level, a dictionary for every column), and writeDefaults'.
func BenchmarkParquetWrite(b *testing.B) {
	as, err := table.SchemaToArrowSchema(keyValueSchema(), nil, false, false)
	if err != nil {
		b.Fatal(err)
	}
	settings := []struct {
		name  string
		props []parquet.WriterProperty
	}{
		{"iceberg-defaults", []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Zstd), parquet.WithCompressionLevel(-1),
			parquet.WithDictionaryDefault(true)}},
		{"gateway-defaults", []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Zstd), parquet.WithCompressionLevel(1),
			parquet.WithDictionaryDefault(true), parquet.WithDictionaryFor("offset", false), parquet.WithDictionaryFor("timestamp", false),
			parquet.WithDictionaryFor("value", false)}},
	}
	for _, values := range []string{"random", "json"} {
		recs := benchRecords(100_000, values == "json")
		rdr, err := keyValueRows(keyValueSchema(), recs, nil)
		if err != nil {
			b.Fatal(err)
		}
		rdr.Next()
		batch := rdr.RecordBatch()
		for _, s := range settings {
			b.Run(values+"/"+s.name, func(b *testing.B) {
				var size counter
				for b.Loop() {
					size = 0
					w, err := pqarrow.NewFileWriter(as, &size, parquet.NewWriterProperties(s.props...), pqarrow.DefaultWriterProps())
					if err != nil {
						b.Fatal(err)
					}
					if err := w.Write(batch); err != nil {
						b.Fatal(err)
					}
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
				b.ReportMetric(float64(size)/float64(len(recs)), "file-bytes/record")
			})
		}
		rdr.Release()
	}
}

// counter is a Writer that counts what it is given.
type counter int

func (c *counter) Write(p []byte) (int, error) { *c += counter(len(p)); return len(p), nil }
