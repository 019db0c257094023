// Package audit is the gateway's audit log: who logged in or failed to,
// who was denied what, and who changed what (topics, configs, ACLs,
// users, quotas, groups, features, tokens, the schema registry), as
// events shaped after the Open Cybersecurity Schema Framework (OCSF 1.3):
// JSON lines to a file or stdout, and records of an internal topic.
//
// Recording never waits: events queue in a bounded buffer, and when it is
// full they are dropped and counted (metrics.AuditDropped), so that an
// audit sink that stalls cannot stall a client.
package audit

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// The OCSF classes the events are of.
const (
	ClassAuthentication   = 3002 // Identity & Access Management: a login
	ClassAuthorizeSession = 3003 // a request denied by the ACLs
	ClassAPIActivity      = 6003 // Application Activity: an administrative change

	categoryIAM         = 3
	categoryApplication = 6
)

// OCSF's activity ids of the classes used.
const (
	ActivityLogon  = 1 // Authentication
	ActivityDenied = 2 // Authorize Session: "Assign Privileges" is 1; denials are reported as 2 with status Failure
	ActivityCreate = 1 // API Activity
	ActivityRead   = 2
	ActivityUpdate = 3
	ActivityDelete = 4
)

// Event is one audited action.
type Event struct {
	Time         int64      `json:"time"` // Unix ms
	ClassUID     int        `json:"class_uid"`
	ClassName    string     `json:"class_name"`
	CategoryUID  int        `json:"category_uid"`
	ActivityID   int        `json:"activity_id"`
	ActivityName string     `json:"activity_name"`
	TypeUID      int        `json:"type_uid"`
	SeverityID   int        `json:"severity_id"` // 1 informational, 3 medium (a failure)
	StatusID     int        `json:"status_id"`   // 1 success, 2 failure
	Status       string     `json:"status"`
	StatusDetail string     `json:"status_detail,omitempty"`
	Actor        Actor      `json:"actor"`
	SrcEndpoint  Endpoint   `json:"src_endpoint"`
	API          *API       `json:"api,omitempty"`
	Resources    []Resource `json:"resources,omitempty"`
	AuthProtocol string     `json:"auth_protocol,omitempty"`
	Metadata     Metadata   `json:"metadata"`
	// Unmapped holds what OCSF has no attribute for.
	Unmapped Unmapped `json:"unmapped"`
}

// Unmapped are the gateway's own attributes.
type Unmapped struct {
	// NodeID is the gateway that recorded the event.
	NodeID int32 `json:"node_id"`
}

// Actor is who acted.
type Actor struct {
	User User `json:"user"`
}

// User is a principal: "User:alice" has the name alice.
type User struct {
	Name string `json:"name"`
	Type string `json:"type,omitempty"` // the principal's type: User, Group, ...
}

// Endpoint is the client's address.
type Endpoint struct {
	IP string `json:"ip,omitempty"`
}

// API is the request: the Kafka API (or HTTP route) and the service.
type API struct {
	Operation string  `json:"operation"`
	Service   Service `json:"service"`
}

// Service names what served the request.
type Service struct {
	Name string `json:"name"`
}

// Resource is what the action was on, with its outcome when a request
// names several.
type Resource struct {
	Type   string `json:"type"`
	Name   string `json:"name"`
	Result string `json:"result,omitempty"` // "" or the Kafka error
}

// Metadata names the product and the schema version.
type Metadata struct {
	Version string  `json:"version"`
	Product Product `json:"product"`
}

// Product is the gateway.
type Product struct {
	Name       string `json:"name"`
	VendorName string `json:"vendor_name"`
	Version    string `json:"version,omitempty"`
}

// Sink takes a batch of events as JSON (the internal topic).
type Sink interface {
	Write(ctx context.Context, events [][]byte) error
}

