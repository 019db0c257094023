package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// memLog is a _schemas topic in memory: appended records are applied to
// every state that reads it, in order.
type memLog struct {
	mu     sync.Mutex
	recs   []Record
	states []*State
}

func (l *memLog) Append(_ context.Context, recs ...Record) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range recs {
		off := int64(len(l.recs))
		l.recs = append(l.recs, r)
		for _, s := range l.states {
			s.Apply(off, r.Key, r.Value) //nolint:errcheck // the registry's own
		}
	}
	return int64(len(l.recs) - 1), nil
}

func (l *memLog) End(context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.recs)), nil
}

// reader returns a new state that has read the whole log and reads on.
func (l *memLog) reader() *State {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := NewState()
	for i, r := range l.recs {
		s.Apply(int64(i), r.Key, r.Value) //nolint:errcheck // the registry's own
	}
	l.states = append(l.states, s)
	return s
}

// serve starts a registry's API over log; leader, if set, says who writes.
func serve(t *testing.T, log *memLog, leader Leader) (*Registry, *sr.Client, *httptest.Server) {
	t.Helper()
	r := New(Options{State: log.reader(), Log: log})
	ts := httptest.NewServer(Handler(r, HandlerOptions{Leader: leader}))
	t.Cleanup(ts.Close)
	cl, err := sr.NewClient(sr.URLs(ts.URL))
	if err != nil {
		t.Fatal(err)
	}
	return r, cl, ts
}

func code(err error) int {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return 0
}

const (
	userV1 = `{"type":"record","name":"User","namespace":"com.example","fields":[{"name":"name","type":"string"}]}`
	// a field added with a default: BACKWARD and FORWARD compatible.
	userV2 = `{"type":"record","name":"User","namespace":"com.example","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}`
	// a field added without a default: the new schema cannot read old data.
	userNoDefault = `{"type":"record","name":"User","namespace":"com.example","fields":[{"name":"name","type":"string"},{"name":"email","type":"string"}]}`
)

