package iceberg

// JSON Schema values in the schema modes, as Protobuf's are: the schema
// taken as the Avro record it would be, a value as hamba's values of it.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// jsonNameProp is the property of an Avro field made of a JSON property
// whose name is no Avro name: the JSON property's name.
const jsonNameProp = "json.name"

// jsonRecord is the Avro record a JSON Schema of an object stands for,
// its properties the fields (in the order of their names, each optional):
// string (date-time: a timestamp, date: a date), integer (long), number
// (double), boolean, array (of its items), object (a record of its
// properties, else a map of its additionalProperties' schema), a type
// and null (that type), and anything else (several types, none,
// combinations) as a string holding the value's JSON text. A property
// whose name is no Avro name is the field of that name with each other
// character _, unless two properties make one name.
func jsonRecord(s *jsonschema.Schema) (*avro.RecordSchema, error) {
	j := &jsonConv{visiting: map[*jsonschema.Schema]bool{}}
	t, err := j.object(s)
	if err != nil {
		return nil, err
	}
	rs, ok := t.(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("the schema is not of an object with properties")
	}
	return rs, nil
}

type jsonConv struct {
	visiting map[*jsonschema.Schema]bool
	records  int
}

// resolve follows $ref (and a lone allOf) to the schema that says what
// a value is.
func resolveJSON(s *jsonschema.Schema) *jsonschema.Schema {
	for s != nil {
		switch {
		case s.Ref != nil:
			s = s.Ref
		case len(s.AllOf) == 1 && s.Types == nil && s.Properties == nil:
			s = s.AllOf[0]
		default:
			return s
		}
	}
	return s
}

func jsonTypes(s *jsonschema.Schema) []string {
	if s.Types == nil {
		if s.Properties != nil {
			return []string{"object"}
		}
		return nil
	}
	return slices.DeleteFunc(s.Types.ToStrings(), func(t string) bool { return t == "null" })
}

func (j *jsonConv) object(s *jsonschema.Schema) (avro.Schema, error) {
	s = resolveJSON(s)
	if j.visiting[s] {
		return nil, fmt.Errorf("%s contains itself", s.Location)
	}
	j.visiting[s] = true
	defer delete(j.visiting, s)
	if len(s.Properties) == 0 {
		if extra, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
			v, err := j.value(extra)
			if err != nil {
				return nil, err
			}
			return avro.NewMapSchema(v), nil
		}
		return jsonText(), nil
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range s.Properties {
			if !yield(n) {
				return
			}
		}
	})
	fields := make([]*avro.Field, 0, len(names))
	taken := map[string]string{}
	for _, n := range names {
		v, err := j.value(s.Properties[n])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		opt, err := avro.NewUnionSchema([]avro.Schema{avro.NewNullSchema(), v})
		if err != nil {
			return nil, err
		}
		name := avroName(n)
		if other, ok := taken[name]; ok {
			return nil, fmt.Errorf("properties %q and %q are both the column %s", other, n, name)
		}
		taken[name] = n
		var opts []avro.SchemaOption
		if name != n {
			opts = append(opts, avro.WithProps(map[string]any{jsonNameProp: n}))
		}
		f, err := avro.NewField(name, opt, opts...)
		if err != nil {
			return nil, err
		}
		fields = append(fields, f)
	}
	j.records++
	return avro.NewRecordSchema("r"+strconv.Itoa(j.records), "json", fields) // a full name no field of one property has
}

