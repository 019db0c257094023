package sasl

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// memTokens is an in-memory Tokens: by id, the token and its password.
type memTokens map[string]user.Token

func (m memTokens) Login(_ context.Context, id, mech string) (user.Credential, user.Token, error) {
	t, ok := m[id]
	if !ok {
		return user.Credential{}, user.Token{}, user.ErrNotFound
	}
	if t.Expires < time.Now().UnixMilli() {
		return user.Credential{}, user.Token{}, user.ErrTokenExpired
	}
	return t.SCRAM[mech], t, nil
}

func testTokens(t testing.TB, expires time.Time) memTokens {
	tok := user.Token{ID: "tok-1", Owner: "User:alice", Expires: expires.UnixMilli(), SCRAM: map[string]user.Credential{}}
	for _, mech := range user.Mechanisms {
		c, err := user.FromPassword(mech, "tok-hmac", user.MinIterations)
		if err != nil {
			t.Fatal(err)
		}
		tok.SCRAM[mech] = c
	}
	return memTokens{tok.ID: tok}
}

// tokenLogin runs franz-go's SCRAM client (tokenauth=true when token)
// against the server side.
func tokenLogin(t *testing.T, a *Authenticator, mech, name, password string, token bool) (Exchange, error) {
	t.Helper()
	auth := scram.Auth{User: name, Pass: password, IsToken: token}
	m := auth.AsSha256Mechanism()
	if mech == ScramSHA512 {
		m = auth.AsSha512Mechanism()
	}
	session, msg, err := m.Authenticate(context.Background(), "gateway")
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := a.Start(mech)
	for {
		answer, done, err := ex.Step(context.Background(), msg)
		if err != nil {
			return ex, err
		}
		clientDone, next, err := session.Challenge(answer)
		if err != nil {
			return ex, err
		}
		if done {
			if !clientDone {
				t.Fatal("the server is done before the client")
			}
			return ex, nil
		}
		msg = next
	}
}

// A SCRAM login with Kafka's tokenauth extension logs in with a delegation
// token as its owner, until the token's expiry; the token's id is not a
// user, nor a user a token.
func TestSCRAMDelegationToken(t *testing.T) {
	expires := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	a := newAuth(t, Config{Tokens: testTokens(t, expires)})
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		ex, err := tokenLogin(t, a, mech, "tok-1", "tok-hmac", true)
		if err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		if ex.Principal() != "User:alice" || !ex.Token() || !ex.Expires().Equal(expires) {
			t.Fatalf("%s: principal %s, token %v, expires %v; want User:alice, true, %v", mech, ex.Principal(), ex.Token(), ex.Expires(), expires)
		}
		var fail *Failure
		if _, err := tokenLogin(t, a, mech, "tok-1", "wrong", true); !errors.As(err, &fail) {
			t.Errorf("%s: a wrong HMAC: %v", mech, err)
		}
		if _, err := tokenLogin(t, a, mech, "tok-1", "tok-hmac", false); !errors.As(err, &fail) {
			t.Errorf("%s: the token without tokenauth: %v", mech, err)
		}
		if _, err := tokenLogin(t, a, mech, "alice", "alice-secret", true); !errors.As(err, &fail) {
			t.Errorf("%s: a user with tokenauth: %v", mech, err)
		}
		ex, err = tokenLogin(t, a, mech, "alice", "alice-secret", false)
		if err != nil || ex.Token() || !ex.Expires().IsZero() {
			t.Errorf("%s: alice's own login: %v, token %v, expires %v", mech, err, ex.Token(), ex.Expires())
		}
	}
	expired := newAuth(t, Config{Tokens: testTokens(t, time.Now().Add(-time.Second))})
	_, err := tokenLogin(t, expired, ScramSHA512, "tok-1", "tok-hmac", true)
	var fail *Failure
	if !errors.As(err, &fail) || !strings.Contains(fail.Msg, "expired") {
		t.Errorf("an expired token: %v", err)
	}
	// Without a token store, tokenauth logins fail as unknown users.
	if _, err := tokenLogin(t, newAuth(t, Config{}), ScramSHA256, "tok-1", "tok-hmac", true); err == nil {
		t.Error("a token logged in without a token store")
	}
}
