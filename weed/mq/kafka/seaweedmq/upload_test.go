package seaweedmq

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/wal"
)

// An upload to a volume server that takes the request and never answers
// ends with its caller's context: SeaweedFS's own retrying upload ran on
// for about 90 s past its caller's deadline, and eight such uploads
// stalled every partition's flush.
func TestUploadBoundedByContext(t *testing.T) {
	hung := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hung }))
	defer srv.Close()
	defer close(hung)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := (&Client{}).upload(ctx, wal.Assignment{URL: strings.TrimPrefix(srv.URL, "http://")}, "3,01637037d6", []byte("segment"), segmentMimeType)
	if err == nil {
		t.Fatal("an upload nobody answered succeeded")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the upload returned %v after its context's 300 ms", took)
	}
}
