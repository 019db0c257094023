package registry

// Schema formats: parsing a schema with the schemas its references name,
// telling two schemas the same, and whether one can read what another
// wrote, which the compatibility levels are made of.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hamba/avro/v2"
)

// parsed is a schema a format has read.
type parsed interface {
	// canRead returns why data written with writer cannot be read with
	// this schema (empty: it can).
	canRead(writer parsed) []string
}

// resolved is a reference with the schema it names.
type resolved struct {
	Reference
	schema string
}

// format reads one type of schema.
type format interface {
	parse(schema string, refs []resolved) (parsed, error)
	// normalize returns the form two schemas are the same in.
	normalize(schema string) string
	// normalForm returns the schema as normalize=true keeps it.
	normalForm(schema string, refs []resolved) (string, error)
}

// keeper is a format whose schemas may be given in another form than
// the one they are kept and served in.
type keeper interface {
	keep(schema string, refs []resolved) (string, error)
}

// serializer is a format that serves a schema as format=serialized asks.
type serializer interface {
	serialized(schema string, refs []resolved) (string, error)
}

// formats are the schema types served, by name.
var formats = map[string]format{Avro: avroFormat{}, Protobuf: protobufFormat{}, JSON: jsonFormat{}}

// Types returns the schema types served, as /schemas/types lists them.
func Types() []string { return []string{JSON, Protobuf, Avro} }

type avroFormat struct{}

type avroSchema struct{ s avro.Schema }

func (avroFormat) parse(schema string, refs []resolved) (parsed, error) {
	cache := &avro.SchemaCache{}
	for _, r := range refs {
		if _, err := avro.ParseWithCache(r.schema, "", cache); err != nil {
			return nil, fmt.Errorf("reference %s (%s version %d): %v", r.Name, r.Subject, r.Version, err)
		}
	}
	s, err := avro.ParseWithCache(schema, "", cache)
	if err != nil {
		return nil, err
	}
	return avroSchema{s}, nil
}

// normalize is the schema's JSON with its objects' keys sorted and no
// space: the same schema written otherwise is the same.
func (avroFormat) normalize(schema string) string { return normalJSON(schema) }

// normalForm is the schema's JSON with sorted keys and no space.
func (avroFormat) normalForm(schema string, _ []resolved) (string, error) {
	return normalJSON(schema), nil
}

func (a avroSchema) canRead(writer parsed) []string {
	w, ok := writer.(avroSchema)
	if !ok {
		return []string{"the schemas are of different types"}
	}
	if err := avro.NewSchemaCompatibility().Compatible(a.s, w.s); err != nil {
		return []string{err.Error()}
	}
	return nil
}

// normalJSON returns text as JSON with sorted keys and no space, or text
// as it is if it is not JSON.
func normalJSON(text string) string {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return text
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return text
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// The compatibility levels.
const (
	Backward           = "BACKWARD"
	BackwardTransitive = "BACKWARD_TRANSITIVE"
	Forward            = "FORWARD"
	ForwardTransitive  = "FORWARD_TRANSITIVE"
	Full               = "FULL"
	FullTransitive     = "FULL_TRANSITIVE"
	None               = "NONE"
)

// DefaultCompatibility is the global level until one is set.
const DefaultCompatibility = Backward

// ValidLevel reports whether level is a compatibility level.
func ValidLevel(level string) bool {
	switch level {
	case Backward, BackwardTransitive, Forward, ForwardTransitive, Full, FullTransitive, None:
		return true
	}
	return false
}

// incompatibilities returns why candidate may not follow the previous
// versions (oldest first) at level; empty: it may.
func incompatibilities(level string, candidate parsed, previous []versionParsed) []string {
	if len(previous) == 0 || level == None {
		return nil
	}
	against := previous
	if !strings.HasSuffix(level, "_TRANSITIVE") {
		against = previous[len(previous)-1:]
	}
	backward := strings.HasPrefix(level, "BACKWARD") || strings.HasPrefix(level, "FULL")
	forward := strings.HasPrefix(level, "FORWARD") || strings.HasPrefix(level, "FULL")
	var out []string
	for i := len(against) - 1; i >= 0; i-- {
		prev := against[i]
		if backward {
			for _, m := range candidate.canRead(prev.p) {
				out = append(out, fmt.Sprintf("the new schema cannot read data written with version %d (%s): %s", prev.version, Backward, m))
			}
		}
		if forward {
			for _, m := range prev.p.canRead(candidate) {
				out = append(out, fmt.Sprintf("version %d cannot read data written with the new schema (%s): %s", prev.version, Forward, m))
			}
		}
	}
	return out
}

type versionParsed struct {
	version int
	p       parsed
}
