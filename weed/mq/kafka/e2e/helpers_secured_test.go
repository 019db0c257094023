package e2e

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// securedSeaweedFS is a security.toml as a production SeaweedFS cluster
// has it: gRPC mutual TLS on every component, the clients' certificate in
// [grpc.client], JWT on volume writes and reads and on filer writes and
// reads, and HTTPS with client certificates on the volume servers' and
// the filer's HTTP ports.
type securedSeaweedFS struct {
	dir                   string // holds security.toml: -config_dir
	caFile                string
	clientCert, clientKey string
	ca                    *testCA
}

// The keys of the secured cluster's JWTs.
const (
	volumeWriteKey = "e2e-volume-write-key"
	volumeReadKey  = "e2e-volume-read-key"
	filerWriteKey  = "e2e-filer-write-key"
	filerReadKey   = "e2e-filer-read-key"
)

// makeSecuredSeaweedFS writes the certificates and the security.toml of a
// secured cluster into dir.
func makeSecuredSeaweedFS(t *testing.T, dir string) *securedSeaweedFS {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	s := &securedSeaweedFS{dir: dir, caFile: filepath.Join(dir, "ca.pem"),
		clientCert: filepath.Join(dir, "client.pem"), clientKey: filepath.Join(dir, "client-key.pem")}
	var err error
	if s.ca, err = newTestCA(s.caFile); err != nil {
		t.Fatal(err)
	}
	// Each server's certificate also serves it as a client of the others
	// (a filer dials the master and the volume servers).
	nodeCert, nodeKey := filepath.Join(dir, "node.pem"), filepath.Join(dir, "node-key.pem")
	if err := s.ca.issue(10, pkix.Name{CommonName: "seaweedfs"}, true, true, nodeCert, nodeKey); err != nil {
		t.Fatal(err)
	}
	if err := s.ca.issue(11, pkix.Name{CommonName: "client"}, false, true, s.clientCert, s.clientKey); err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf(`[jwt.signing]
key = %q
[jwt.signing.read]
key = %q
[jwt.filer_signing]
key = %q
[jwt.filer_signing.read]
key = %q

[grpc]
ca = %q
`, volumeWriteKey, volumeReadKey, filerWriteKey, filerReadKey, s.caFile)
	for _, c := range []string{"master", "volume", "filer", "mq", "s3", "msg_broker"} {
		toml += fmt.Sprintf("[grpc.%s]\ncert = %q\nkey = %q\n", c, nodeCert, nodeKey)
	}
	toml += fmt.Sprintf("[grpc.client]\ncert = %q\nkey = %q\n\n", s.clientCert, s.clientKey)
	for _, c := range []string{"volume", "filer"} {
		toml += fmt.Sprintf("[https.%s]\ncert = %q\nkey = %q\nca = %q\n", c, nodeCert, nodeKey, s.caFile)
	}
	toml += fmt.Sprintf("[https.client]\nenabled = true\ncert = %q\nkey = %q\nca = %q\n", s.clientCert, s.clientKey, s.caFile)
	if err := os.WriteFile(filepath.Join(dir, "security.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// global are weed's flags that make a process read the security.toml.
func (s *securedSeaweedFS) global() []string { return []string{"-config_dir=" + s.dir} }

// httpClient reaches the cluster's HTTPS ports as an outsider holding a
// certificate of the cluster's CA, but no token.
func (s *securedSeaweedFS) httpClient(t *testing.T) *http.Client {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(s.clientCert, s.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.ca.pool, Certificates: []tls.Certificate{pair}}}}
}
