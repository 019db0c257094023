package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadFrame(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 300000) // 3 MB, several growth steps
	got, err := readFrame(iotest.HalfReader(bytes.NewReader(data)), len(data), grown(t, len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	if _, err := readFrame(bytes.NewReader(data[:100]), 200, func(int) error { return nil }); err != io.ErrUnexpectedEOF {
		t.Fatalf("short frame: %v, want unexpected EOF", err)
	}
	if got, err := readFrame(bytes.NewReader(nil), 0, grown(t, 0)); err != nil || len(got) != 0 {
		t.Fatalf("empty frame: %v %d", err, len(got))
	}
}

// A peer that announces a large frame and sends it slowly holds at most
// twice what it sent, from 64 KiB: it once held a first MiB however
// little it sent, and 512 connections sending a byte a second held the
// whole request budget.
func TestReadFrameHoldsWhatWasSent(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 8<<20)
	sent, held := 0, 0
	r := iotest.OneByteReader(readCounter{bytes.NewReader(data[:300<<10]), &sent})
	_, err := readFrame(r, len(data), func(grow int) error {
		held += grow
		if held > max(2*sent, 64<<10) {
			t.Fatalf("holding %d bytes after %d sent", held, sent)
		}
		return nil
	})
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("a frame cut short: %v", err)
	}
	if held > 1<<20 {
		t.Fatalf("held %d bytes for 300 KiB sent of an 8 MiB frame", held)
	}
}

type readCounter struct {
	r io.Reader
	n *int
}

func (c readCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += n
	return n, err
}

// grown checks that the buffer grows by size bytes in all.
func grown(t *testing.T, size int) func(int) error {
	total := 0
	t.Cleanup(func() {
		if total != size {
			t.Errorf("grew by %d bytes for a %d-byte frame", total, size)
		}
	})
	return func(n int) error {
		total += n
		return nil
	}
}

// Each connection has a number of its own, which its log lines and its
// requests carry ("cid:N", as the NATS server's).
func TestConnectionIDs(t *testing.T) {
	srv := &Server{ctx: context.Background()}
	l := &boundListener{Listener: Listener{Name: Plaintext}}
	var names []string
	for i := 0; i < 2; i++ {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		c := newConn(srv, l, a)
		if c.id != uint64(i+1) || !strings.HasPrefix(c.name, fmt.Sprintf("cid:%d ", i+1)) {
			t.Fatalf("connection %d: id %d, name %q", i, c.id, c.name)
		}
		names = append(names, c.name)
	}
	if names[0] == names[1] {
		t.Fatalf("two connections named %q", names[0])
	}
}
