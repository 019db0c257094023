// Package gateway is the Kafka listener: it accepts client connections,
// serves each with the protocol handlers, and owns the gateway's lifecycle.
package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/sasl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/txn"
)

// Options configure a Server. The handlers' settings (protocol.Config)
// are given as they are; the server sets their advertised host, port and
// listeners from what it binds.
type Options struct {
	protocol.Config
	// Listeners are the listeners to serve; without any, one PLAINTEXT
	// listener on Listen, advertising AdvertisedHost:AdvertisedPort.
	Listeners []Listener
	// Listen is the address to bind, host:port; port 0 picks a free one.
	Listen string
	// AdvertisedHost and AdvertisedPort are what Metadata tells clients
	// to connect to; port 0 means the port actually bound.
	AdvertisedHost string
	AdvertisedPort int
	// TLS configures the SSL and SASL_SSL listeners.
	TLS TLSOptions
	// SASL checks logins on the SASL listeners.
	SASL *sasl.Authenticator
	// MaxReauth bounds a SASL session (connections.max.reauth.ms): a
	// client logs in again before it ends (KIP-368); 0: unbounded.
	MaxReauth time.Duration

	// MaxRequestSize bounds a request frame (socket.request.max.bytes).
	MaxRequestSize int
	// MaxQueuedBytes bounds the request bytes read and not yet answered,
	// over all connections (queued.max.request.bytes).
	MaxQueuedBytes int64
	// FetchResponseBytes bounds the record bytes fetch responses hold
	// until written, over all connections; 0:
	// protocol.DefaultFetchResponseBudget.
	FetchResponseBytes int64
	// ShutdownTimeout bounds how long Close waits for requests in flight.
	ShutdownTimeout time.Duration
	// MaxIdle closes a connection that sends no request for this long
	// (connections.max.idle.ms); 0: protocol.DefaultMaxIdle, <0: never.
	MaxIdle time.Duration
	// MaxConnections and MaxConnectionsPerIP bound open connections
	// (max.connections, max.connections.per.ip); the excess is closed at
	// accept. 0: unbounded.
	MaxConnections, MaxConnectionsPerIP int

	// Backend stores topics and records: SeaweedMQ.
	Backend storage.Backend
	// Groups coordinates consumer groups and keeps their offsets.
	Groups *group.Coordinator
	// Txns coordinates transactions (the handlers reach a transactional
	// id's coordinator on another gateway through Config.Txns).
	Txns *txn.Coordinator
	// ClusterReady reports whether the SeaweedFS cluster answers (for
	// /ready); nil means always.
	ClusterReady func(ctx context.Context) error
}

// Server is a running Kafka gateway.
type Server struct {
	opts      Options
	handler   *protocol.Handler
	listeners []*boundListener
	certs     *certFiles  // nil without a TLS listener
	tlsConfig *tls.Config // nil without a TLS listener

	queued    *semaphore.Weighted
	responses *protocol.ResponseBudget
	// connIDs numbers the connections: "cid:N" in every log line about
	// one, as the NATS server's.
	connIDs atomic.Uint64

	ctx     context.Context
	cancel  context.CancelFunc
	closing atomic.Bool

	mu    sync.Mutex
	conns map[*conn]struct{}
	perIP map[string]int // open connections by client address
	wg    sync.WaitGroup
}

