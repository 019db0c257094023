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
