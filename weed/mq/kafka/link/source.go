package link

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// clientOpts are a Kafka client's settings for the link's source: its
// bootstrap servers, TLS and SASL as the link names them.
func clientOpts(c *Config, password string) ([]kgo.Opt, error) {
	s := &c.Source
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.Bootstrap...),
		kgo.ClientID("kafka-gateway-link-" + c.Name),
		kgo.DialTimeout(10 * time.Second),
		kgo.RequestTimeoutOverhead(10 * time.Second),
		kgo.RetryTimeout(15 * time.Second),
		kgo.MetadataMinAge(time.Second),
	}
	protocol := s.SecurityProtocol
	if protocol == "" {
		protocol = "PLAINTEXT"
	}
	if strings.HasSuffix(protocol, "SSL") {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: s.SSLInsecure} //nolint:gosec // the user's choice, named sslInsecure
		if s.SSLCA != "" {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM([]byte(s.SSLCA)) {
				return nil, errors.New("the source's CA PEM holds no certificate")
			}
			cfg.RootCAs = pool
		}
		opts = append(opts, kgo.Dialer((&tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: cfg}).DialContext))
	}
	if strings.HasPrefix(protocol, "SASL") {
		switch s.SASLMechanism {
		case "", "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: s.SASLUser, Pass: password}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: s.SASLUser, Pass: password}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: s.SASLUser, Pass: password}.AsSha512Mechanism()))
		}
	}
	return opts, nil
}
