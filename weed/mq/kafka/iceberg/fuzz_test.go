package iceberg

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// Values from any producer of a topic kept as a table in a schema mode:
// each a row or a dead letter with why, never a panic, and a commit made
// of them.
func FuzzValue(f *testing.F) {
	schemas := memSchemas{
		1: `{"type":"record","name":"Trade","fields":[{"name":"symbol","type":"string"},{"name":"qty","type":"int"},{"name":"tags","type":{"type":"array","items":"string"}},{"name":"venue","type":["null",{"type":"record","name":"Venue","fields":[{"name":"mic","type":"string"}]}]},{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}}]}`,
		4: compileProto(f, orderProto),
		6: compileJSON(f, "reading.json", readingJSON),
		7: compileJSON(f, "combined.json", combinedJSON),
	}
	var h sr.ConfluentHeader
	proto, _ := h.AppendEncode(nil, 4, []int{1})
	f.Add([]byte{0, 0, 0, 0, 1, 2, 'A', 2, 2, 'x', 0, 0, 2, 0x04, 0xd2})
	f.Add(append(proto, 0x0a, 0x03, 'o', '-', '1', 0x10, 0x05, 0x2a, 0x01, 't'))
	f.Add(append([]byte{0, 0, 0, 0, 6}, `{"sensor":"s","count":1,"at":"2024-01-02T03:04:05Z","tags":["a"],"attrs":{"k":1},"ref":{"x":2}}`...))
	f.Add(append([]byte{0, 0, 0, 0, 7}, `{"name":"a","id":3,"size":"XL","shape":{"side":2},"same":"ab"}`...))
	f.Add([]byte{0, 0, 0, 0, 4, 0x02, 0x04})
	f.Add([]byte{0, 0, 0, 0, 9})
	f.Fuzz(func(t *testing.T, value []byte) {
		src := &memSource{parts: map[int32][]Record{0: {{Offset: 0, Record: record.Record{Value: value}}}}}
		cat := &memCatalog{}
		tables := New(Options{Source: src, Catalog: cat, Schemas: schemas})
		tp := Topic{Name: "fuzz", Partitions: 1, Configs: map[string]string{ConfigMode: ModeValueSchemaIDPrefix}}
		done := make(chan error, 1)
		go func() { _, err := tables.Commit(context.Background(), tp, []int32{0}); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("value %x: no commit in 10 s", value)
		}
		rows, dead := 0, 0
		if m := cat.table("fuzz"); m != nil {
			rows = len(m.rows)
		}
		if d := cat.table("fuzz_dlq"); d != nil {
			dead = len(d.rows)
		}
		if rows+dead != 1 {
			t.Fatalf("%d rows and %d dead letters of one record", rows, dead)
		}
	})
}
