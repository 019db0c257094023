package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// The schema registry built into the gateway, as a producer and a
// consumer with Confluent's wire format use it: the producer registers its
// value schema under <topic>-value and prefixes each record with the id;
// the consumer, with a client of its own, looks the id up and decodes. A
// compatible second version is accepted, an incompatible one refused with
// 409. The registry keeps it all in _schemas, in Confluent's record format.
func TestSchemaRegistry(t *testing.T) {
	ctx := ctxT(t)
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	reg, err := sr.NewClient(sr.URLs(gw.registry))
	if err != nil {
		t.Fatal(err)
	}
	const orderV1 = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},{"name":"item","type":"string"}]}`
	const orderV2 = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},{"name":"item","type":"string"},{"name":"quantity","type":"int","default":1}]}`
	const orderBad = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"string"},{"name":"item","type":"string"}]}`
	var ss sr.SubjectSchema
	eventually(t, 60*time.Second, "the registry takes a schema", func() error {
		ss, err = reg.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: orderV1, Type: sr.TypeAvro})
		return err
	})
	if ss.Version != 1 {
		t.Fatalf("registered %+v", ss)
	}

	type order struct {
		ID   int64  `avro:"id"`
		Item string `avro:"item"`
	}
	writer := avro.MustParse(orderV1)
	var produce sr.Serde
	produce.Register(ss.ID, order{}, sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(writer, v) }))
	cl := newClient(t, kgo.DefaultProduceTopic(topic))
	for i := range 10 {
		produceSync(t, cl, &kgo.Record{Value: produce.MustEncode(order{ID: int64(i), Item: fmt.Sprintf("item-%d", i)})})
	}

	// The consumer knows no schema: it asks the registry for each id.
	consumerReg, err := sr.NewClient(sr.URLs(gw.registry))
	if err != nil {
		t.Fatal(err)
	}
	var consume sr.Serde
	recs := consumeN(t, topic, 10)
	for i, r := range recs {
		id, _, err := consume.DecodeID(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if !consume.IsRegistered(id) {
			s, err := consumerReg.SchemaByID(ctx, id)
			if err != nil {
				t.Fatalf("schema %d: %v", id, err)
			}
			reader := avro.MustParse(s.Schema)
			consume.Register(id, order{}, sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(reader, b, v) }))
		}
		var o order
		if err := consume.Decode(r.Value, &o); err != nil {
			t.Fatal(err)
		}
		if o.ID != int64(i) || o.Item != fmt.Sprintf("item-%d", i) {
			t.Fatalf("record %d decoded as %+v", i, o)
		}
	}

	// Evolution at the default BACKWARD level.
	if s2, err := reg.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: orderV2, Type: sr.TypeAvro}); err != nil || s2.Version != 2 || s2.ID == ss.ID {
		t.Fatalf("a compatible second version: %+v %v", s2, err)
	}
	_, err = reg.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: orderBad, Type: sr.TypeAvro})
	if re, ok := err.(*sr.ResponseError); !ok || re.ErrorCode != 409 || re.StatusCode != 409 {
		t.Fatalf("an incompatible version: %v, want 409", err)
	}

	// Broker-side validation: a topic with confluent.value.schema.validation
	// takes records whose value carries an id registered under
	// <topic>-value, and refuses the others with INVALID_RECORD.
	validated := newTopic(t) + "-validated"
	on := "true"
	createTopic(t, validated, 1, map[string]*string{"confluent.value.schema.validation": &on})
	if _, err := reg.CreateSchema(ctx, validated+"-value", sr.Schema{Schema: orderV1, Type: sr.TypeAvro}); err != nil {
		t.Fatal(err)
	}
	vcl := newClient(t, kgo.DefaultProduceTopic(validated))
	produceSync(t, vcl, &kgo.Record{Value: produce.MustEncode(order{ID: 1, Item: "valid"})})
	for what, value := range map[string][]byte{
		"a value without a schema id": []byte("plain bytes"),
		"an id never registered":      {0, 0, 0, 0x7f, 0xff, 1, 2},
	} {
		err := vcl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr()
		if !errors.Is(err, kerr.InvalidRecord) {
			t.Errorf("%s: %v, want INVALID_RECORD", what, err)
		}
	}
	if recs := consumeN(t, validated, 1); string(recs[0].Value[5:]) != string(produce.MustEncode(order{ID: 1, Item: "valid"})[5:]) {
		t.Fatalf("the validated topic holds %q", recs[0].Value)
	}

	// _schemas holds the two versions as Confluent's registry writes them.
	seen := map[int]bool{}
	rc := newClient(t, kgo.ConsumeTopics("_schemas"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	deadline := time.Now().Add(30 * time.Second)
	for len(seen) < 2 && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		rc.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			var k struct {
				KeyType string `json:"keytype"`
				Subject string `json:"subject"`
				Version int    `json:"version"`
				Magic   int    `json:"magic"`
			}
			var v struct {
				Subject string `json:"subject"`
				Version int    `json:"version"`
				ID      int    `json:"id"`
				Schema  string `json:"schema"`
			}
			if json.Unmarshal(r.Key, &k) == nil && k.KeyType == "SCHEMA" && k.Subject == topic+"-value" && k.Magic == 1 &&
				json.Unmarshal(r.Value, &v) == nil && v.Subject == k.Subject && v.Version == k.Version && v.ID > 0 {
				seen[k.Version] = true
			}
		})
		cancel()
	}
	if !seen[1] || !seen[2] {
		t.Fatalf("_schemas records of %s-value in Confluent's format: versions %v, want 1 and 2", topic, seen)
	}
}

// The registry on three gateways: writes to every gateway's registry,
// forwarded to the one leading _schemas; each write read back from every
// other gateway's within a second. Run by TestGatewaysClients.
func sharedRegistry(t *testing.T, g *gateways) {
	ctx := ctxT(t)
	subject := newTopic(t) + "-value"
	procs := g.all()
	for i, p := range procs {
		cl, err := sr.NewClient(sr.URLs(p.registry))
		if err != nil {
			t.Fatal(err)
		}
		schema := fmt.Sprintf(`{"type":"record","name":"R","fields":[{"name":"a","type":"long"}%s]}`,
			func() string {
				out := ""
				for j := range i {
					out += fmt.Sprintf(`,{"name":"f%d","type":"int","default":0}`, j)
				}
				return out
			}())
		var ss sr.SubjectSchema
		eventually(t, 60*time.Second, "a write through "+p.registry, func() error {
			ss, err = cl.CreateSchema(ctx, subject, sr.Schema{Schema: schema, Type: sr.TypeAvro})
			return err
		})
		if ss.Version != i+1 {
			t.Fatalf("through gateway %d: version %d, want %d", i, ss.Version, i+1)
		}
		written := time.Now()
		for j, other := range procs {
			ocl, _ := sr.NewClient(sr.URLs(other.registry))
			for {
				got, err := ocl.SchemaByID(ctx, ss.ID)
				if err == nil && got.Schema == schema {
					break
				}
				if time.Since(written) > time.Second {
					t.Fatalf("schema %d written through gateway %d not on gateway %d's registry after 1 s: %v", ss.ID, i, j, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}
