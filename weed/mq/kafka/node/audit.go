package node

import (
	"context"
	"fmt"
	"golang.org/x/sync/semaphore"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/audit"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
)

// The audit log (-audit.*): its file, and its topic, which the gateway
// writes as a client of its own, logged in as the gateways' own user,
// whose events are never recorded.

// newAudit starts the audit log, nil when it is off. New closes it
// before the Kafka server, so that its last events reach the topic.
func (n *Node) newAudit() (*audit.Log, error) {
	if !n.cfg.AuditEnabled {
		return nil, nil
	}
	opts := audit.Options{Node: n.self.NodeID, Version: gatewayVersion(),
		ExcludePrincipals: append(splitList(n.cfg.AuditExcludePrincipals, ","), "User:"+protocol.GatewayUser),
		ExcludeTopics:     splitList(n.cfg.AuditExcludeTopics, ",")}
	switch n.cfg.AuditFile {
	case "":
	case "-":
		opts.Writer = os.Stdout
	default:
		f, err := os.OpenFile(n.cfg.AuditFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("-audit.file: %w", err)
		}
		n.onClose("the audit file", func() { f.Close() })
		opts.Writer = f
	}
	if n.cfg.AuditTopic != "" {
		sink := &auditTopic{topic: n.cfg.AuditTopic, retentionMs: n.cfg.AuditRetentionMs, turn: semaphore.NewWeighted(1), opts: func() []kgo.Opt {
			// A record not delivered in 10 s fails (kgo retries buffered
			// records forever otherwise): its events wait for the next
			// try, and a gateway that stops is not held up.
			return append(n.peerOpts.ClientOpts(), kgo.SeedBrokers(n.self.Addr()), kgo.ClientID("kafka-gateway-audit"),
				kgo.RecordDeliveryTimeout(10*time.Second))
		}}
		n.onClose("the audit topic's client", sink.close)
		opts.Sink = sink
	}
	return audit.New(opts), nil
}

// auditTopic writes the events to the audit topic, created on first use
// with its retention.
type auditTopic struct {
	topic       string
	retentionMs int64
	opts        func() []kgo.Opt

	// turn is one Write at a time, waited for within its context.
	turn    *semaphore.Weighted
	cl      *kgo.Client
	created bool
}

func (a *auditTopic) Write(ctx context.Context, events [][]byte) error {
	if err := a.turn.Acquire(ctx, 1); err != nil {
		return err
	}
	defer a.turn.Release(1)
	if a.cl == nil {
		cl, err := kgo.NewClient(a.opts()...)
		if err != nil {
			return err
		}
		a.cl = cl
	}
	if !a.created {
		retention := strconv.FormatInt(a.retentionMs, 10)
		resp, err := kadm.NewClient(a.cl).CreateTopic(ctx, -1, -1, map[string]*string{"retention.ms": &retention, "cleanup.policy": ptr("delete")}, a.topic)
		if err != nil {
			return err
		}
		if resp.Err != nil && resp.Err != kerr.TopicAlreadyExists {
			return resp.Err
		}
		a.created = true
	}
	// Waited for until ctx ends (ProduceSync waits for buffered records
	// whatever ctx says): records still buffered then may be delivered
	// later and sent again with the next try, at least once.
	var wg sync.WaitGroup
	errs := make(chan error, len(events))
	for _, e := range events {
		wg.Add(1)
		a.cl.Produce(ctx, &kgo.Record{Topic: a.topic, Value: e}, func(_ *kgo.Record, err error) {
			if err != nil {
				errs <- err
			}
			wg.Done()
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func (a *auditTopic) close() {
	a.turn.Acquire(context.Background(), 1) //nolint:errcheck // never fails without a deadline
	defer a.turn.Release(1)
	if a.cl != nil {
		a.cl.Close()
	}
}

func ptr[T any](v T) *T { return &v }

// auditHTTP records the changes an HTTP API makes (its POST, PUT and
// DELETE requests) with their outcome: the schema registry's.
func auditHTTP(l *audit.Log, service string, next http.Handler) http.Handler {
	if l == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		var activity int
		switch q.Method {
		case http.MethodPost:
			activity = audit.ActivityCreate
		case http.MethodPut:
			activity = audit.ActivityUpdate
		case http.MethodDelete:
			activity = audit.ActivityDelete
		default:
			next.ServeHTTP(w, q)
			return
		}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, q)
		principal := "User:ANONYMOUS"
		if user, _, ok := q.BasicAuth(); ok {
			principal = "User:" + user
		}
		ip, _, _ := net.SplitHostPort(q.RemoteAddr)
		detail := ""
		if rec.status >= 400 {
			detail = strconv.Itoa(rec.status) + " " + http.StatusText(rec.status)
		}
		l.Change(principal, ip, service, q.Method+" "+q.URL.Path, activity, []audit.Resource{registryResource(q.URL.Path)}, detail)
	})
}

// registryResource is what a registry path changes: a subject, or the
// global config or mode.
func registryResource(path string) audit.Resource {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) >= 2 && (parts[0] == "subjects" || parts[0] == "config" || parts[0] == "mode") {
		return audit.Resource{Type: "subject", Name: parts[1]}
	}
	return audit.Resource{Type: "registry", Name: "/" + strings.Join(parts, "/")}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
