package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	kgosasl "github.com/segmentio/kafka-go/sasl"
	kgoplain "github.com/segmentio/kafka-go/sasl/plain"
	kgoscram "github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xscram "github.com/xdg-go/scram"
)

// The package's gateways serve SASL_SSL, SASL_PLAINTEXT and SSL listeners
// beside PLAINTEXT, with the certificates, users and token keys made here.
// Here too: the ways a client reaches them (secureMode) and each client
// family's configuration for one, shared by the security_*_test.go tests.

// admin is the user -sasl.users creates at start.
const adminUser, adminPassword = "admin", "admin-secret"

// gatewaySuperUsers are the package gateways' -super.users.
const gatewaySuperUsers = "User:ANONYMOUS;User:" + adminUser

// credsKit holds the files the gateways and clients use.
type credsKit struct {
	caFile, certFile, keyFile string
	clientCert, clientKey     string // CN=alice
	usersFile, jwksFile       string
	caPool                    *x509.CertPool
	clientPair                tls.Certificate
	tokenKey                  *rsa.PrivateKey
	principalRules            string
}

var creds *credsKit

func makeCreds(dir string) (*credsKit, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	k := &credsKit{
		caFile: filepath.Join(dir, "ca.pem"), certFile: filepath.Join(dir, "gateway.pem"), keyFile: filepath.Join(dir, "gateway-key.pem"),
		clientCert: filepath.Join(dir, "alice.pem"), clientKey: filepath.Join(dir, "alice-key.pem"),
		usersFile: filepath.Join(dir, "users"), jwksFile: filepath.Join(dir, "jwks.json"),
		principalRules: `RULE:^CN=([^,]+).*$/$1/,DEFAULT`,
	}
	ca, err := newTestCA(k.caFile)
	if err != nil {
		return nil, err
	}
	k.caPool = ca.pool
	if err := ca.issue(2, pkix.Name{CommonName: "gateway"}, true, false, k.certFile, k.keyFile); err != nil {
		return nil, err
	}
	if err := ca.issue(3, pkix.Name{CommonName: "alice", Organization: []string{"e2e"}}, false, true, k.clientCert, k.clientKey); err != nil {
		return nil, err
	}
	if k.clientPair, err = tls.LoadX509KeyPair(k.clientCert, k.clientKey); err != nil {
		return nil, err
	}
	if err := os.WriteFile(k.usersFile, []byte("# the first administrator\n"+adminUser+":"+adminPassword+"\n"), 0o600); err != nil {
		return nil, err
	}
	if k.tokenKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		return nil, err
	}
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.tokenKey.PublicKey, KeyID: "e2e", Algorithm: "RS256", Use: "sig"}}})
	if err != nil {
		return nil, err
	}
	return k, os.WriteFile(k.jwksFile, jwks, 0o600)
}

// testCA issues the certificates of the tests' TLS listeners and of a
// secured SeaweedFS.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

// newTestCA makes a CA for a day and writes its certificate to file.
func newTestCA(file string) (*testCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ca := &testCA{key: key, pool: x509.NewCertPool()}
	if ca.cert, err = x509.ParseCertificate(der); err != nil {
		return nil, err
	}
	ca.pool.AddCert(ca.cert)
	return ca, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
}

// issue writes a certificate and its key, for a server on 127.0.0.1 and
// localhost, for a client, or for both.
func (ca *testCA) issue(serial int64, subject pkix.Name, server, client bool, certFile, keyFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature}
	if server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	}
	if client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// tokenSecret is the delegation.token.secret.key of the package's
// gateways.
const tokenSecret = "e2e-delegation-token-secret"

// gatewayFlags are the security flags of the package's gateways.
func (k *credsKit) gatewayFlags() []string {
	return []string{
		"-ssl.cert=" + k.certFile, "-ssl.key=" + k.keyFile, "-ssl.client.ca=" + k.caFile, "-ssl.client.auth=requested",
		"-ssl.principal.mapping.rules=" + k.principalRules,
		"-sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"-sasl.users=" + k.usersFile, "-sasl.oauthbearer.jwks=" + k.jwksFile, "-sasl.oauthbearer.unsecured",
		"-delegation.token.secret.key=" + tokenSecret,
		// ACLs decide; the PLAINTEXT clients of the other tests and the
		// administrator may do everything, and what no ACL speaks of
		// is open (see TestACLs).
		"-authorizer.enabled", "-super.users=" + gatewaySuperUsers, "-allow.everyone.if.no.acl.found",
	}
}

// tlsConfig trusts the test CA, with alice's certificate if asked.
func (k *credsKit) tlsConfig(withCert bool) *tls.Config {
	c := &tls.Config{RootCAs: k.caPool, MinVersion: tls.VersionTLS12}
	if withCert {
		c.Certificates = []tls.Certificate{k.clientPair}
	}
	return c
}