// The registry as franz-go's client drives it: ids shared by the same
// schema, versions, Avro's compatibility at the subject's level, lookups,
// deletes soft and permanent, and Confluent's error codes.
func TestRegistryAvro(t *testing.T) {
	ctx := context.Background()
	log := &memLog{}
	_, cl, _ := serve(t, log, nil)
	avro := func(s string) sr.Schema { return sr.Schema{Schema: s, Type: sr.TypeAvro} }

	s1, err := cl.CreateSchema(ctx, "users-value", avro(userV1))
	if err != nil || s1.ID != 1 || s1.Version != 1 {
		t.Fatalf("first schema: %+v %v", s1, err)
	}
	// The same schema, spaced otherwise: the same id and version.
	same, err := cl.CreateSchema(ctx, "users-value", avro(strings.ReplaceAll(userV1, ",", ", ")))
	if err != nil || same.ID != 1 || same.Version != 1 {
		t.Fatalf("the same schema again: %+v %v", same, err)
	}
	// Under another subject: the same id, that subject's version 1.
	other, err := cl.CreateSchema(ctx, "users-copy", avro(userV1))
	if err != nil || other.ID != 1 || other.Version != 1 {
		t.Fatalf("the same schema under another subject: %+v %v", other, err)
	}
	// BACKWARD (the default): a field without a default is refused.
	if _, err := cl.CreateSchema(ctx, "users-value", avro(userNoDefault)); code(err) != 409 {
		t.Fatalf("an incompatible schema: %v, want 409", err)
	}
	res, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), "users-value", -1, avro(userNoDefault))
	if err != nil || res.Is || len(res.Messages) == 0 {
		t.Fatalf("compatibility of the incompatible schema: %+v %v", res, err)
	}
	res, err = cl.CheckCompatibility(ctx, "users-value", 1, avro(userV2))
	if err != nil || !res.Is {
		t.Fatalf("compatibility of a compatible schema: %+v %v", res, err)
	}
	s2, err := cl.CreateSchema(ctx, "users-value", avro(userV2))
	if err != nil || s2.ID != 2 || s2.Version != 2 {
		t.Fatalf("a compatible schema: %+v %v", s2, err)
	}
	// NONE for the subject: anything goes.
	if r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "users-value"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	s3, err := cl.CreateSchema(ctx, "users-value", avro(userNoDefault))
	if err != nil || s3.ID != 3 || s3.Version != 3 {
		t.Fatalf("under NONE: %+v %v", s3, err)
	}
	if r := cl.Compatibility(ctx, "users-value"); r[0].Err != nil || r[0].Level != sr.CompatNone {
		t.Fatalf("the subject's level: %+v", r[0])
	}
	if r := cl.Compatibility(ctx); r[0].Err != nil || r[0].Level != sr.CompatBackward {
		t.Fatalf("the global level: %+v", r[0])
	}

	// Reads.
	if subjects, err := cl.Subjects(ctx); err != nil || strings.Join(subjects, ",") != "users-copy,users-value" {
		t.Fatalf("subjects: %v %v", subjects, err)
	}
	if vs, err := cl.SubjectVersions(ctx, "users-value"); err != nil || len(vs) != 3 {
		t.Fatalf("versions: %v %v", vs, err)
	}
	if byID, err := cl.SchemaByID(ctx, 2); err != nil || byID.Schema != userV2 {
		t.Fatalf("schema 2: %+v %v", byID, err)
	}
	if latest, err := cl.SchemaByVersion(ctx, "users-value", -1); err != nil || latest.Version != 3 || latest.ID != 3 {
		t.Fatalf("latest: %+v %v", latest, err)
	}
	if found, err := cl.LookupSchema(ctx, "users-value", avro(userV2)); err != nil || found.Version != 2 || found.ID != 2 {
		t.Fatalf("lookup: %+v %v", found, err)
	}
	if _, err := cl.LookupSchema(ctx, "users-value", avro(`"string"`)); code(err) != 40403 {
		t.Fatalf("lookup of a schema not registered: %v, want 40403", err)
	}
	if _, err := cl.SchemaByVersion(ctx, "nobody", 1); code(err) != 40401 {
		t.Fatalf("a subject that does not exist: %v, want 40401", err)
	}
	if _, err := cl.SchemaByVersion(ctx, "users-value", 9); code(err) != 40402 {
		t.Fatalf("a version that does not exist: %v, want 40402", err)
	}
	if _, err := cl.SchemaByID(ctx, 99); code(err) != 40403 {
		t.Fatalf("an id that does not exist: %v, want 40403", err)
	}
	if usages, err := cl.SchemaVersionsByID(ctx, 1); err != nil || len(usages) != 2 {
		t.Fatalf("the versions of id 1: %+v %v", usages, err)
	}
	if _, err := cl.CreateSchema(ctx, "bad", avro(`{"type":"record","name":"X","fields":[{"name":"a","type":"nope"}]}`)); code(err) != 42201 {
		t.Fatalf("an invalid schema: %v, want 42201", err)
	}

	// Deletes: soft, then permanent; each out of order refused.
	if err := cl.DeleteSchema(ctx, "users-value", 1, sr.HardDelete); code(err) != 40407 {
		t.Fatalf("permanent delete of a version not soft-deleted: %v, want 40407", err)
	}
	if err := cl.DeleteSchema(ctx, "users-value", 1, sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	if err := cl.DeleteSchema(ctx, "users-value", 1, sr.SoftDelete); code(err) != 40406 {
		t.Fatalf("soft delete twice: %v, want 40406", err)
	}
	if vs, _ := cl.SubjectVersions(ctx, "users-value"); len(vs) != 2 {
		t.Fatalf("versions after a soft delete: %v", vs)
	}
	if vs, _ := cl.SubjectVersions(sr.WithParams(ctx, sr.ShowDeleted), "users-value"); len(vs) != 3 {
		t.Fatalf("versions with the deleted: %v", vs)
	}
	if err := cl.DeleteSchema(ctx, "users-value", 1, sr.HardDelete); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DeleteSubject(ctx, "users-copy", sr.HardDelete); code(err) != 40405 {
		t.Fatalf("permanent delete of a subject not soft-deleted: %v, want 40405", err)
	}
	if vs, err := cl.DeleteSubject(ctx, "users-copy", sr.SoftDelete); err != nil || len(vs) != 1 {
		t.Fatalf("soft delete of a subject: %v %v", vs, err)
	}
	if _, err := cl.DeleteSubject(ctx, "users-copy", sr.SoftDelete); code(err) != 40404 {
		t.Fatalf("soft delete of a subject twice: %v, want 40404", err)
	}
	if subjects, _ := cl.Subjects(ctx); strings.Join(subjects, ",") != "users-value" {
		t.Fatalf("subjects after a delete: %v", subjects)
	}
	// Id 1 is kept by its soft-deleted use: still readable.
	if _, err := cl.SchemaByID(ctx, 1); err != nil {
		t.Fatalf("id 1 after its versions were deleted: %v", err)
	}

	// A new gateway reading the log from its start serves the same.
	fresh := log.reader()
	if got := fresh.Subjects("", true); strings.Join(got, ",") != "users-copy,users-value" {
		t.Fatalf("a fresh reader's subjects: %v", got)
	}
	if v, ok := fresh.Version("users-value", 1, true); ok {
		t.Fatalf("a fresh reader has the permanently deleted version: %+v", v)
	}
	if fresh.MaxID(DefaultContext) != 3 {
		t.Fatalf("a fresh reader's largest id: %d", fresh.MaxID(DefaultContext))
	}
}

