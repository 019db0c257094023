package iceberg

// The values of the schema modes, Avro, Protobuf or JSON Schema, decoded
// as Avro records: a Protobuf message's descriptor is taken as the Avro record it
// would be and a decoded message as the values hamba's Avro decoder
// gives, so that one path makes columns and rows of either, and a table's
// schema evolves by name for both.

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Schemas are the schema registry's schemas, by id.
type Schemas interface {
	// Schema returns the schema of an id, parsed with its references:
	// an avro.Schema, a Protobuf file (protoreflect.FileDescriptor) or a
	// compiled JSON Schema (*jsonschema.Schema).
	Schema(id int) (any, error)
	// Latest returns the id of a subject's latest version.
	Latest(subject string) (int, error)
}

// schemaKey names the Avro record of a value: its schema id and, for
// Protobuf, the message of the file.
type schemaKey struct {
	id      int
	message protoreflect.FullName
}

func (k schemaKey) String() string {
	if k.message == "" {
		return "schema id " + strconv.Itoa(k.id)
	}
	return fmt.Sprintf("schema id %d (message %s)", k.id, k.message)
}

// decoded is a record whose value a schema decoded.
type decoded struct {
	Record
	key    schemaKey
	schema *avro.RecordSchema
	value  map[string]any
}

// values decodes the values of one commit's records, each schema looked
// up, parsed and made a record once.
type values struct {
	schemas Schemas
	// latest is value_schema_latest's id (the values carry no prefix),
	// else 0.
	latest  int
	found   map[int]lookup
	records map[schemaKey]recordLookup
}

type lookup struct {
	s   any
	err error
}

type recordLookup struct {
	rs  *avro.RecordSchema
	md  protoreflect.MessageDescriptor
	err error
}

func newValues(schemas Schemas, latest int) *values {
	return &values{schemas: schemas, latest: latest, found: map[int]lookup{}, records: map[schemaKey]recordLookup{}}
}

func (vs *values) schema(id int) (any, error) {
	if l, ok := vs.found[id]; ok {
		return l.s, l.err
	}
	var l lookup
	if vs.schemas == nil {
		l.err = fmt.Errorf("this gateway serves no schema registry")
	} else {
		l.s, l.err = vs.schemas.Schema(id)
	}
	vs.found[id] = l
	return l.s, l.err
}

// decode reads a record's value as Confluent's serializers frame it: the
// magic byte 0, the schema id (4 bytes, big endian), for Protobuf the
// message's indexes in the file, then Avro's or Protobuf's binary or the
// JSON text; or, under value_schema_latest, the value alone (of the
// file's first message for Protobuf). It returns why the value is no row otherwise.
func (vs *values) decode(r Record) (decoded, string) {
	if r.Value == nil {
		return decoded{}, "a null value (a tombstone)"
	}
	v, id := r.Value, vs.latest
	if id == 0 {
		if len(v) < 5 || v[0] != 0 {
			return decoded{}, "the value has no schema id (the magic byte 0 and 4 bytes)"
		}
		id = int(binary.BigEndian.Uint32(v[1:5]))
		v = v[5:]
	}
	s, err := vs.schema(id)
	if err != nil {
		return decoded{}, err.Error()
	}
	switch s := s.(type) {
	case avro.Schema:
		rs, ok := s.(*avro.RecordSchema)
		if !ok {
			return decoded{}, fmt.Sprintf("schema id %d is a %s, not a record", id, s.Type())
		}
		var out any
		if err := avroDecoding.Unmarshal(rs, v, &out); err != nil {
			return decoded{}, fmt.Sprintf("the value does not decode with schema id %d: %v", id, err)
		}
		m, _ := out.(map[string]any)
		return decoded{Record: r, key: schemaKey{id: id}, schema: rs, value: m}, ""
	case protoreflect.FileDescriptor:
		index := []int{0}
		if vs.latest == 0 {
			var h sr.ConfluentHeader
			if index, v, err = h.DecodeIndex(v, maxMessageDepth); err != nil {
				return decoded{}, fmt.Sprintf("the value's message indexes do not decode: %v", err)
			}
		}
		md, err := protoMessageAt(s, index)
		if err != nil {
			return decoded{}, fmt.Sprintf("schema id %d: %v", id, err)
		}
		key := schemaKey{id: id, message: md.FullName()}
		rec, ok := vs.records[key]
		if !ok {
			rec.md = md
			rec.rs, rec.err = protoRecord(md)
			vs.records[key] = rec
		}
		if rec.err != nil {
			return decoded{}, fmt.Sprintf("%s is no columns: %v", key, rec.err)
		}
		m := dynamicpb.NewMessage(rec.md)
		if err := proto.Unmarshal(v, m); err != nil {
			return decoded{}, fmt.Sprintf("the value does not decode as %s: %v", key, err)
		}
		return decoded{Record: r, key: key, schema: rec.rs, value: protoValues(m)}, ""
	case *jsonschema.Schema:
		key := schemaKey{id: id}
		rec, ok := vs.records[key]
		if !ok {
			rec.rs, rec.err = jsonRecord(s)
			vs.records[key] = rec
		}
		if rec.err != nil {
			return decoded{}, fmt.Sprintf("%s is no columns: %v", key, rec.err)
		}
		m, err := jsonValues(rec.rs, v)
		if err != nil {
			return decoded{}, fmt.Sprintf("the value does not decode as %s: %v", key, err)
		}
		return decoded{Record: r, key: key, schema: rec.rs, value: m}, ""
	}
	return decoded{}, fmt.Sprintf("schema id %d is a %T", id, s)
}

