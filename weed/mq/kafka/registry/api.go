package registry

// The REST API's endpoints: each reads its request, asks the Registry or
// its State, and returns what Confluent's registry answers.

import (
	"net/http"
	"strings"
)

// schemaJSON is a subject's version as the API shows it.
type schemaJSON struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	Schema     string      `json:"schema"`
}

func showSchema(sc Schema) schemaJSON {
	out := schemaJSON{Subject: sc.Subject, Version: sc.Version, ID: sc.ID, References: sc.References, Schema: sc.Schema}
	if sc.Type != Avro {
		out.SchemaType = sc.Type
	}
	return out
}

func (h *api) subjects(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	out := []string{}
	for _, subject := range subjectsOf(h.r.State(), q, flag(q, "deleted")) {
		if h.mayRead(principalOf(q), q, subject) {
			out = append(out, subject)
		}
	}
	return out, nil
}

func (h *api) versions(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	subject := subjectArg(q)
	vs := h.r.State().Versions(subject, flag(q, "deleted"))
	if len(vs) == 0 {
		return nil, errorf(codeSubjectNotFound, "Subject '%s' not found.", subject)
	}
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = v.Version
	}
	return out, nil
}

// schemaRequest reads the schema a register, lookup or compatibility
// request sends, with its normalize parameter.
func schemaRequest(q *http.Request) (SchemaRequest, *Error) {
	var req SchemaRequest
	if e := decode(q, &req); e != nil {
		return req, e
	}
	req.Normalize = flag(q, "normalize")
	return req, nil
}

func (h *api) register(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	req, e := schemaRequest(q)
	if e != nil {
		return nil, e
	}
	id, e := h.r.Register(q.Context(), subjectArg(q), req)
	if e != nil {
		return nil, e
	}
	return map[string]int{"id": id}, nil
}

func (h *api) lookup(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	req, e := schemaRequest(q)
	if e != nil {
		return nil, e
	}
	sc, e := h.r.Lookup(subjectArg(q), req, flag(q, "deleted"))
	if e != nil {
		return nil, e
	}
	return showSchema(sc), nil
}

// subjectVersion is the version a request names, its schema in the form
// its format parameter asks.
func (h *api) subjectVersion(q *http.Request) (Schema, *Error) {
	v, e := versionArg(q)
	if e != nil {
		return Schema{}, e
	}
	sc, e := h.r.Version(subjectArg(q), v, flag(q, "deleted"))
	if e != nil {
		return Schema{}, e
	}
	sc.Schema, e = h.r.Formatted(sc.Type, sc.Schema, sc.References, q.URL.Query().Get("format"))
	return sc, e
}

func (h *api) version(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	sc, e := h.subjectVersion(q)
	if e != nil {
		return nil, e
	}
	return showSchema(sc), nil
}

func (h *api) versionSchema(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	sc, e := h.subjectVersion(q)
	if e != nil {
		return nil, e
	}
	return rawText(rawSchema(sc.Schema)), nil
}

// rawSchema is a schema as the /schema endpoints return it: its text as
// it is (Avro's JSON, Protobuf's .proto), as Confluent's registry answers.
func rawSchema(schema string) []byte { return []byte(schema) }

func (h *api) referencedBy(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	sc, e := h.subjectVersion(q)
	if e != nil {
		return nil, e
	}
	return h.r.State().ReferencedBy(sc.Subject, sc.Version), nil
}

func (h *api) deleteSubject(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	return h.r.DeleteSubject(q.Context(), subjectArg(q), flag(q, "permanent"))
}

func (h *api) deleteVersion(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	v, e := versionArg(q)
	if e != nil {
		return nil, e
	}
	return h.r.DeleteVersion(q.Context(), subjectArg(q), v, flag(q, "permanent"))
}

// idJSON is a schema by id as /schemas/ids/{id} shows it.
type idJSON struct {
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	Schema     string      `json:"schema"`
}

// idRef is a schema id in its context.
type idRef struct {
	ctx string
	id  int
}

// lookupID finds the schema of the id a request names, in the context
// of its subject parameter (without one, the first context that has the
// id, the default one first; ":.ctx:" names just the context), under
// that subject if it names one.
func (h *api) lookupID(q *http.Request) (idRef, idJSON, *Error) {
	id, e := idArg(q)
	if e != nil {
		return idRef{}, idJSON{}, e
	}
	ref := idRef{DefaultContext, id}
	subject := Qualify(q.URL.Query().Get("subject"))
	if subject != "" {
		ref.ctx = Context(subject)
	}
	typ, schema, refs, ok := h.r.State().ByID(ref.ctx, id)
	if !ok && subject == "" {
		// No subject to say the context: the default one first, then the
		// others, as Confluent's registry looks.
		for _, c := range h.r.State().Contexts() {
			if typ, schema, refs, ok = h.r.State().ByID(c, id); ok {
				ref.ctx = c
				break
			}
		}
	}
	if _, name, _ := splitQualified(subject); ok && name != "" {
		ok = false
		for _, v := range h.r.State().IDVersions(ref.ctx, id, true) {
			ok = ok || v.Subject == subject
		}
	}
	if !ok {
		return idRef{}, idJSON{}, errorf(codeSchemaNotFound, "Schema %d not found", id)
	}
	schema, e = h.r.Formatted(typ, schema, refs, q.URL.Query().Get("format"))
	if e != nil {
		return idRef{}, idJSON{}, e
	}
	out := idJSON{References: refs, Schema: schema}
	if typ != Avro {
		out.SchemaType = typ
	}
	return ref, out, nil
}