// Avro references across subjects: a schema naming a type of another
// subject's version; the referenced version cannot be deleted then.
func TestRegistryReferences(t *testing.T) {
	ctx := context.Background()
	_, cl, _ := serve(t, &memLog{}, nil)
	addr, err := cl.CreateSchema(ctx, "address", sr.Schema{Type: sr.TypeAvro,
		Schema: `{"type":"record","name":"Address","namespace":"com.example","fields":[{"name":"city","type":"string"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	person := sr.Schema{Type: sr.TypeAvro,
		Schema:     `{"type":"record","name":"Person","namespace":"com.example","fields":[{"name":"home","type":"com.example.Address"}]}`,
		References: []sr.SchemaReference{{Name: "com.example.Address", Subject: "address", Version: 1}}}
	p, err := cl.CreateSchema(ctx, "person", person)
	if err != nil || p.ID == addr.ID {
		t.Fatalf("a schema with a reference: %+v %v", p, err)
	}
	// Without the reference the type is unknown.
	if _, err := cl.CreateSchema(ctx, "person2", sr.Schema{Type: sr.TypeAvro, Schema: person.Schema}); code(err) != 42201 {
		t.Fatalf("the schema without its reference: %v, want 42201", err)
	}
	if _, err := cl.CreateSchema(ctx, "person3", sr.Schema{Type: sr.TypeAvro, Schema: person.Schema,
		References: []sr.SchemaReference{{Name: "com.example.Address", Subject: "address", Version: 7}}}); code(err) != 42201 {
		t.Fatalf("a reference to a version that does not exist: %v, want 42201", err)
	}
	if err := cl.DeleteSchema(ctx, "address", 1, sr.SoftDelete); code(err) != 42206 {
		t.Fatalf("deleting a referenced version: %v, want 42206", err)
	}
	refs, err := cl.SchemaReferences(ctx, "address", 1)
	if err != nil || len(refs) != 1 || refs[0].ID != p.ID {
		t.Fatalf("referencedby: %+v %v", refs, err)
	}
}

// Modes: READONLY refuses writes; IMPORT keeps the ids and versions given
// (an empty registry, or forced).
func TestRegistryModes(t *testing.T) {
	ctx := context.Background()
	_, cl, _ := serve(t, &memLog{}, nil)
	if r := cl.SetMode(ctx, sr.ModeImport); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	s, err := cl.CreateSchemaWithIDAndVersion(ctx, "imported", sr.Schema{Type: sr.TypeAvro, Schema: userV1}, 42, 5)
	if err != nil || s.ID != 42 || s.Version != 5 {
		t.Fatalf("an imported schema: %+v %v", s, err)
	}
	if _, err := cl.CreateSchemaWithIDAndVersion(ctx, "imported2", sr.Schema{Type: sr.TypeAvro, Schema: userV2}, 42, 1); code(err) != 42205 {
		t.Fatalf("an id taken by another schema: %v, want 42205", err)
	}
	if r := cl.SetMode(ctx, sr.ModeReadWrite); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	// New ids follow the largest imported.
	if s, err := cl.CreateSchema(ctx, "fresh", sr.Schema{Type: sr.TypeAvro, Schema: userV2}); err != nil || s.ID != 43 {
		t.Fatalf("an id after the import: %+v %v", s, err)
	}
	if _, err := cl.CreateSchemaWithIDAndVersion(ctx, "x", sr.Schema{Type: sr.TypeAvro, Schema: `"string"`}, 7, 1); code(err) != 42205 {
		t.Fatalf("an id given outside IMPORT: %v, want 42205", err)
	}
	if r := cl.SetMode(ctx, sr.ModeImport); code(r[0].Err) != 42205 {
		t.Fatalf("IMPORT over existing subjects: %v, want 42205", r[0].Err)
	}
	if r := cl.SetMode(ctx, sr.ModeReadOnly, "fresh"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if _, err := cl.CreateSchema(ctx, "fresh", sr.Schema{Type: sr.TypeAvro, Schema: userV1}); code(err) != 42205 {
		t.Fatalf("a write to a READONLY subject: %v, want 42205", err)
	}
	if m := cl.Mode(ctx, "fresh"); m[0].Err != nil || m[0].Mode != sr.ModeReadOnly {
		t.Fatalf("the subject's mode: %+v", m[0])
	}
}

// Writes on a gateway that does not write go to the one that does; reads
// are answered where they arrive, from the log both read.
func TestRegistryForwarding(t *testing.T) {
	ctx := context.Background()
	log := &memLog{}
	_, _, leader := serve(t, log, func() (string, bool) { return "", true })
	_, follower, _ := serve(t, log, func() (string, bool) { return leader.URL, false })
	s, err := follower.CreateSchema(ctx, "fwd", sr.Schema{Type: sr.TypeAvro, Schema: userV1})
	if err != nil || s.ID != 1 {
		t.Fatalf("a write through the follower: %+v %v", s, err)
	}
	if got, err := follower.SchemaByID(ctx, 1); err != nil || got.Schema != userV1 {
		t.Fatalf("read back on the follower: %+v %v", got, err)
	}
	_, lost, _ := serve(t, log, func() (string, bool) { return "", false })
	if _, err := lost.CreateSchema(ctx, "fwd", sr.Schema{Type: sr.TypeAvro, Schema: userV2}); code(err) != 50004 {
		t.Fatalf("a write while no writer is known: %v, want 50004", err)
	}
}

// The API's own answers: types, contexts, an unknown path as a JSON error
// with the registry's media type.
func TestRegistryHTTP(t *testing.T) {
	_, _, ts := serve(t, &memLog{}, nil)
	resp, err := http.Get(ts.URL + "/no/such/path")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != ContentType {
		t.Fatalf("an unknown path: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	cl, _ := sr.NewClient(sr.URLs(ts.URL))
	if types, err := cl.SupportedTypes(context.Background()); err != nil || !slices.Equal(types, []sr.SchemaType{sr.TypeAvro, sr.TypeProtobuf, sr.TypeJSON}) {
		t.Fatalf("types: %v %v", types, err)
	}
	if _, err := cl.SchemaByVersion(context.Background(), "s", 0); code(err) != 42202 {
		t.Fatalf("version 0: %v, want 42202", err)
	}
}

// HTTP basic auth with the gateway's users, and subjects decided by the
// ACLs of the topics they are named for: alice may do everything with
// topic orders, bob only read it; the listings show each what they may
// read; the cluster's configuration needs ALTER_CONFIGS on the cluster.
func TestRegistrySecurity(t *testing.T) {
	ctx := context.Background()
	log := &memLog{}
	r := New(Options{State: log.reader(), Log: log})
	ts := httptest.NewServer(Handler(r, HandlerOptions{
		Authenticate: func(_ context.Context, user, password string) (bool, error) {
			return (user == "alice" || user == "bob") && password == user+"-secret", nil
		},
		Authorize: func(principal, _ string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
			switch {
			case typ == kmsg.ACLResourceTypeTopic && name == "orders":
				return principal == "User:alice" || (principal == "User:bob" && op == kmsg.ACLOperationRead)
			case typ == kmsg.ACLResourceTypeTopic && name == "payments":
				return principal == "User:alice"
			}
			return false
		},
	}))
	t.Cleanup(ts.Close)
	as := func(user, password string) *sr.Client {
		opts := []sr.ClientOpt{sr.URLs(ts.URL)}
		if user != "" {
			opts = append(opts, sr.BasicAuth(user, password))
		}
		cl, err := sr.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	alice, bob := as("alice", "alice-secret"), as("bob", "bob-secret")
	schema := sr.Schema{Type: sr.TypeAvro, Schema: userV1}

	resp, err := http.Get(ts.URL + "/subjects")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("no login: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if _, err := as("alice", "wrong").Subjects(ctx); code(err) != 401 {
		t.Fatalf("a wrong password: %v, want 401", err)
	}
	for _, subject := range []string{"orders-value", "payments-value"} {
		if _, err := alice.CreateSchema(ctx, subject, schema); err != nil {
			t.Fatalf("alice registers %s: %v", subject, err)
		}
	}
	if _, err := bob.CreateSchema(ctx, "orders-value", sr.Schema{Type: sr.TypeAvro, Schema: userV2}); code(err) != 403 {
		t.Fatalf("bob registers: %v, want 403", err)
	}
	if vs, err := bob.SubjectVersions(ctx, "orders-value"); err != nil || len(vs) != 1 {
		t.Fatalf("bob reads orders-value: %v %v", vs, err)
	}
	if _, err := bob.SubjectVersions(ctx, "payments-value"); code(err) != 403 {
		t.Fatalf("bob reads payments-value: %v, want 403", err)
	}
	if subjects, err := bob.Subjects(ctx); err != nil || strings.Join(subjects, ",") != "orders-value" {
		t.Fatalf("bob's listing: %v %v", subjects, err)
	}
	if _, err := bob.DeleteSubject(ctx, "orders-value", sr.SoftDelete); code(err) != 403 {
		t.Fatalf("bob deletes: %v, want 403", err)
	}
	// Any login may read a schema by id (a consumer's deserializer).
	if _, err := bob.SchemaByID(ctx, 1); err != nil {
		t.Fatalf("bob reads id 1: %v", err)
	}
	if res := alice.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFull}); code(res[0].Err) != 403 {
		t.Fatalf("the global level without ALTER_CONFIGS on the cluster: %v, want 403", res[0].Err)
	}
	if res := alice.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFull}, "orders-value"); res[0].Err != nil {
		t.Fatalf("alice sets orders-value's level: %v", res[0].Err)
	}
}

// Protobuf: compiled with its references (imports named by the
// references), the same text the same id, and compatibility on the wire:
// a field added is fine, a field's type changed or a message removed is
// refused.
func TestRegistryProtobuf(t *testing.T) {
	ctx := context.Background()
	_, cl, _ := serve(t, &memLog{}, nil)
	proto := func(s string, refs ...sr.SchemaReference) sr.Schema {
		return sr.Schema{Type: sr.TypeProtobuf, Schema: s, References: refs}
	}
	const money = "syntax = \"proto3\";\npackage shop;\nmessage Money {\n  string currency = 1;\n  int64 units = 2;\n}\n"
	if _, err := cl.CreateSchema(ctx, "money", proto(money)); err != nil {
		t.Fatal(err)
	}
	const v1 = "syntax = \"proto3\";\npackage shop;\nimport \"money.proto\";\nmessage Order {\n  string id = 1;\n  Money total = 2;\n}\n"
	ref := sr.SchemaReference{Name: "money.proto", Subject: "money", Version: 1}
	s1, err := cl.CreateSchema(ctx, "orders-value", proto(v1, ref))
	if err != nil || s1.Version != 1 {
		t.Fatalf("a schema importing another: %+v %v", s1, err)
	}
	if _, err := cl.CreateSchema(ctx, "orders-2", proto(v1)); code(err) != 42201 {
		t.Fatalf("the import without its reference: %v, want 42201", err)
	}
	if _, err := cl.CreateSchema(ctx, "broken", proto("syntax = \"proto3\";\nmessage {")); code(err) != 42201 {
		t.Fatalf("a schema that does not compile: %v, want 42201", err)
	}
	// Spaced otherwise: the same.
	if again, err := cl.CreateSchema(ctx, "orders-value", proto("\n"+strings.ReplaceAll(v1, "\n", "\n\n"), ref)); err != nil || again.ID != s1.ID {
		t.Fatalf("the same schema spaced otherwise: %+v %v", again, err)
	}
	const added = "syntax = \"proto3\";\npackage shop;\nimport \"money.proto\";\nmessage Order {\n  string id = 1;\n  Money total = 2;\n  repeated string tags = 3;\n}\n"
	if s2, err := cl.CreateSchema(ctx, "orders-value", proto(added, ref)); err != nil || s2.Version != 2 {
		t.Fatalf("a field added: %+v %v", s2, err)
	}
	for name, bad := range map[string]string{
		"a field's type changed":   "syntax = \"proto3\";\npackage shop;\nimport \"money.proto\";\nmessage Order {\n  int64 id = 1;\n  Money total = 2;\n  repeated string tags = 3;\n}\n",
		"a message's type changed": "syntax = \"proto3\";\npackage shop;\nmessage Other { string a = 1; }\nmessage Order {\n  string id = 1;\n  Other total = 2;\n  repeated string tags = 3;\n}\n",
		"the package changed":      "syntax = \"proto3\";\npackage store;\nimport \"money.proto\";\nmessage Order {\n  string id = 1;\n  shop.Money total = 2;\n  repeated string tags = 3;\n}\n",
	} {
		if _, err := cl.CreateSchema(ctx, "orders-value", proto(bad, ref)); code(err) != 409 {
			t.Errorf("%s: %v, want 409", name, err)
		}
	}
	// int32 to int64 reads on the wire: compatible.
	const widened = "syntax = \"proto3\";\npackage shop;\nmessage Money {\n  string currency = 1;\n  int32 units = 2;\n  sint64 cents = 3;\n}\n"
	if _, err := cl.CreateSchema(ctx, "money", proto(widened)); err != nil {
		t.Fatalf("int64 to int32 and a field added: %v", err)
	}
	const zigzag = "syntax = \"proto3\";\npackage shop;\nmessage Money {\n  string currency = 1;\n  int32 units = 2;\n  int64 cents = 3;\n}\n"
	if _, err := cl.CreateSchema(ctx, "money", proto(zigzag)); code(err) != 409 {
		t.Fatalf("sint64 to int64: %v, want 409", err)
	}
	got, err := cl.SchemaByVersion(ctx, "orders-value", 1)
	if err != nil || got.Type != sr.TypeProtobuf || got.Schema.Schema != v1 || len(got.References) != 1 {
		t.Fatalf("version 1 read back: %+v %v", got, err)
	}
	if text, err := cl.SchemaTextByID(ctx, s1.ID); err != nil || text != v1 {
		t.Fatalf("the schema's text by id: %q %v", text, err)
	}
	if types, err := cl.SupportedTypes(ctx); err != nil || len(types) != 3 {
		t.Fatalf("types: %v %v", types, err)
	}
}

// A Protobuf schema given as a base64 FileDescriptorProto, as
// librdkafka's bindings register it, is kept and served as .proto text;
// format=serialized serves any Protobuf schema as a descriptor.
func TestRegistryProtobufDescriptor(t *testing.T) {
	ctx := context.Background()
	_, cl, ts := serve(t, &memLog{}, nil)
	const money = "syntax = \"proto3\";\npackage shop;\nmessage Money {\n  string currency = 1;\n  int64 units = 2;\n}\n"
	if _, err := cl.CreateSchema(ctx, "money.proto", sr.Schema{Type: sr.TypeProtobuf, Schema: money}); err != nil {
		t.Fatal(err)
	}
	const order = "syntax = \"proto3\";\npackage shop;\nimport \"money.proto\";\nimport \"google/protobuf/timestamp.proto\";\nmessage Order {\n  string id = 1;\n  Money total = 2;\n  google.protobuf.Timestamp at = 3;\n}\n"
	ref := sr.SchemaReference{Name: "money.proto", Subject: "money.proto", Version: 1}
	b64, err := protobufFormat{}.serialized(order, []resolved{{Reference: Reference{Name: "money.proto"}, schema: money}})
	if err != nil {
		t.Fatal(err)
	}
	s1, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Type: sr.TypeProtobuf, Schema: b64, References: []sr.SchemaReference{ref}})
	if err != nil {
		t.Fatalf("a descriptor registered: %v", err)
	}
	again, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Type: sr.TypeProtobuf, Schema: b64, References: []sr.SchemaReference{ref}})
	if err != nil || again.ID != s1.ID || again.Version != 1 {
		t.Fatalf("the same descriptor again: %+v %v, want id %d version 1", again, err, s1.ID)
	}
	text, err := cl.SchemaTextByID(ctx, s1.ID)
	if err != nil || !strings.Contains(text, "message Order {") || !strings.Contains(text, "google.protobuf.Timestamp at = 3;") || !strings.Contains(text, `import "money.proto";`) {
		t.Fatalf("the descriptor kept as .proto text: %q %v", text, err)
	}
	// The text registered is the same schema: its id.
	if same, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Type: sr.TypeProtobuf, Schema: text, References: []sr.SchemaReference{ref}}); err != nil || same.ID != s1.ID {
		t.Fatalf("the kept text registered: %+v %v, want id %d", same, err, s1.ID)
	}
	for _, path := range []string{"/schemas/ids/" + strconv.Itoa(s1.ID) + "?format=serialized", "/subjects/orders-value/versions/1?format=serialized"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ Schema string }
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.StdEncoding.DecodeString(got.Schema)
		if err != nil {
			t.Fatalf("%s: %q is not base64: %v", path, got.Schema, err)
		}
		var fdp descriptorpb.FileDescriptorProto
		if err := proto.Unmarshal(raw, &fdp); err != nil || len(fdp.MessageType) != 1 || fdp.MessageType[0].GetName() != "Order" || len(fdp.MessageType[0].Field) != 3 || len(fdp.Dependency) != 2 {
			t.Fatalf("%s: the descriptor served: %v %v", path, &fdp, err)
		}
	}
	if _, err := cl.CreateSchema(ctx, "bad", sr.Schema{Type: sr.TypeProtobuf, Schema: base64.StdEncoding.EncodeToString([]byte{0xff, 0xff})}); code(err) != 42201 {
		t.Fatalf("base64 that is no descriptor: %v, want 42201", err)
	}
}

func TestRegistryJSONSchema(t *testing.T) {
	ctx := context.Background()
	_, cl, _ := serve(t, &memLog{}, nil)
	js := func(s string, refs ...sr.SchemaReference) sr.Schema {
		return sr.Schema{Type: sr.TypeJSON, Schema: s, References: refs}
	}
	const address = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
	if _, err := cl.CreateSchema(ctx, "address", js(address)); err != nil {
		t.Fatal(err)
	}
	ref := sr.SchemaReference{Name: "address.json", Subject: "address", Version: 1}
	const v1 = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false,
		"properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"home":{"$ref":"address.json"},
		"color":{"enum":["red","green"]}},"required":["id"]}`
	s1, err := cl.CreateSchema(ctx, "customers-value", js(v1, ref))
	if err != nil || s1.Version != 1 {
		t.Fatalf("a schema with a reference: %+v %v", s1, err)
	}
	if again, err := cl.CreateSchema(ctx, "customers-value", js(" "+v1+"\n", ref)); err != nil || again.ID != s1.ID {
		t.Fatalf("the same schema spaced otherwise: %+v %v", again, err)
	}
	for name, bad := range map[string]string{
		"not JSON":                  `{"type":`,
		"not a schema":              `{"type":5}`,
		"a reference not given":     `{"$ref":"other.json"}`,
		"a file named by reference": `{"$ref":"file:///etc/passwd"}`,
	} {
		if _, err := cl.CreateSchema(ctx, "bad", js(bad)); code(err) != 42201 {
			t.Errorf("%s: %v, want 42201", name, err)
		}
	}
	// BACKWARD: the new schema takes every document the old one took.
	for name, c := range map[string]struct {
		schema string
		ok     bool
	}{
		"integer widened to number":              {`{"type":"object","additionalProperties":false,"properties":{"id":{"type":"number"},"tags":{"type":"array","items":{"type":"string"}},"home":{"$ref":"address.json"},"color":{"enum":["red","green"]}},"required":["id"]}`, true},
		"a property added to a closed model":     {`{"type":"object","additionalProperties":false,"properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"home":{"$ref":"address.json"},"color":{"enum":["red","green"]},"age":{"type":"integer"}},"required":["id"]}`, true},
		"a property required that was not":       {`{"type":"object","additionalProperties":false,"properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"home":{"$ref":"address.json"},"color":{"enum":["red","green"]}},"required":["id","tags"]}`, false},
		"an enum narrowed":                       {`{"type":"object","additionalProperties":false,"properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"home":{"$ref":"address.json"},"color":{"enum":["red"]}},"required":["id"]}`, false},
		"an item type changed":                   {`{"type":"object","additionalProperties":false,"properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"integer"}},"home":{"$ref":"address.json"},"color":{"enum":["red","green"]}},"required":["id"]}`, false},
		"a property removed from a closed model": {`{"type":"object","additionalProperties":false,"properties":{"id":{"type":"integer"},"home":{"$ref":"address.json"},"color":{"enum":["red","green"]}},"required":["id"]}`, false},
		"a maximum added":                        {`{"type":"object","additionalProperties":false,"properties":{"id":{"type":"integer","maximum":10},"tags":{"type":"array","items":{"type":"string"}},"home":{"$ref":"address.json"},"color":{"enum":["red","green"]}},"required":["id"]}`, false},
	} {
		ok, err := cl.CheckCompatibility(ctx, "customers-value", -1, js(c.schema, ref))
		if err != nil || ok.Is != c.ok {
			t.Errorf("%s: compatible %+v %v, want %v", name, ok, err, c.ok)
		}
	}
	// The referenced schema's own rules apply through the reference.
	const address2 = `{"type":"object","properties":{"city":{"type":"string","maxLength":3}},"required":["city"]}`
	if _, err := cl.CreateSchema(ctx, "address", js(address2)); code(err) != 409 {
		t.Fatalf("a maximum length added to a referenced schema: %v, want 409", err)
	}
	// An open model: adding a typed property is not compatible (old
	// documents may have had it with any value); FORWARD takes it.
	const open1 = `{"type":"object","properties":{"a":{"type":"string"}}}`
	const open2 = `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`
	if _, err := cl.CreateSchema(ctx, "open", js(open1)); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateSchema(ctx, "open", js(open2)); code(err) != 409 {
		t.Fatalf("a property added to an open model at BACKWARD: %v, want 409", err)
	}
	if res := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatForward}, "open"); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("FORWARD set: %+v", res)
	}
	if s, err := cl.CreateSchema(ctx, "open", js(open2)); err != nil || s.Version != 2 {
		t.Fatalf("the same at FORWARD: %+v %v", s, err)
	}
	got, err := cl.SchemaByVersion(ctx, "customers-value", 1)
	if err != nil || got.Type != sr.TypeJSON || len(got.References) != 1 {
		t.Fatalf("read back: %+v %v", got, err)
	}
}

