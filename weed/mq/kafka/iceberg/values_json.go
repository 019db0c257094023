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
// properties, with those of each allOf member, else a map of its
// additionalProperties' schema), a type and null (that type), oneOf or
// anyOf of several schemas of different types (an Avro union of them,
// which the table holds as a struct with a field per member), and
// anything else (several types, none, a property two allOf members give
// different schemas) as a string holding the value's JSON text. A
// property whose name is no Avro name is the field of that name with each
// other character _, unless two properties make one name.
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

// resolve follows $ref (and a lone allOf, oneOf or anyOf) to the schema
// that says what a value is.
func resolveJSON(s *jsonschema.Schema) *jsonschema.Schema {
	for s != nil {
		lone := s.Types == nil && s.Properties == nil
		switch {
		case s.Ref != nil:
			s = s.Ref
		case lone && len(s.AllOf) == 1 && s.OneOf == nil && s.AnyOf == nil:
			s = s.AllOf[0]
		case lone && len(s.OneOf) == 1 && s.AllOf == nil && s.AnyOf == nil:
			s = s.OneOf[0]
		case lone && len(s.AnyOf) == 1 && s.AllOf == nil && s.OneOf == nil:
			s = s.AnyOf[0]
		default:
			return s
		}
	}
	return s
}

func jsonTypes(s *jsonschema.Schema) []string {
	if s.Types == nil {
		if len(objectProperties(s)) > 0 {
			return []string{"object"}
		}
		return nil
	}
	return slices.DeleteFunc(s.Types.ToStrings(), func(t string) bool { return t == "null" })
}

// objectProperties are an object schema's properties and those of its
// allOf members (an object made of several, as schemas that extend one
// another are written); a property two of them give different schemas
// is nil: its JSON text.
func objectProperties(s *jsonschema.Schema) map[string]*jsonschema.Schema {
	props := map[string]*jsonschema.Schema{}
	seen := map[*jsonschema.Schema]bool{}
	var add func(s *jsonschema.Schema)
	add = func(s *jsonschema.Schema) {
		s = resolveJSON(s)
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		for n, p := range s.Properties {
			if old, ok := props[n]; ok && resolveJSON(old) != resolveJSON(p) {
				p = nil
			}
			props[n] = p
		}
		for _, m := range s.AllOf {
			add(m)
		}
	}
	add(s)
	return props
}

func (j *jsonConv) object(s *jsonschema.Schema) (avro.Schema, error) {
	s = resolveJSON(s)
	if j.visiting[s] {
		return nil, fmt.Errorf("%s contains itself", s.Location)
	}
	j.visiting[s] = true
	defer delete(j.visiting, s)
	props := objectProperties(s)
	if len(props) == 0 {
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
		for n := range props {
			if !yield(n) {
				return
			}
		}
	})
	fields := make([]*avro.Field, 0, len(names))
	taken := map[string]string{}
	for _, n := range names {
		v := jsonText()
		if props[n] != nil {
			var err error
			if v, err = j.value(props[n]); err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
		}
		opt, err := optional(v)
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

// optional is a property's type: null or its own (a union's members).
func optional(v avro.Schema) (avro.Schema, error) {
	members := []avro.Schema{avro.NewNullSchema(), v}
	if u, ok := v.(*avro.UnionSchema); ok {
		members = append([]avro.Schema{avro.NewNullSchema()}, unionMembers(u)...)
	}
	return avro.NewUnionSchema(members)
}

// choice is the union of a oneOf's or anyOf's schemas, each taken as a
// property's type would be; JSON text if two are of one type (Avro allows
// one member per type, or per record name) or one is itself a union.
func (j *jsonConv) choice(options []*jsonschema.Schema) (avro.Schema, error) {
	members := make([]avro.Schema, 0, len(options))
	for _, o := range options {
		v, err := j.value(o)
		if err != nil {
			return nil, err
		}
		if _, ok := v.(*avro.UnionSchema); ok || isJSONText(v) {
			return jsonText(), nil
		}
		members = append(members, v)
	}
	u, err := avro.NewUnionSchema(members)
	if err != nil {
		return jsonText(), nil
	}
	return u, nil
}

func (j *jsonConv) value(s *jsonschema.Schema) (avro.Schema, error) {
	s = resolveJSON(s)
	if s.Types == nil && s.Properties == nil && s.AllOf == nil {
		switch {
		case len(s.OneOf) > 1 && s.AnyOf == nil:
			return j.choice(s.OneOf)
		case len(s.AnyOf) > 1 && s.OneOf == nil:
			return j.choice(s.AnyOf)
		}
	}
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
		if one := nonNull(s); one != nil {
			return jsonValue(one, v)
		}
		return jsonChoiceValue(s, v)
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

// jsonChoiceValue is a value of a oneOf's or anyOf's union as hamba
// decodes one: bare if every member is a type of its own in Go, else
// keyed by the member's name. The value is its JSON type's member; of
// several object members, the one it has the most properties of (the
// first of those).
func jsonChoiceValue(u *avro.UnionSchema, v any) (any, error) {
	members := unionMembers(u)
	order := make([]int, len(members))
	for i := range order {
		order[i] = i
	}
	if obj, ok := v.(map[string]any); ok {
		// The members in the order they are tried: most properties of
		// the value first; the first member that decodes it is the one.
		score := make([]int, len(members))
		for i, m := range members {
			rs, ok := m.(*avro.RecordSchema)
			if !ok {
				continue
			}
			for _, f := range rs.Fields() {
				name := f.Name()
				if n, ok := f.Prop(jsonNameProp).(string); ok {
					name = n
				}
				if _, ok := obj[name]; ok {
					score[i]++
				}
			}
		}
		slices.SortStableFunc(order, func(a, b int) int { return score[b] - score[a] })
	}
	for _, i := range order {
		x, err := jsonValue(members[i], v)
		if err != nil {
			continue
		}
		if !bareUnion(u) {
			return map[string]any{unionName(members[i]): x}, nil
		}
		return x, nil
	}
	return nil, fmt.Errorf("a JSON %T of none of the types of %s", v, u)
}