// Options configure the log.
type Options struct {
	// Writer takes JSON lines (nil: none).
	Writer io.Writer
	// Sink takes the events too (nil: none).
	Sink Sink
	// ExcludePrincipals and ExcludeTopics are left out: events of those
	// principals, and events whose resources are all among those topics.
	ExcludePrincipals []string
	ExcludeTopics     []string
	// Node and Version name the gateway in each event.
	Node    int32
	Version string
}

// bufferEvents bounds the events waiting to be written: past it they are
// dropped (and counted) rather than wait.
const bufferEvents = 4096

// batchEvents and batchWait are when a batch is written: that many
// events, or that long after its first.
const (
	batchEvents = 256
	batchWait   = 200 * time.Millisecond
)

// Log records events. A nil *Log records nothing.
type Log struct {
	opts      Options
	principal map[string]bool
	topic     map[string]bool
	ch        chan Event
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	// unsent are the events the sink has not taken yet (it may not be
	// up: the gateway's own topic), sent again with the next batch or
	// after sinkRetry; past bufferEvents the oldest are dropped.
	unsent [][]byte
}

// sinkRetry is how soon events the sink refused are offered again.
const sinkRetry = time.Second

// New starts a log; Close writes what waits and stops it.
func New(opts Options) *Log {
	l := &Log{opts: opts, principal: map[string]bool{}, topic: map[string]bool{},
		ch: make(chan Event, bufferEvents), stop: make(chan struct{}), done: make(chan struct{})}
	for _, p := range opts.ExcludePrincipals {
		l.principal[strings.TrimSpace(p)] = true
	}
	for _, t := range opts.ExcludeTopics {
		l.topic[strings.TrimSpace(t)] = true
	}
	go l.run()
	return l
}

// Close writes the events that wait and stops.
func (l *Log) Close() {
	if l == nil {
		return
	}
	l.closeOnce.Do(func() {
		close(l.stop)
		<-l.done
	})
}

// Record queues an event, unless its principal or all its topics are
// excluded; a full buffer drops it.
func (l *Log) Record(e Event) {
	if l == nil || l.excluded(e) {
		return
	}
	if e.Time == 0 {
		e.Time = time.Now().UnixMilli()
	}
	e.TypeUID = e.ClassUID*100 + e.ActivityID
	if e.StatusID == 0 {
		e.StatusID, e.Status, e.SeverityID = 1, "Success", 1
	}
	e.Metadata = Metadata{Version: "1.3.0", Product: Product{Name: "SeaweedFS Kafka gateway", VendorName: "SeaweedFS", Version: l.opts.Version}}
	e.Unmapped.NodeID = l.opts.Node
	select {
	case l.ch <- e:
		metrics.AuditEvents.Inc()
	default:
		metrics.AuditDropped.Inc()
	}
}

func (l *Log) excluded(e Event) bool {
	if l.principal[principalOf(e.Actor.User)] {
		return true
	}
	if len(l.topic) == 0 || len(e.Resources) == 0 {
		return false
	}
	for _, r := range e.Resources {
		if r.Type != "topic" || !l.topic[r.Name] {
			return false
		}
	}
	return true
}

func principalOf(u User) string {
	if u.Type == "" {
		return u.Name
	}
	return u.Type + ":" + u.Name
}

// Failed marks an event failed with its detail.
func Failed(e Event, detail string) Event {
	e.StatusID, e.Status, e.SeverityID, e.StatusDetail = 2, "Failure", 3, detail
	return e
}

// UserOf is the OCSF user of a principal ("User:alice").
func UserOf(principal string) User {
	if typ, name, ok := strings.Cut(principal, ":"); ok {
		return User{Name: name, Type: typ}
	}
	return User{Name: principal}
}

// Authentication records a login, failed when err is not nil.
func (l *Log) Authentication(principal, ip, mechanism, service string, err error) {
	if l == nil {
		return
	}
	e := Event{ClassUID: ClassAuthentication, ClassName: "Authentication", CategoryUID: categoryIAM,
		ActivityID: ActivityLogon, ActivityName: "Logon", Actor: Actor{User: UserOf(principal)},
		SrcEndpoint: Endpoint{IP: ip}, AuthProtocol: mechanism, API: &API{Operation: "Login", Service: Service{Name: service}}}
	if err != nil {
		e = Failed(e, err.Error())
	}
	l.Record(e)
}

