package registry

// JSON Schema: a schema is checked to be one (draft 7 unless its $schema
// names another) by santhosh-tekuri/jsonschema, its references resolved
// by their names; compatibility is whether every document one schema
// accepts the other accepts too, judged on the schemas' structure as
// Confluent's registry judges it: types widened or narrowed, bounds,
// enums, combinations (allOf, anyOf, oneOf, not), and objects' and
// arrays' content models (open, closed, or open to a schema).

import (
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

type jsonFormat struct{}

// jsonDoc is one schema document: the one registered or a reference's.
type jsonDoc struct {
	root any
	// refs are the references' documents by name, shared by all.
	refs map[string]*jsonDoc
}

type jsonSchema struct{ doc *jsonDoc }

// mainJSON is the URL the schema is compiled at; its references resolve
// by their names, never over the network or from files.
const mainJSON = "https://schema-registry.invalid/schema.json"

func (jsonFormat) parse(schema string, refs []resolved) (parsed, error) {
	doc, _, err := compileJSON(schema, refs)
	if err != nil {
		return nil, err
	}
	return jsonSchema{doc}, nil
}

// compileJSON reads a schema and its references' documents and compiles
// it.
func compileJSON(schema string, refs []resolved) (*jsonDoc, *jsonschema.Schema, error) {
	root, err := decodeJSON(schema)
	if err != nil {
		return nil, nil, err
	}
	docs := map[string]*jsonDoc{}
	for _, r := range refs {
		v, err := decodeJSON(r.schema)
		if err != nil {
			return nil, nil, fmt.Errorf("reference %s (%s version %d): %v", r.Name, r.Subject, r.Version, err)
		}
		docs[r.Name] = &jsonDoc{root: v, refs: docs}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	c.UseLoader(refLoader(docs))
	if err := c.AddResource(mainJSON, root); err != nil {
		return nil, nil, err
	}
	compiled, err := c.Compile(mainJSON)
	if err != nil {
		return nil, nil, err
	}
	return &jsonDoc{root: root, refs: docs}, compiled, nil
}

func decodeJSON(s string) (any, error) {
	return jsonschema.UnmarshalJSON(strings.NewReader(s))
}

// refLoader finds a referenced URL among the references: by its name,
// or by the URL's last segments being the name.
type refLoader map[string]*jsonDoc

func (l refLoader) Load(url string) (any, error) {
	if d := l.find(url); d != nil {
		return d.root, nil
	}
	return nil, fmt.Errorf("%s is not among the schema's references", url)
}

func (l refLoader) find(url string) *jsonDoc {
	if d, ok := l[url]; ok {
		return d
	}
	for name, d := range l {
		if strings.HasSuffix(url, "/"+strings.TrimPrefix(name, "./")) {
			return d
		}
	}
	return nil
}

func (jsonFormat) normalize(schema string) string { return normalJSON(schema) }

// normalForm is the schema's JSON with sorted keys and no space.
func (jsonFormat) normalForm(schema string, _ []resolved) (string, error) {
	return normalJSON(schema), nil
}

func (j jsonSchema) canRead(writer parsed) []string {
	w, ok := writer.(jsonSchema)
	if !ok {
		return []string{"the schemas are of different types"}
	}
	d := &jsonDiff{seen: map[[2]string]bool{}, work: new(int)}
	d.compare("#", node{w.doc, w.doc.root, "#"}, node{j.doc, j.doc.root, "#"})
	if *d.work > maxJSONWork {
		d.add("#", fmt.Sprintf("TOO_COMPLEX: telling the schemas compatible takes more than %d comparisons", maxJSONWork))
	}
	return d.out
}

// node is a schema inside its document, with where it is (for cycles).
type node struct {
	doc *jsonDoc
	v   any
	loc string
}

// deref follows $ref (siblings ignored, as draft 7 does), to a bounded
// depth; a reference that cannot be followed is the empty schema.
func (n node) deref() node {
	for range 32 {
		m, ok := n.v.(map[string]any)
		if !ok {
			return n
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return n
		}
		name, frag, _ := strings.Cut(ref, "#")
		doc := n.doc
		if name != "" {
			if doc = refLoader(n.doc.refs).find(name); doc == nil {
				return node{n.doc, true, ref}
			}
		}
		v, ok := pointer(doc.root, frag)
		if !ok {
			return node{n.doc, true, ref}
		}
		n = node{doc, v, fmt.Sprintf("%p#%s", doc, frag)}
	}
	return node{n.doc, true, n.loc}
}

// pointer reads a JSON pointer fragment ("/definitions/a").
func pointer(v any, frag string) (any, bool) {
	if frag == "" {
		return v, true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, false
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[tok]; !ok {
				return nil, false
			}
		case []any:
			var i int
			if _, err := fmt.Sscan(tok, &i); err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func (n node) child(v any, path string) node { return node{n.doc, v, n.loc + path} }

func (n node) obj() map[string]any {
	m, _ := n.v.(map[string]any)
	return m
}

// Kinds of schema, as compared.
const (
	kindAny      = "any" // true, {}, or only annotations
	kindFalse    = "false"
	kindString   = "string"
	kindNumber   = "number" // integer too
	kindBoolean  = "boolean"
	kindNull     = "null"
	kindObject   = "object"
	kindArray    = "array"
	kindEnum     = "enum"
	kindNot      = "not"
	kindCombined = "combined"
)

var keywordKinds = map[string]string{
	"maxLength": kindString, "minLength": kindString, "pattern": kindString,
	"maximum": kindNumber, "minimum": kindNumber, "exclusiveMaximum": kindNumber, "exclusiveMinimum": kindNumber, "multipleOf": kindNumber,
	"properties": kindObject, "required": kindObject, "additionalProperties": kindObject, "patternProperties": kindObject,
	"maxProperties": kindObject, "minProperties": kindObject, "dependencies": kindObject, "dependentRequired": kindObject, "dependentSchemas": kindObject,
	"items": kindArray, "prefixItems": kindArray, "additionalItems": kindArray, "maxItems": kindArray, "minItems": kindArray, "uniqueItems": kindArray,
}

// kind returns what n is; a list of types is a sum of one schema per
// type (the other keywords shared), as anyOf would be.
func (n node) kind() (string, []node) {
	switch v := n.v.(type) {
	case bool:
		if v {
			return kindAny, nil
		}
		return kindFalse, nil
	case map[string]any:
		for _, c := range []string{"allOf", "anyOf", "oneOf"} {
			if _, ok := v[c]; ok {
				return kindCombined, nil
			}
		}
		if _, ok := v["not"]; ok {
			return kindNot, nil
		}
		if _, ok := v["enum"]; ok {
			return kindEnum, nil
		}
		if _, ok := v["const"]; ok {
			return kindEnum, nil
		}
		switch t := v["type"].(type) {
		case string:
			if t == "integer" {
				return kindNumber, nil
			}
			return t, nil
		case []any:
			if len(t) == 1 {
				one := maps(v)
				one["type"] = t[0]
				return n.child(one, "").kind()
			}
			var subs []node
			for _, each := range t {
				one := maps(v)
				one["type"] = each
				subs = append(subs, n.child(one, fmt.Sprintf("/type/%v", each)))
			}
			return kindCombined, subs
		}
		for k := range v {
			if kd, ok := keywordKinds[k]; ok {
				return kd, nil
			}
		}
		return kindAny, nil
	}
	return kindAny, nil
}

func maps(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
