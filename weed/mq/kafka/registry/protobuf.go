package registry

// Protobuf schemas: .proto text compiled with its references (each
// reference's name is the import path the schema uses for it) by
// bufbuild/protocompile; compatibility is the wire's, as Confluent's
// registry checks Protobuf: what data written with one schema reads as
// with the other, message by message and field by field number.

import (
	"context"
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protoreflect"
)

type protobufFormat struct{}

type protobufSchema struct{ fd protoreflect.FileDescriptor }

const mainProto = "schema.proto"

func (protobufFormat) parse(schema string, refs []resolved) (parsed, error) {
	srcs := map[string]string{mainProto: schema}
	for _, r := range refs {
		srcs[r.Name] = r.schema
	}
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(srcs)}),
	}
	files, err := c.Compile(context.Background(), mainProto)
	if err != nil {
		return nil, err
	}
	if files[0].Messages().Len() == 0 {
		return nil, fmt.Errorf("the schema defines no message")
	}
	return protobufSchema{files[0]}, nil
}

// normalize is the text with its lines trimmed and blank ones dropped.
func (protobufFormat) normalize(schema string) string {
	var b strings.Builder
	for _, line := range strings.Split(schema, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// canRead: data written with writer, read with this schema. A message of
// the writer's that the reader has not any more cannot be read; a field
// (by number) both have must keep a wire-compatible type, its message or
// enum type, its cardinality, and its oneof; a required field must be in
// both or neither.
func (p protobufSchema) canRead(writer parsed) []string {
	w, ok := writer.(protobufSchema)
	if !ok {
		return []string{"the schemas are of different types"}
	}
	var out []string
	if p.fd.Package() != w.fd.Package() {
		out = append(out, fmt.Sprintf("PACKAGE_CHANGED: package %s is now %s", w.fd.Package(), p.fd.Package()))
	}
	readers := map[protoreflect.FullName]protoreflect.MessageDescriptor{}
	var collect func(ms protoreflect.MessageDescriptors, into map[protoreflect.FullName]protoreflect.MessageDescriptor)
	collect = func(ms protoreflect.MessageDescriptors, into map[protoreflect.FullName]protoreflect.MessageDescriptor) {
		for i := range ms.Len() {
			m := ms.Get(i)
			if m.IsMapEntry() {
				continue
			}
			into[m.FullName()] = m
			collect(m.Messages(), into)
		}
	}
	collect(p.fd.Messages(), readers)
	writers := map[protoreflect.FullName]protoreflect.MessageDescriptor{}
	collect(w.fd.Messages(), writers)
	for name, wm := range writers {
		rm, ok := readers[name]
		if !ok {
			out = append(out, fmt.Sprintf("MESSAGE_REMOVED: message %s", name))
			continue
		}
		out = append(out, fieldsCanRead(rm, wm)...)
	}
	return out
}

func fieldsCanRead(r, w protoreflect.MessageDescriptor) []string {
	var out []string
	wf, rf := w.Fields(), r.Fields()
	for i := range rf.Len() {
		f := rf.Get(i)
		if f.Cardinality() == protoreflect.Required && wf.ByNumber(f.Number()) == nil {
			out = append(out, fmt.Sprintf("REQUIRED_FIELD_ADDED: %s field %d (%s)", r.FullName(), f.Number(), f.Name()))
		}
	}
	for i := range wf.Len() {
		old := wf.Get(i)
		f := rf.ByNumber(old.Number())
		at := fmt.Sprintf("%s field %d (%s)", r.FullName(), old.Number(), old.Name())
		switch {
		case f == nil:
			if old.Cardinality() == protoreflect.Required {
				out = append(out, "REQUIRED_FIELD_REMOVED: "+at)
			}
			continue
		case !wireCompatible(old, f):
			out = append(out, fmt.Sprintf("FIELD_KIND_CHANGED: %s was %s, is %s", at, kindOf(old), kindOf(f)))
			continue
		case (old.Kind() == protoreflect.MessageKind || old.Kind() == protoreflect.GroupKind) && !old.IsMap() && old.Message().FullName() != f.Message().FullName():
			out = append(out, fmt.Sprintf("FIELD_NAMED_TYPE_CHANGED: %s was %s, is %s", at, old.Message().FullName(), f.Message().FullName()))
		case old.Kind() == protoreflect.EnumKind && old.Enum().FullName() != f.Enum().FullName():
			out = append(out, fmt.Sprintf("FIELD_NAMED_TYPE_CHANGED: %s was %s, is %s", at, old.Enum().FullName(), f.Enum().FullName()))
		case old.IsList() != f.IsList() && !packableScalar(old):
			out = append(out, fmt.Sprintf("FIELD_LABEL_CHANGED: %s is repeated in one schema only", at))
		case old.IsMap() != f.IsMap():
			out = append(out, fmt.Sprintf("FIELD_KIND_CHANGED: %s is a map in one schema only", at))
		}
		wo, ro := realOneof(old), realOneof(f)
		switch {
		case wo == nil && ro != nil && countInOneof(ro, wf) > 0:
			out = append(out, fmt.Sprintf("FIELD_MOVED_TO_EXISTING_ONEOF: %s moved into oneof %s", at, ro.Name()))
		case wo != nil && ro != nil && wo.Name() != ro.Name():
			out = append(out, fmt.Sprintf("FIELD_MOVED_TO_EXISTING_ONEOF: %s moved from oneof %s to %s", at, wo.Name(), ro.Name()))
		}
	}
	// Fields of no oneof moved together into a new one: a writer may have
	// set several, which the reader keeps only one of.
	moved := map[protoreflect.Name]int{}
	for i := range rf.Len() {
		f := rf.Get(i)
		if ro := realOneof(f); ro != nil {
			if old := wf.ByNumber(f.Number()); old != nil && realOneof(old) == nil {
				moved[ro.Name()]++
			}
		}
	}
	for name, n := range moved {
		if n > 1 {
			out = append(out, fmt.Sprintf("MULTIPLE_FIELDS_MOVED_TO_ONEOF: %d fields of %s moved into oneof %s", n, r.FullName(), name))
		}
	}
	return out
}

// realOneof is a field's oneof, not a proto3 optional's synthetic one.
func realOneof(f protoreflect.FieldDescriptor) protoreflect.OneofDescriptor {
	if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
		return o
	}
	return nil
}

// countInOneof counts the writer's fields in a oneof of the reader's name.
func countInOneof(ro protoreflect.OneofDescriptor, wf protoreflect.FieldDescriptors) int {
	n := 0
	for i := range wf.Len() {
		if o := realOneof(wf.Get(i)); o != nil && o.Name() == ro.Name() {
			n++
		}
	}
	return n
}

// packableScalar: a scalar's repeated and single forms read each other
// on the wire (the last value wins).
func packableScalar(f protoreflect.FieldDescriptor) bool {
	switch f.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind, protoreflect.StringKind, protoreflect.BytesKind:
		return false
	}
	return true
}

// wireGroup names the kinds that read each other's encoding.
func wireGroup(k protoreflect.Kind) string {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Uint32Kind, protoreflect.Int64Kind, protoreflect.Uint64Kind, protoreflect.BoolKind, protoreflect.EnumKind:
		return "varint"
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return "zigzag"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return "fixed32"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return "fixed64"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "bytes"
	case protoreflect.MessageKind:
		return "message"
	}
	return k.String()
}

func wireCompatible(a, b protoreflect.FieldDescriptor) bool {
	ga, gb := wireGroup(a.Kind()), wireGroup(b.Kind())
	if ga == gb {
		// An enum and an integer share varints, but one is a named type.
		return (a.Kind() == protoreflect.EnumKind) == (b.Kind() == protoreflect.EnumKind)
	}
	return false
}

func kindOf(f protoreflect.FieldDescriptor) string {
	switch {
	case f.IsMap():
		return "map"
	case f.Kind() == protoreflect.MessageKind:
		return string(f.Message().FullName())
	case f.Kind() == protoreflect.EnumKind:
		return string(f.Enum().FullName())
	}
	return f.Kind().String()
}
