package console

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/hamba/avro/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/registry"
)

// shown is a key or value as the browser shows it.
type shown struct {
	Text     string
	Format   string // "avro", "protobuf", "json", "text", "hex", "null"
	SchemaID int    // 0: none
	Error    string // why a framed value did not decode
	// tree is the decoded value, when it is a document masking can
	// walk (nil otherwise).
	tree any
}

// decoder reads keys and values framed as Confluent's serializers frame
// them (the magic byte 0, a schema id of the registry, then Avro or
// Protobuf binary, or JSON text), caching the schemas it parsed.
type decoder struct {
	schemas *registry.State
	parsed  map[int]parsedSchema
}

type parsedSchema struct {
	s   any
	err error
}

// avroDecoding bounds the items an Avro array or map may claim, as the
// registry's other readers do.
var avroDecoding = avro.Config{MaxSliceAllocSize: 1 << 20}.Freeze()

// maxMessageDepth bounds the message indexes a Protobuf value may carry.
const maxMessageDepth = 64

func (d *decoder) decode(b []byte) shown {
	if b == nil {
		return shown{Text: "null", Format: "null"}
	}
	if d.schemas != nil && len(b) >= 5 && b[0] == 0 {
		id := int(binary.BigEndian.Uint32(b[1:5]))
		if s, err := d.schema(id); err == nil {
			v, text, format, derr := decodeWith(s, b[5:])
			if derr == nil {
				return shown{Text: text, Format: format, SchemaID: id, tree: v}
			}
			out := plain(b)
			out.SchemaID, out.Error = id, derr.Error()
			return out
		}
	}
	return plain(b)
}

func (d *decoder) schema(id int) (any, error) {
	if p, ok := d.parsed[id]; ok {
		return p.s, p.err
	}
	s, err := d.schemas.Schema(id)
	if d.parsed == nil {
		d.parsed = map[int]parsedSchema{}
	}
	d.parsed[id] = parsedSchema{s, err}
	return s, err
}

// decodeWith decodes a value with its schema, returning it as a document
// and as JSON text in the schema's field order.
func decodeWith(s any, b []byte) (any, string, string, error) {
	switch s := s.(type) {
	case avro.Schema:
		var v any
		if err := avroDecoding.Unmarshal(s, b, &v); err != nil {
			return nil, "", "", fmt.Errorf("not Avro of its schema: %w", err)
		}
		v = jsonable(v)
		var buf bytes.Buffer
		writeOrdered(&buf, s, v)
		return v, buf.String(), "avro", nil
	case protoreflect.FileDescriptor:
		var h sr.ConfluentHeader
		index, rest, err := h.DecodeIndex(b, maxMessageDepth)
		if err != nil {
			return nil, "", "", fmt.Errorf("the message indexes do not decode: %w", err)
		}
		md, err := messageAt(s, index)
		if err != nil {
			return nil, "", "", err
		}
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(rest, m); err != nil {
			return nil, "", "", fmt.Errorf("not %s: %w", md.FullName(), err)
		}
		text, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
		if err != nil {
			return nil, "", "", err
		}
		var v any
		if err := json.Unmarshal(text, &v); err != nil {
			return nil, "", "", err
		}
		// protojson's spacing is not stable: compact it.
		var buf bytes.Buffer
		if json.Compact(&buf, text) == nil {
			text = buf.Bytes()
		}
		return v, string(text), "protobuf", nil
	case *jsonschema.Schema:
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, "", "", fmt.Errorf("not JSON: %w", err)
		}
		return v, string(b), "json", nil
	}
	return nil, "", "", fmt.Errorf("a schema of type %T", s)
}

// writeOrdered writes an Avro value as JSON with its records' fields in
// the schema's order (json.Marshal would sort them).
func writeOrdered(buf *bytes.Buffer, s avro.Schema, v any) {
	if rs, ok := s.(*avro.RecordSchema); ok {
		if m, ok := v.(map[string]any); ok {
			buf.WriteByte('{')
			for i, f := range rs.Fields() {
				if i > 0 {
					buf.WriteByte(',')
				}
				name, _ := json.Marshal(f.Name())
				buf.Write(name)
				buf.WriteByte(':')
				writeOrdered(buf, f.Type(), m[f.Name()])
			}
			buf.WriteByte('}')
			return
		}
	}
	if rs, ok := s.(*avro.RefSchema); ok {
		writeOrdered(buf, rs.Schema(), v)
		return
	}
	text, err := json.Marshal(v)
	if err != nil {
		text = []byte("null")
	}
	buf.Write(text)
}

