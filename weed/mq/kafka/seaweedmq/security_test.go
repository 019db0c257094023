package seaweedmq

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"

	"github.com/seaweedfs/seaweedfs/weed/util"
)

// pemPair writes a self-signed certificate and its key into dir.
func pemPair(t *testing.T, dir, name string) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	cert, keyFile := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)       //nolint:errcheck // read back by the test
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600) //nolint:errcheck
	return cert, keyFile
}

// The section whose certificate the gateway presents: [grpc.mq]'s client
// pair, else [grpc.client] (as SeaweedFS's client tools), else [grpc.mq]'s
// own; a half-made configuration is an error naming the key.
func TestLoadSecurity(t *testing.T) {
	dir := t.TempDir()
	ca, _ := pemPair(t, dir, "ca")
	cert, key := pemPair(t, dir, "client")
	load := func(set map[string]any) (Security, error) {
		v := viper.New()
		for k, val := range set {
			v.Set(k, val)
		}
		return LoadSecurity("security.toml", util.NewViperProxy(v))
	}
	for _, c := range []struct {
		name    string
		set     map[string]any
		section string
		err     string
	}{
		{"none", map[string]any{}, "", ""},
		{"client", map[string]any{"grpc.ca": ca, "grpc.client.cert": cert, "grpc.client.key": key}, "grpc.client", ""},
		{"mq's client pair first", map[string]any{"grpc.ca": ca, "grpc.client.cert": cert, "grpc.client.key": key,
			"grpc.mq.client_cert": cert, "grpc.mq.client_key": key}, "grpc.mq", ""},
		{"client before mq's server pair", map[string]any{"grpc.ca": ca, "grpc.client.cert": cert, "grpc.client.key": key,
			"grpc.mq.cert": cert, "grpc.mq.key": key}, "grpc.client", ""},
		{"mq's server pair", map[string]any{"grpc.ca": ca, "grpc.mq.cert": cert, "grpc.mq.key": key}, "grpc.mq", ""},
		{"no key", map[string]any{"grpc.ca": ca, "grpc.client.cert": cert}, "", "[grpc.client] cert and key must both be set"},
		{"no ca", map[string]any{"grpc.client.cert": cert, "grpc.client.key": key}, "", "[grpc] ca is not set"},
		{"missing file", map[string]any{"grpc.ca": ca, "grpc.client.cert": cert, "grpc.client.key": key + ".gone"}, "", "[grpc.client] key:"},
	} {
		s, err := load(c.set)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err == "" && (s.GRPCSection != c.section || s.DialOption == nil):
			t.Errorf("%s: section %q, want %q", c.name, s.GRPCSection, c.section)
		}
	}
	s, err := load(map[string]any{"jwt.signing.read.key": "r", "https.client.enabled": true})
	if err != nil || !s.VolumeReadJWT || !s.HTTPS || s.VolumeWriteJWT {
		t.Fatalf("%+v %v", s, err)
	}
	if line := s.String(); !strings.Contains(line, "volume reads signed (jwt.signing.read)") || !strings.Contains(line, "gRPC in plaintext") {
		t.Errorf("startup line: %s", line)
	}
}

// A plaintext dial that a TLS server closes, and a TLS dial to a
// plaintext server, are ErrSecurity naming what to set, and retriable
// (a server restarting may close a connection so too); other failures
// are not ErrSecurity.
func TestSecurityMismatch(t *testing.T) {
	plain := Security{File: "/etc/seaweedfs/security.toml"}
	err := plain.securityMismatch("master m:9333", errors.New(`rpc error: code = Unavailable desc = connection error: desc = "error reading server preface: EOF"`))
	if !errors.Is(err, ErrSecurity) || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "[grpc.client] cert and key") {
		t.Errorf("plaintext to TLS: %v (want ErrSecurity, retriable: ErrUnavailable)", err)
	}
	tls := Security{File: "/etc/seaweedfs/security.toml", GRPCSection: "grpc.client"}
	err = tls.securityMismatch("filer f:18888", errors.New(`transport: authentication handshake failed: tls: first record does not look like a TLS handshake`))
	if !errors.Is(err, ErrSecurity) || !strings.Contains(err.Error(), "[grpc.client]") {
		t.Errorf("TLS to plaintext: %v", err)
	}
	if err := plain.securityMismatch("master m:9333", errors.New("connection refused")); err != nil {
		t.Errorf("a refused connection: %v", err)
	}
	for _, s := range []string{"", "direct", "publicUrl", "filerProxy"} {
		if _, err := ParseVolumeAccess(s); err != nil {
			t.Error(err)
		}
	}
	if _, err := ParseVolumeAccess("proxy"); err == nil || !strings.Contains(err.Error(), "-volumeServerAccess") {
		t.Errorf("a wrong -volumeServerAccess: %v", err)
	}
}
