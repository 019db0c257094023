package gateway

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
)

// conn serves one client connection: one reader decodes requests and starts
// them in order, one writer sends their responses in the same order.
type conn struct {
	srv      *Server
	listener *boundListener
	nc       net.Conn
	id       uint64 // the server's number for it
	// name is "cid:<id> <remote address>", what log lines call it.
	name string
	// principal is who the connection is: from its client certificate,
	// then its SASL login; Anonymous without either.
	principal string
	// session is the SASL login, on a SASL listener.
	session *session

	deadlineMu sync.Mutex
	stopped    bool // by stopReading: no deadline is set after it
	// clientHost is the peer's host as Kafka shows it: "/127.0.0.1".
	clientHost string

	ctx    context.Context
	cancel context.CancelFunc

	replies chan pendingReply

	// mutedUntil (Unix nanoseconds) is when the reader may read the next
	// request again: a client over its quota is throttled.
	mutedUntil atomic.Int64
	unmuted    chan struct{} // closed by stopReading: a mute ends at once

	closeOnce sync.Once

	// What the client called itself in ApiVersions (KIP-511), set and
	// read by handlers on the reader.
	softwareName, softwareVersion string
}

// SetClientSoftware keeps the client's name and version (protocol.Conn).
func (c *conn) SetClientSoftware(name, version string) {
	c.softwareName, c.softwareVersion = name, version
}

// ClientSoftware is the client's name and version (protocol.Conn).
func (c *conn) ClientSoftware() (name, version string) { return c.softwareName, c.softwareVersion }