// NewServer binds the listener and prepares the handlers; Serve accepts.
func NewServer(opts Options) (*Server, error) {
	if opts.Backend == nil {
		return nil, errors.New("gateway: no backend")
	}
	if opts.Groups == nil || opts.Txns == nil {
		return nil, errors.New("gateway: no group or transaction coordinator")
	}
	if opts.MaxRequestSize <= 0 {
		opts.MaxRequestSize = protocol.DefaultMaxRequestSize
	}
	if opts.FetchResponseBytes <= 0 {
		opts.FetchResponseBytes = protocol.DefaultFetchResponseBudget
	}
	if opts.MaxQueuedBytes <= 0 {
		opts.MaxQueuedBytes = protocol.DefaultMaxQueuedBytes
	}
	if opts.MaxQueuedBytes < int64(opts.MaxRequestSize) {
		opts.MaxQueuedBytes = int64(opts.MaxRequestSize) // one largest request must fit
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 10 * time.Second
	}
	switch {
	case opts.MaxIdle == 0:
		opts.MaxIdle = protocol.DefaultMaxIdle
	case opts.MaxIdle < 0:
		opts.MaxIdle = 0 // no deadline
	}
	if len(opts.Listeners) == 0 {
		l := Listener{Name: Plaintext, Bind: opts.Listen}
		if opts.AdvertisedHost != "" {
			l.Advertised = net.JoinHostPort(opts.AdvertisedHost, strconv.Itoa(opts.AdvertisedPort))
		}
		opts.Listeners = []Listener{l}
	}
	s := &Server{
		opts:      opts,
		queued:    semaphore.NewWeighted(opts.MaxQueuedBytes),
		responses: protocol.NewResponseBudget(opts.FetchResponseBytes),
		conns:     map[*conn]struct{}{},
		perIP:     map[string]int{},
	}
	for _, l := range opts.Listeners {
		if l.TLS() && s.certs == nil {
			certs, err := newCertFiles(opts.TLS)
			if err != nil {
				return nil, fmt.Errorf("gateway: %s listener: %w", l.Name, err)
			}
			s.certs, s.tlsConfig = certs, certs.config()
		}
		if l.SASL() && (opts.SASL == nil || len(opts.SASL.Mechanisms()) == 0) {
			return nil, fmt.Errorf("gateway: %s listener: no SASL mechanism enabled (-sasl.enabled.mechanisms)", l.Name)
		}
	}
	for _, l := range opts.Listeners {
		bl, err := bind(l)
		if err != nil {
			for _, b := range s.listeners {
				b.ln.Close()
			}
			return nil, fmt.Errorf("gateway: %s listener: %w", l.Name, err)
		}
		s.listeners = append(s.listeners, bl)
	}
	first := s.listeners[0]
	var names []string
	for _, bl := range s.listeners {
		names = append(names, bl.Name+"://"+net.JoinHostPort(bl.host, strconv.Itoa(bl.port)))
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	cfg := opts.Config
	cfg.Host, cfg.Port, cfg.Listeners = first.host, int32(first.port), strings.Join(names, ",")
	s.handler = protocol.New(cfg, opts.Backend, opts.Groups, opts.Txns)
	return s, nil
}

// boundListener is a listener with its socket and advertised address.
type boundListener struct {
	Listener
	ln   net.Listener
	host string // advertised
	port int
}

func bind(l Listener) (*boundListener, error) {
	ln, err := net.Listen("tcp", l.Bind)
	if err != nil {
		return nil, err
	}
	bl := &boundListener{Listener: l, ln: ln}
	bound := ln.Addr().(*net.TCPAddr)
	bl.host, bl.port = bound.IP.String(), bound.Port
	if l.Advertised != "" {
		host, port, _ := net.SplitHostPort(l.Advertised)
		if host != "" {
			bl.host = host
		}
		if p, err := strconv.Atoi(port); err == nil && p != 0 {
			bl.port = p
		}
	}
	return bl, nil
}

// Addr is the bound address of the first listener.
func (s *Server) Addr() net.Addr { return s.listeners[0].ln.Addr() }

// Advertised is the host:port Metadata gives clients of the first
// listener.
func (s *Server) Advertised() string {
	return net.JoinHostPort(s.listeners[0].host, strconv.Itoa(s.listeners[0].port))
}

// Listeners describes the listeners: "NAME://bound (advertised host:port)".
func (s *Server) Listeners() string {
	var out []string
	for _, bl := range s.listeners {
		out = append(out, fmt.Sprintf("%s://%s (advertised %s)", bl.Name, bl.ln.Addr(), net.JoinHostPort(bl.host, strconv.Itoa(bl.port))))
	}
	return strings.Join(out, ", ")
}

// Serve accepts connections on every listener until Close; it returns nil
// after Close.
func (s *Server) Serve() error {
	errs := make(chan error, len(s.listeners))
	for _, bl := range s.listeners {
		go func() { errs <- s.accept(bl) }()
	}
	var first error
	for range s.listeners {
		if err := <-errs; err != nil && first == nil {
			first = err
			s.Close()
		}
	}
	return first
}

func (s *Server) accept(bl *boundListener) error {
	for {
		nc, err := bl.ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		c := newConn(s, bl, nc)
		s.mu.Lock()
		if s.closing.Load() {
			s.mu.Unlock()
			nc.Close()
			return nil
		}
		ip := c.clientHost
		if reason := s.overLimit(ip); reason != "" {
			s.mu.Unlock()
			metrics.ConnectionsRefused.Inc()
			glog.V(1).Infof("kafka conn %s: refused: %s", c.name, reason)
			nc.Close()
			continue
		}
		// Over its IP's connection_creation_rate (KIP-612), the
		// connection is held unserved for the throttle, then closed; it
		// counts against the connection limits meanwhile.
		throttle := s.opts.Quotas.Connect(strings.TrimPrefix(ip, "/"))
		s.conns[c] = struct{}{}
		s.perIP[ip]++
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			if throttle > 0 {
				metrics.ConnectionsThrottled.Inc()
				c.Mute(throttle)
				c.waitMuted() //nolint:errcheck // closed either way
				c.close(fmt.Errorf("over the connection_creation_rate of %s: held %v, closed unserved", ip, throttle))
			} else {
				glog.V(2).Infof("kafka conn %s: accepted on %s", c.name, c.listener.Name)
				c.serve()
			}
			s.mu.Lock()
			delete(s.conns, c)
			if s.perIP[ip]--; s.perIP[ip] <= 0 {
				delete(s.perIP, ip)
			}
			s.mu.Unlock()
		}()
	}
}

// Close stops accepting, lets requests in flight finish for up to the
// shutdown timeout, then closes every connection and waits for them.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closing.Swap(true) {
		s.mu.Unlock()
		return nil
	}
	for _, bl := range s.listeners {
		bl.ln.Close()
	}
	for c := range s.conns {
		c.stopReading()
	}
	s.mu.Unlock()
	s.handler.Drain() // long-polling fetches answer now; writes and commits finish

	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.opts.ShutdownTimeout):
		glog.Warningf("kafka gateway: requests still in flight after %v; closing their connections", s.opts.ShutdownTimeout)
	}
	s.cancel()
	s.mu.Lock()
	for c := range s.conns {
		c.close(errors.New("gateway shutting down"))
	}
	s.mu.Unlock()
	<-done
	return nil
}

// overLimit says why a new connection from ip is refused, or "". s.mu is
// held.
func (s *Server) overLimit(ip string) string {
	switch {
	case s.opts.MaxConnections > 0 && len(s.conns) >= s.opts.MaxConnections:
		return fmt.Sprintf("%d connections open (max.connections)", len(s.conns))
	case s.opts.MaxConnectionsPerIP > 0 && s.perIP[ip] >= s.opts.MaxConnectionsPerIP:
		return fmt.Sprintf("%d connections open from %s (max.connections.per.ip)", s.perIP[ip], ip)
	}
	return ""
}