// avroDecoding decodes values as hamba does by default, with the items
// of an array bounded as its bytes and strings are (1 MiB): a count in
// the value's bytes allocates no more than that.
var avroDecoding = avro.Config{MaxSliceAllocSize: 1 << 20}.Freeze()

// maxMessageDepth bounds the message indexes a value may carry (a
// message nested that deep in its file): more are refused before they are
// read.
const maxMessageDepth = 64

// protoMessageAt is the message of a file that Confluent's indexes name:
// the index of a top-level message, then of a message nested in it, and
// so on.
func protoMessageAt(fd protoreflect.FileDescriptor, index []int) (protoreflect.MessageDescriptor, error) {
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range index {
		if i < 0 || i >= msgs.Len() {
			return nil, fmt.Errorf("no message at index %v", index)
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	if md == nil {
		return nil, fmt.Errorf("no message index")
	}
	return md, nil
}

const (
	protoTimestamp = "google.protobuf.Timestamp"
	protoWrappers  = "google.protobuf."
)

// protoWrapper reports whether a message is one of the well-known
// wrappers (google.protobuf.StringValue and its kin): its value an
// optional scalar.
func protoWrapper(md protoreflect.MessageDescriptor) bool {
	switch md.FullName() {
	case protoWrappers + "DoubleValue", protoWrappers + "FloatValue", protoWrappers + "Int64Value",
		protoWrappers + "UInt64Value", protoWrappers + "Int32Value", protoWrappers + "UInt32Value",
		protoWrappers + "BoolValue", protoWrappers + "StringValue", protoWrappers + "BytesValue":
		return true
	}
	return false
}

// protoRecord is the Avro record a message stands for: scalars as their
// Avro types (unsigned ones as long, a uint64 as its bits), enums as
// their values' names, messages as optional records, repeated fields as
// arrays, maps as maps keyed by the key's text, google.protobuf.Timestamp
// as a timestamp and the wrappers as their optional value. A field with
// presence (a message, a proto3 optional, a oneof's) is optional; a
// message that contains itself is no columns.
func protoRecord(md protoreflect.MessageDescriptor) (*avro.RecordSchema, error) {
	return protoMessage(md, map[protoreflect.FullName]bool{})
}

func protoMessage(md protoreflect.MessageDescriptor, visiting map[protoreflect.FullName]bool) (*avro.RecordSchema, error) {
	if visiting[md.FullName()] {
		return nil, fmt.Errorf("message %s contains itself", md.FullName())
	}
	visiting[md.FullName()] = true
	defer delete(visiting, md.FullName())
	fs := md.Fields()
	fields := make([]*avro.Field, 0, fs.Len())
	for i := range fs.Len() {
		fd := fs.Get(i)
		s, err := protoField(fd, visiting)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fd.Name(), err)
		}
		f, err := avro.NewField(string(fd.Name()), s)
		if err != nil {
			return nil, err
		}
		fields = append(fields, f)
	}
	ns := string(md.FullName().Parent())
	if ns == "" {
		ns = "protobuf" // a full name no field of a one-field message has
	}
	return avro.NewRecordSchema(string(md.Name()), ns, fields)
}