// token is a JWT for sub signed by the JWKS's key.
func (k *credsKit) token(t *testing.T, sub string, ttl time.Duration) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"sub": sub, "exp": time.Now().Add(ttl).Unix(), "iat": time.Now().Unix()})
	tok.Header["kid"] = "e2e"
	s, err := tok.SignedString(k.tokenKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// secureMode is how a client reaches the gateway.
type secureMode struct {
	name      string
	listener  string // SASL_SSL, SASL_PLAINTEXT or SSL
	mechanism string // "" on SSL
	user      string
	password  string
}

var secureModes = []secureMode{
	{"SASL_SSL-SCRAM-SHA-512", "SASL_SSL", "SCRAM-SHA-512", adminUser, adminPassword},
	{"SASL_PLAINTEXT-PLAIN", "SASL_PLAINTEXT", "PLAIN", adminUser, adminPassword},
	{"SSL-client-certificate", "SSL", "", "", ""},
}

func (m secureMode) addr() string { return gw.secure[m.listener] }
func (m secureMode) tls() bool    { return m.listener == "SSL" || m.listener == "SASL_SSL" }

// franzOpts are franz-go's options for the mode.
func (m secureMode) franzOpts() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(m.addr())}
	if m.tls() {
		opts = append(opts, kgo.DialTLSConfig(creds.tlsConfig(m.listener == "SSL")))
	}
	if m.mechanism != "" {
		opts = append(opts, kgo.SASL(m.franzSASL()))
	}
	return opts
}

// franzSASL is franz-go's mechanism for the mode.
func (m secureMode) franzSASL() sasl.Mechanism {
	switch m.mechanism {
	case "PLAIN":
		return plain.Auth{User: m.user, Pass: m.password}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: m.user, Pass: m.password}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: m.user, Pass: m.password}.AsSha512Mechanism()
	}
	return nil
}

// librdkafka are librdkafka's properties for the mode (confluent-kafka-go
// and kcat).
func (m secureMode) librdkafka() map[string]string {
	p := map[string]string{"bootstrap.servers": m.addr(), "security.protocol": m.listener}
	if m.tls() {
		p["ssl.ca.location"] = creds.caFile
	}
	if m.listener == "SSL" {
		p["ssl.certificate.location"], p["ssl.key.location"] = creds.clientCert, creds.clientKey
	}
	if m.mechanism != "" {
		p["sasl.mechanisms"], p["sasl.username"], p["sasl.password"] = m.mechanism, m.user, m.password
	}
	return p
}

// saramaConfig is sarama's configuration for the mode.
func (m secureMode) saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	if m.tls() {
		cfg.Net.TLS.Enable = true
		cfg.Net.TLS.Config = creds.tlsConfig(m.listener == "SSL")
	}
	if m.mechanism != "" {
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.User, cfg.Net.SASL.Password = m.user, m.password
		cfg.Net.SASL.Mechanism = sarama.SASLMechanism(m.mechanism)
		if strings.HasPrefix(m.mechanism, "SCRAM") {
			fn := xscram.SHA256
			if m.mechanism == "SCRAM-SHA-512" {
				fn = xscram.SHA512
			}
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{fn: fn} }
		}
	}
	return cfg
}

// saramaSCRAM is sarama's SCRAM client, on xdg-go/scram as sarama's own
// example has it.
type saramaSCRAM struct {
	fn   xscram.HashGeneratorFcn
	conv *xscram.ClientConversation
}

func (s *saramaSCRAM) Begin(user, password, authzID string) error {
	cl, err := s.fn.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	s.conv = cl.NewConversation()
	return nil
}
func (s *saramaSCRAM) Step(challenge string) (string, error) { return s.conv.Step(challenge) }
func (s *saramaSCRAM) Done() bool                            { return s.conv.Done() }

// kafkaGoSASL is kafka-go's mechanism for the mode.
func (m secureMode) kafkaGoSASL(t *testing.T) kgosasl.Mechanism {
	switch m.mechanism {
	case "PLAIN":
		return kgoplain.Mechanism{Username: m.user, Password: m.password}
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		algo := kgoscram.SHA256
		if m.mechanism == "SCRAM-SHA-512" {
			algo = kgoscram.SHA512
		}
		mech, err := kgoscram.Mechanism(algo, m.user, m.password)
		if err != nil {
			t.Fatal(err)
		}
		return mech
	}
	return nil
}

// The values every client writes and reads back in the secure tests.
func secureValues(topic string) []string {
	var vs []string
	for i := 0; i < 10; i++ {
		vs = append(vs, fmt.Sprintf("%s-%d", topic, i))
	}
	return vs
}

func checkValues(t *testing.T, who string, got, want []string) {
	t.Helper()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%s read %q, want %q", who, got, want)
	}
}

func librdkafkaWith(t *testing.T, props map[string]string, topic string) {
	cfg := kafka.ConfigMap{}
	for k, v := range props {
		cfg[k] = v
	}
	p, err := kafka.NewProducer(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	delivered := make(chan kafka.Event, 10)
	for _, v := range secureValues(topic) {
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte(v)}, delivered); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 10; i++ {
		select {
		case e := <-delivered:
			if msg := e.(*kafka.Message); msg.TopicPartition.Error != nil {
				t.Fatalf("delivery: %v", msg.TopicPartition.Error)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%d of 10 delivered", i)
		}
	}
	ccfg := kafka.ConfigMap{"group.id": "unused-" + topic, "enable.auto.commit": false}
	for k, v := range props {
		ccfg[k] = v
	}
	c, err := kafka.NewConsumer(&ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	deadline := time.Now().Add(60 * time.Second)
	for len(got) < 10 && time.Now().Before(deadline) {
		msg, err := c.ReadMessage(time.Second)
		if err != nil {
			if ke, ok := err.(kafka.Error); ok && ke.IsTimeout() {
				continue
			}
			t.Fatal(err)
		}
		if int64(msg.TopicPartition.Offset) != int64(len(got)) {
			t.Fatalf("offset %d, want %d", msg.TopicPartition.Offset, len(got))
		}
		got = append(got, string(msg.Value))
	}
	checkValues(t, "librdkafka", got, secureValues(topic))
}