func (j *jsonConv) value(s *jsonschema.Schema) (avro.Schema, error) {
	s = resolveJSON(s)
	types := jsonTypes(s)
	if len(types) == 0 && s.Enum != nil {
		strs := true
		for _, v := range s.Enum.Values {
			_, ok := v.(string)
			strs = strs && ok
		}
		if strs {
			types = []string{"string"}
		}
	}
	if len(types) != 1 {
		return jsonText(), nil
	}
	prim := func(t avro.Type) avro.Schema { return avro.NewPrimitiveSchema(t, nil) }
	switch types[0] {
	case "string":
		switch {
		case s.Format != nil && s.Format.Name == "date-time":
			return avro.NewPrimitiveSchema(avro.Long, avro.NewPrimitiveLogicalSchema(avro.TimestampMicros)), nil
		case s.Format != nil && s.Format.Name == "date":
			return avro.NewPrimitiveSchema(avro.Int, avro.NewPrimitiveLogicalSchema(avro.Date)), nil
		}
		return prim(avro.String), nil
	case "integer":
		return prim(avro.Long), nil
	case "number":
		return prim(avro.Double), nil
	case "boolean":
		return prim(avro.Boolean), nil
	case "array":
		items := s.Items2020
		if it, ok := s.Items.(*jsonschema.Schema); ok {
			items = it
		}
		if items == nil {
			return avro.NewArraySchema(jsonText()), nil
		}
		v, err := j.value(items)
		if err != nil {
			return nil, err
		}
		return avro.NewArraySchema(v), nil
	case "object":
		return j.object(s)
	}
	return jsonText(), nil
}

// jsonText is the type of a value of no one type: its JSON text.
func jsonText() avro.Schema {
	return avro.NewPrimitiveSchema(avro.String, nil, avro.WithProps(map[string]any{jsonNameProp + ".text": true}))
}

func isJSONText(s avro.Schema) bool {
	p, ok := s.(*avro.PrimitiveSchema)
	return ok && p.Prop(jsonNameProp+".text") == true
}

// avroName is a JSON property's name as an Avro field's: what is not a
// letter, digit or _ made _, and a leading digit after an _.
func avroName(n string) string {
	var b strings.Builder
	for i, r := range n {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
		default:
			r = '_'
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// jsonValues decodes a JSON document as hamba decodes the record
// jsonRecord made of its schema.
func jsonValues(rs *avro.RecordSchema, doc []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	out, err := jsonValue(rs, v)
	if err != nil {
		return nil, err
	}
	m, _ := out.(map[string]any)
	return m, nil
}

func jsonValue(s avro.Schema, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if isJSONText(s) {
		b, err := json.Marshal(v)
		return string(b), err
	}
	bad := func() (any, error) { return nil, fmt.Errorf("a JSON %T where the schema says %s", v, s.Type()) }
	switch s := s.(type) {
	case *avro.UnionSchema:
		return jsonValue(nonNull(s), v)
	case *avro.RecordSchema:
		obj, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := make(map[string]any, len(s.Fields()))
		for _, f := range s.Fields() {
			name := f.Name()
			if n, ok := f.Prop(jsonNameProp).(string); ok {
				name = n
			}
			x, err := jsonValue(f.Type(), obj[name])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out[f.Name()] = x
		}
		return out, nil
	case *avro.MapSchema:
		obj, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := make(map[string]any, len(obj))
		for k, x := range obj {
			y, err := jsonValue(s.Values(), x)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = y
		}
		return out, nil
	case *avro.ArraySchema:
		items, ok := v.([]any)
		if !ok {
			return bad()
		}
		out := make([]any, len(items))
		for i, x := range items {
			y, err := jsonValue(s.Items(), x)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = y
		}
		return out, nil
	case *avro.PrimitiveSchema:
		switch s.Type() {
		case avro.String:
			if x, ok := v.(string); ok {
				return x, nil
			}
		case avro.Boolean:
			if x, ok := v.(bool); ok {
				return x, nil
			}
		case avro.Double:
			if x, ok := v.(json.Number); ok {
				return x.Float64()
			}
		case avro.Long:
			if x, ok := v.(json.Number); ok {
				if s.Logical() != nil {
					break
				}
				if n, err := x.Int64(); err == nil {
					return n, nil
				}
				if f, err := x.Float64(); err == nil && f == float64(int64(f)) {
					return int64(f), nil // 1.0 is an integer to JSON Schema
				}
				return nil, fmt.Errorf("%s is no 64-bit integer", x)
			}
			if x, ok := v.(string); ok && s.Logical() != nil {
				return time.Parse(time.RFC3339Nano, x)
			}
		case avro.Int:
			if x, ok := v.(string); ok && s.Logical() != nil {
				return time.Parse(time.DateOnly, x)
			}
		}
	}
	return bad()
}
