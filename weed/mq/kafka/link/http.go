package link

// The links' HTTP API, served by every gateway (on -console.listeners):
//
//	GET    /api/links                    every link with its state
//	POST   /api/links                    create one (a Config as JSON)
//	GET    /api/links/{name}             one link with its state
//	DELETE /api/links/{name}             delete it: its topics stay, writable
//	POST   /api/links/{name}/pause       stop pulling
//	POST   /api/links/{name}/resume      pull again
//	POST   /api/links/{name}/promote     ?topic=t (all when left out), &force=true
//
// Changes need ALTER on the cluster, reads DESCRIBE, by the cluster's ACLs,
// for the user logged in with HTTP basic auth (the gateway's SCRAM users).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// HandlerOptions say who may do what.
type HandlerOptions struct {
	// Authenticate checks an HTTP basic auth login; nil: no login, every
	// request is User:ANONYMOUS's.
	Authenticate func(ctx context.Context, user, password string) (bool, error)
	// Authorize decides an operation on the cluster by its ACLs (nil:
	// everything is allowed).
	Authorize func(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool
	// Changed is told of a change made (nil: nothing is).
	Changed func()
}

// Handler serves the API over the links in store.
func Handler(store *Store, opts HandlerOptions) http.Handler {
	h := &api{store: store, opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/links", h.route(kmsg.ACLOperationDescribe, h.list))
	mux.HandleFunc("POST /api/links", h.route(kmsg.ACLOperationAlter, h.create))
	mux.HandleFunc("GET /api/links/{name}", h.route(kmsg.ACLOperationDescribe, h.get))
	mux.HandleFunc("DELETE /api/links/{name}", h.route(kmsg.ACLOperationAlter, h.delete))
	mux.HandleFunc("POST /api/links/{name}/{action}", h.route(kmsg.ACLOperationAlter, h.act))
	return mux
}

type api struct {
	store *Store
	opts  HandlerOptions
}

// apiError is an answer other than 200, with its message.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func (h *api) route(op kmsg.ACLOperation, fn func(*http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, q *http.Request) {
		principal := "User:ANONYMOUS"
		if h.opts.Authenticate != nil {
			user, password, ok := q.BasicAuth()
			if ok {
				ok, _ = h.opts.Authenticate(q.Context(), user, password)
			}
			if !ok {
				w.Header().Set("WWW-Authenticate", `Basic realm="kafka gateway"`)
				reply(w, nil, &apiError{http.StatusUnauthorized, "a login is needed (a user of the gateway's)"})
				return
			}
			principal = "User:" + user
		}
		host, _, _ := net.SplitHostPort(q.RemoteAddr)
		if h.opts.Authorize != nil && !h.opts.Authorize(principal, host, op, kmsg.ACLResourceTypeCluster, "kafka-cluster") {
			reply(w, nil, &apiError{http.StatusForbidden, fmt.Sprintf("%s may not %s the cluster", principal, strings.ToLower(op.String()))})
			return
		}
		ctx, cancel := context.WithTimeout(q.Context(), 30*time.Second)
		defer cancel()
		v, err := fn(q.WithContext(ctx))
		if err == nil && op == kmsg.ACLOperationAlter && h.opts.Changed != nil {
			h.opts.Changed()
		}
		reply(w, v, err)
	}
}

func reply(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		code := http.StatusInternalServerError
		var ae *apiError
		switch {
		case errors.As(err, &ae):
			code = ae.code
		case errors.Is(err, ErrNotFound):
			code = http.StatusNotFound
		case errors.Is(err, ErrExists):
			code = http.StatusConflict
		}
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]string{"error": err.Error()}) //nolint:errcheck // the client went away
		return
	}
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client went away
}

func (h *api) list(q *http.Request) (any, error) {
	links, err := h.store.List(q.Context())
	if err != nil {
		return nil, err
	}
	out := make([]Link, 0, len(links))
	for _, l := range links {
		out = append(out, Link{Config: l.Config.Redacted(), Status: l.Status})
	}
	return out, nil
}

func (h *api) get(q *http.Request) (any, error) {
	name := q.PathValue("name")
	c, _, err := h.store.Get(q.Context(), name)
	if err != nil {
		return nil, err
	}
	st, err := h.store.Status(q.Context(), name)
	if err != nil {
		return nil, err
	}
	return Link{Config: c.Redacted(), Status: st}, nil
}

func (h *api) create(q *http.Request) (any, error) {
	var c Config
	dec := json.NewDecoder(http.MaxBytesReader(nil, q.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, &apiError{http.StatusBadRequest, "the link: " + err.Error()}
	}
	c.Source.SealedPassword, c.Promote, c.Paused = nil, nil, false
	if err := c.Validate(); err != nil {
		return nil, &apiError{http.StatusBadRequest, err.Error()}
	}
	if err := h.store.Create(q.Context(), &c); err != nil {
		return nil, err
	}
	return c.Redacted(), nil
}

func (h *api) delete(q *http.Request) (any, error) {
	name := q.PathValue("name")
	if err := h.store.Delete(q.Context(), name); err != nil {
		return nil, err
	}
	return map[string]string{"deleted": name}, nil
}

func (h *api) act(q *http.Request) (any, error) {
	name := q.PathValue("name")
	var change func(*Config) error
	switch q.PathValue("action") {
	case "pause":
		change = func(c *Config) error { c.Paused = true; return nil }
	case "resume":
		change = func(c *Config) error { c.Paused = false; return nil }
	case "promote":
		topic := q.URL.Query().Get("topic")
		if topic == "" {
			topic = "*"
		}
		force := q.URL.Query().Get("force") == "true"
		change = func(c *Config) error {
			if c.Promote == nil {
				c.Promote = map[string]Promotion{}
			}
			c.Promote[topic] = Promotion{Force: force, At: time.Now().UnixMilli()}
			return nil
		}
	default:
		return nil, &apiError{http.StatusNotFound, "no such action: pause, resume or promote"}
	}
	if err := h.store.Update(q.Context(), name, change); err != nil {
		return nil, err
	}
	c, _, err := h.store.Get(q.Context(), name)
	if err != nil {
		return nil, err
	}
	return c.Redacted(), nil
}
