package gateway

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
)

// TLSOptions configure the SSL and SASL_SSL listeners, after Kafka's ssl.*
// settings.
type TLSOptions struct {
	// CertFile and KeyFile are the gateway's PEM certificate (chain) and
	// key; they are read again when they change, so a renewed
	// certificate is served without a restart.
	CertFile, KeyFile string
	// ClientCAFile holds the PEM certificates that sign client
	// certificates (mTLS).
	ClientCAFile string
	// ClientAuth is none, requested or required (ssl.client.auth).
	ClientAuth string
	// PrincipalRules map a client certificate's subject to its principal
	// (ssl.principal.mapping.rules): "DEFAULT" keeps the whole
	// distinguished name, "RULE:pattern/replacement/[LU]" rewrites it.
	PrincipalRules string
}

// tlsCheckEvery bounds how often the certificate files are looked at: a
// handshake needs no system call most of the time.
const tlsCheckEvery = time.Second

// certFiles serves the certificate and client CAs, reading the files again
// once their modification times change.
type certFiles struct {
	opts  TLSOptions
	rules []principalRule

	mu      sync.Mutex
	checked time.Time
	mods    [3]time.Time
	cert    *tls.Certificate
	cas     *x509.CertPool
}

func newCertFiles(opts TLSOptions) (*certFiles, error) {
	if opts.CertFile == "" || opts.KeyFile == "" {
		return nil, errors.New("an SSL listener needs -ssl.cert and -ssl.key")
	}
	switch opts.ClientAuth {
	case "", "none", "requested", "required":
	default:
		return nil, fmt.Errorf("-ssl.client.auth: %q is not none, requested or required", opts.ClientAuth)
	}
	if (opts.ClientAuth == "requested" || opts.ClientAuth == "required") && opts.ClientCAFile == "" {
		return nil, errors.New("-ssl.client.auth needs -ssl.client.ca")
	}
	rules, err := parsePrincipalRules(opts.PrincipalRules)
	if err != nil {
		return nil, err
	}
	cf := &certFiles{opts: opts, rules: rules}
	if err := cf.load(); err != nil {
		return nil, err
	}
	return cf, nil
}

// load reads the files if they changed; an unreadable new version keeps
// the last good one (a renewal written in two steps is caught next time).
func (cf *certFiles) load() error {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	if cf.cert != nil && time.Since(cf.checked) < tlsCheckEvery {
		return nil
	}
	cf.checked = time.Now()
	var mods [3]time.Time
	for i, f := range []string{cf.opts.CertFile, cf.opts.KeyFile, cf.opts.ClientCAFile} {
		if f == "" {
			continue
		}
		st, err := os.Stat(f)
		if err != nil {
			if cf.cert != nil {
				return nil
			}
			return err
		}
		mods[i] = st.ModTime()
	}
	if cf.cert != nil && mods == cf.mods {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(cf.opts.CertFile, cf.opts.KeyFile)
	if err != nil {
		if cf.cert != nil {
			return nil
		}
		return fmt.Errorf("TLS certificate: %w", err)
	}
	var cas *x509.CertPool
	if cf.opts.ClientCAFile != "" {
		if cas, err = ReadCAs(cf.opts.ClientCAFile); err != nil {
			if cf.cert != nil {
				return nil
			}
			return fmt.Errorf("-ssl.client.ca: %w", err)
		}
	}
	cf.cert, cf.cas, cf.mods = &cert, cas, mods
	return nil
}

// config is the TLS configuration of the gateway's listeners: TLS 1.2 and
// 1.3, the current certificate and client CAs at every handshake.
func (cf *certFiles) config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cf.load() //nolint:errcheck // the last good files are served
			cf.mu.Lock()
			cert, cas := cf.cert, cf.cas
			cf.mu.Unlock()
			c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert}, ClientCAs: cas}
			switch cf.opts.ClientAuth {
			case "requested":
				c.ClientAuth = tls.VerifyClientCertIfGiven
			case "required":
				c.ClientAuth = tls.RequireAndVerifyClientCert
			}
			return c, nil
		},
	}
}

// principal is the principal of a verified client certificate chain, or
// "" without one.
func (cf *certFiles) principal(st tls.ConnectionState) string {
	if len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
		return ""
	}
	return "User:" + mapPrincipal(cf.rules, st.VerifiedChains[0][0].Subject.String())
}

// principalRule is one rule of ssl.principal.mapping.rules.
type principalRule struct {
	def         bool
	pattern     *regexp.Regexp
	replacement string
	toCase      byte // 'L', 'U' or 0
}

// parsePrincipalRules reads Kafka's rule list: DEFAULT, or
// RULE:pattern/replacement/ with an optional L or U, comma-separated (a
// pattern may hold commas; '/' inside one is escaped as "\/").
func parsePrincipalRules(s string) ([]principalRule, error) {
	var rules []principalRule
	s = strings.TrimSpace(s)
	for s != "" {
		switch {
		case strings.HasPrefix(s, "DEFAULT"):
			rules = append(rules, principalRule{def: true})
			s = s[len("DEFAULT"):]
		case strings.HasPrefix(s, "RULE:"):
			s = s[len("RULE:"):]
			var parts [2]string
			for i := range parts {
				var b strings.Builder
				for {
					if s == "" {
						return nil, errors.New("ssl.principal.mapping.rules: a RULE is not closed by /")
					}
					if strings.HasPrefix(s, `\/`) {
						b.WriteByte('/')
						s = s[2:]
						continue
					}
					if s[0] == '/' {
						s = s[1:]
						break
					}
					b.WriteByte(s[0])
					s = s[1:]
				}
				parts[i] = b.String()
			}
			re, err := regexp.Compile(parts[0])
			if err != nil {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: %w", err)
			}
			r := principalRule{pattern: re, replacement: javaReplacement(parts[1])}
			if s != "" && (s[0] == 'L' || s[0] == 'U') {
				r.toCase, s = s[0], s[1:]
			}
			rules = append(rules, r)
		default:
			return nil, fmt.Errorf("ssl.principal.mapping.rules: %q is not DEFAULT or RULE:...", s)
		}
		s = strings.TrimSpace(s)
		if s != "" {
			if s[0] != ',' {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: rules are separated by commas, at %q", s)
			}
			s = strings.TrimSpace(s[1:])
		}
	}
	if len(rules) == 0 {
		rules = []principalRule{{def: true}}
	}
	return rules, nil
}

// javaReplacement turns Java's $1 group references into Go's ${1}.
func javaReplacement(s string) string {
	return regexp.MustCompile(`\$(\d+)`).ReplaceAllString(s, `$${$1}`)
}

// mapPrincipal applies the first rule that matches the whole name.
func mapPrincipal(rules []principalRule, dn string) string {
	for _, r := range rules {
		if r.def {
			return dn
		}
		loc := r.pattern.FindStringIndex(dn)
		if loc == nil || loc[0] != 0 || loc[1] != len(dn) {
			continue
		}
		out := r.pattern.ReplaceAllString(dn, r.replacement)
		switch r.toCase {
		case 'L':
			out = strings.ToLower(out)
		case 'U':
			out = strings.ToUpper(out)
		}
		return out
	}
	return dn
}

// ReadCAs reads a file of PEM certificates into a pool.
func ReadCAs(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate", file)
	}
	return pool, nil
}