// A schema sent with "references": [] is the one sent without (as
// confluent-kafka-python sends every schema).
func TestRegistryEmptyReferences(t *testing.T) {
	_, cl, ts := serve(t, &memLog{}, nil)
	s, err := cl.CreateSchema(context.Background(), "s", sr.Schema{Schema: userV1})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"schema": userV1, "references": []any{}})
	for _, path := range []string{"/subjects/s?normalize=False&deleted=False", "/subjects/s/versions"} {
		resp, err := http.Post(ts.URL+path, ContentType, strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ ID int }
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || got.ID != s.ID {
			t.Fatalf("%s with no references as []: %d id %d %v, want id %d", path, resp.StatusCode, got.ID, err, s.ID)
		}
	}
}

// Contexts: a qualified subject (":.ctx:name") is in its context, which
// counts its own ids and has its own config; ids are looked up in the
// context their subject parameter names.
func TestRegistryContexts(t *testing.T) {
	ctx := context.Background()
	_, cl, ts := serve(t, &memLog{}, nil)
	get := func(path string, into any) int {
		t.Helper()
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if into != nil && resp.StatusCode == 200 {
			if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode
	}
	d1, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: userV1})
	if err != nil {
		t.Fatal(err)
	}
	// franz-go's client scoped to a context sends /contexts/.staging/...
	staging := sr.InContext(ctx, ".staging")
	s1, err := cl.CreateSchema(staging, "orders-value", sr.Schema{Schema: userV1})
	if err != nil || s1.ID != 1 || d1.ID != 1 || s1.Subject != ":.staging:orders-value" {
		t.Fatalf("the same schema in two contexts: %+v %+v %v, want id 1 in each", d1, s1, err)
	}
	s2, err := cl.CreateSchema(staging, "other", sr.Schema{Schema: userV2})
	if err != nil || s2.ID != 2 {
		t.Fatalf("a second schema in .staging: %+v %v, want id 2", s2, err)
	}
	if subjects, err := cl.Subjects(staging); err != nil || !slices.Equal(subjects, []string{":.staging:orders-value", ":.staging:other"}) {
		t.Fatalf("the subjects of .staging: %v %v", subjects, err)
	}
	if got, err := cl.SchemaByID(staging, 2); err != nil || normalJSON(got.Schema) != normalJSON(userV2) {
		t.Fatalf("id 2 in .staging: %+v %v", got, err)
	}
	if code := get("/schemas/ids/2?subject=orders-value", nil); code != 404 {
		t.Fatalf("id 2 in the default context: %d, want 404", code)
	}
	// Without a subject, the first context that has the id.
	var found struct{ Schema string }
	if code := get("/schemas/ids/2", &found); code != 200 || normalJSON(found.Schema) != normalJSON(userV2) {
		t.Fatalf("id 2 with no subject: %d %q", code, found.Schema)
	}
	var byID struct{ Schema string }
	for _, subject := range []string{":.staging:other", ":.staging:"} {
		if code := get("/schemas/ids/2?subject="+subject, &byID); code != 200 || normalJSON(byID.Schema) != normalJSON(userV2) {
			t.Fatalf("id 2 with subject %s: %d %q", subject, code, byID.Schema)
		}
	}
	var contexts, subjects []string
	if get("/contexts", &contexts); !slices.Equal(contexts, []string{".", ".staging"}) {
		t.Fatalf("contexts %v", contexts)
	}
	for prefix, want := range map[string][]string{
		"":                          {":.staging:orders-value", ":.staging:other", "orders-value"},
		"?subjectPrefix=":           {"orders-value"},
		"?subjectPrefix=:*:":        {":.staging:orders-value", ":.staging:other", "orders-value"},
		"?subjectPrefix=:.staging:": {":.staging:orders-value", ":.staging:other"},
	} {
		if get("/subjects"+prefix, &subjects); !slices.Equal(subjects, want) {
			t.Errorf("/subjects%s: %v, want %v", prefix, subjects, want)
		}
	}
	// ":.:name" is the default context's name.
	if got, err := cl.SchemaByVersion(ctx, ":.:orders-value", 1); err != nil || got.ID != d1.ID || got.Subject != "orders-value" {
		t.Fatalf(":.:orders-value: %+v %v", got, err)
	}
	// A context's level applies to its subjects, not to the others.
	if res := cl.SetCompatibility(staging, sr.SetCompatibility{Level: sr.CompatNone}); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("NONE for .staging: %+v", res)
	}
	if _, err := cl.CreateSchema(ctx, ":.staging:orders-value", sr.Schema{Schema: userNoDefault}); err != nil {
		t.Fatalf("an incompatible schema in .staging at NONE: %v", err)
	}
	var level struct{ CompatibilityLevel string }
	if get("/config/:.staging:", &level); level.CompatibilityLevel != "NONE" {
		t.Fatalf(".staging's level: %+v", level)
	}
	if _, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: userNoDefault}); code(err) != 409 {
		t.Fatalf("the same in the default context at BACKWARD: %v, want 409", err)
	}
	if _, err := cl.CreateSchema(ctx, ":.staging:", sr.Schema{Schema: userV1}); code(err) != 42201 {
		t.Fatalf("a context registered as a subject: %v, want 42201", err)
	}
}

