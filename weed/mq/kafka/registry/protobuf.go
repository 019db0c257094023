package registry

// Protobuf schemas: .proto text compiled with its references (each
// reference's name is the import path the schema uses for it) by
// bufbuild/protocompile; compatibility is the wire's, as Confluent's
// registry checks Protobuf: what data written with one schema reads as
// with the other, message by message and field by field number.

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/jhump/protoreflect/desc"
	"github.com/jhump/protoreflect/desc/protoprint"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

type protobufFormat struct{}

type protobufSchema struct{ fd protoreflect.FileDescriptor }

const mainProto = "schema.proto"

func (protobufFormat) parse(schema string, refs []resolved) (parsed, error) {
	fd, err := compileProto(schema, refs)
	if err != nil {
		return nil, err
	}
	if fd.Messages().Len() == 0 {
		return nil, fmt.Errorf("the schema defines no message")
	}
	return protobufSchema{fd}, nil
}

// compileProto compiles .proto text whose imports are its references
// (else the standard ones).
func compileProto(schema string, refs []resolved) (protoreflect.FileDescriptor, error) {
	srcs := map[string]string{mainProto: schema}
	for _, r := range refs {
		srcs[r.Name] = r.schema
	}
	files, err := protoCompiler(srcs).Compile(context.Background(), mainProto)
	if err != nil {
		return nil, err
	}
	return files[0], nil
}

func protoCompiler(srcs map[string]string) *protocompile.Compiler {
	return &protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(srcs)}),
	}
}

// keep returns the schema as it is kept and served: .proto text. A
// schema given as a base64 FileDescriptorProto (as Confluent's
// serializers in librdkafka's bindings register it) is printed as the
// .proto text it describes, its imports resolved by the references.
func (protobufFormat) keep(schema string, refs []resolved) (string, error) {
	if _, err := compileProto(schema, refs); err == nil {
		return schema, nil
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(schema))
	if err != nil {
		return schema, nil // not a descriptor: parse says why
	}
	var fdp descriptorpb.FileDescriptorProto
	if err := proto.Unmarshal(b, &fdp); err != nil {
		return "", fmt.Errorf("a base64 schema that is not a FileDescriptorProto: %v", err)
	}
	srcs := map[string]string{}
	for _, r := range refs {
		srcs[r.Name] = r.schema
	}
	deps, err := protoCompiler(srcs).Compile(context.Background(), fdp.GetDependency()...)
	if err != nil {
		return "", err
	}
	fd, err := protodesc.NewFile(&fdp, deps.AsResolver())
	if err != nil {
		return "", err
	}
	return printProto(fd)
}

// normalForm is the schema compiled and printed again: one layout,
// whatever the text's spacing, comments and order of options.
func (protobufFormat) normalForm(schema string, refs []resolved) (string, error) {
	fd, err := compileProto(schema, refs)
	if err != nil {
		return "", err
	}
	return printProto(fd)
}

func printProto(fd protoreflect.FileDescriptor) (string, error) {
	wrapped, err := desc.WrapFile(fd)
	if err != nil {
		return "", err
	}
	return (&protoprint.Printer{}).PrintProtoToString(wrapped)
}

// serialized returns the schema as a base64 FileDescriptorProto, as
// format=serialized asks.
func (protobufFormat) serialized(schema string, refs []resolved) (string, error) {
	fd, err := compileProto(schema, refs)
	if err != nil {
		return "", err
	}
	b, err := proto.Marshal(protodesc.ToFileDescriptorProto(fd))
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
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
		case !old.IsMap() && !sameNamedType(old, f):
			out = append(out, fmt.Sprintf("FIELD_NAMED_TYPE_CHANGED: %s was %s, is %s", at, kindOf(old), kindOf(f)))
		case old.IsList() != f.IsList() && packableScalar(old):
			// Repeated numbers are packed: a single reader takes no list.
			out = append(out, fmt.Sprintf("FIELD_NUMERIC_LABEL_CHANGED: %s is repeated in one schema only", at))
		case old.IsMap() != f.IsMap():
			out = append(out, fmt.Sprintf("FIELD_KIND_CHANGED: %s is a map in one schema only", at))
		case old.IsMap() && (!wireCompatible(old.MapKey(), f.MapKey()) || !wireCompatible(old.MapValue(), f.MapValue()) || !sameNamedType(old.MapValue(), f.MapValue())):
			out = append(out, fmt.Sprintf("FIELD_KIND_CHANGED: %s was map<%s, %s>, is map<%s, %s>", at, kindOf(old.MapKey()), kindOf(old.MapValue()), kindOf(f.MapKey()), kindOf(f.MapValue())))
		}
	}
	return append(out, oneofsCanRead(r, w)...)
}

// oneofsCanRead: data written with w's oneofs read with r's. A reader's
// oneof must take its fields from one of the writer's oneofs (a writer
// sets one of those) or be one field that was in none; a oneof of the
// writer's whose fields the reader keeps in part loses what was set in
// the others.
func oneofsCanRead(r, w protoreflect.MessageDescriptor) []string {
	var out []string
	wf, rf := w.Fields(), r.Fields()
	ros := r.Oneofs()
	for i := range ros.Len() {
		ro := ros.Get(i)
		if ro.IsSynthetic() {
			continue
		}
		from := map[string]int{} // the writer's oneof (or "") each came from
		for j := range ro.Fields().Len() {
			if old := wf.ByNumber(ro.Fields().Get(j).Number()); old != nil {
				name := ""
				if wo := realOneof(old); wo != nil {
					name = string(wo.Name())
				}
				from[name]++
			}
		}
		if len(from) > 1 || from[""] > 1 {
			out = append(out, fmt.Sprintf("FIELD_MOVED_TO_EXISTING_ONEOF: %s oneof %s has fields the writer could set together", r.FullName(), ro.Name()))
		}
	}
	wos := w.Oneofs()
	for i := range wos.Len() {
		wo := wos.Get(i)
		if wo.IsSynthetic() {
			continue
		}
		kept, removed := 0, []protoreflect.FieldNumber{}
		for j := range wo.Fields().Len() {
			n := wo.Fields().Get(j).Number()
			if rf.ByNumber(n) != nil {
				kept++
			} else {
				removed = append(removed, n)
			}
		}
		if kept > 0 && len(removed) > 0 {
			out = append(out, fmt.Sprintf("ONEOF_FIELD_REMOVED: %s oneof %s field %d", r.FullName(), wo.Name(), removed[0]))
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

// wireCompatible: an enum reads as the integers it shares varints with,
// as Protobuf's own rules allow.
func wireCompatible(a, b protoreflect.FieldDescriptor) bool {
	return wireGroup(a.Kind()) == wireGroup(b.Kind())
}

// sameNamedType: fields of message or enum kind name the same type.
func sameNamedType(a, b protoreflect.FieldDescriptor) bool {
	switch {
	case a.Kind() == protoreflect.MessageKind && b.Kind() == protoreflect.MessageKind:
		return a.Message().FullName() == b.Message().FullName()
	case a.Kind() == protoreflect.EnumKind && b.Kind() == protoreflect.EnumKind:
		return a.Enum().FullName() == b.Enum().FullName()
	}
	return true
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
