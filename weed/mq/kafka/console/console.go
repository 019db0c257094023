// Package console is the gateway's web console: server-rendered pages over
// the cluster, its topics and records, every kind of group with its lag,
// the schema registry, ACLs, users, quotas and topic links, served by every
// gateway on -console.listeners, built into the binary (no script from
// elsewhere, nothing to install).
//
// The console acts for the user logged in: each session has a Kafka
// client of its own, logged in to the gateways with that user's password,
// so every read and change is decided by the Kafka APIs and their ACLs as
// any client's is. What the console reads without the Kafka APIs (the
// registry's subjects, the links) is checked against the same ACLs by
// Authorize.
package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"golang.org/x/sync/semaphore"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/audit"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/link"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/registry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// Limits of the console, with why.
const (
	// sessionIdle ends a session nobody used for this long.
	sessionIdle = 30 * time.Minute
	// maxSessions bounds the sessions held (each holds a Kafka client);
	// the one unused longest goes first.
	maxSessions = 256
	// pageSize is the rows of a topics' or groups' page.
	pageSize = 100
	// requestTimeout bounds what one page waits for the cluster.
	requestTimeout = 30 * time.Second
	// DefaultMaxRecords and DefaultMaxBytes bound what one browse reads
	// (-console.max.records, -console.max.bytes).
	DefaultMaxRecords = 500
	DefaultMaxBytes   = 8 << 20
	// lagTTL is how long the lag of every group, summed by topic and by
	// group for the lists, is reused before it is measured again.
	lagTTL = 10 * time.Second
)

// Options configure the console.
type Options struct {
	// Client returns the options of a Kafka client of the gateways
	// acting for user, logged in with password ("" user: the console has
	// no logins, and the client is the gateways' anonymous one).
	Client func(ctx context.Context, user, password string) ([]kgo.Opt, error)
	// Authenticate checks a login; nil: no login is asked for, and
	// everyone is User:ANONYMOUS.
	Authenticate func(ctx context.Context, user, password string) (bool, error)
	// Authorize decides an operation by the cluster's ACLs, for what the
	// console reads without a Kafka API (nil: all is allowed).
	Authorize func(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool
	// ReadOnly refuses every change (-console.readonly).
	ReadOnly bool
	// NoExport refuses exports of records (-console.export=false).
	NoExport bool
	// Masks hide fields of records before they are shown, searched or
	// exported (-console.mask).
	Masks []Mask
	// MaxRecords and MaxBytes bound one browse (0: the defaults).
	MaxRecords, MaxBytes int
	// Schemas decode records framed by the registry (nil: shown as they
	// are).
	Schemas *registry.State
	// Registry is the base URL of this gateway's schema registry, which
	// the console's schema changes go through ("": none here), reached
	// with RegistryTLS when https.
	Registry    string
	RegistryTLS *tls.Config
	// Links keeps the topic links (nil: no page); LinksChanged is told
	// of a change.
	Links        *link.Store
	LinksChanged func()
	// Cluster describes the gateways and the SeaweedFS behind them.
	Cluster func(ctx context.Context) ClusterInfo
	// AdminURL and GrafanaURL are linked from the cluster page ("": not).
	AdminURL, GrafanaURL string
	// Secure marks the session cookie https-only.
	Secure bool
	// API serves the console's paths under /api/ (the links' API).
	API http.Handler
	// Audit records the console's logins and changes (nil: none).
	Audit *audit.Log
}

// ClusterInfo is what the cluster page shows beside what Kafka's APIs
// answer.
type ClusterInfo struct {
	Gateways []Gateway
	// Masters and Filers are SeaweedFS's.
	Masters, Filers []string
	// Storage names where the records are ("SeaweedMQ at ...").
	Storage string
	// WALCommit is the write-ahead log's group commit latency here.
	WALCommit Latency
}

// Gateway is one gateway of the cluster.
type Gateway struct {
	NodeID  int32
	Addr    string
	Rack    string
	Version string
	Since   time.Time // zero: not known
	Ready   bool
	Self    bool
}

// Latency summarizes a histogram: how many, their mean and 99th
// percentile (the upper bound of its bucket).
type Latency struct {
	Count      uint64
	Mean, P99  time.Duration
	HasSamples bool
}

// Console serves the pages.
type Console struct {
	opts     Options
	registry *http.Client
	pages    map[string]*template.Template
	mux      *http.ServeMux
	rates    rates
	lags     lags

	mu       sync.Mutex
	sessions map[string]*session
	shared   *session // without logins: everyone's
	closed   bool
	// sharing is the turn of making the shared session, waited for
	// within the request's context.
	sharing *semaphore.Weighted
	stop    chan struct{}
	done    chan struct{}
}

// session is one login: its Kafka client acts for its user.
type session struct {
	id        string
	csrf      string
	user      string // "" without logins
	password  string // for the registry's basic auth; never sent back
	principal string
	cl        *kgo.Client
	adm       *kadm.Client
	lastUsed  time.Time
}

func (s *session) close() { s.cl.Close() }

//go:embed templates/*.html static/*
var files embed.FS

// New returns a console; Close ends its sessions.
func New(opts Options) (*Console, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("console: no Kafka client")
	}
	if opts.MaxRecords <= 0 {
		opts.MaxRecords = DefaultMaxRecords
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	c := &Console{opts: opts, registry: &http.Client{Timeout: requestTimeout, Transport: &http.Transport{TLSClientConfig: opts.RegistryTLS}}, sessions: map[string]*session{}, sharing: semaphore.NewWeighted(1), stop: make(chan struct{}), done: make(chan struct{})}
	if err := c.parse(); err != nil {
		return nil, err
	}
	c.routes()
	go c.sweep()
	return c, nil
}

// Close ends the sessions and their clients.
func (c *Console) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	ss := make([]*session, 0, len(c.sessions)+1)
	for _, s := range c.sessions {
		ss = append(ss, s)
	}
	if c.shared != nil {
		ss = append(ss, c.shared)
	}
	c.sessions, c.shared = map[string]*session{}, nil
	c.mu.Unlock()
	close(c.stop)
	<-c.done
	c.lags.wg.Wait()
	for _, s := range ss {
		s.close()
	}
}

