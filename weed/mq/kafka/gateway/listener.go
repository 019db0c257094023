package gateway

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// The security protocols of Kafka's listeners.
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// Listener is one of the gateway's listeners, as Kafka's listeners name
// them: its name is its security protocol.
type Listener struct {
	Name string // PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
	// Bind is the address to listen on, host:port (port 0: a free one).
	Bind string
	// Advertised is the host:port Metadata names on this listener (empty:
	// the bound address).
	Advertised string
}

// TLS reports whether the listener's connections start with TLS.
func (l Listener) TLS() bool { return l.Name == SSL || l.Name == SASLSSL }

// SASL reports whether the listener's connections log in with SASL.
func (l Listener) SASL() bool { return l.Name == SASLPlaintext || l.Name == SASLSSL }

// ParseListeners reads Kafka's listeners and advertised.listeners settings:
// comma-separated PROTOCOL://host:port entries, one per protocol. An
// advertised entry names a listener of the first list; a listener without
// one advertises advertisedHost (if set) and its port.
func ParseListeners(listeners, advertised, advertisedHost string) ([]Listener, error) {
	parse := func(flag, s string) ([][2]string, error) {
		var out [][2]string
		seen := map[string]bool{}
		for _, e := range strings.Split(s, ",") {
			e = strings.TrimSpace(e)
			if e == "" {
				continue
			}
			name, addr, ok := strings.Cut(e, "://")
			if !ok {
				return nil, fmt.Errorf("%s: %q is not PROTOCOL://host:port", flag, e)
			}
			switch name {
			case Plaintext, SSL, SASLPlaintext, SASLSSL:
			default:
				return nil, fmt.Errorf("%s: unknown security protocol %q (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", flag, name)
			}
			if seen[name] {
				return nil, fmt.Errorf("%s: %s given twice", flag, name)
			}
			seen[name] = true
			if _, port, err := net.SplitHostPort(addr); err != nil {
				return nil, fmt.Errorf("%s: %q: %v", flag, e, err)
			} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
				return nil, fmt.Errorf("%s: %q: bad port", flag, e)
			}
			out = append(out, [2]string{name, addr})
		}
		return out, nil
	}
	ls, err := parse("-listeners", listeners)
	if err != nil {
		return nil, err
	}
	if len(ls) == 0 {
		return nil, fmt.Errorf("-listeners: no listener")
	}
	ads, err := parse("-advertised.listeners", advertised)
	if err != nil {
		return nil, err
	}
	out := make([]Listener, len(ls))
	for i, l := range ls {
		out[i] = Listener{Name: l[0], Bind: l[1]}
		if advertisedHost != "" {
			_, port, _ := net.SplitHostPort(l[1])
			out[i].Advertised = net.JoinHostPort(advertisedHost, port)
		}
	}
	for _, a := range ads {
		found := false
		for i := range out {
			if out[i].Name == a[0] {
				out[i].Advertised, found = a[1], true
			}
		}
		if !found {
			return nil, fmt.Errorf("-advertised.listeners: %s is not one of -listeners", a[0])
		}
	}
	return out, nil
}