// messageAt is the message of a file that Confluent's indexes name.
func messageAt(fd protoreflect.FileDescriptor, index []int) (protoreflect.MessageDescriptor, error) {
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

// jsonable turns what Avro decodes into what JSON encodes: maps keyed by
// strings, bytes as text.
func jsonable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = jsonable(e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = jsonable(e)
		}
		return v
	case []byte:
		if utf8.Valid(v) {
			return string(v)
		}
		return hex.EncodeToString(v)
	}
	return v
}

// plain shows bytes no schema frames: JSON or text as they are, hex
// otherwise.
func plain(b []byte) shown {
	if utf8.Valid(b) && printable(b) {
		s := string(b)
		var tree any
		if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
			if json.Unmarshal(b, &tree) == nil {
				return shown{Text: s, Format: "json", tree: tree}
			}
		}
		return shown{Text: s, Format: "text"}
	}
	return shown{Text: hex.EncodeToString(b), Format: "hex"}
}

func printable(b []byte) bool {
	for _, r := range string(b) {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
	}
	return true
}

// Mask hides fields of the records of the topics it matches: a field of
// that name at any depth of a JSON, Avro or Protobuf value or key, and a
// header of that name. The field "value" (or "key") hides a whole value
// (or key) whatever its format.
type Mask struct {
	Topic  *regexp.Regexp
	Fields []string
}

// masked is what replaces a hidden field.
const masked = "****"

// ParseMasks reads -console.mask: rules separated by ";", each a topic
// regular expression, "=", and field names separated by ",".
func ParseMasks(s string) ([]Mask, error) {
	var out []Mask
	for _, rule := range strings.Split(s, ";") {
		rule = strings.TrimSpace(rule)
		if rule == "" {
			continue
		}
		i := strings.LastIndex(rule, "=")
		if i <= 0 {
			return nil, fmt.Errorf("-console.mask: %q is not topic-regexp=field,field", rule)
		}
		re, err := regexp.Compile(rule[:i])
		if err != nil {
			return nil, fmt.Errorf("-console.mask: %q: %w", rule[:i], err)
		}
		var fields []string
		for _, f := range strings.Split(rule[i+1:], ",") {
			if f = strings.TrimSpace(f); f != "" {
				fields = append(fields, f)
			}
		}
		if len(fields) == 0 {
			return nil, fmt.Errorf("-console.mask: %q names no field", rule)
		}
		out = append(out, Mask{Topic: re, Fields: fields})
	}
	return out, nil
}

// fieldsMasked returns the fields hidden in topic's records.
func fieldsMasked(masks []Mask, topic string) map[string]bool {
	var out map[string]bool
	for _, m := range masks {
		if m.Topic.MatchString(topic) {
			if out == nil {
				out = map[string]bool{}
			}
			for _, f := range m.Fields {
				out[f] = true
			}
		}
	}
	return out
}

// mask hides the fields of a shown key or value; whole is "key" or
// "value", the name that hides all of it.
func (s *shown) mask(fields map[string]bool, whole string) {
	if len(fields) == 0 || s.Format == "null" {
		return
	}
	if fields[whole] {
		*s = shown{Text: masked, Format: s.Format, SchemaID: s.SchemaID}
		return
	}
	if s.tree == nil {
		return
	}
	if maskTree(s.tree, fields) {
		text, _ := json.Marshal(s.tree)
		s.Text = string(text)
	}
}

func maskTree(v any, fields map[string]bool) (changed bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if fields[k] {
				v[k] = masked
				changed = true
				continue
			}
			if maskTree(e, fields) {
				changed = true
			}
		}
	case []any:
		for _, e := range v {
			if maskTree(e, fields) {
				changed = true
			}
		}
	}
	return changed
}
