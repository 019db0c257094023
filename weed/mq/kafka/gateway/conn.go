package gateway

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
)

// conn serves one client connection: one reader decodes requests and starts
// them in order, one writer sends their responses in the same order.
type conn struct {
	srv    *Server
	nc     net.Conn
	remote string
	// clientHost is the peer's host as Kafka shows it: "/127.0.0.1".
	clientHost string

	ctx    context.Context
	cancel context.CancelFunc

	replies chan pendingReply

	closeOnce sync.Once
}

type pendingReply struct {
	correlationID int32
	reply         protocol.Reply
	size          int64 // request bytes held until the reply is done
	api           string
	read          time.Time // when the request was read
}

func newConn(srv *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(srv.ctx)
	host := nc.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return &conn{
		clientHost: "/" + host,
		srv:        srv,
		nc:         nc,
		remote:     nc.RemoteAddr().String(),
		ctx:        ctx,
		cancel:     cancel,
		replies:    make(chan pendingReply, protocol.MaxInFlightPerConn),
	}
}

// close ends the connection; every close goes through here with its reason.
func (c *conn) close(reason error) {
	c.closeOnce.Do(func() {
		if reason != nil && !errors.Is(reason, io.EOF) && !errors.Is(reason, net.ErrClosed) && !errors.Is(reason, context.Canceled) {
			glog.V(1).Infof("kafka conn %s: closing: %v", c.remote, reason)
		}
		c.cancel()
		c.nc.Close()
	})
}

func (c *conn) serve() {
	metrics.Connections.Inc()
	metrics.ConnectionsTotal.Inc()
	defer metrics.Connections.Dec()
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
	c.nc.SetReadDeadline(time.Now()) //nolint:errcheck // a closed conn stops anyway
}

func (c *conn) readLoop() error {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var sizeBuf [4]byte
	for {
		if _, err := io.ReadFull(r, sizeBuf[:]); err != nil {
			return err
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if size < 0 || int(size) > c.srv.opts.MaxRequestSize {
			return fmt.Errorf("request of %d bytes exceeds the limit of %d", size, c.srv.opts.MaxRequestSize)
		}
		// Request bytes held by the whole gateway are bounded; a reader
		// waits here until answered requests free enough.
		if err := c.srv.queued.Acquire(c.ctx, int64(size)); err != nil {
			return err
		}
		frame, err := readFrame(r, int(size))
		if err != nil {
			c.srv.queued.Release(int64(size))
			return err
		}
		req, err := protocol.Decode(frame)
		if err != nil {
			c.srv.queued.Release(int64(size))
			return err
		}
		req.ClientHost = c.clientHost
		api := kmsg.NameForKey(req.Key)
		metrics.Requests.WithLabelValues(api, strconv.Itoa(int(req.Version))).Inc()
		read := time.Now()
		reply := c.srv.handler.Handle(c.ctx, req)
		select {
		case c.replies <- pendingReply{req.CorrelationID, reply, int64(size), api, read}:
		case <-c.ctx.Done():
			c.srv.queued.Release(int64(size))
			return c.ctx.Err()
		}
	}
}

// readFrame reads a frame of size bytes, growing its buffer as the bytes
// arrive, so that a peer announcing a large frame and sending little does
// not make the gateway allocate it all at once.
func readFrame(r io.Reader, size int) ([]byte, error) {
	const step = 1 << 20
	frame := make([]byte, 0, min(size, step))
	for len(frame) < size {
		if len(frame) == cap(frame) {
			frame = append(frame, make([]byte, min(size-len(frame), max(cap(frame), step)))...)[:len(frame)]
		}
		n, err := r.Read(frame[len(frame):min(size, cap(frame))])
		frame = frame[:len(frame)+n]
		if err != nil && len(frame) < size {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return frame, nil
}

func (c *conn) writeLoop() {
	w := bufio.NewWriterSize(c.nc, 64<<10)
	var buf []byte
	for p := range c.replies {
		resp, err := p.reply()
		c.srv.queued.Release(p.size)
		if err != nil {
			c.close(err)
			continue // drain so the reader is never stuck
		}
		if resp == nil {
			metrics.RequestSeconds.WithLabelValues(p.api).Observe(time.Since(p.read).Seconds())
			continue
		}
		metrics.CountErrors(p.api, resp)
		buf = protocol.AppendResponse(buf[:0], p.correlationID, resp)
		if _, err := w.Write(buf); err != nil {
			c.close(err)
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
