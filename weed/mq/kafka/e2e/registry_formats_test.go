package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// franz-go's sr with the registry's Protobuf and JSON Schema formats: the
// producer registers its schema and frames records as Confluent's
// serializers do (Protobuf with the message's index); the consumer takes
// each id's schema from the registry and decodes by it.
func TestSchemaRegistryFormats(t *testing.T) {
	t.Parallel() // light and alone in what it touches: beside the others of its kind, at the end
	ctx := ctxT(t)
	reg, err := sr.NewClient(sr.URLs(gw.registry))
	if err != nil {
		t.Fatal(err)
	}
	create := func(subject string, s sr.Schema) sr.SubjectSchema {
		t.Helper()
		var ss sr.SubjectSchema
		eventually(t, 60*time.Second, "the registry takes "+subject, func() error {
			ss, err = reg.CreateSchema(ctx, subject, s)
			return err
		})
		return ss
	}

	t.Run("protobuf", func(t *testing.T) {
		topic := newTopic(t)
		createTopic(t, topic, 1, nil)
		const money = "syntax = \"proto3\";\npackage gosr;\nmessage Money {\n  string currency = 1;\n  int64 units = 2;\n}\n"
		const order = "syntax = \"proto3\";\npackage gosr;\nimport \"gosr/money.proto\";\nmessage Header { string trace = 1; }\nmessage Order {\n  string id = 1;\n  Money total = 2;\n  repeated string tags = 3;\n}\n"
		create("gosr/money.proto", sr.Schema{Schema: money, Type: sr.TypeProtobuf})
		ss := create(topic+"-value", sr.Schema{Schema: order, Type: sr.TypeProtobuf,
			References: []sr.SchemaReference{{Name: "gosr/money.proto", Subject: "gosr/money.proto", Version: 1}}})
		md := compileMessage(t, map[string]string{"order.proto": order, "gosr/money.proto": money}, "gosr.Order")
		var produce sr.Serde
		// Order is the file's second message: index [1].
		produce.Register(ss.ID, &dynamicpb.Message{}, sr.Index(1), sr.EncodeFn(func(v any) ([]byte, error) { return proto.Marshal(v.(*dynamicpb.Message)) }))
		orderOf := func(i int) *dynamicpb.Message {
			m := dynamicpb.NewMessage(md)
			m.Set(md.Fields().ByName("id"), protoreflect.ValueOfString(fmt.Sprintf("o-%d", i)))
			total := m.Mutable(md.Fields().ByName("total")).Message()
			total.Set(total.Descriptor().Fields().ByName("currency"), protoreflect.ValueOfString("EUR"))
			total.Set(total.Descriptor().Fields().ByName("units"), protoreflect.ValueOfInt64(int64(i)*100))
			tags := m.Mutable(md.Fields().ByName("tags")).List()
			tags.Append(protoreflect.ValueOfString(fmt.Sprintf("t%d", i)))
			return m
		}
		cl := newClient(t, kgo.DefaultProduceTopic(topic))
		for i := range 10 {
			produceSync(t, cl, &kgo.Record{Value: produce.MustEncode(orderOf(i))})
		}
		var consume sr.Serde
		for i, r := range consumeN(t, topic, 10) {
			id, rest, err := consume.DecodeID(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			index, body, err := consume.DecodeIndex(rest, 8)
			if err != nil || len(index) != 1 || index[0] != 1 {
				t.Fatalf("record %d: message index %v %v, want [1]", i, index, err)
			}
			// The writer's schema and its reference, from the registry.
			s, err := reg.SchemaByID(ctx, id)
			if err != nil || len(s.References) != 1 {
				t.Fatalf("schema %d: %+v %v", id, s, err)
			}
			ref, err := reg.SchemaByVersion(ctx, s.References[0].Subject, s.References[0].Version)
			if err != nil {
				t.Fatal(err)
			}
			wmd := compileMessage(t, map[string]string{"order.proto": s.Schema, s.References[0].Name: ref.Schema.Schema}, "gosr.Order")
			got := dynamicpb.NewMessage(wmd)
			if err := proto.Unmarshal(body, got); err != nil {
				t.Fatal(err)
			}
			det := proto.MarshalOptions{Deterministic: true}
			want, _ := det.Marshal(orderOf(i))
			if b, _ := det.Marshal(got); string(b) != string(want) {
				t.Fatalf("record %d decoded as %v", i, got)
			}
		}
		// Evolution at BACKWARD: a field added; a field's type changed is 409.
		added := order[:len(order)-2] + "  string note = 4;\n}\n"
		refs := []sr.SchemaReference{{Name: "gosr/money.proto", Subject: "gosr/money.proto", Version: 1}}
		if s2, err := reg.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: added, Type: sr.TypeProtobuf, References: refs}); err != nil || s2.Version != 2 {
			t.Fatalf("a field added: %+v %v", s2, err)
		}
		changed := "syntax = \"proto3\";\npackage gosr;\nimport \"gosr/money.proto\";\nmessage Header { string trace = 1; }\nmessage Order {\n  int64 id = 1;\n  Money total = 2;\n  repeated string tags = 3;\n}\n"
		if _, err := reg.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: changed, Type: sr.TypeProtobuf, References: refs}); !isCode(err, 409) {
			t.Fatalf("a field's type changed: %v, want 409", err)
		}
	})

	t.Run("json", func(t *testing.T) {
		topic := newTopic(t)
		createTopic(t, topic, 1, nil)
		const schema = `{"type":"object","additionalProperties":false,"properties":{"sensor":{"type":"string"},"value":{"type":"number"}},"required":["sensor","value"]}`
		ss := create(topic+"-value", sr.Schema{Schema: schema, Type: sr.TypeJSON})
		type reading struct {
			Sensor string  `json:"sensor"`
			Value  float64 `json:"value"`
		}
		var produce sr.Serde
		produce.Register(ss.ID, reading{}, sr.EncodeFn(json.Marshal))
		cl := newClient(t, kgo.DefaultProduceTopic(topic))
		for i := range 10 {
			produceSync(t, cl, &kgo.Record{Value: produce.MustEncode(reading{fmt.Sprintf("s-%d", i), float64(i) / 4})})
		}
		var consume sr.Serde
		for i, r := range consumeN(t, topic, 10) {
			id, _, err := consume.DecodeID(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			if !consume.IsRegistered(id) {
				s, err := reg.SchemaByID(ctx, id)
				if err != nil || s.Type != sr.TypeJSON || s.Schema != schema {
					t.Fatalf("schema %d: %+v %v", id, s, err)
				}
				consume.Register(id, reading{}, sr.DecodeFn(json.Unmarshal))
			}
			var got reading
			if err := consume.Decode(r.Value, &got); err != nil || got != (reading{fmt.Sprintf("s-%d", i), float64(i) / 4}) {
				t.Fatalf("record %d decoded as %+v %v", i, got, err)
			}
		}
		narrowed := `{"type":"object","additionalProperties":false,"properties":{"sensor":{"type":"string"},"value":{"type":"integer"}},"required":["sensor","value"]}`
		if _, err := reg.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: narrowed, Type: sr.TypeJSON}); !isCode(err, 409) {
			t.Fatalf("a number narrowed to an integer: %v, want 409", err)
		}
		widened := `{"type":"object","additionalProperties":false,"properties":{"sensor":{"type":"string"},"value":{"type":"number"},"unit":{"type":"string"}},"required":["sensor","value"]}`
		if s2, err := reg.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: widened, Type: sr.TypeJSON}); err != nil || s2.Version != 2 {
			t.Fatalf("a property added to a closed model: %+v %v", s2, err)
		}
	})
}

// compileMessage compiles .proto sources (the first named order.proto)
// and returns the message named name.
func compileMessage(t *testing.T, srcs map[string]string, name protoreflect.FullName) protoreflect.MessageDescriptor {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(srcs)})}
	files, err := c.Compile(context.Background(), "order.proto")
	if err != nil {
		t.Fatal(err)
	}
	md := files[0].Messages().ByName(name.Name())
	if md == nil {
		t.Fatalf("no message %s", name)
	}
	return md
}

func isCode(err error, code int) bool {
	re, ok := err.(*sr.ResponseError)
	return ok && re.ErrorCode == code
}
