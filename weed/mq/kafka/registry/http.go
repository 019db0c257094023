package registry

// Confluent's Schema Registry REST API (v1). Reads are answered from this
// gateway's State; writes by the registry's writer, to which the other
// gateways forward them.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// ContentType is the registry's media type.
const ContentType = "application/vnd.schemaregistry.v1+json"

// forwardedHeader marks a write forwarded by another gateway: not
// forwarded again.
const forwardedHeader = "X-Kafka-Gateway-Registry-Forwarded"

// maxBody bounds a request's body.
const maxBody = 4 * MaxSchemaBytes

// Leader says which gateway writes: its registry's URL, and whether it is
// this one.
type Leader func() (url string, self bool)

// HandlerOptions say who writes and who may do what.
type HandlerOptions struct {
	// Leader says which gateway writes (nil: this one).
	Leader Leader
	// Authenticate checks an HTTP basic auth login (the gateway's SASL
	// users); nil: no login, every request is User:ANONYMOUS's.
	Authenticate func(ctx context.Context, user, password string) (bool, error)
	// Authorize decides an operation on a Kafka resource by the cluster's
	// ACLs (nil: everything is allowed); see access.
	Authorize func(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool
}

// Handler serves the REST API of r.
func Handler(r *Registry, opts HandlerOptions) http.Handler {
	h := &api{r: r, opts: opts}
	mux := http.NewServeMux()
	route := func(pattern string, need access, write bool, fn func(w http.ResponseWriter, q *http.Request) (any, *Error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, q *http.Request) {
			start := time.Now()
			rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
			defer func() {
				metrics.RegistryRequests.WithLabelValues(pattern, strconv.Itoa(rec.code)).Inc()
				metrics.RegistryRequestSeconds.WithLabelValues(pattern).Observe(time.Since(start).Seconds())
			}()
			principal, ok := h.login(rec, q)
			if !ok {
				return
			}
			if e := h.allowed(principal, q, need); e != nil {
				reply(rec, nil, e)
				return
			}
			if write && h.forward(rec, q) {
				return
			}
			if !write {
				if e := h.r.CatchUp(q.Context()); e != nil {
					reply(rec, nil, e)
					return
				}
			}
			q = q.WithContext(context.WithValue(q.Context(), principalKey{}, principal))
			v, e := fn(rec, q)
			reply(rec, v, e)
		})
	}
	read := func(pattern string, need access, fn func(w http.ResponseWriter, q *http.Request) (any, *Error)) {
		route(pattern, need, false, fn)
	}
	write := func(pattern string, need access, fn func(w http.ResponseWriter, q *http.Request) (any, *Error)) {
		route(pattern, need, true, fn)
	}
	read("GET /{$}", anyone, func(http.ResponseWriter, *http.Request) (any, *Error) { return struct{}{}, nil })
	read("GET /subjects", anyone, h.subjects) // filtered to the subjects the principal may read
	read("GET /subjects/{subject}/versions", subjectRead, h.versions)
	write("POST /subjects/{subject}/versions", subjectWrite, h.register)
	read("POST /subjects/{subject}", subjectRead, h.lookup)
	read("GET /subjects/{subject}/versions/{version}", subjectRead, h.version)
	read("GET /subjects/{subject}/versions/{version}/schema", subjectRead, h.versionSchema)
	read("GET /subjects/{subject}/versions/{version}/referencedby", subjectRead, h.referencedBy)
	write("DELETE /subjects/{subject}", subjectDelete, h.deleteSubject)
	write("DELETE /subjects/{subject}/versions/{version}", subjectDelete, h.deleteVersion)
	read("GET /schemas/ids/{id}", anyone, h.byID)
	read("GET /schemas/ids/{id}/schema", anyone, h.byIDSchema)
	read("GET /schemas/ids/{id}/versions", anyone, h.idVersions)
	read("GET /schemas/ids/{id}/subjects", anyone, h.idSubjects)
	read("GET /schemas/types", anyone, func(http.ResponseWriter, *http.Request) (any, *Error) { return Types(), nil })
	read("GET /schemas", anyone, h.schemas) // filtered too
	read("GET /config", anyone, h.getConfig)
	read("GET /config/{subject}", subjectDescribeConfigs, h.getConfig)
	write("PUT /config", clusterAlterConfigs, h.putConfig)
	write("PUT /config/{subject}", subjectAlterConfigs, h.putConfig)
	write("DELETE /config", clusterAlterConfigs, h.deleteConfig)
	write("DELETE /config/{subject}", subjectAlterConfigs, h.deleteConfig)
	read("GET /mode", anyone, h.getMode)
	read("GET /mode/{subject}", subjectDescribeConfigs, h.getMode)
	write("PUT /mode", clusterAlterConfigs, h.putMode)
	write("PUT /mode/{subject}", subjectAlterConfigs, h.putMode)
	write("DELETE /mode/{subject}", subjectAlterConfigs, h.deleteMode)
	read("POST /compatibility/subjects/{subject}/versions/{version}", subjectRead, h.compatibility)
	read("POST /compatibility/subjects/{subject}/versions", subjectRead, h.compatibility)
	read("GET /contexts", anyone, func(http.ResponseWriter, *http.Request) (any, *Error) { return r.State().Contexts(), nil })
	return http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		q.Body = http.MaxBytesReader(w, q.Body, maxBody)
		inContext(q)
		mux.ServeHTTP(&notFound{ResponseWriter: w}, q)
	})
}