// RemoteAddr is the client's address (protocol.Conn).
func (c *conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// Mute makes the reader read no request for d from now (protocol.Muter):
// the client is over its quota.
func (c *conn) Mute(d time.Duration) {
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// waitMuted waits out a mute, or until the connection closes.
func (c *conn) waitMuted() error {
	wait := time.Until(time.Unix(0, c.mutedUntil.Load()))
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-c.ctx.Done():
		return c.ctx.Err()
	case <-c.unmuted:
		return nil
	}
}

type pendingReply struct {
	correlationID int32
	reply         protocol.Reply
	size          int64 // request bytes held until the reply is done
	api           string
	read          time.Time // when the request was read
	// bare is a SASL message answered in a bare frame (after a v0
	// SaslHandshake), without a Kafka header.
	bare []byte
	// req gives back what its response held of the fetch response
	// budget once written.
	req *protocol.Request
}

// release gives back what the reply held of the fetch response budget.
func (p *pendingReply) release() {
	if p.req != nil {
		p.req.ReleaseResponse()
	}
}

func newConn(srv *Server, l *boundListener, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(srv.ctx)
	host := nc.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	id := srv.connIDs.Add(1)
	c := &conn{
		id:         id,
		name:       fmt.Sprintf("cid:%d %s", id, nc.RemoteAddr()),
		unmuted:    make(chan struct{}),
		clientHost: "/" + host,
		srv:        srv,
		listener:   l,
		principal:  Anonymous,
		nc:         nc,
		ctx:        ctx,
		cancel:     cancel,
		replies:    make(chan pendingReply, protocol.MaxInFlightPerConn),
	}
	if l.SASL() {
		c.session = &session{auth: srv.opts.SASL, maxReauth: srv.opts.MaxReauth, audit: srv.opts.Audit, ip: host}
	}
	return c
}

// close ends the connection; every close goes through here with its reason.
func (c *conn) close(reason error) {
	c.closeOnce.Do(func() {
		if reason != nil && !errors.Is(reason, io.EOF) && !errors.Is(reason, net.ErrClosed) && !errors.Is(reason, context.Canceled) {
			glog.V(1).Infof("kafka conn %s: closing: %v", c.name, reason)
		}
		c.cancel()
		c.nc.Close()
	})
}

func (c *conn) serve() {
	metrics.Connections.Inc()
	metrics.ConnectionsTotal.Inc()
	defer metrics.Connections.Dec()
	if c.listener.TLS() {
		if err := c.handshakeTLS(); err != nil {
			c.close(fmt.Errorf("TLS handshake: %w", err))
			return
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.writeLoop()
	}()
	err := c.readLoop()
	// Requests already read are answered before the connection closes.
	close(c.replies)
	wg.Wait()
	c.close(err)
}

// stopReading makes the reader stop taking requests, for a graceful
// shutdown: those in flight are still answered.
func (c *conn) stopReading() {
	c.deadlineMu.Lock()
	defer c.deadlineMu.Unlock()
	if !c.stopped {
		close(c.unmuted)
	}
	c.stopped = true
	c.nc.SetReadDeadline(time.Now()) //nolint:errcheck // a closed conn stops anyway
}

// readWithin sets how long the next read may wait for bytes, unless the
// reader was stopped.
func (c *conn) readWithin(d time.Duration) {
	c.deadlineMu.Lock()
	defer c.deadlineMu.Unlock()
	if c.stopped {
		return
	}
	var at time.Time
	if d > 0 {
		at = time.Now().Add(d)
	}
	c.nc.SetReadDeadline(at) //nolint:errcheck // a closed conn stops anyway
}

// handshakeTLS runs the TLS handshake, bounded in time so that a peer that
// sends nothing cannot hold the connection, and takes the principal of a
// verified client certificate.
func (c *conn) handshakeTLS() error {
	tc := tls.Server(c.nc, c.srv.tlsConfig)
	c.nc = tc
	ctx, cancel := context.WithTimeout(c.ctx, protocol.TLSHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return err
	}
	if p := c.srv.certs.principal(tc.ConnectionState()); p != "" {
		c.principal = p
	}
	return nil
}

func (c *conn) readLoop() error {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var sizeBuf [4]byte
	for {
		// Between requests a connection may be idle for
		// connections.max.idle.ms; the bytes of a request must keep
		// coming (FrameProgressTimeout) once it has begun.
		if r.Buffered() == 0 {
			c.readWithin(c.srv.opts.MaxIdle)
		}
		if _, err := io.ReadFull(r, sizeBuf[:]); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && !c.isStopped() {
				return fmt.Errorf("idle for %v (connections.max.idle.ms)", c.srv.opts.MaxIdle)
			}
			return err
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		limit := c.srv.opts.MaxRequestSize
		if c.session != nil && !c.session.authenticated() {
			// Before the login only small requests are read, as
			// Kafka's sasl.server.max.receive.size.
			limit = min(limit, protocol.MaxUnauthenticatedRequestSize)
		}
		if size < 0 || int(size) > limit {
			return fmt.Errorf("request of %d bytes exceeds the limit of %d", size, limit)
		}
		// Request bytes held by the whole gateway are bounded, and taken
		// as the bytes arrive: a reader waits for room before its buffer
		// grows, so frames announced and not sent hold nothing.
		var held int64
		whole := time.Now().Add(protocol.FrameTimeout(int(size)))
		frame, err := readFrame(r, int(size), func(grow int) error {
			if r.Buffered() < int(size) {
				// the read may wait for the peer (a frame already
				// buffered, as most are, needs no deadline), but
				// the whole frame comes within its own time
				left := time.Until(whole)
				if left <= 0 {
					metrics.ConnectionsCut.WithLabelValues("slow_request").Inc()
					return fmt.Errorf("a %d-byte request not received within %v", size, protocol.FrameTimeout(int(size)))
				}
				c.readWithin(min(protocol.FrameProgressTimeout, left))
			}
			if grow == 0 {
				return nil
			}
			if err := c.srv.queued.Acquire(c.ctx, int64(grow)); err != nil {
				return err
			}
			held += int64(grow)
			return nil
		})
		if err != nil {
			c.srv.queued.Release(held)
			return err
		}
		// held is size now: the growths add up to the frame. The bytes
		// stay held until the writer has answered the request; one
		// that does not reach the writer gives them back here.
		queued, err := c.request(frame, int64(size))
		if !queued {
			c.srv.queued.Release(int64(size))
		}
		if err != nil {
			return err
		}
	}
}

// request takes one request's frame: checked, handled, its reply handed
// to the writer (queued: the writer releases its bytes then).
func (c *conn) request(frame []byte, size int64) (queued bool, err error) {
	// A throttled client's next request waits out the throttle (the mute
	// may have begun while this one was being read).
	if err := c.waitMuted(); err != nil {
		return false, err
	}
	if s := c.session; s != nil && s.bare && s.login != nil {
		return c.bareLogin(frame, size)
	}
	req, err := protocol.Decode(frame)
	if err != nil {
		return false, err
	}
	if s := c.session; s != nil {
		if !s.allowed(req.Key) {
			return false, fmt.Errorf("%s request before authentication", kmsg.NameForKey(req.Key))
		}
		if s.expired(time.Now()) && req.Key != int16(kmsg.SASLHandshake) && req.Key != int16(kmsg.SASLAuthenticate) {
			return false, fmt.Errorf("session of %s expired at %v without re-authentication", s.principal, s.expires)
		}
		req.Session = s
	}
	req.ClientHost, req.Listener, req.Principal = c.clientHost, c.listener.Name, c.principal
	req.Size, req.Conn, req.ConnID = int(size), c, c.id
	req.Responses = c.srv.responses
	if s := c.session; s != nil && s.authenticated() {
		req.Principal, req.TokenAuthenticated = s.principal, s.token
	}
	api := kmsg.NameForKey(req.Key)
	metrics.Requests.WithLabelValues(api, strconv.Itoa(int(req.Version))).Inc()
	read := time.Now()
	reply, err := c.handle(req, api)
	if err != nil {
		return false, err
	}
	if err := c.queue(pendingReply{correlationID: req.CorrelationID, reply: reply, size: size, api: api, read: read, req: req}); err != nil {
		return false, err
	}
	if s := c.session; s != nil && s.failed != nil {
		return true, s.failed // answered, then closed
	}
	return true, nil
}

// queue hands a reply to the writer.
func (c *conn) queue(p pendingReply) error {
	select {
	case c.replies <- p:
		return nil
	case <-c.ctx.Done():
		return c.ctx.Err()
	}
}

// bareLogin takes one message of a login begun by a v0 SaslHandshake: a
// bare frame, answered with a bare frame. A failed login closes the
// connection without an answer, as Kafka does (v0 has no error field).
func (c *conn) bareLogin(msg []byte, size int64) (queued bool, err error) {
	answer, _, refused, text := c.session.Authenticate(c.ctx, msg)
	if refused != nil {
		return false, errors.New(text)
	}
	if answer == nil {
		answer = []byte{}
	}
	if c.session.authenticated() {
		c.session.bare = false
	}
	if err := c.queue(pendingReply{size: size, api: "SASLAuthenticate", read: time.Now(), bare: answer}); err != nil {
		return false, err
	}
	return true, nil
}

// readFrame reads a frame of size bytes, growing its buffer as the bytes
// arrive, doubling it from 64 KiB, so that a peer announcing a large
// frame and sending little holds no more than twice what it sent. before
// is called before each read with the bytes the buffer grows by first (0
// if none); the growths add up to size exactly.
func readFrame(r io.Reader, size int, before func(grow int) error) ([]byte, error) {
	const step = 64 << 10
	var frame []byte
	for len(frame) < size {
		grow := 0
		if len(frame) == cap(frame) {
			grow = min(size-len(frame), max(cap(frame), step))
		}
		if err := before(grow); err != nil {
			return nil, err
		}
		if grow > 0 {
			nb := make([]byte, len(frame), len(frame)+grow)
			copy(nb, frame)
			frame = nb
		}
		n, err := r.Read(frame[len(frame):cap(frame)])
		frame = frame[:len(frame)+n]
		if err != nil && len(frame) < size {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				err = fmt.Errorf("no byte of a %d-byte request for %v (%d read): %w", size, protocol.FrameProgressTimeout, len(frame), err)
			}
			return nil, err
		}
	}
	if frame == nil {
		frame = []byte{}
	}
	return frame, nil
}

func (c *conn) isStopped() bool {
	c.deadlineMu.Lock()
	defer c.deadlineMu.Unlock()
	return c.stopped
}

func (c *conn) writeLoop() {
	w := bufio.NewWriterSize(c.nc, 64<<10)
	var buf []byte
	for p := range c.replies {
		if p.bare != nil {
			c.srv.queued.Release(p.size)
			buf = binary.BigEndian.AppendUint32(buf[:0], uint32(len(p.bare)))
			buf = append(buf, p.bare...)
			if _, err := w.Write(buf); err != nil {
				c.close(err)
				continue
			}
			if err := w.Flush(); err != nil {
				c.close(err)
			}
			continue
		}
		resp, err := c.reply(p)
		c.srv.queued.Release(p.size)
		if err != nil {
			p.release()
			c.close(err)
			continue // drain so the reader is never stuck
		}
		if resp == nil {
			p.release()
			metrics.RequestSeconds.WithLabelValues(p.api).Observe(time.Since(p.read).Seconds())
			continue
		}
		metrics.CountErrors(p.api, resp)
		// A fetch's record batches are written as they are, not
		// copied into the frame first.
		pieces := protocol.ResponseFrame(buf[:0], p.correlationID, resp)
		buf = pieces[0]
		var werr error
		for _, piece := range pieces {
			if _, werr = w.Write(piece); werr != nil {
				break
			}
		}
		p.release() // the records are in the writer's buffer or sent
		if werr != nil {
			c.close(werr)
			continue
		}
		if len(c.replies) == 0 {
			if err := w.Flush(); err != nil {
				c.close(err)
			}
		}
		metrics.RequestSeconds.WithLabelValues(p.api).Observe(time.Since(p.read).Seconds())
		if cap(buf) > 1<<20 {
			buf = nil // do not keep a large fetch's buffer per connection
		}
	}
}

// handle runs a request's handler; a panic in it closes this connection
// only, logged with the API and counted, and the gateway goes on.
func (c *conn) handle(req *protocol.Request, api string) (reply protocol.Reply, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = c.panicked(api, v)
		}
	}()
	return c.srv.handler.Handle(c.ctx, req), nil
}

// reply runs a request's Reply, recovering a panic as handle does.
func (c *conn) reply(p pendingReply) (resp kmsg.Response, err error) {
	defer func() {
		if v := recover(); v != nil {
			resp, err = nil, c.panicked(p.api, v)
		}
	}()
	return p.reply()
}

func (c *conn) panicked(api string, v any) error {
	return guard.Recovered(api, "connection "+c.name, v)
}
