package sasl

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	"github.com/xdg-go/scram"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// memUsers is an in-memory Users for these tests.
type memUsers map[string]map[string]user.Credential

func (m memUsers) Credential(_ context.Context, name, mech string) (user.Credential, error) {
	c, ok := m[name][mech]
	if !ok {
		return user.Credential{}, user.ErrNotFound
	}
	return c, nil
}

func (m memUsers) VerifyPassword(_ context.Context, name, password string) (bool, error) {
	creds, ok := m[name]
	if !ok {
		return false, user.ErrNotFound
	}
	for mech, c := range creds {
		return c.Verify(mech, password), nil
	}
	return false, user.ErrNotFound
}

func testUsers(t testing.TB) memUsers {
	m := memUsers{"alice": {}}
	for _, mech := range user.Mechanisms {
		c, err := user.FromPassword(mech, "alice-secret", user.MinIterations)
		if err != nil {
			t.Fatal(err)
		}
		m["alice"][mech] = c
	}
	return m
}

func newAuth(t testing.TB, cfg Config) *Authenticator {
	t.Helper()
	if cfg.Users == nil {
		cfg.Users = testUsers(t)
	}
	if cfg.Mechanisms == nil {
		cfg.Mechanisms = []string{Plain, ScramSHA256, ScramSHA512}
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// scramLoginWith runs a whole SCRAM login of xdg-go's client against the
// server side, letting tamper change each client message.
func scramLoginWith(t *testing.T, a *Authenticator, mech, name, password string, tamper func(step int, msg string) string) (Exchange, error) {
	t.Helper()
	fn := scram.SHA256
	if mech == ScramSHA512 {
		fn = scram.SHA512
	}
	cl, err := fn.NewClient(name, password, "")
	if err != nil {
		t.Fatal(err)
	}
	conv := cl.NewConversation()
	ex, ok := a.Start(mech)
	if !ok {
		t.Fatalf("%s not enabled", mech)
	}
	challenge := ""
	for step := 0; ; step++ {
		msg, err := conv.Step(challenge)
		if err != nil {
			return ex, err
		}
		if conv.Done() {
			return ex, nil
		}
		if tamper != nil {
			msg = tamper(step, msg)
		}
		answer, done, err := ex.Step(context.Background(), []byte(msg))
		if err != nil {
			return ex, err
		}
		challenge = string(answer)
		if done {
			if _, err := conv.Step(challenge); err != nil {
				return ex, err
			}
			return ex, nil
		}
	}
}

func TestSCRAM(t *testing.T) {
	a := newAuth(t, Config{})
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		ex, err := scramLoginWith(t, a, mech, "alice", "alice-secret", nil)
		if err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		if ex.Principal() != "User:alice" {
			t.Fatalf("%s: principal %q", mech, ex.Principal())
		}
		var fail *Failure
		if _, err := scramLoginWith(t, a, mech, "alice", "wrong", nil); !errors.As(err, &fail) {
			t.Fatalf("%s wrong password: %v, want a failure", mech, err)
		}
		if _, err := scramLoginWith(t, a, mech, "mallory", "alice-secret", nil); !errors.As(err, &fail) {
			t.Fatalf("%s unknown user: %v, want a failure", mech, err)
		}
		// A wrong nonce in client-final.
		_, err = scramLoginWith(t, a, mech, "alice", "alice-secret", func(step int, msg string) string {
			if step == 1 {
				return strings.Replace(msg, "r=", "r=x", 1)
			}
			return msg
		})
		if !errors.As(err, &fail) {
			t.Fatalf("%s wrong nonce: %v, want a failure", mech, err)
		}
	}
}

// Steps out of order, and a replay of a finished login, are refused.
func TestSCRAMOutOfOrderAndReplay(t *testing.T) {
	a := newAuth(t, Config{})
	var final string
	_, err := scramLoginWith(t, a, ScramSHA256, "alice", "alice-secret", func(step int, msg string) string {
		if step == 1 {
			final = msg
		}
		return msg
	})
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := a.Start(ScramSHA256)
	if _, _, err := ex.Step(context.Background(), []byte(final)); err == nil {
		t.Fatal("client-final as the first message was accepted")
	}
	// The recorded client-final replayed in a new login (new nonce).
	ex, _ = a.Start(ScramSHA256)
	if _, _, err := ex.Step(context.Background(), []byte("n,,n=alice,r=abcdefgh")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ex.Step(context.Background(), []byte(final)); err == nil {
		t.Fatal("a replayed client-final was accepted")
	}
	if _, _, err := ex.Step(context.Background(), []byte(final)); err == nil {
		t.Fatal("a step after the login ended was accepted")
	}
}

func TestPlain(t *testing.T) {
	a := newAuth(t, Config{})
	for _, tc := range []struct {
		msg string
		ok  bool
	}{
		{"\x00alice\x00alice-secret", true},
		{"alice\x00alice\x00alice-secret", true},
		{"\x00alice\x00wrong", false},
		{"bob\x00alice\x00alice-secret", false},
		{"\x00mallory\x00alice-secret", false},
		{"alice\x00alice-secret", false},
		{"\x00\x00", false},
		{"", false},
	} {
		ex, _ := a.Start(Plain)
		_, done, err := ex.Step(context.Background(), []byte(tc.msg))
		if done != tc.ok || (err == nil) != tc.ok {
			t.Errorf("PLAIN %q: done %v err %v, want ok %v", tc.msg, done, err, tc.ok)
		}
		if tc.ok && ex.Principal() != "User:alice" {
			t.Errorf("PLAIN %q: principal %q", tc.msg, ex.Principal())
		}
	}
}

func bearer(token string) []byte { return []byte("n,,\x01auth=Bearer " + token + "\x01\x01") }

func TestOAuthBearer(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	data, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	if err := os.WriteFile(jwks, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sign := func(k *rsa.PrivateKey, claims jwt.MapClaims) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(k)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	exp := time.Now().Add(time.Hour)
	good := jwt.MapClaims{"sub": "svc", "iss": "https://idp", "aud": "kafka", "exp": exp.Unix()}
	unsigned := func(claims jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims).SignedString(jwt.UnsafeAllowNoneSignatureType)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	with := func(k string, v any) jwt.MapClaims {
		c := jwt.MapClaims{}
		for a, b := range good {
			c[a] = b
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	secured := newAuth(t, Config{Mechanisms: []string{OAuthBearer}, OAuth: OAuthConfig{JWKSFile: jwks, Issuer: "https://idp", Audience: "kafka"}})
	unsecured := newAuth(t, Config{Mechanisms: []string{OAuthBearer}, OAuth: OAuthConfig{Unsecured: true}})
	for _, tc := range []struct {
		what string
		a    *Authenticator
		msg  []byte
		ok   bool
	}{
		{"signed", secured, bearer(sign(key, good)), true},
		{"signed, authzid", secured, []byte("n,a=svc,\x01auth=Bearer " + sign(key, good) + "\x01\x01"), true},
		{"other authzid", secured, []byte("n,a=bob,\x01auth=Bearer " + sign(key, good) + "\x01\x01"), false},
		{"extensions", secured, []byte("n,,\x01auth=Bearer " + sign(key, good) + "\x01traceId=1\x01\x01"), true},
		{"wrong key", secured, bearer(sign(other, good)), false},
		{"expired", secured, bearer(sign(key, with("exp", time.Now().Add(-time.Hour).Unix()))), false},
		{"no exp", secured, bearer(sign(key, with("exp", nil))), false},
		{"wrong issuer", secured, bearer(sign(key, with("iss", "https://evil"))), false},
		{"wrong audience", secured, bearer(sign(key, with("aud", "other"))), false},
		{"no sub", secured, bearer(sign(key, with("sub", nil))), false},
		{"unsigned, secured", secured, bearer(unsigned(good)), false},
		{"unsigned, unsecured", unsecured, bearer(unsigned(good)), true},
		{"not closed", secured, []byte("n,,\x01auth=Bearer " + sign(key, good) + "\x01"), false},
		{"no auth", secured, []byte("n,,\x01\x01"), false},
		{"basic", secured, []byte("n,,\x01auth=Basic abc\x01\x01"), false},
		{"channel binding", secured, []byte("p=tls-unique,,\x01auth=Bearer " + sign(key, good) + "\x01\x01"), false},
	} {
		ex, _ := tc.a.Start(OAuthBearer)
		answer, done, err := ex.Step(context.Background(), tc.msg)
		if err == nil && !done {
			// A refused token: the error challenge, acknowledged.
			if string(answer) != `{"status":"invalid_token"}` {
				t.Errorf("%s: challenge %q", tc.what, answer)
			}
			_, done, err = ex.Step(context.Background(), []byte("\x01"))
			if err == nil || !strings.Contains(err.Error(), "invalid_token") {
				t.Errorf("%s: after the challenge: %v", tc.what, err)
			}
		}
		if done != tc.ok || (err == nil) != tc.ok {
			t.Errorf("%s: done %v err %v, want ok %v", tc.what, done, err, tc.ok)
			continue
		}
		if tc.ok {
			if ex.Principal() != "User:svc" || ex.Expires().Unix() != exp.Unix() {
				t.Errorf("%s: principal %q expires %v", tc.what, ex.Principal(), ex.Expires())
			}
		}
	}
}