// inContext rewrites a request under /contexts/{context}/ (as clients
// scoped to a context send them) to the request it stands for, with
// subjects qualified by the context: /contexts/.ctx/subjects/s/versions
// is /subjects/:.ctx:s/versions, /contexts/.ctx/schemas/ids/1 is
// /schemas/ids/1?subject=:.ctx:, /contexts/.ctx/config is
// /config/:.ctx:. What the rewritten request is, forwarding and the ACLs
// see too.
func inContext(q *http.Request) {
	segs := strings.Split(strings.TrimPrefix(q.URL.EscapedPath(), "/"), "/")
	if len(segs) < 3 || segs[0] != "contexts" {
		return
	}
	ctx, err := url.PathUnescape(segs[1])
	if err != nil || !strings.HasPrefix(ctx, ".") || strings.Contains(ctx, ":") {
		return
	}
	rest := segs[2:]
	qualify := func(seg string) string {
		s, err := url.PathUnescape(seg)
		if err != nil {
			return seg
		}
		if _, _, ok := splitQualified(s); !ok && ctx != DefaultContext {
			s = ":" + ctx + ":" + s
		}
		return url.PathEscape(s)
	}
	params := q.URL.Query()
	setDefault := func(name, value string) {
		if _, ok := params[name]; !ok && ctx != DefaultContext {
			params.Set(name, value)
		}
	}
	switch {
	case rest[0] == "subjects" && len(rest) == 1, rest[0] == "schemas" && len(rest) == 1:
		setDefault("subjectPrefix", ":"+ctx+":")
	case rest[0] == "subjects", rest[0] == "compatibility" && len(rest) > 2 && rest[1] == "subjects":
		i := 1
		if rest[0] == "compatibility" {
			i = 2
		}
		rest[i] = qualify(rest[i])
	case rest[0] == "schemas" && len(rest) > 2 && rest[1] == "ids":
		setDefault("subject", ":"+ctx+":")
	case (rest[0] == "config" || rest[0] == "mode") && len(rest) == 1:
		rest = append(rest, url.PathEscape(":"+ctx+":"))
	case rest[0] == "config" || rest[0] == "mode":
		rest[1] = qualify(rest[1])
	default:
		return
	}
	raw := "/" + strings.Join(rest, "/")
	if p, err := url.PathUnescape(raw); err == nil {
		q.URL.Path, q.URL.RawPath = p, raw
		q.URL.RawQuery = params.Encode()
	}
}

