package registry

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// Records of _schemas from anyone who may write the topic: applied or
// skipped, never a panic; a schema applied is read back as it was.
func FuzzApply(f *testing.F) {
	f.Add(schemaKey("s", 1), mustJSON(schemaValue{schemaJSON: schemaJSON{Subject: "s", Version: 1, ID: 1, Schema: userV1}}))
	f.Add(configKey(nil), []byte(`{"compatibilityLevel":"FULL"}`))
	f.Add(modeKey(nil), []byte(`{"mode":"IMPORT"}`))
	f.Add(deleteSubjectKey("s"), []byte(`{"subject":"s","version":3}`))
	f.Add([]byte(`{"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}`), []byte(`{"subject":"s"}`))
	f.Add([]byte(`{"keytype":"NOOP","magic":0}`), []byte(nil))
	f.Add(schemaKey("s", 1), []byte(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		s := NewState()
		s.Apply(0, schemaKey("s", 1), mustJSON(schemaValue{schemaJSON: schemaJSON{Subject: "s", Version: 1, ID: 1, Schema: userV1}})) //nolint:errcheck // valid
		if err := s.Apply(1, key, value); err != nil {
			return
		}
		s.Subjects("", true)
		for _, subject := range s.Subjects("", true) {
			for _, v := range s.Versions(subject, true) {
				if typ, schema, _, ok := s.ByID(Context(subject), v.ID); !ok || typ != v.Type || schema != v.Schema {
					t.Fatalf("%s version %d: id %d stands for %q, not its schema", subject, v.Version, v.ID, schema)
				}
			}
		}
	})
}

// Schemas as clients send them: registered or refused with a Confluent
// error, never a panic.
func FuzzRegister(f *testing.F) {
	f.Add(userV1, "AVRO")
	f.Add(`"string"`, "")
	f.Add(`{"type":"array","items":{"type":"map","values":"long"}}`, "AVRO")
	f.Add(`{"type":"enum","name":"E","symbols":["A","B"]}`, "avro")
	f.Add(`syntax = "proto3";`, "PROTOBUF")
	f.Add("syntax = \"proto3\";\npackage p;\nmessage M {\n  string a = 1;\n  oneof o { int32 b = 2; bytes c = 3; }\n  map<string, M> m = 4;\n}\n", "PROTOBUF")
	f.Add("CgZhLnByb3RvEgFwIhEKAU0SDAoBYRgBIAEoCVIBYWIGcHJvdG8z", "PROTOBUF")
	f.Add(`{"type":"object","properties":{"a":{"type":"string","maxLength":3}},"required":["a"]}`, "JSON")
	f.Fuzz(func(t *testing.T, schema, typ string) {
		log := &memLog{}
		r := New(Options{State: log.reader(), Log: log})
		ctx := context.Background()
		if _, e := r.Register(ctx, "s", SchemaRequest{Schema: userV1}); e != nil {
			t.Fatal(e)
		}
		id, e := r.Register(ctx, "s", SchemaRequest{Schema: schema, SchemaType: typ})
		if e != nil {
			if e.Status() != 409 && e.Status() != 422 {
				t.Fatalf("refused with %v", e)
			}
			return
		}
		if _, got, _, ok := r.State().ByID(DefaultContext, id); !ok {
			t.Fatalf("id %d stands for no schema", id)
		} else if again, e := r.Register(ctx, "s2", SchemaRequest{Schema: got, SchemaType: typ}); e != nil || again != id {
			t.Fatalf("the schema kept for id %d registered again: id %d %v", id, again, e)
		}
	})
}

// Pairs of JSON schemas: told compatible or not, never a panic or an
// endless comparison (references to themselves, nested combinations).
func FuzzJSONSchemaCompatibility(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false}`, `{"type":"object","properties":{"a":{"type":"number"},"b":{}}}`)
	f.Add(`{"definitions":{"n":{"type":"object","properties":{"next":{"$ref":"#/definitions/n"}}}},"$ref":"#/definitions/n"}`, `{"$ref":"#"}`)
	f.Add(`{"anyOf":[{"type":"string"},{"oneOf":[{"type":["null","integer"]}]}]}`, `{"allOf":[{"not":{"enum":[1,2]}},{"type":"array","items":[{"const":3}],"additionalItems":{"minimum":2}}]}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		pa, err := jsonFormat{}.parse(a, nil)
		if err != nil {
			return
		}
		pb, err := jsonFormat{}.parse(b, nil)
		if err != nil {
			return
		}
		pa.canRead(pb)
		if len(pa.canRead(pa)) != 0 {
			t.Fatalf("%s cannot read what it wrote itself", a)
		}
	})
}

// Paths under /contexts/{context}/ as clients send them: rewritten to
// the request they stand for or left alone, never a panic.
func FuzzContextPath(f *testing.F) {
	for _, p := range []string{"/contexts/.a/subjects/s/versions", "/contexts/.a/schemas/ids/1?subject=x", "/contexts/.a/config", "/contexts/.a/mode/s", "/contexts/.a/compatibility/subjects/s/versions/1", "/contexts/%2e/subjects", "/contexts/.a/subjects/%2F%3A/versions"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, target string) {
		q, err := http.NewRequest("GET", "http://registry"+target, nil)
		if err != nil || !strings.HasPrefix(q.URL.EscapedPath(), "/contexts/") {
			return
		}
		before := q.URL.String()
		inContext(q)
		if after := q.URL.String(); after != before && strings.HasPrefix(q.URL.EscapedPath(), "/contexts/") {
			t.Fatalf("%s rewritten to %s, still under /contexts/", before, after)
		}
	})
}