// Each compatibility level refuses with 409 what it must and takes what
// it may (Avro), the transitive ones against every earlier version.
func TestRegistryLevels(t *testing.T) {
	ctx := context.Background()
	_, cl, _ := serve(t, &memLog{}, nil)
	rec := func(fields string) string {
		return `{"type":"record","name":"R","fields":[` + fields + `]}`
	}
	var (
		a       = rec(`{"name":"a","type":"int"}`)
		ab      = rec(`{"name":"a","type":"int"},{"name":"b","type":"int","default":0}`)
		abNoDef = rec(`{"name":"a","type":"int"},{"name":"b","type":"int"}`)
		ac      = rec(`{"name":"a","type":"int"},{"name":"c","type":"string"}`)
		none    = rec(``)
		str     = rec(`{"name":"a","type":"string"}`)
	)
	for _, c := range []struct {
		level       sr.CompatibilityLevel
		history     []string
		good, bad   string
		latestTakes bool // the bad one is compatible with the latest version alone
	}{
		{sr.CompatBackward, []string{a}, none, ac, false},
		{sr.CompatForward, []string{a}, ac, none, false},
		{sr.CompatFull, []string{a}, ab, ac, false},
		{sr.CompatBackwardTransitive, []string{a, ab}, ab, abNoDef, true},
		{sr.CompatForwardTransitive, []string{abNoDef, ab}, ab, a, true},
		{sr.CompatFullTransitive, []string{abNoDef, ab}, ab, a, true},
		{sr.CompatNone, []string{a}, str, "", false},
	} {
		subject := "levels-" + c.level.String()
		if res := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, subject); res[0].Err != nil {
			t.Fatal(res[0].Err)
		}
		for _, h := range c.history {
			if _, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: h}); err != nil {
				t.Fatal(err)
			}
		}
		if res := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: c.level}, subject); res[0].Err != nil {
			t.Fatal(res[0].Err)
		}
		if ok, err := cl.CheckCompatibility(ctx, subject, -1, sr.Schema{Schema: c.good}); err != nil || !ok.Is {
			t.Errorf("%s: %s refused: %+v %v", c.level, c.good, ok, err)
		}
		if c.bad == "" {
			continue
		}
		if _, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: c.bad}); code(err) != 409 {
			t.Errorf("%s: %s registered: %v, want 409", c.level, c.bad, err)
		}
		// Checked against the latest version alone, the level is not transitive.
		if ok, err := cl.CheckCompatibility(ctx, subject, len(c.history), sr.Schema{Schema: c.bad}); err != nil || ok.Is != c.latestTakes {
			t.Errorf("%s: %s against the latest version: %+v %v, want %v", c.level, c.bad, ok, err, c.latestTakes)
		}
	}
}