// statusRecorder keeps the status a handler answered, for the metrics.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// access is what a route needs of the cluster's ACLs. As Confluent's
// topic ACL authorizer does, a subject's operations are decided by the
// ACLs of the topic it is named for: <topic>-key and <topic>-value are
// the topic's, any other subject (a record name) a topic of its own name.
type access int

const (
	anyone                 access = iota // any principal logged in
	subjectRead                          // READ on the subject's topic
	subjectWrite                         // WRITE on the subject's topic
	subjectDelete                        // DELETE on the subject's topic
	subjectDescribeConfigs               // DESCRIBE_CONFIGS on the subject's topic
	subjectAlterConfigs                  // ALTER_CONFIGS on the subject's topic
	clusterAlterConfigs                  // ALTER_CONFIGS on the cluster
)

// SubjectTopic is the topic whose ACLs decide a subject's operations.
func SubjectTopic(subject string) string {
	for _, suffix := range []string{"-key", "-value"} {
		if t, ok := strings.CutSuffix(subject, suffix); ok && t != "" {
			return t
		}
	}
	return subject
}

// login returns the request's principal, or answers 401.
func (h *api) login(w http.ResponseWriter, q *http.Request) (string, bool) {
	if h.opts.Authenticate == nil {
		return anonymous, true
	}
	user, password, ok := q.BasicAuth()
	if ok {
		if good, err := h.opts.Authenticate(q.Context(), user, password); err == nil && good {
			return "User:" + user, true
		} else if err != nil {
			reply(w, nil, errorf(codeStoreError, "Error checking the login: %v", err))
			return "", false
		}
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="SchemaRegistry"`)
	reply(w, nil, &Error{Code: http.StatusUnauthorized, Message: "Unauthorized"})
	return "", false
}

const anonymous = "User:ANONYMOUS"

type principalKey struct{}

func principalOf(q *http.Request) string {
	p, _ := q.Context().Value(principalKey{}).(string)
	return p
}

func host(q *http.Request) string {
	h, _, err := net.SplitHostPort(q.RemoteAddr)
	if err != nil {
		return q.RemoteAddr
	}
	return h
}

// allowed checks what a route needs.
func (h *api) allowed(principal string, q *http.Request, need access) *Error {
	if h.opts.Authorize == nil || need == anyone {
		return nil
	}
	subject := subjectArg(q)
	op, typ, name := kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, SubjectTopic(subject)
	switch need {
	case subjectWrite:
		op = kmsg.ACLOperationWrite
	case subjectDelete:
		op = kmsg.ACLOperationDelete
	case subjectDescribeConfigs:
		op = kmsg.ACLOperationDescribeConfigs
	case subjectAlterConfigs:
		op = kmsg.ACLOperationAlterConfigs
	case clusterAlterConfigs:
		op, typ, name = kmsg.ACLOperationAlterConfigs, kmsg.ACLResourceTypeCluster, "kafka-cluster"
	}
	if h.opts.Authorize(principal, host(q), op, typ, name) {
		return nil
	}
	if typ == kmsg.ACLResourceTypeCluster {
		return &Error{Code: http.StatusForbidden, Message: fmt.Sprintf("User %s is not authorized to %s the cluster's configuration", principal, strings.ToLower(op.String()))}
	}
	return &Error{Code: http.StatusForbidden, Message: fmt.Sprintf("User %s is not authorized to %s subject %s (topic %s)", principal, strings.ToLower(op.String()), subject, name)}
}

// mayRead reports whether the principal may read a subject (the listings
// show only those).
func (h *api) mayRead(principal string, q *http.Request, subject string) bool {
	return h.opts.Authorize == nil || h.opts.Authorize(principal, host(q), kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, SubjectTopic(subject))
}

type api struct {
	r    *Registry
	opts HandlerOptions
}

// notFound answers the mux's own 404 and 405 as Confluent does: a JSON
// error.
type notFound struct {
	http.ResponseWriter
	ours bool
}

func (n *notFound) WriteHeader(code int) {
	if !n.ours && (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) && n.Header().Get("Content-Type") != ContentType {
		n.ours = true
		n.Header().Set("Content-Type", ContentType)
		n.ResponseWriter.WriteHeader(code)
		json.NewEncoder(n.ResponseWriter).Encode(&Error{Code: code, Message: http.StatusText(code)}) //nolint:errcheck // the client went
		return
	}
	n.ResponseWriter.WriteHeader(code)
}

func (n *notFound) Write(b []byte) (int, error) {
	if n.ours {
		return len(b), nil // the mux's plain text, replaced
	}
	return n.ResponseWriter.Write(b)
}

// rawText is a body written as it is, not as JSON.
type rawText []byte

func reply(w http.ResponseWriter, v any, e *Error) {
	w.Header().Set("Content-Type", ContentType)
	if e != nil {
		w.WriteHeader(e.Status())
		v = e
	}
	if raw, ok := v.(rawText); ok {
		w.Write(raw) //nolint:errcheck // the client went
		return
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v) //nolint:errcheck // the client went
}

// forward sends a write to the registry's writer when it is another
// gateway, and reports whether it did (or answered why it could not).
func (h *api) forward(w http.ResponseWriter, q *http.Request) bool {
	if h.opts.Leader == nil {
		return false
	}
	target, self := h.opts.Leader()
	switch {
	case self:
		return false
	case target == "" || q.Header.Get(forwardedHeader) != "":
		reply(w, nil, errorf(codeUnknownLeader, "Unknown leader: the registry's writer is not known yet"))
		return true
	}
	u, err := url.Parse(target)
	if err != nil {
		reply(w, nil, errorf(codeForwardError, "Error while forwarding the request to the leader: %v", err))
		return true
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		reply(w, nil, errorf(codeForwardError, "Error while forwarding the request to the leader: %v", err))
	}
	q.Header.Set(forwardedHeader, "1")
	proxy.ServeHTTP(w, q)
	return true
}

// decode reads a JSON body into v.
func decode(q *http.Request, v any) *Error {
	if err := json.NewDecoder(q.Body).Decode(v); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return errorf(codeInvalidSchema, "Request body larger than %d bytes", maxBody)
		}
		return &Error{Code: 422, Message: fmt.Sprintf("Unrecognized request body: %v", err)}
	}
	return nil
}

func flag(q *http.Request, name string) bool {
	v, _ := strconv.ParseBool(q.URL.Query().Get(name))
	return v
}

// versionArg reads a version: a number of 1 to 2^31-1, or latest (-1).
func versionArg(q *http.Request) (int, *Error) {
	s := q.PathValue("version")
	if s == "latest" || s == "-1" {
		return latest, nil
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < 1 {
		return 0, errorf(codeInvalidVersion, "The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", s)
	}
	return int(v), nil
}

func idArg(q *http.Request) (int, *Error) {
	s := q.PathValue("id")
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < 0 {
		return 0, errorf(codeSchemaNotFound, "Schema %s not found", s)
	}
	return int(v), nil
}

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

// subjectArg is the subject a request's path names, as it is kept
// (":.:name", the default context named, is "name").
func subjectArg(q *http.Request) string { return Qualify(q.PathValue("subject")) }

// subjectsOf lists the subjects subjectPrefix asks for: all of every
// context when it is not given or ":*:", the default context's when it
// is empty, else those it begins (":.ctx:" a context's).
func subjectsOf(st *State, q *http.Request, deleted bool) []string {
	prefix, given := q.URL.Query()["subjectPrefix"]
	switch {
	case !given || prefix[0] == ":*:":
		return st.Subjects("", deleted)
	case prefix[0] == "":
		var out []string
		for _, subject := range st.Subjects("", deleted) {
			if Context(subject) == DefaultContext {
				out = append(out, subject)
			}
		}
		return out
	}
	return st.Subjects(Qualify(prefix[0]), deleted)
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