// sweep ends sessions left unused.
func (c *Console) sweep() {
	defer close(c.done)
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case now := <-t.C:
			var idle []*session
			c.mu.Lock()
			for id, s := range c.sessions {
				if now.Sub(s.lastUsed) > sessionIdle {
					delete(c.sessions, id)
					idle = append(idle, s)
				}
			}
			c.mu.Unlock()
			for _, s := range idle {
				s.close()
			}
		}
	}
}

func (c *Console) parse() error {
	c.pages = map[string]*template.Template{}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html")
	if err != nil {
		return err
	}
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return err
	}
	for _, name := range names {
		page := strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")
		if page == "layout" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(files, name)
		if err != nil {
			return fmt.Errorf("console: %s: %w", name, err)
		}
		c.pages[page] = t
	}
	return nil
}

// ServeHTTP serves the console.
func (c *Console) ServeHTTP(w http.ResponseWriter, q *http.Request) {
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	w.Header().Set("Referrer-Policy", "same-origin")
	c.mux.ServeHTTP(w, q)
}

func (c *Console) routes() {
	mux := http.NewServeMux()
	static, _ := fs.Sub(files, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /login", c.loginPage)
	mux.HandleFunc("POST /login", c.login)
	mux.HandleFunc("POST /logout", c.logout)
	if c.opts.API != nil {
		mux.Handle("/api/", c.opts.API)
	}
	page := func(pattern string, fn func(*request) error) { mux.HandleFunc(pattern, c.page(fn, false)) }
	change := func(pattern string, fn func(*request) error) { mux.HandleFunc(pattern, c.page(fn, true)) }
	page("GET /{$}", (*request).clusterPage)
	page("GET /topics", (*request).topicsPage)
	change("POST /topics", (*request).createTopic)
	page("GET /topics/{topic}", (*request).topicPage)
	change("POST /topics/{topic}/delete", (*request).deleteTopic)
	change("POST /topics/{topic}/configs", (*request).alterTopicConfigs)
	change("POST /topics/{topic}/partitions", (*request).addPartitions)
	page("GET /topics/{topic}/messages", (*request).messagesPage)
	page("GET /groups", (*request).groupsPage)
	page("GET /groups/{group}", (*request).groupPage)
	change("POST /groups/{group}/reset", (*request).resetOffsets)
	change("POST /groups/{group}/delete", (*request).deleteGroup)
	page("GET /schemas", (*request).schemasPage)
	page("GET /schemas/{subject}", (*request).subjectPage)
	change("POST /schemas", (*request).registerSchema)
	change("POST /schemas/{subject}/delete", (*request).deleteSubject)
	change("POST /schemas/{subject}/config", (*request).setCompatibility)
	page("GET /security", (*request).securityPage)
	change("POST /security/acls", (*request).createACL)
	change("POST /security/acls/delete", (*request).deleteACL)
	change("POST /security/users", (*request).upsertUser)
	change("POST /security/users/delete", (*request).deleteUser)
	change("POST /security/quotas", (*request).setQuota)
	page("GET /links", (*request).linksPage)
	change("POST /links/{name}/{action}", (*request).linkAction)
	c.mux = mux
}

// request is one page's: its session, the HTTP request and what the page
// shows.
type request struct {
	*session
	c    *Console
	w    http.ResponseWriter
	q    *http.Request
	ctx  context.Context
	host string
	// data is given to the template beside the layout's fields.
	data map[string]any
}

// render writes page with the request's data.
func (r *request) render(page string, status int) error {
	t := r.c.pages[page]
	if t == nil {
		return fmt.Errorf("no page %s", page)
	}
	r.data["User"] = r.user
	r.data["Logins"] = r.c.opts.Authenticate != nil
	r.data["CSRF"] = r.csrf
	r.data["ReadOnly"] = r.c.opts.ReadOnly
	r.data["Page"] = page
	r.data["HasLinks"] = r.c.opts.Links != nil
	r.w.Header().Set("Content-Type", "text/html; charset=utf-8")
	r.w.Header().Set("Cache-Control", "no-store")
	r.w.WriteHeader(status)
	return t.Execute(r.w, r.data)
}

// done answers a change by sending the browser back to where it goes,
// with what was done or why not.
func (r *request) done(to, msg string, err error) error {
	return r.doneAs("", to, msg, err)
}

// doneAs is done, the message's element named what-result.
func (r *request) doneAs(what, to, msg string, err error) error {
	if err != nil {
		return pageError{http.StatusBadRequest, err.Error()}
	}
	sep := "?"
	if strings.Contains(to, "?") {
		sep = "&"
	}
	if what != "" {
		msg = what + ":" + msg
	}
	http.Redirect(r.w, r.q, to+sep+"done="+urlEscape(msg), http.StatusSeeOther)
	return nil
}

// allowed is the ACLs' answer for the session's principal.
func (r *request) allowed(op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	return r.c.opts.Authorize == nil || r.c.opts.Authorize(r.principal, r.host, op, typ, name)
}

// pageError is a page's answer other than 200.
type pageError struct {
	status int
	msg    string
}

func (e pageError) Error() string { return e.msg }

func (c *Console) page(fn func(*request) error, changes bool) http.HandlerFunc {
	return func(w http.ResponseWriter, q *http.Request) {
		s := c.sessionOf(q)
		if s == nil {
			if c.opts.Authenticate == nil {
				var err error
				if s, err = c.anonymous(q.Context()); err != nil {
					http.Error(w, "the console cannot reach the gateways: "+err.Error(), http.StatusServiceUnavailable)
					return
				}
			} else {
				if q.Method == http.MethodGet {
					http.Redirect(w, q, "/login?to="+urlEscape(q.URL.RequestURI()), http.StatusSeeOther)
				} else {
					http.Error(w, "log in first", http.StatusUnauthorized)
				}
				return
			}
		}
		host, _, _ := net.SplitHostPort(q.RemoteAddr)
		ctx, cancel := context.WithTimeout(q.Context(), requestTimeout)
		defer cancel()
		r := &request{session: s, c: c, w: w, q: q, ctx: ctx, host: host, data: map[string]any{}}
		if changes {
			if c.opts.ReadOnly {
				r.fail(pageError{http.StatusForbidden, "the console is read-only (-console.readonly=false allows changes)"})
				return
			}
			if err := q.ParseForm(); err != nil || subtle.ConstantTimeCompare([]byte(q.PostFormValue("csrf")), []byte(s.csrf)) != 1 {
				r.fail(pageError{http.StatusForbidden, "the form is stale: load the page again"})
				return
			}
		}
		done := q.URL.Query().Get("done")
		r.data["DoneID"] = "done"
		if what, msg, ok := strings.Cut(done, ":"); ok && doneIDs[what] {
			r.data["DoneID"], done = what+"-result", msg
		}
		r.data["Done"] = done
		err := fn(r)
		if changes {
			detail := ""
			if err != nil {
				detail = err.Error()
			}
			c.opts.Audit.Change(s.principal, host, "console", q.Method+" "+q.URL.Path, auditActivity(q.URL.Path), nil, detail)
		}
		if err != nil {
			r.fail(err)
		}
	}
}

// fail shows an error page.
func (r *request) fail(err error) {
	status := http.StatusInternalServerError
	if pe, ok := err.(pageError); ok {
		status = pe.status
	}
	r.data = map[string]any{"Error": err.Error(), "Status": status}
	if rerr := r.render("error", status); rerr != nil {
		http.Error(r.w, err.Error(), status)
	}
}

// doneIDs name the results a test or a script may look for.
var doneIDs = map[string]bool{"reset": true, "create": true, "delete": true, "config": true, "register": true, "acl": true, "user": true, "quota": true, "link": true}

const cookieName = "kafka_gateway_console"

func (c *Console) sessionOf(q *http.Request) *session {
	if c.opts.Authenticate == nil {
		return nil
	}
	ck, err := q.Cookie(cookieName)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[ck.Value]
	if s != nil {
		s.lastUsed = time.Now()
	}
	return s
}

// anonymous is the session everyone shares without logins.
func (c *Console) anonymous(ctx context.Context) (*session, error) {
	if err := c.sharing.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	defer c.sharing.Release(1)
	c.mu.Lock()
	shared, closed := c.shared, c.closed
	c.mu.Unlock()
	if shared != nil {
		return shared, nil
	}
	if closed {
		return nil, errClosed
	}
	s, err := c.newSession(ctx, "", "")
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		s.close()
		return nil, errClosed
	}
	c.shared = s
	c.mu.Unlock()
	return s, nil
}

