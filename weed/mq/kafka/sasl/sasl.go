// Package sasl is the server side of the SASL mechanisms Kafka clients log
// in with: PLAIN (RFC 4616), SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802,
// RFC 7677, with xdg-go/scram) and OAUTHBEARER (RFC 7628, JWTs checked with
// golang-jwt against a JWKS file read with go-jose). An Exchange is one
// login: the messages a client sends in its SaslAuthenticate requests go
// through Step until it is done, and then it names the principal.
//
// Everything here runs on the reader of the connection that logs in.
package sasl

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// The mechanisms, by their SASL names.
const (
	Plain       = "PLAIN"
	ScramSHA256 = user.SHA256
	ScramSHA512 = user.SHA512
	OAuthBearer = "OAUTHBEARER"
)

// All are the mechanisms served, in the order a handshake lists them.
var All = []string{Plain, ScramSHA256, ScramSHA512, OAuthBearer}

// MaxMessageBytes bounds one SASL message: a JWT with many claims fits in
// a few KiB; Kafka's own bound for a SASL frame is 512 KiB
// (sasl.server.max.receive.size).
const MaxMessageBytes = 512 << 10

// Users is where PLAIN and SCRAM logins find credentials: user.Store.
type Users interface {
	Credential(ctx context.Context, name, mechanism string) (user.Credential, error)
	VerifyPassword(ctx context.Context, name, password string) (bool, error)
}

// Tokens is where SCRAM logins with the tokenauth extension find
// delegation tokens: user.Tokens.
type Tokens interface {
	Login(ctx context.Context, id, mechanism string) (user.Credential, user.Token, error)
}

// Config is what the mechanisms check logins against.
type Config struct {
	// Mechanisms are the enabled mechanisms (sasl.enabled.mechanisms).
	Mechanisms []string
	Users      Users
	// Tokens are the delegation tokens SCRAM logs in with (nil: none).
	Tokens Tokens
	OAuth  OAuthConfig
}

// Failure is a login refused: SASL_AUTHENTICATION_FAILED with Msg.
type Failure struct{ Msg string }

func (f *Failure) Error() string { return f.Msg }

func failf(format string, args ...any) *Failure { return &Failure{fmt.Sprintf(format, args...)} }

// Exchange is one login with one mechanism.
type Exchange interface {
	// Step takes the client's next message and returns the server's
	// answer; done is true once the client is authenticated. An error is
	// a *Failure (or the context's): the login is over.
	Step(ctx context.Context, msg []byte) (answer []byte, done bool, err error)
	// Principal names the authenticated client: "User:<name>".
	Principal() string
	// Expires is when the credential ends (an OAUTHBEARER token's exp,
	// a delegation token's expiry), zero if it does not.
	Expires() time.Time
	// Token reports whether the client logged in with a delegation
	// token: such a connection may not ask for tokens itself (Kafka's
	// DELEGATION_TOKEN_REQUEST_NOT_ALLOWED).
	Token() bool
}

// Authenticator starts logins.
type Authenticator struct {
	cfg   Config
	oauth *oauthValidator
}

// New returns an Authenticator for cfg; it fails for an unknown mechanism
// or an OAUTHBEARER setup that cannot check tokens.
func New(cfg Config) (*Authenticator, error) {
	a := &Authenticator{cfg: cfg}
	for _, m := range cfg.Mechanisms {
		if !slices.Contains(All, m) {
			return nil, fmt.Errorf("unknown SASL mechanism %q (known: %s)", m, strings.Join(All, ", "))
		}
		if (m == Plain || m == ScramSHA256 || m == ScramSHA512) && cfg.Users == nil {
			return nil, fmt.Errorf("SASL mechanism %s needs a user store", m)
		}
	}
	if slices.Contains(cfg.Mechanisms, OAuthBearer) {
		v, err := newOAuthValidator(cfg.OAuth)
		if err != nil {
			return nil, err
		}
		a.oauth = v
	}
	return a, nil
}

// Mechanisms are the enabled mechanisms.
func (a *Authenticator) Mechanisms() []string { return a.cfg.Mechanisms }

// Start begins a login with mechanism; ok is false for a mechanism not
// enabled (UNSUPPORTED_SASL_MECHANISM).
func (a *Authenticator) Start(mechanism string) (Exchange, bool) {
	if !slices.Contains(a.cfg.Mechanisms, mechanism) {
		return nil, false
	}
	switch mechanism {
	case Plain:
		return &plain{users: a.cfg.Users}, true
	case ScramSHA256, ScramSHA512:
		return newScram(mechanism, a.cfg.Users, a.cfg.Tokens), true
	case OAuthBearer:
		return &oauthBearer{v: a.oauth}, true
	}
	return nil, false
}
