package gateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/sasl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

func TestParseListeners(t *testing.T) {
	ls, err := ParseListeners("PLAINTEXT://0.0.0.0:9092, SASL_SSL://0.0.0.0:9093", "SASL_SSL://kafka.example.com:443", "10.0.0.5")
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || ls[0].Advertised != "10.0.0.5:9092" || ls[1].Advertised != "kafka.example.com:443" || !ls[1].TLS() || !ls[1].SASL() || ls[0].TLS() {
		t.Fatalf("%+v", ls)
	}
	for _, bad := range [][2]string{
		{"PLAINTEXT://:9092,PLAINTEXT://:9093", ""}, // one per protocol
		{"HTTP://:80", ""},
		{"PLAINTEXT:9092", ""},
		{"PLAINTEXT://:99999", ""},
		{"", ""},
		{"PLAINTEXT://:9092", "SSL://x:1"}, // advertises a listener that is not there
	} {
		if _, err := ParseListeners(bad[0], bad[1], ""); err == nil {
			t.Errorf("%q %q accepted", bad[0], bad[1])
		}
	}
}

func TestPrincipalRules(t *testing.T) {
	for _, tc := range []struct{ rules, dn, want string }{
		{"DEFAULT", "CN=alice,O=example", "CN=alice,O=example"},
		{"", "CN=alice,O=example", "CN=alice,O=example"},
		{`RULE:^CN=([^,]+).*$/$1/,DEFAULT`, "CN=alice,O=example", "alice"},
		{`RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/L, DEFAULT`, "CN=Bob,OU=Eng,O=example", "bob@eng"},
		{`RULE:^CN=(.*?),OU=Svc$/$1/U,DEFAULT`, "CN=alice,O=example", "CN=alice,O=example"}, // no match: the next rule
		{`RULE:^CN=a\/b$/slash/`, "CN=a/b", "slash"},
	} {
		rules, err := parsePrincipalRules(tc.rules)
		if err != nil {
			t.Fatalf("%q: %v", tc.rules, err)
		}
		if got := mapPrincipal(rules, tc.dn); got != tc.want {
			t.Errorf("%q on %q: %q, want %q", tc.rules, tc.dn, got, tc.want)
		}
	}
	for _, bad := range []string{"RULE:^CN=(.*$/x/", "RULE:abc", "NOPE", "DEFAULT DEFAULT"} {
		if _, err := parsePrincipalRules(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// users is a one-user store for the session tests.
type users map[string]string

func (u users) Credential(_ context.Context, name, mech string) (user.Credential, error) {
	return user.Credential{}, user.ErrNotFound
}

func (u users) VerifyPassword(_ context.Context, name, password string) (bool, error) {
	p, ok := u[name]
	if !ok {
		return false, user.ErrNotFound
	}
	return p == password, nil
}

// A session's lifetime, and re-authentication: same mechanism, same
// principal, or the connection closes.
func TestSessionReauthentication(t *testing.T) {
	auth, err := sasl.New(sasl.Config{Mechanisms: []string{sasl.Plain}, Users: users{"alice": "a", "bob": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	login := func(s *session, msg string) (int64, *kerr.Error) {
		if _, e := s.Handshake(sasl.Plain, 1); e != nil {
			return 0, e
		}
		_, lifetime, e, _ := s.Authenticate(context.Background(), []byte(msg))
		return lifetime, e
	}
	s := &session{auth: auth, maxReauth: time.Hour}
	if !s.allowed(18) || s.allowed(3) {
		t.Fatal("before the login only ApiVersions and SASL are allowed")
	}
	lifetime, e := login(s, "\x00alice\x00a")
	if e != nil || lifetime < 3599000 || lifetime > 3600000 || s.principal != "User:alice" || !s.allowed(3) {
		t.Fatalf("login: %v, lifetime %d, principal %q", e, lifetime, s.principal)
	}
	if s.expired(time.Now()) || !s.expired(time.Now().Add(2*time.Hour)) {
		t.Fatal("the session ends after its lifetime, not before")
	}
	if _, e := login(s, "\x00alice\x00a"); e != nil || s.failed != nil {
		t.Fatalf("re-authentication: %v %v", e, s.failed)
	}
	if _, e := login(s, "\x00bob\x00b"); e != kerr.SaslAuthenticationFailed || s.failed == nil {
		t.Fatalf("re-authentication as bob: %v, want SASL_AUTHENTICATION_FAILED and a close", e)
	}
	s = &session{auth: auth}
	if lifetime, e := login(s, "\x00alice\x00a"); e != nil || lifetime != 0 {
		t.Fatalf("without -connections.max.reauth.ms: %v, lifetime %d", e, lifetime)
	}
	if _, e := s.Handshake("SCRAM-SHA-256", 1); e != kerr.UnsupportedSaslMechanism || s.failed == nil {
		t.Fatalf("re-authentication with another mechanism: %v", e)
	}
	s = &session{auth: auth}
	s.Handshake(sasl.Plain, 1)
	if _, e := s.Handshake(sasl.Plain, 1); e != kerr.IllegalSaslState {
		t.Fatalf("a second handshake in a login: %v", e)
	}
}

// writeCert writes a self-signed certificate for cn and its key.
func writeCert(t *testing.T, certFile, keyFile, cn string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A renewed certificate is served at the next handshake, without a
// restart; a half-written renewal keeps the last good one.
func TestCertificateReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	writeCert(t, certFile, keyFile, "first")
	cf, err := newCertFiles(TLSOptions{CertFile: certFile, KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	served := func() string {
		t.Helper()
		c, err := cf.config().GetConfigForClient(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(c.Certificates[0].Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.Subject.CommonName
	}
	if got := served(); got != "first" {
		t.Fatalf("served %q", got)
	}
	later := time.Now().Add(time.Minute)
	writeCert(t, certFile, keyFile, "renewed")
	os.Chtimes(certFile, later, later)
	cf.checked = time.Time{} // as if tlsCheckEvery had passed
	if got := served(); got != "renewed" {
		t.Fatalf("after the renewal: served %q", got)
	}
	os.WriteFile(certFile, []byte("half written"), 0o600)
	os.Chtimes(certFile, later.Add(time.Minute), later.Add(time.Minute))
	cf.checked = time.Time{}
	if got := served(); got != "renewed" {
		t.Fatalf("after a broken write: served %q", got)
	}
}
