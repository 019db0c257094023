package gateway

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

func TestReadFrame(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 300000) // 3 MB, several growth steps
	got, err := readFrame(iotest.HalfReader(bytes.NewReader(data)), len(data))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	if _, err := readFrame(bytes.NewReader(data[:100]), 200); err != io.ErrUnexpectedEOF {
		t.Fatalf("short frame: %v, want unexpected EOF", err)
	}
	if got, err := readFrame(bytes.NewReader(nil), 0); err != nil || len(got) != 0 {
		t.Fatalf("empty frame: %v %d", err, len(got))
	}
}
