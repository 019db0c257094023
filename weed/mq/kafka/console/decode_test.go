package console

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/registry"
)

const (
	paymentAvro = `{"type":"record","name":"Payment","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"},` +
		`{"name":"card","type":{"type":"record","name":"Card","fields":[{"name":"number","type":"string"},{"name":"ssn","type":"string"}]}}]}`
	personProto = `syntax = "proto3";
message Other { string x = 1; }
message Person { string name = 1; string ssn = 2; int32 age = 3; }
`
)

// registryWith is a registry state holding an Avro schema (id 1) and a
// Protobuf file (id 2), as the registry's topic would give them.
func registryWith(t testing.TB) *registry.State {
	t.Helper()
	s := registry.NewState()
	for i, sc := range []struct{ subject, typ, schema string }{{"payments-value", "AVRO", paymentAvro}, {"people-value", "PROTOBUF", personProto}} {
		key, _ := json.Marshal(map[string]any{"keytype": "SCHEMA", "subject": sc.subject, "version": 1, "magic": 1})
		value, _ := json.Marshal(map[string]any{"subject": sc.subject, "version": 1, "id": i + 1, "schema": sc.schema, "schemaType": sc.typ, "deleted": false})
		if err := s.Apply(int64(i), key, value); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func framed(id int, body []byte) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	return append(b, body...)
}

func avroPayment(t testing.TB) []byte {
	t.Helper()
	type card struct {
		Number string `avro:"number"`
		SSN    string `avro:"ssn"`
	}
	body, err := avro.Marshal(avro.MustParse(paymentAvro), struct {
		ID     string  `avro:"id"`
		Amount float64 `avro:"amount"`
		Card   card    `avro:"card"`
	}{"pay-1", 12.5, card{"4111", "123-45"}})
	if err != nil {
		t.Fatal(err)
	}
	return framed(1, body)
}

func protoPerson() []byte {
	var body []byte
	body = protowire.AppendTag(body, 1, protowire.BytesType)
	body = protowire.AppendString(body, "ada")
	body = protowire.AppendTag(body, 2, protowire.BytesType)
	body = protowire.AppendString(body, "999-00")
	body = protowire.AppendTag(body, 3, protowire.VarintType)
	body = protowire.AppendVarint(body, 36)
	var h sr.ConfluentHeader
	index, _ := h.AppendEncode(nil, 2, []int{1}) // Person, the file's second message
	return append(index, body...)
}

func TestDecodeAvroInSchemaOrder(t *testing.T) {
	d := &decoder{schemas: registryWith(t)}
	got := d.decode(avroPayment(t))
	want := `{"id":"pay-1","amount":12.5,"card":{"number":"4111","ssn":"123-45"}}`
	if got.Format != "avro" || got.SchemaID != 1 || got.Text != want {
		t.Fatalf("decoded %+v, want avro id 1 %s", got, want)
	}
	// Masked at any depth; the rest stays.
	got.mask(map[string]bool{"ssn": true}, "value")
	if strings.Contains(got.Text, "123-45") || !strings.Contains(got.Text, `"ssn":"****"`) || !strings.Contains(got.Text, `"number":"4111"`) {
		t.Fatalf("masked: %s", got.Text)
	}
}

func TestDecodeProtobufByItsIndex(t *testing.T) {
	d := &decoder{schemas: registryWith(t)}
	got := d.decode(protoPerson())
	if got.Format != "protobuf" || got.SchemaID != 2 {
		t.Fatalf("decoded %+v, want protobuf id 2", got)
	}
	for _, want := range []string{`"name":"ada"`, `"ssn":"999-00"`, `"age":36`} {
		if !strings.Contains(got.Text, want) {
			t.Fatalf("decoded %s, want it to hold %s", got.Text, want)
		}
	}
}

func TestDecodeWithoutSchema(t *testing.T) {
	d := &decoder{schemas: registryWith(t)}
	for _, c := range []struct {
		in           []byte
		format, text string
	}{
		{nil, "null", "null"},
		{[]byte("plain text"), "text", "plain text"},
		{[]byte(`{"a":1}`), "json", `{"a":1}`},
		{[]byte{0xff, 0x00, 0x01}, "hex", "ff0001"},
		// The magic byte and an id the registry does not know: bytes.
		{framed(77, []byte("x")), "hex", "000000004d78"},
	} {
		got := d.decode(c.in)
		if got.Format != c.format || got.Text != c.text {
			t.Errorf("decode(%q) = %s %q, want %s %q", c.in, got.Format, got.Text, c.format, c.text)
		}
	}
	// A known id whose bytes do not decode: shown as bytes, with why.
	got := d.decode(framed(1, []byte{0x02}))
	if got.SchemaID != 1 || got.Error == "" || got.Format != "hex" {
		t.Fatalf("a broken Avro value: %+v", got)
	}
}

func TestMaskWholeValueAndJSON(t *testing.T) {
	v := plain([]byte(`{"user":{"email":"a@b","n":[{"email":"c@d"}]}}`))
	v.mask(map[string]bool{"email": true}, "value")
	if strings.Contains(v.Text, "@") {
		t.Fatalf("masked JSON: %s", v.Text)
	}
	w := plain([]byte("secret text"))
	w.mask(map[string]bool{"value": true}, "value")
	if w.Text != masked {
		t.Fatalf("a whole value masked: %q", w.Text)
	}
}

func TestParseMasks(t *testing.T) {
	ms, err := ParseMasks(`^pay\..*=card,cvv; people=ssn`)
	if err != nil || len(ms) != 2 {
		t.Fatalf("ParseMasks: %v %v", ms, err)
	}
	f := fieldsMasked(ms, "pay.eu")
	if !f["card"] || !f["cvv"] || f["ssn"] {
		t.Fatalf("fields of pay.eu: %v", f)
	}
	for _, bad := range []string{"noequals", "=field", "(=x", "topic="} {
		if _, err := ParseMasks(bad); err == nil {
			t.Errorf("ParseMasks(%q) took it", bad)
		}
	}
}

func TestDiffLines(t *testing.T) {
	got := diffLines("a\nb\nc", "a\nc\nd")
	var b strings.Builder
	for _, l := range got {
		fmt.Fprintf(&b, "%s%s|", l.Op, l.Text)
	}
	if b.String() != " a|-b| c|+d|" {
		t.Fatalf("diff: %s", b.String())
	}
}

// The console decodes what any producer wrote: no bytes make it panic,
// and what it shows is valid UTF-8 text.
func FuzzDecode(f *testing.F) {
	s := registryWith(f)
	f.Add(avroPayment(f))
	f.Add(protoPerson())
	f.Add(framed(1, []byte{0x0a, 0x01}))
	f.Add(framed(2, []byte{0x04, 0xff, 0xff}))
	f.Add([]byte(`{"a":[1,{"b":null}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := &decoder{schemas: s}
		v := d.decode(b)
		v.mask(map[string]bool{"ssn": true, "b": true}, "value")
		if !utf8Valid(v.Text) {
			t.Fatalf("shown %q is not text", v.Text)
		}
	})
}

// FuzzTimestamp: the browse's and reset's timestamp field.
func FuzzTimestamp(f *testing.F) {
	for _, s := range []string{"1700000000000", "2026-12-07T10:00:00Z", "2026-12-07T10:00", "", "-1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parseTimestamp(s) //nolint:errcheck // no panic is what is checked
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
