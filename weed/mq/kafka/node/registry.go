package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/audit"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/registry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// registryListener is one of -schema.registry.listeners.
type registryListener struct {
	tls  bool
	bind string // host:port
}

// parseHTTPListeners reads an HTTP server's listeners, flag
// ("http://0.0.0.0:8081,https://..."), and returns them with the URL the
// other gateways reach it at: the first listener's, with advertised as its
// host when it binds every address.
func parseHTTPListeners(flag, spec, advertised string) ([]registryListener, string, error) {
	var out []registryListener
	var first string
	for _, s := range strings.Split(spec, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Port() == "" || (u.Path != "" && u.Path != "/") {
			return nil, "", fmt.Errorf("%s: %q is not http(s)://host:port", flag, s)
		}
		l := registryListener{tls: u.Scheme == "https", bind: u.Host}
		out = append(out, l)
		if first == "" {
			host := u.Hostname()
			if host == "" || host == "0.0.0.0" || host == "::" {
				host = advertised
			}
			first = u.Scheme + "://" + net.JoinHostPort(host, u.Port())
		}
	}
	return out, first, nil
}

// schemaRegistry is the running registry: its log and HTTP servers.
type schemaRegistry struct {
	reg     *registry.Registry
	log     *registry.KafkaLog
	servers []*http.Server
}

// Schema is the registry's schema of an id, for the Iceberg tables: an id
// not known yet is looked for again once the registry has read _schemas
// to its end (it may have been registered on another gateway a moment
// ago).
func (r *schemaRegistry) Schema(id int) (any, error) {
	s, err := r.reg.State().Schema(id)
	if err == nil {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if serr := r.reg.Sync(ctx); serr != nil {
		return nil, fmt.Errorf("%w (and the registry could not be read to its end: %v)", err, serr)
	}
	return r.reg.State().Schema(id)
}

// Latest is the id of a subject's latest version, read as Schema is.
func (r *schemaRegistry) Latest(subject string) (int, error) {
	id, err := r.reg.State().Latest(subject)
	if err == nil {
		return id, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if serr := r.reg.Sync(ctx); serr != nil {
		return 0, fmt.Errorf("%w (and the registry could not be read to its end: %v)", err, serr)
	}
	return r.reg.State().Latest(subject)
}

// startSchemaRegistry serves the registry on the listeners, keeping it in
// _schemas through this gateway's own Kafka listener (kafkaOpts: seeds,
// TLS, SASL) and reading it into state; the leader of _schemas writes,
// the others forward to it. security says who may do what (its Leader is
// set here).
func startSchemaRegistry(state *registry.State, listeners []registryListener, kafkaOpts []kgo.Opt, members *membership.Membership,
	security registry.HandlerOptions, certFile, keyFile string, auditLog *audit.Log) (*schemaRegistry, error) {
	log, err := registry.NewKafkaLog(kafkaOpts, state)
	if err != nil {
		return nil, err
	}
	reg := registry.New(registry.Options{State: state, Log: log})
	key := membership.PartitionKey(registry.Topic, 0)
	security.Leader = func() (string, bool) {
		owner, _, ok := members.Owner(key)
		if !ok {
			return "", false
		}
		if owner.NodeID == members.Self().NodeID {
			_, serving := members.Serving(key)
			return "", serving
		}
		return owner.Registry, false
	}
	handler := auditHTTP(auditLog, "schema-registry", registry.Handler(reg, security))
	r := &schemaRegistry{reg: reg, log: log}
	for _, l := range listeners {
		ln, err := net.Listen("tcp", l.bind)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("schema registry on %s: %w", l.bind, err)
		}
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		r.servers = append(r.servers, srv)
		scheme := "http"
		if l.tls {
			scheme = "https"
			if certFile == "" || keyFile == "" {
				ln.Close()
				r.Close()
				return nil, errors.New("an https schema registry listener needs -ssl.cert and -ssl.key")
			}
		}
		go func() {
			var err error
			if l.tls {
				err = srv.ServeTLS(ln, certFile, keyFile)
			} else {
				err = srv.Serve(ln)
			}
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				glog.Errorf("kafka gateway: schema registry on %s: %v", l.bind, err)
			}
		}()
		glog.V(0).Infof("kafka gateway: schema registry on %s://%s", scheme, ln.Addr())
	}
	log.Start()
	return r, nil
}

// Close stops the HTTP servers, then reading the log.
func (r *schemaRegistry) Close() {
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range r.servers {
		s.Shutdown(ctx) //nolint:errcheck // closing anyway
	}
	r.log.Close()
}

// registrySecurity is the registry's logins (HTTP basic auth with the
// gateway's SCRAM users, when asked for) and its ACLs (the authorizer's,
// when it is on).
func registrySecurity(basicAuth bool, users *user.Store, authz *acl.Authorizer) registry.HandlerOptions {
	var o registry.HandlerOptions
	if basicAuth {
		o.Authenticate = users.VerifyPassword
	}
	if authz != nil {
		o.Authorize = authz.Authorize
	}
	return o
}
