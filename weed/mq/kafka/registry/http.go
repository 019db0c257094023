package registry

// Confluent's Schema Registry REST API (v1). Reads are answered from this
// gateway's State; writes by the registry's writer, to which the other
// gateways forward them.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
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

// statusRecorder keeps the status a handler answered, for the metrics.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
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