// normalize=true keeps a schema in its normal form: Avro's and JSON
// Schema's JSON with sorted keys and no space, Protobuf compiled and
// printed again; a lookup with it finds the schema however it is spaced.
func TestRegistryNormalize(t *testing.T) {
	_, cl, ts := serve(t, &memLog{}, nil)
	post := func(path string, body map[string]any) (int, map[string]any) {
		t.Helper()
		b, _ := json.Marshal(body)
		resp, err := http.Post(ts.URL+path, ContentType, strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out) //nolint:errcheck // checked by the callers' fields
		return resp.StatusCode, out
	}
	const spaced = "{ \"type\" : \"record\", \"name\":\"N\",\n \"fields\" : [ {\"type\":\"int\", \"name\":\"a\"} ] }"
	if code, out := post("/subjects/n/versions?normalize=true", map[string]any{"schema": spaced}); code != 200 || out["id"] == nil {
		t.Fatalf("register normalized: %d %v", code, out)
	}
	got, err := cl.SchemaByVersion(context.Background(), "n", 1)
	if err != nil || got.Schema.Schema != normalJSON(spaced) {
		t.Fatalf("kept as %q %v, want %q", got.Schema.Schema, err, normalJSON(spaced))
	}
	const proto1 = "syntax = \"proto3\";\n\n\npackage   p ;\nmessage M {   string a = 1;  int32 b = 2; }\n"
	const proto2 = "syntax=\"proto3\"; package p; message M { string a = 1; int32 b = 2; }"
	if code, out := post("/subjects/pn/versions?normalize=true", map[string]any{"schema": proto1, "schemaType": "PROTOBUF"}); code != 200 {
		t.Fatalf("register a normalized Protobuf schema: %d %v", code, out)
	}
	kept, err := cl.SchemaByVersion(context.Background(), "pn", 1)
	if err != nil || !strings.Contains(kept.Schema.Schema, "message M {\n  string a = 1;\n\n  int32 b = 2;\n}") {
		t.Fatalf("the Protobuf schema kept as %q %v", kept.Schema.Schema, err)
	}
	if code, out := post("/subjects/pn?normalize=true", map[string]any{"schema": proto2, "schemaType": "PROTOBUF"}); code != 200 || out["version"] != float64(1) {
		t.Fatalf("looked up otherwise laid out, normalized: %d %v", code, out)
	}
	if code, _ := post("/subjects/pn", map[string]any{"schema": proto2, "schemaType": "PROTOBUF"}); code != 404 {
		t.Fatalf("looked up otherwise laid out, not normalized: %d, want 404", code)
	}
}

// A gateway's registry that has not read _schemas to its end yet waits
// before it answers a read: never a partial answer.
func TestRegistryCatchUp(t *testing.T) {
	log := &memLog{}
	_, cl, _ := serve(t, log, nil)
	if _, err := cl.CreateSchema(context.Background(), "a", sr.Schema{Schema: userV1}); err != nil {
		t.Fatal(err)
	}
	behind := NewState() // has read nothing yet
	ts := httptest.NewServer(Handler(New(Options{State: behind, Log: log}), HandlerOptions{}))
	defer ts.Close()
	go func() {
		time.Sleep(200 * time.Millisecond)
		log.mu.Lock()
		defer log.mu.Unlock()
		for i, r := range log.recs {
			behind.Apply(int64(i), r.Key, r.Value) //nolint:errcheck // the registry's own
		}
	}()
	resp, err := http.Get(ts.URL + "/subjects")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var subjects []string
	if err := json.NewDecoder(resp.Body).Decode(&subjects); err != nil || !slices.Equal(subjects, []string{"a"}) {
		t.Fatalf("subjects read before the log was read: %v %v", subjects, err)
	}
}
