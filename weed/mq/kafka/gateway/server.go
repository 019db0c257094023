// Package gateway is the Kafka listener: it accepts client connections,
// serves each with the protocol handlers, and owns the gateway's lifecycle.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/txn"
)

// Options configure a Server.
type Options struct {
	// Listen is the address to bind, host:port; port 0 picks a free one.
	Listen string
	// AdvertisedHost and AdvertisedPort are what Metadata tells clients
	// to connect to; port 0 means the port actually bound.
	AdvertisedHost string
	AdvertisedPort int
	NodeID         int32
	ClusterID      string

	DefaultPartitions int32
	AutoCreateTopics  bool
	// MaxRequestSize bounds a request frame (socket.request.max.bytes).
	MaxRequestSize int
	// MaxQueuedBytes bounds the request bytes read and not yet answered,
	// over all connections (queued.max.request.bytes).
	MaxQueuedBytes int64
	// ShutdownTimeout bounds how long Close waits for requests in flight.
	ShutdownTimeout time.Duration

	// Backend stores topics and records: SeaweedMQ.
	Backend protocol.Backend
	// Groups coordinates consumer groups and keeps their offsets.
	Groups *group.Coordinator
	// Txns coordinates transactions.
	Txns *txn.Coordinator
	// Cluster tells which gateway leads each partition and coordinates
	// each group and transactional id; nil: this one, all of them.
	Cluster protocol.Cluster
	// Peers reaches the other gateways.
	Peers protocol.Peers
	// ClusterReady reports whether the SeaweedFS cluster answers (for
	// /ready); nil means always.
	ClusterReady func(ctx context.Context) error
}

// Server is a running Kafka gateway.
type Server struct {
	opts    Options
	handler *protocol.Handler
	ln      net.Listener

	queued *semaphore.Weighted

	ctx     context.Context
	cancel  context.CancelFunc
	closing atomic.Bool

	mu    sync.Mutex
	conns map[*conn]struct{}
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
	if opts.MaxQueuedBytes <= 0 {
		opts.MaxQueuedBytes = protocol.DefaultMaxQueuedBytes
	}
	if opts.MaxQueuedBytes < int64(opts.MaxRequestSize) {
		opts.MaxQueuedBytes = int64(opts.MaxRequestSize) // one largest request must fit
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 10 * time.Second
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("gateway: listen on %s: %w", opts.Listen, err)
	}
	if opts.AdvertisedPort == 0 {
		opts.AdvertisedPort = ln.Addr().(*net.TCPAddr).Port
	}
	if opts.AdvertisedHost == "" {
		host, _, _ := net.SplitHostPort(ln.Addr().String())
		opts.AdvertisedHost = host
	}
	s := &Server{
		opts:   opts,
		ln:     ln,
		queued: semaphore.NewWeighted(opts.MaxQueuedBytes),
		conns:  map[*conn]struct{}{},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.handler = protocol.New(protocol.Config{
		NodeID:            opts.NodeID,
		Host:              opts.AdvertisedHost,
		Port:              int32(opts.AdvertisedPort),
		ClusterID:         opts.ClusterID,
		DefaultPartitions: opts.DefaultPartitions,
		AutoCreateTopics:  opts.AutoCreateTopics,
		Cluster:           opts.Cluster,
		Peers:             opts.Peers,
	}, opts.Backend, opts.Groups, opts.Txns)
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Advertised is the host:port given to clients in Metadata.
func (s *Server) Advertised() string {
	return net.JoinHostPort(s.opts.AdvertisedHost, strconv.Itoa(s.opts.AdvertisedPort))
}

// Serve accepts connections until Close; it returns nil after Close.
func (s *Server) Serve() error {
	for {
		nc, err := s.ln.Accept()
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
		c := newConn(s, nc)
		s.mu.Lock()
		if s.closing.Load() {
			s.mu.Unlock()
			nc.Close()
			return nil
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			glog.V(2).Infof("kafka conn %s: accepted", c.remote)
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
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
	s.ln.Close()
	for c := range s.conns {
		c.stopReading()
	}
	s.mu.Unlock()

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