// Denied records a request the ACLs refused.
func (l *Log) Denied(principal, ip, api, operation, resourceType, name string) {
	if l == nil {
		return
	}
	l.Record(Failed(Event{ClassUID: ClassAuthorizeSession, ClassName: "Authorize Session", CategoryUID: categoryIAM,
		ActivityID: ActivityDenied, ActivityName: "Deny", Actor: Actor{User: UserOf(principal)}, SrcEndpoint: Endpoint{IP: ip},
		API:       &API{Operation: api, Service: Service{Name: "kafka"}},
		Resources: []Resource{{Type: resourceType, Name: name}}}, "not authorized to "+operation))
}

// Change records an administrative request and its outcome: failed when
// detail is not "" (every resource failed).
func (l *Log) Change(principal, ip, service, api string, activity int, resources []Resource, detail string) {
	if l == nil {
		return
	}
	names := map[int]string{ActivityCreate: "Create", ActivityRead: "Read", ActivityUpdate: "Update", ActivityDelete: "Delete"}
	e := Event{ClassUID: ClassAPIActivity, ClassName: "API Activity", CategoryUID: categoryApplication,
		ActivityID: activity, ActivityName: names[activity], Actor: Actor{User: UserOf(principal)}, SrcEndpoint: Endpoint{IP: ip},
		API: &API{Operation: api, Service: Service{Name: service}}, Resources: resources}
	if detail != "" {
		e = Failed(e, detail)
	}
	l.Record(e)
}

func (l *Log) run() {
	defer close(l.done)
	var batch []Event
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	retry := time.NewTicker(sinkRetry)
	defer retry.Stop()
	flush := func() {
		if len(batch) == 0 {
			return
		}
		l.write(batch)
		batch = batch[:0]
	}
	for {
		select {
		case e := <-l.ch:
			if len(batch) == 0 {
				timer.Reset(batchWait)
			}
			batch = append(batch, e)
			if len(batch) >= batchEvents {
				timer.Stop()
				flush()
			}
		case <-timer.C:
			flush()
		case <-retry.C:
			if len(l.unsent) > 0 {
				l.send()
			}
		case <-l.stop:
			timer.Stop()
			for drained := false; !drained; {
				select {
				case e := <-l.ch:
					batch = append(batch, e)
				default:
					drained = true
				}
			}
			flush()
			if len(l.unsent) > 0 { // once more: the last chance
				l.send()
			}
			return
		}
	}
}

// write writes a batch to the writer and the sink; what a sink refuses is
// counted and dropped (the writer has it).
func (l *Log) write(batch []Event) {
	lines := make([][]byte, 0, len(batch))
	for _, e := range batch {
		b, err := json.Marshal(e)
		if err != nil {
			continue
		}
		lines = append(lines, b)
	}
	if w := l.opts.Writer; w != nil {
		var buf []byte
		for _, b := range lines {
			buf = append(append(buf, b...), '\n')
		}
		if _, err := w.Write(buf); err != nil {
			glog.Warningf("kafka audit: writing %d events: %v", len(lines), err)
		}
	}
	if l.opts.Sink != nil {
		l.unsent = append(l.unsent, lines...)
		if over := len(l.unsent) - bufferEvents; over > 0 {
			metrics.AuditDropped.Add(float64(over))
			l.unsent = append(l.unsent[:0], l.unsent[over:]...)
		}
		l.send()
	}
}

// send offers the unsent events to the sink.
func (l *Log) send() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := l.opts.Sink.Write(ctx, l.unsent)
	cancel()
	if err != nil {
		glog.V(1).Infof("kafka audit: %d events not yet in the audit topic: %v", len(l.unsent), err)
		return
	}
	l.unsent = l.unsent[:0]
}