func (h *api) byID(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	_, s, e := h.lookupID(q)
	return s, e
}

func (h *api) byIDSchema(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	_, s, e := h.lookupID(q)
	if e != nil {
		return nil, e
	}
	return rawText(rawSchema(s.Schema)), nil
}

type subjectVersionJSON struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

func (h *api) idVersions(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	ref, _, e := h.lookupID(q)
	if e != nil {
		return nil, e
	}
	out := []subjectVersionJSON{}
	for _, v := range h.r.State().IDVersions(ref.ctx, ref.id, flag(q, "deleted")) {
		out = append(out, subjectVersionJSON{v.Subject, v.Version})
	}
	return out, nil
}

func (h *api) idSubjects(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	ref, _, e := h.lookupID(q)
	if e != nil {
		return nil, e
	}
	out := []string{}
	for _, v := range h.r.State().IDVersions(ref.ctx, ref.id, flag(q, "deleted")) {
		if len(out) == 0 || out[len(out)-1] != v.Subject {
			out = append(out, v.Subject)
		}
	}
	return out, nil
}

func (h *api) schemas(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	st := h.r.State()
	deleted, latestOnly := flag(q, "deleted"), flag(q, "latestOnly")
	out := []schemaJSON{}
	for _, subject := range subjectsOf(st, q, deleted) {
		if !h.mayRead(principalOf(q), q, subject) {
			continue
		}
		vs := st.Versions(subject, deleted)
		if latestOnly && len(vs) > 0 {
			vs = vs[len(vs)-1:]
		}
		for _, v := range vs {
			out = append(out, showSchema(v))
		}
	}
	return out, nil
}

func (h *api) getConfig(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	subject := subjectArg(q)
	if subject != "" {
		if level, ok := h.r.State().Config(subject); ok {
			return map[string]string{"compatibilityLevel": level}, nil
		}
		if !flag(q, "defaultToGlobal") {
			return nil, errorf(codeSubjectLevelNotSet, "Subject '%s' does not have subject-level compatibility configured", subject)
		}
	}
	return map[string]string{"compatibilityLevel": h.r.Compatibility("")}, nil
}

func (h *api) putConfig(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	var req struct {
		Compatibility string `json:"compatibility"`
	}
	if e := decode(q, &req); e != nil {
		return nil, e
	}
	if e := h.r.SetCompatibility(q.Context(), subjectArg(q), req.Compatibility); e != nil {
		return nil, e
	}
	return map[string]string{"compatibility": strings.ToUpper(req.Compatibility)}, nil
}

func (h *api) deleteConfig(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	was, e := h.r.DeleteCompatibility(q.Context(), subjectArg(q))
	if e != nil {
		return nil, e
	}
	return map[string]string{"compatibilityLevel": was}, nil
}

func (h *api) getMode(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	subject := subjectArg(q)
	if subject != "" {
		if m, ok := h.r.State().Mode(subject); ok {
			return map[string]string{"mode": m}, nil
		}
		if !flag(q, "defaultToGlobal") {
			return nil, errorf(codeSubjectModeNotSet, "Subject '%s' does not have subject-level mode configured", subject)
		}
	}
	return map[string]string{"mode": h.r.Mode("")}, nil
}

func (h *api) putMode(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	var req struct {
		Mode string `json:"mode"`
	}
	if e := decode(q, &req); e != nil {
		return nil, e
	}
	if e := h.r.SetMode(q.Context(), subjectArg(q), req.Mode, flag(q, "force")); e != nil {
		return nil, e
	}
	return map[string]string{"mode": strings.ToUpper(req.Mode)}, nil
}

func (h *api) deleteMode(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	was, e := h.r.DeleteMode(q.Context(), subjectArg(q))
	if e != nil {
		return nil, e
	}
	return map[string]string{"mode": was}, nil
}

func (h *api) compatibility(_ http.ResponseWriter, q *http.Request) (any, *Error) {
	req, e := schemaRequest(q)
	if e != nil {
		return nil, e
	}
	version := 0
	if q.PathValue("version") != "" {
		v, e := versionArg(q)
		if e != nil {
			return nil, e
		}
		version = v
	}
	msgs, e := h.r.Check(subjectArg(q), version, req)
	if e != nil {
		return nil, e
	}
	out := map[string]any{"is_compatible": len(msgs) == 0}
	if flag(q, "verbose") {
		if msgs == nil {
			msgs = []string{}
		}
		out["messages"] = msgs
	}
	return out, nil
}
