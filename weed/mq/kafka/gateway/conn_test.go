package gateway

import (
	"bytes"
	"io"
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