var errClosed = errors.New("the console is closed")

func (c *Console) newSession(ctx context.Context, user, password string) (*session, error) {
	opts, err := c.opts.Client(ctx, user, password)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.ClientID("kafka-gateway-console"))...)
	if err != nil {
		return nil, err
	}
	principal := "User:ANONYMOUS"
	if user != "" {
		principal = "User:" + user
	}
	return &session{id: randomID(), csrf: randomID(), user: user, password: password, principal: principal,
		cl: cl, adm: kadm.NewClient(cl), lastUsed: time.Now()}, nil
}

func randomID() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err) // the system has no randomness: nothing is safe
	}
	return hex.EncodeToString(b)
}

func (c *Console) loginPage(w http.ResponseWriter, q *http.Request) {
	if c.opts.Authenticate == nil {
		http.Redirect(w, q, "/", http.StatusSeeOther)
		return
	}
	c.showLogin(w, q.URL.Query().Get("to"), "", http.StatusOK)
}

func (c *Console) showLogin(w http.ResponseWriter, to, msg string, status int) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	c.pages["login"].Execute(w, map[string]any{"To": to, "Error": msg, "Page": "login"}) //nolint:errcheck // the browser went away
}

func (c *Console) login(w http.ResponseWriter, q *http.Request) {
	if c.opts.Authenticate == nil {
		http.Redirect(w, q, "/", http.StatusSeeOther)
		return
	}
	q.Body = http.MaxBytesReader(w, q.Body, 64<<10)
	if err := q.ParseForm(); err != nil {
		c.showLogin(w, "", "The form could not be read.", http.StatusBadRequest)
		return
	}
	user, password, to := q.PostFormValue("user"), q.PostFormValue("password"), q.PostFormValue("to")
	if !strings.HasPrefix(to, "/") || strings.HasPrefix(to, "//") {
		to = "/"
	}
	ctx, cancel := context.WithTimeout(q.Context(), requestTimeout)
	defer cancel()
	ok, err := false, error(nil)
	if user != "" {
		ok, err = c.opts.Authenticate(ctx, user, password)
	}
	ip, _, _ := net.SplitHostPort(q.RemoteAddr)
	if !ok {
		failure := err
		if failure == nil || isNotFound(failure) {
			failure = errors.New("wrong user or password")
		}
		c.opts.Audit.Authentication("User:"+user, ip, "password", "console", failure)
		msg := "Wrong user or password."
		if err != nil && !isNotFound(err) {
			msg = "The login could not be checked: " + err.Error()
		}
		c.showLogin(w, to, msg, http.StatusUnauthorized)
		return
	}
	s, err := c.newSession(ctx, user, password)
	if err != nil {
		c.showLogin(w, to, "The console cannot reach the gateways: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	var evicted *session
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		s.close()
		http.Error(w, "the console is closed", http.StatusServiceUnavailable)
		return
	}
	if len(c.sessions) >= maxSessions {
		for _, o := range c.sessions {
			if evicted == nil || o.lastUsed.Before(evicted.lastUsed) {
				evicted = o
			}
		}
		delete(c.sessions, evicted.id)
	}
	c.sessions[s.id] = s
	c.mu.Unlock()
	if evicted != nil {
		evicted.close()
	}
	c.opts.Audit.Authentication(s.principal, ip, "password", "console", nil)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.id, Path: "/", HttpOnly: true, Secure: c.opts.Secure, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, q, to, http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, q *http.Request) {
	if ck, err := q.Cookie(cookieName); err == nil {
		c.mu.Lock()
		s := c.sessions[ck.Value]
		if s != nil && q.PostFormValue("csrf") == s.csrf {
			delete(c.sessions, s.id)
		} else {
			s = nil
		}
		c.mu.Unlock()
		if s != nil {
			s.close()
		}
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: c.opts.Secure, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, q, "/login", http.StatusSeeOther)
}

func isNotFound(err error) bool { return errors.Is(err, user.ErrNotFound) }

// auditActivity is what a console change is, by its path.
func auditActivity(path string) int {
	switch {
	case strings.HasSuffix(path, "/delete"):
		return audit.ActivityDelete
	case path == "/topics" || path == "/schemas" || path == "/security/acls" || path == "/security/users":
		return audit.ActivityCreate
	}
	return audit.ActivityUpdate
}
