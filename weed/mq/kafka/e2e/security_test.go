package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	kafkago "github.com/segmentio/kafka-go"
	kgosasl "github.com/segmentio/kafka-go/sasl"
	kgoplain "github.com/segmentio/kafka-go/sasl/plain"
	kgoscram "github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xscram "github.com/xdg-go/scram"
)

// The package's gateways serve SASL_SSL, SASL_PLAINTEXT and SSL listeners
// beside PLAINTEXT, with the certificates, users and token keys made here.

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
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	k.caPool = x509.NewCertPool()
	k.caPool.AddCert(ca)
	issue := func(serial int64, subject pkix.Name, server bool, certFile, keyFile string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: subject,
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature}
		if server {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
			tmpl.DNSNames = []string{"localhost"}
		} else {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
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
	if err := os.WriteFile(k.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		return nil, err
	}
	if err := issue(2, pkix.Name{CommonName: "gateway"}, true, k.certFile, k.keyFile); err != nil {
		return nil, err
	}
	if err := issue(3, pkix.Name{CommonName: "alice", Organization: []string{"e2e"}}, false, k.clientCert, k.clientKey); err != nil {
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

// gatewayFlags are the security flags of the package's gateways.
func (k *credsKit) gatewayFlags() []string {
	return []string{
		"-ssl.cert=" + k.certFile, "-ssl.key=" + k.keyFile, "-ssl.client.ca=" + k.caFile, "-ssl.client.auth=requested",
		"-ssl.principal.mapping.rules=" + k.principalRules,
		"-sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"-sasl.users=" + k.usersFile, "-sasl.oauthbearer.jwks=" + k.jwksFile, "-sasl.oauthbearer.unsecured",
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

// Each client family produces and consumes over SASL_SSL with SCRAM-SHA-512,
// over SASL_PLAINTEXT with PLAIN and over SSL with a client certificate;
// what it wrote reads back, in order, with its offsets.
func TestSecureClients(t *testing.T) {
	families := map[string]func(t *testing.T, m secureMode, topic string){
		"franz-go": franzProduceConsume, "sarama": saramaProduceConsume, "kafka-go": kafkaGoProduceConsume,
		"librdkafka": confluentProduceConsume, "kcat": kcatProduceConsume,
	}
	for _, m := range secureModes {
		for _, name := range []string{"franz-go", "sarama", "kafka-go", "librdkafka", "kcat"} {
			t.Run(m.name+"/"+name, func(t *testing.T) {
				topic := newTopic(t)
				createTopic(t, topic, 1, nil)
				families[name](t, m, topic)
				// What it wrote is plain records to every other client.
				var got []string
				for _, r := range consumeN(t, topic, 10) {
					got = append(got, string(r.Value))
				}
				checkValues(t, "franz-go over PLAINTEXT", got, secureValues(topic))
			})
		}
	}
	// sarama's PLAIN login with a v0 handshake: the login's messages are
	// bare frames.
	t.Run("SASL_PLAINTEXT-PLAIN-v0/sarama", func(t *testing.T) {
		topic := newTopic(t)
		createTopic(t, topic, 1, nil)
		m := secureModes[1]
		cfg := m.saramaConfig()
		cfg.Net.SASL.Version = sarama.SASLHandshakeV0
		cfg.ApiVersionsRequest = false // sarama's rule for v0 logins
		saramaWith(t, cfg, m, topic)
	})
}

func franzProduceConsume(t *testing.T, m secureMode, topic string) {
	cl, err := kgo.NewClient(append(m.franzOpts(), kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range secureValues(topic) {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for len(got) < 10 {
		fs := cl.PollFetches(ctxT(t))
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(len(got)) {
				t.Fatalf("offset %d, want %d", r.Offset, len(got))
			}
			got = append(got, string(r.Value))
		})
	}
	checkValues(t, "franz-go", got, secureValues(topic))
}

func saramaProduceConsume(t *testing.T, m secureMode, topic string) {
	saramaWith(t, m.saramaConfig(), m, topic)
}

func saramaWith(t *testing.T, cfg *sarama.Config, m secureMode, topic string) {
	prod, err := sarama.NewSyncProducer([]string{m.addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for _, v := range secureValues(topic) {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(v)}); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := sarama.NewConsumer([]string{m.addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var got []string
	for len(got) < 10 {
		select {
		case msg := <-pc.Messages():
			if msg.Offset != int64(len(got)) {
				t.Fatalf("offset %d, want %d", msg.Offset, len(got))
			}
			got = append(got, string(msg.Value))
		case err := <-pc.Errors():
			t.Fatal(err)
		case <-time.After(30 * time.Second):
			t.Fatalf("sarama read %d of 10", len(got))
		}
	}
	checkValues(t, "sarama", got, secureValues(topic))
}

func kafkaGoProduceConsume(t *testing.T, m secureMode, topic string) {
	var tlsCfg *tls.Config
	if m.tls() {
		tlsCfg = creds.tlsConfig(m.listener == "SSL")
	}
	w := &kafkago.Writer{Addr: kafkago.TCP(m.addr()), Topic: topic, RequiredAcks: kafkago.RequireAll,
		Transport: &kafkago.Transport{TLS: tlsCfg, SASL: m.kafkaGoSASL(t)}, BatchTimeout: 10 * time.Millisecond}
	defer w.Close()
	var msgs []kafkago.Message
	for _, v := range secureValues(topic) {
		msgs = append(msgs, kafkago.Message{Value: []byte(v)})
	}
	if err := w.WriteMessages(ctxT(t), msgs...); err != nil {
		t.Fatal(err)
	}
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{m.addr()}, Topic: topic, Partition: 0, MaxWait: 200 * time.Millisecond,
		Dialer: &kafkago.Dialer{Timeout: 10 * time.Second, TLS: tlsCfg, SASLMechanism: m.kafkaGoSASL(t)}})
	defer r.Close()
	var got []string
	for len(got) < 10 {
		msg, err := r.ReadMessage(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if msg.Offset != int64(len(got)) {
			t.Fatalf("offset %d, want %d", msg.Offset, len(got))
		}
		got = append(got, string(msg.Value))
	}
	checkValues(t, "kafka-go", got, secureValues(topic))
}

func confluentProduceConsume(t *testing.T, m secureMode, topic string) {
	librdkafkaWith(t, m.librdkafka(), topic)
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

func kcatProduceConsume(t *testing.T, m secureMode, topic string) {
	props := m.librdkafka()
	if strings.HasPrefix(m.mechanism, "SCRAM") {
		// The kcat of Debian's packages links librdkafka 2.0: before
		// 2.6.1 it sends the client nonce twice in client-final, which
		// Apache Kafka 4 refuses (CVE-2024-56128) and so does the
		// gateway. The bundled librdkafka above logs in with SCRAM.
		props["sasl.mechanisms"] = "PLAIN"
	}
	var args []string
	for k, v := range props {
		if k != "bootstrap.servers" {
			args = append(args, "-X", k+"="+v)
		}
	}
	kcatAt(t, m.addr(), strings.Join(secureValues(topic), "\n")+"\n", append(args, "-P", "-t", topic, "-p", "0")...)
	out := kcatAt(t, m.addr(), "", append(args, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-f", "%o:%s\n")...)
	var got []string
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		off, v, _ := strings.Cut(line, ":")
		if off != fmt.Sprint(i) {
			t.Fatalf("kcat: offset %s, want %d", off, i)
		}
		got = append(got, v)
	}
	checkValues(t, "kcat", got, secureValues(topic))
}

// A wrong password gets SASL_AUTHENTICATION_FAILED, with franz-go, sarama
// and librdkafka alike, and nothing is produced.
func TestSASLWrongPassword(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	for _, m := range secureModes[:2] {
		m.password = "wrong"
		cl, err := kgo.NewClient(append(m.franzOpts(), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1))...)
		if err != nil {
			t.Fatal(err)
		}
		err = cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("must not land")}).FirstErr()
		cl.Close()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: franz-go produce: %v, want SASL_AUTHENTICATION_FAILED", m.name, err)
		}
		cfg := m.saramaConfig()
		cfg.Metadata.Retry.Max = 0
		if _, err := sarama.NewClient([]string{m.addr()}, cfg); !errors.Is(err, sarama.ErrSASLAuthenticationFailed) &&
			!strings.Contains(fmt.Sprint(err), "SASL Authentication failed") {
			t.Errorf("%s: sarama: %v, want SASL authentication failed", m.name, err)
		}
	}
	out := kcatFails(t, secureModes[0].addr(), "-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location="+creds.caFile,
		"-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username="+adminUser, "-X", "sasl.password=wrong", "-L", "-m", "5")
	if !strings.Contains(out, "SASL authentication error") {
		t.Errorf("kcat with a wrong password:\n%s", out)
	}
	offs := listEnd(t, topic, 0)
	if offs != 0 {
		t.Fatalf("the partition's end is %d after refused logins, want 0", offs)
	}
}

// listEnd is a partition's high watermark, asked over PLAINTEXT.
func listEnd(t *testing.T, topic string, partition int32) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = partition, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), newClient(t))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	return resp.Topics[0].Partitions[0].Offset
}

// franz-go logs in with OAUTHBEARER tokens signed by the JWKS's key, and
// re-authenticates (KIP-368) when a short-lived token's session ends;
// librdkafka logs in with its unsecured token (-sasl.oauthbearer.unsecured).
// A token signed by another key, or expired, is refused.
func TestOAuthBearer(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	tokens := 0
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.secure["SASL_SSL"]), kgo.DialTLSConfig(creds.tlsConfig(false)),
		kgo.DefaultProduceTopic(topic),
		kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			tokens++
			return oauth.Auth{Token: creds.token(t, "svc", 6*time.Second)}, nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Past the first token's end, the connection goes on with a new one.
	time.Sleep(8 * time.Second)
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if tokens < 2 {
		t.Fatalf("franz-go asked for %d tokens: no re-authentication", tokens)
	}

	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	forged := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"sub": "svc", "exp": time.Now().Add(time.Hour).Unix()})
	forged.Header["kid"] = "e2e"
	forgedToken, _ := forged.SignedString(other)
	for what, token := range map[string]string{"another key": forgedToken, "expired": creds.token(t, "svc", -time.Hour)} {
		bad, err := kgo.NewClient(kgo.SeedBrokers(gw.secure["SASL_PLAINTEXT"]), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1),
			kgo.SASL(oauth.Auth{Token: token}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		err = bad.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("must not land")}).FirstErr()
		bad.Close()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("a token signed by %s: %v, want SASL_AUTHENTICATION_FAILED", what, err)
		}
	}

	// librdkafka with its own unsecured token.
	t.Run("librdkafka", func(t *testing.T) {
		topic := newTopic(t)
		createTopic(t, topic, 1, nil)
		librdkafkaWith(t, map[string]string{"bootstrap.servers": gw.secure["SASL_PLAINTEXT"], "security.protocol": "SASL_PLAINTEXT",
			"sasl.mechanisms": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true", "sasl.oauthbearer.config": "principal=svc"}, topic)
	})
	var got []string
	for _, r := range consumeN(t, topic, 2) {
		got = append(got, string(r.Value))
	}
	checkValues(t, "franz-go over PLAINTEXT", got, []string{"before", "after"})
}

// franz-go's own kgo suite runs its SCRAM and OAUTHBEARER tests against the
// gateway: TestSCRAMAuth (SCRAM-SHA-512 as the administrator),
// TestSCRAMAuthBadCredentials and TestOAuthAuth (an unsecured token, and an
// expired one refused with invalid_token, as Kafka's default validator).
func TestFranzGoSASLSuite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-v",
		"-run", "^(TestSCRAMAuth|TestSCRAMAuthBadCredentials|TestOAuthAuth)$", "github.com/twmb/franz-go/pkg/kgo")
	cmd.Env = append(os.Environ(),
		"KGO_SEEDS="+gw.addr,
		"KGO_TEST_SCRAM_SEEDS="+gw.secure["SASL_PLAINTEXT"],
		"KGO_TEST_SCRAM="+adminUser+":"+adminPassword+":512",
		"KGO_TEST_OAUTH_SEEDS="+gw.secure["SASL_PLAINTEXT"],
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kgo suite: %v\n%s", err, out)
	}
	for _, name := range []string{"TestSCRAMAuth", "TestSCRAMAuthBadCredentials", "TestOAuthAuth"} {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass:\n%s", name, out)
		}
	}
}
