package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// flakySink refuses its first writes, as the audit topic does before the
// gateway serves.
type flakySink struct {
	mu      sync.Mutex
	refuse  int
	written []string
}

func (f *flakySink) Write(_ context.Context, events [][]byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse > 0 {
		f.refuse--
		return errors.New("not yet")
	}
	for _, e := range events {
		f.written = append(f.written, string(e))
	}
	return nil
}

// Excluded principals and topics are left out; what a sink refused is
// offered again; Close writes what waits; each line is an OCSF event.
func TestLog(t *testing.T) {
	var file lockedBuffer
	sink := &flakySink{refuse: 1}
	l := New(Options{Writer: &file, Sink: sink, ExcludePrincipals: []string{"User:quiet"}, ExcludeTopics: []string{"noisy"}, Node: 7})
	l.Authentication("User:alice", "10.0.0.1", "SCRAM-SHA-512", "kafka", nil)
	l.Authentication("User:quiet", "10.0.0.1", "PLAIN", "kafka", nil)
	l.Denied("User:bob", "10.0.0.2", "Produce", "WRITE", "topic", "secret")
	l.Change("User:alice", "10.0.0.1", "kafka", "DeleteTopics", ActivityDelete, []Resource{{Type: "topic", Name: "noisy"}}, "")
	l.Change("User:alice", "10.0.0.1", "kafka", "DeleteTopics", ActivityDelete, []Resource{{Type: "topic", Name: "noisy"}, {Type: "topic", Name: "kept"}}, "")
	l.Close()
	lines := strings.Split(strings.TrimSpace(file.b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d events written, want 3:\n%s", len(lines), file.b.String())
	}
	var denied Event
	if err := json.Unmarshal([]byte(lines[1]), &denied); err != nil {
		t.Fatal(err)
	}
	if denied.ClassUID != ClassAuthorizeSession || denied.StatusID != 2 || denied.Actor.User != (User{Name: "bob", Type: "User"}) ||
		denied.Resources[0].Name != "secret" || denied.TypeUID != 300302 || denied.Unmapped.NodeID != 7 || denied.SeverityID != 3 {
		t.Fatalf("the denial: %+v", denied)
	}
	// The sink refused the first write; the events reached it on the
	// next (a retry, or Close's last one).
	if len(sink.written) != 3 {
		t.Fatalf("the sink took %d events, want 3", len(sink.written))
	}
}

// A nil log records nothing, and a full buffer drops rather than waits.
func TestNilAndFull(t *testing.T) {
	var l *Log
	l.Authentication("User:a", "", "", "kafka", nil)
	l.Close()
	block := make(chan struct{})
	full := New(Options{Sink: blockingSink(block)})
	dropped := testutil.ToFloat64(metrics.AuditDropped)
	// The writer holds at most one batch while the sink blocks; the
	// buffer takes bufferEvents more; the rest are dropped at once.
	n := bufferEvents + batchEvents + 100
	for range n {
		full.Denied("User:a", "", "Produce", "WRITE", "topic", "t")
	}
	if d := testutil.ToFloat64(metrics.AuditDropped) - dropped; d < float64(n-bufferEvents-batchEvents) {
		t.Errorf("%v events dropped of %d, with room for %d", d, n, bufferEvents+batchEvents)
	}
	close(block)
	full.Close()
}

type blockingSink chan struct{}

func (b blockingSink) Write(context.Context, [][]byte) error { <-b; return nil }