func protoField(fd protoreflect.FieldDescriptor, visiting map[protoreflect.FullName]bool) (avro.Schema, error) {
	switch {
	case fd.IsMap():
		s, _, err := protoSingular(fd.MapValue(), visiting)
		if err != nil {
			return nil, err
		}
		return avro.NewMapSchema(s), nil
	case fd.IsList():
		s, _, err := protoSingular(fd, visiting)
		if err != nil {
			return nil, err
		}
		return avro.NewArraySchema(s), nil
	}
	s, optional, err := protoSingular(fd, visiting)
	if err != nil || !(optional || fd.HasPresence()) {
		return s, err
	}
	return avro.NewUnionSchema([]avro.Schema{avro.NewNullSchema(), s})
}

// protoSingular is the Avro type of one value of a field, and whether it
// is optional of itself (a wrapper's).
func protoSingular(fd protoreflect.FieldDescriptor, visiting map[protoreflect.FullName]bool) (avro.Schema, bool, error) {
	prim := func(t avro.Type) avro.Schema { return avro.NewPrimitiveSchema(t, nil) }
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return prim(avro.Boolean), false, nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return prim(avro.Int), false, nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Int64Kind, protoreflect.Sint64Kind,
		protoreflect.Sfixed64Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return prim(avro.Long), false, nil
	case protoreflect.FloatKind:
		return prim(avro.Float), false, nil
	case protoreflect.DoubleKind:
		return prim(avro.Double), false, nil
	case protoreflect.StringKind, protoreflect.EnumKind:
		return prim(avro.String), false, nil
	case protoreflect.BytesKind:
		return prim(avro.Bytes), false, nil
	case protoreflect.MessageKind, protoreflect.GroupKind:
		md := fd.Message()
		switch {
		case md.FullName() == protoTimestamp:
			return avro.NewPrimitiveSchema(avro.Long, avro.NewPrimitiveLogicalSchema(avro.TimestampMicros)), false, nil
		case protoWrapper(md):
			s, _, err := protoSingular(md.Fields().ByNumber(1), visiting)
			return s, true, err
		}
		s, err := protoMessage(md, visiting)
		return s, false, err
	}
	return nil, false, fmt.Errorf("kind %s is no column", fd.Kind())
}

// protoValues is a message's fields as hamba decodes the record
// protoRecord makes of it: unset fields with presence are nil.
func protoValues(m protoreflect.Message) map[string]any {
	fs := m.Descriptor().Fields()
	out := make(map[string]any, fs.Len())
	for i := range fs.Len() {
		fd := fs.Get(i)
		name := string(fd.Name())
		switch {
		case fd.IsMap():
			mm := map[string]any{}
			m.Get(fd).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				mm[k.String()] = protoValue(fd.MapValue(), v)
				return true
			})
			out[name] = mm
		case fd.IsList():
			l := m.Get(fd).List()
			items := make([]any, l.Len())
			for j := range items {
				items[j] = protoValue(fd, l.Get(j))
			}
			out[name] = items
		case fd.HasPresence() && !m.Has(fd):
			out[name] = nil
		default:
			out[name] = protoValue(fd, m.Get(fd))
		}
	}
	return out
}

func protoValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return v.Bool()
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return int32(v.Int())
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return v.Int()
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return int64(v.Uint())
	case protoreflect.FloatKind:
		return float32(v.Float())
	case protoreflect.DoubleKind:
		return v.Float()
	case protoreflect.StringKind:
		return v.String()
	case protoreflect.BytesKind:
		return v.Bytes()
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return strconv.Itoa(int(v.Enum()))
	case protoreflect.MessageKind, protoreflect.GroupKind:
		m := v.Message()
		md := m.Descriptor()
		switch {
		case md.FullName() == protoTimestamp:
			fs := md.Fields()
			return time.Unix(m.Get(fs.ByNumber(1)).Int(), m.Get(fs.ByNumber(2)).Int()).UTC()
		case protoWrapper(md):
			return protoValue(md.Fields().ByNumber(1), m.Get(md.Fields().ByNumber(1)))
		}
		return protoValues(m)
	}
	return nil
}
