package registry

// Who may do what: HTTP basic auth with the gateway's SASL users, and the
// cluster's ACLs by the topic a subject is named for.

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// access is what a route needs of the cluster's ACLs. As Confluent's
// topic ACL authorizer does, a subject's operations are decided by the
// ACLs of the topic it is named for: <topic>-key and <topic>-value are
// the topic's, any other subject (a record name) a topic of its own name.
type access int

const (
	anyone                 access = iota // any principal logged in
	subjectRead                          // READ on the subject's topic
	subjectWrite                         // WRITE on the subject's topic
	subjectDelete                        // DELETE on the subject's topic
	subjectDescribeConfigs               // DESCRIBE_CONFIGS on the subject's topic
	subjectAlterConfigs                  // ALTER_CONFIGS on the subject's topic
	clusterAlterConfigs                  // ALTER_CONFIGS on the cluster
)

// SubjectTopic is the topic whose ACLs decide a subject's operations.
func SubjectTopic(subject string) string {
	for _, suffix := range []string{"-key", "-value"} {
		if t, ok := strings.CutSuffix(subject, suffix); ok && t != "" {
			return t
		}
	}
	return subject
}

// login returns the request's principal, or answers 401.
func (h *api) login(w http.ResponseWriter, q *http.Request) (string, bool) {
	if h.opts.Authenticate == nil {
		return anonymous, true
	}
	user, password, ok := q.BasicAuth()
	if ok {
		if good, err := h.opts.Authenticate(q.Context(), user, password); err == nil && good {
			return "User:" + user, true
		} else if err != nil {
			reply(w, nil, errorf(codeStoreError, "Error checking the login: %v", err))
			return "", false
		}
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="SchemaRegistry"`)
	reply(w, nil, &Error{Code: http.StatusUnauthorized, Message: "Unauthorized"})
	return "", false
}

const anonymous = "User:ANONYMOUS"

type principalKey struct{}

func principalOf(q *http.Request) string {
	p, _ := q.Context().Value(principalKey{}).(string)
	return p
}

func host(q *http.Request) string {
	h, _, err := net.SplitHostPort(q.RemoteAddr)
	if err != nil {
		return q.RemoteAddr
	}
	return h
}

// allowed checks what a route needs.
func (h *api) allowed(principal string, q *http.Request, need access) *Error {
	if h.opts.Authorize == nil || need == anyone {
		return nil
	}
	subject := subjectArg(q)
	op, typ, name := kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, SubjectTopic(subject)
	switch need {
	case subjectWrite:
		op = kmsg.ACLOperationWrite
	case subjectDelete:
		op = kmsg.ACLOperationDelete
	case subjectDescribeConfigs:
		op = kmsg.ACLOperationDescribeConfigs
	case subjectAlterConfigs:
		op = kmsg.ACLOperationAlterConfigs
	case clusterAlterConfigs:
		op, typ, name = kmsg.ACLOperationAlterConfigs, kmsg.ACLResourceTypeCluster, "kafka-cluster"
	}
	if h.opts.Authorize(principal, host(q), op, typ, name) {
		return nil
	}
	if typ == kmsg.ACLResourceTypeCluster {
		return &Error{Code: http.StatusForbidden, Message: fmt.Sprintf("User %s is not authorized to %s the cluster's configuration", principal, strings.ToLower(op.String()))}
	}
	return &Error{Code: http.StatusForbidden, Message: fmt.Sprintf("User %s is not authorized to %s subject %s (topic %s)", principal, strings.ToLower(op.String()), subject, name)}
}

// mayRead reports whether the principal may read a subject (the listings
// show only those).
func (h *api) mayRead(principal string, q *http.Request, subject string) bool {
	return h.opts.Authorize == nil || h.opts.Authorize(principal, host(q), kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, SubjectTopic(subject))
}
