package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Six connections that each announce a ~100 MiB request and send nothing
// once stalled the whole gateway: each reserved its frame from the
// gateway-wide 512 MiB budget before reading it. Now the budget is taken as
// bytes arrive, and another client is served at once.
func TestAnnouncedFramesDoNotStall(t *testing.T) {
	for i := 0; i < 6; i++ {
		c := dialRaw(t)
		var size [4]byte
		binary.BigEndian.PutUint32(size[:], 100<<20-16)
		c.send(size[:])
		c.send([]byte{0, 3, 0, 12}) // the first bytes of a header, then nothing
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl := newClient(t)
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		t.Fatalf("a seventh client's Metadata with six frames announced and not sent: %v", err)
	}
}

// maxConnsHere is how many connections this test process may open, below
// the limit on open files (the gateway has its own).
func maxConnsHere(want int) int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < uint64(want)+500 {
		return int(lim.Cur) - 500
	}
	return want
}

// openConns opens n connections to addr, each answering one ApiVersions
// (so each was accepted and served), and returns them.
func openConns(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "e2e", "1"
	body := frame(req.Key(), 3, 1, true, req.AppendTo(nil))
	for i := 0; i < n; i++ {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, nc)
		c := &rawConn{t, nc}
		c.send(body)
		if _, err := c.readFrame(); err != nil {
			t.Fatalf("connection %d: ApiVersions: %v", i, err)
		}
	}
	return conns
}

// closedByPeer reports whether the gateway has closed nc (EOF or reset
// within wait).
func closedByPeer(nc net.Conn, wait time.Duration) bool {
	nc.SetReadDeadline(time.Now().Add(wait))
	var b [1]byte
	_, err := nc.Read(b[:])
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

// Idle connections are closed after -connections.max.idle.ms; a flood past
// -max.connections is refused at accept while a producer and a consumer
// carry on.
func TestConnectionLimits(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		// 2,000 connections from one address: past the default limit
		// per address, which this test is not about.
		g, err := startNamedGateway("idle-gateway", cluster.master, 0, "-connections.max.idle.ms=3000", "-max.connections.per.ip=0")
		if err != nil {
			t.Fatal(err)
		}
		defer g.stop()
		conns := openConns(t, g.addr, maxConnsHere(2000))
		time.Sleep(3 * time.Second)
		open := 0
		for _, nc := range conns {
			if !closedByPeer(nc, 10*time.Second) {
				open++
			}
		}
		if open > 0 {
			t.Fatalf("%d of %d idle connections still open past -connections.max.idle.ms", open, len(conns))
		}
	})

	t.Run("flood", func(t *testing.T) {
		const limit = 100
		g, err := startNamedGateway("flood-gateway", cluster.master, 0, "-max.connections="+strconv.Itoa(limit))
		if err != nil {
			t.Fatal(err)
		}
		defer g.stop()
		topic := newTopic(t)
		createTopic(t, topic, 1, nil)
		prod, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		cons, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		var acked, consumed atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err == nil {
					acked.Add(1)
				}
				cancel()
				time.Sleep(20 * time.Millisecond)
			}
		}()
		go func() {
			defer wg.Done()
			for {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				fs := cons.PollFetches(ctx)
				cancel()
				consumed.Add(int64(fs.NumRecords()))
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
		defer func() { close(stop); wg.Wait() }()
		eventually(t, 30*time.Second, "the producer and consumer start", func() error {
			if consumed.Load() == 0 {
				return errors.New("nothing consumed yet")
			}
			return nil
		})

		// Fill the gateway to near its limit (the clients hold a few),
		// then flood it.
		conns := openConns(t, g.addr, limit-20)
		var flood []net.Conn
		for i := 0; i < 200; i++ {
			nc, err := net.DialTimeout("tcp", g.addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			flood = append(flood, nc)
		}
		conns = append(conns, flood...)
		// Each is looked at at once: those accepted wait out the check.
		var refusedN atomic.Int64
		var check sync.WaitGroup
		for _, nc := range flood {
			check.Add(1)
			go func() {
				defer check.Done()
				if closedByPeer(nc, 3*time.Second) {
					refusedN.Add(1)
				}
			}()
		}
		check.Wait()
		refused := int(refusedN.Load())
		if refused < 180 {
			t.Fatalf("%d of 200 connections past -max.connections=%d refused", refused, limit)
		}
		ackedBefore, consumedBefore := acked.Load(), consumed.Load()
		eventually(t, 20*time.Second, "the producer and consumer carry on", func() error {
			if acked.Load() < ackedBefore+20 || consumed.Load() < consumedBefore+20 {
				return fmt.Errorf("acked %d, consumed %d since the flood", acked.Load()-ackedBefore, consumed.Load()-consumedBefore)
			}
			return nil
		})
		for _, nc := range conns {
			nc.Close()
		}
	})
}
