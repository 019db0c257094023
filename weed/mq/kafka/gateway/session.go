package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/audit"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/sasl"
)

// Anonymous is the principal of a connection that did not authenticate.
const Anonymous = "User:ANONYMOUS"

// session is the login of a connection on a SASL listener
// (protocol.Session). Every method runs on the connection's reader.
type session struct {
	auth      *sasl.Authenticator
	maxReauth time.Duration // connections.max.reauth.ms; 0: none asked

	login     sasl.Exchange // the login in progress
	mechanism string        // of the first login: a re-authentication keeps it
	bare      bool          // after a v0 handshake: the login's messages are bare frames
	principal string        // once authenticated
	token     bool          // logged in with a delegation token
	expires   time.Time     // when the session ends; zero: never
	failed    error         // the connection closes once this is answered

	audit *audit.Log // records each login and failed login (nil: none)
	ip    string     // the client's address, for the audit log
}

func (s *session) authenticated() bool { return s.principal != "" }

// expired reports whether an authenticated session has ended.
func (s *session) expired(now time.Time) bool {
	return s.authenticated() && !s.expires.IsZero() && now.After(s.expires)
}

// allowed reports whether a request of key may be served now: before the
// first login only ApiVersions and the SASL requests are.
func (s *session) allowed(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return true
	}
	return s.authenticated()
}

func (s *session) Handshake(mechanism string, version int16) ([]string, *kerr.Error) {
	mechs := s.auth.Mechanisms()
	if s.login != nil {
		s.failed = errors.New("SaslHandshake in the middle of a login")
		return mechs, kerr.IllegalSaslState
	}
	if s.authenticated() && (version == 0 || mechanism != s.mechanism) {
		s.failed = fmt.Errorf("re-authentication with %s v%d after a login with %s", mechanism, version, s.mechanism)
		return mechs, kerr.UnsupportedSaslMechanism
	}
	login, ok := s.auth.Start(mechanism)
	if !ok {
		s.failed = fmt.Errorf("SASL mechanism %q is not enabled", mechanism)
		return mechs, kerr.UnsupportedSaslMechanism
	}
	s.login, s.bare = login, version == 0
	if !s.authenticated() {
		s.mechanism = mechanism
	}
	return mechs, nil
}

func (s *session) Authenticate(ctx context.Context, msg []byte) ([]byte, int64, *kerr.Error, string) {
	if s.login == nil {
		s.failed = errors.New("SaslAuthenticate without a SaslHandshake")
		return nil, 0, kerr.IllegalSaslState, "SaslAuthenticate before SaslHandshake"
	}
	fail := func(err error) ([]byte, int64, *kerr.Error, string) {
		s.audit.Authentication(s.principal, s.ip, s.mechanism, "kafka", err)
		s.failed, s.login = err, nil
		return nil, 0, kerr.SaslAuthenticationFailed, err.Error()
	}
	if len(msg) > sasl.MaxMessageBytes {
		return fail(fmt.Errorf("SASL message of %d bytes exceeds %d", len(msg), sasl.MaxMessageBytes))
	}
	answer, done, err := s.login.Step(ctx, msg)
	if err != nil {
		return fail(err)
	}
	if !done {
		return answer, 0, nil, ""
	}
	p := s.login.Principal()
	if s.authenticated() && p != s.principal {
		return fail(fmt.Errorf("re-authentication as %s on a connection of %s", p, s.principal))
	}
	now := time.Now()
	s.principal, s.token, s.expires = p, s.login.Token(), time.Time{}
	if s.maxReauth > 0 {
		s.expires = now.Add(s.maxReauth)
	}
	if exp := s.login.Expires(); !exp.IsZero() && (s.expires.IsZero() || exp.Before(s.expires)) {
		s.expires = exp
	}
	s.login = nil
	s.audit.Authentication(p, s.ip, s.mechanism, "kafka", nil)
	var lifetime int64
	if !s.expires.IsZero() {
		lifetime = max(1, s.expires.Sub(now).Milliseconds())
	}
	return answer, lifetime, nil, ""
}
