package seaweedmq

// What the gateway's calls to SeaweedFS carry, read from the cluster's
// security.toml as SeaweedFS's own clients read it: gRPC mutual TLS, the
// JWTs of volume and filer requests, HTTPS to the volume servers and
// filers, and how the volume servers are reached.

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"

	"github.com/seaweedfs/seaweedfs/weed/security"
	"github.com/seaweedfs/seaweedfs/weed/util"
)

// Ways to reach the volume servers (-volumeServerAccess), as weed mount
// offers them.
const (
	// AccessDirect uses a volume server's address inside the cluster
	// (its Url).
	AccessDirect = "direct"
	// AccessPublicURL uses the address a volume server advertises to
	// the outside (its publicUrl): NAT, Kubernetes services.
	AccessPublicURL = "publicUrl"
	// AccessFilerProxy reads and writes every chunk through the filer's
	// HTTP port, for clusters whose volume servers the gateway cannot
	// reach at all.
	AccessFilerProxy = "filerProxy"
)

// ParseVolumeAccess checks a -volumeServerAccess value ("" is direct).
func ParseVolumeAccess(s string) (string, error) {
	switch s {
	case "", AccessDirect:
		return AccessDirect, nil
	case AccessPublicURL, AccessFilerProxy:
		return s, nil
	}
	return "", fmt.Errorf("-volumeServerAccess: %q is not direct, publicUrl or filerProxy", s)
}

// Security is what the gateway's requests to SeaweedFS carry.
type Security struct {
	// File is the security.toml read ("" if none was found).
	File string
	// GRPCSection is the section whose certificate the gateway's gRPC
	// calls present ("" in plaintext).
	GRPCSection string
	// DialOption is the gRPC transport of every call to a master, filer
	// or broker.
	DialOption grpc.DialOption
	// VolumeReadJWT: volume reads are signed (jwt.signing.read.key).
	VolumeReadJWT bool
	// VolumeWriteJWT: volume writes are signed (jwt.signing.key); the
	// filer signs them when it assigns a volume, the gateway only says
	// so.
	VolumeWriteJWT bool
	// FilerJWT: requests to the filer's HTTP port are signed
	// (jwt.filer_signing.key, jwt.filer_signing.read.key); only
	// -volumeServerAccess=filerProxy makes them.
	FilerJWT, FilerReadJWT bool
	// HTTPS: the volume servers and filers are reached over HTTPS
	// (https.client.enabled).
	HTTPS bool
}

// grpcClientSections are the sections whose certificate the gateway may
// present, in the order they are looked at: its own section's client
// certificate, then [grpc.client] (read by SeaweedFS's client tools: weed
// shell, mount, filer.sync), then its own section's certificate (as
// upstream's MQ clients use it).
var grpcClientSections = []struct{ section, cert, key string }{
	{"grpc.mq", "client_cert", "client_key"},
	{"grpc.client", "cert", "key"},
	{"grpc.mq", "cert", "key"},
}

// LoadSecurity reads what security.toml (file, as
// util.LoadSecurityConfiguration found it, into v) says of the gateway's
// calls. A half-made configuration (a
// certificate without its key, no grpc.ca, a file that cannot be read) is
// an error naming the key, rather than the plaintext dial SeaweedFS would
// fall back to or the process exit it would make.
func LoadSecurity(file string, v *util.ViperProxy) (Security, error) {
	s := Security{File: file}
	for _, c := range grpcClientSections {
		cert, key := v.GetString(c.section+"."+c.cert), v.GetString(c.section+"."+c.key)
		if cert == "" && key == "" {
			continue
		}
		if cert == "" || key == "" {
			return s, fmt.Errorf("%s: [%s] %s and %s must both be set", s.where(), c.section, c.cert, c.key)
		}
		ca := v.GetString("grpc.ca")
		if ca == "" {
			return s, fmt.Errorf("%s: [%s] has a certificate but [grpc] ca is not set", s.where(), c.section)
		}
		for _, f := range []struct{ key, path string }{{"[grpc] ca", ca}, {"[" + c.section + "] " + c.cert, cert}, {"[" + c.section + "] " + c.key, key}} {
			if _, err := os.ReadFile(f.path); err != nil {
				return s, fmt.Errorf("%s: %s: %v", s.where(), f.key, err)
			}
		}
		// LoadClientTLS presents the section's client pair, or its
		// cert and key when it has none.
		s.GRPCSection, s.DialOption = c.section, security.LoadClientTLS(v, c.section)
		break
	}
	if s.DialOption == nil {
		s.DialOption = security.LoadClientTLS(nil, "")
	}
	s.VolumeReadJWT = v.GetString("jwt.signing.read.key") != ""
	s.VolumeWriteJWT = v.GetString("jwt.signing.key") != ""
	s.FilerJWT = v.GetString("jwt.filer_signing.key") != ""
	s.FilerReadJWT = v.GetString("jwt.filer_signing.read.key") != ""
	s.HTTPS = v.GetBool("https.client.enabled")
	return s, nil
}

func (s Security) where() string {
	if s.File == "" {
		return "security.toml"
	}
	return s.File
}

// String is the startup line's account of the security in force.
func (s Security) String() string {
	if s.File == "" {
		return "no security.toml found (., $HOME/.seaweedfs, /usr/local/etc/seaweedfs, /etc/seaweedfs): gRPC in plaintext, no JWT, HTTP"
	}
	var parts []string
	if s.GRPCSection != "" {
		parts = append(parts, "gRPC mutual TLS with the certificate of ["+s.GRPCSection+"]")
	} else {
		parts = append(parts, "gRPC in plaintext (no certificate in [grpc.mq] or [grpc.client])")
	}
	jwt := func(on bool, what string) {
		if on {
			parts = append(parts, what)
		}
	}
	jwt(s.VolumeWriteJWT, "volume writes signed (jwt.signing)")
	jwt(s.VolumeReadJWT, "volume reads signed (jwt.signing.read)")
	jwt(s.FilerJWT, "filer writes signed (jwt.filer_signing)")
	jwt(s.FilerReadJWT, "filer reads signed (jwt.filer_signing.read)")
	if s.HTTPS {
		parts = append(parts, "HTTPS to volume servers and filers ([https.client])")
	} else {
		parts = append(parts, "HTTP to volume servers and filers")
	}
	return s.File + ": " + strings.Join(parts, ", ")
}

// ErrSecurity marks a failure that retrying is not likely to mend: the
// cluster asks for TLS or a token the gateway's security.toml does not
// give, or the other way round. Such an error also wraps ErrUnavailable
// (clients get retriable errors): a server restarting can close a
// connection as a TLS server closes a plaintext one.
var ErrSecurity = errors.New("security.toml does not match the cluster")

// securityMismatch names what to set when err is the handshake failure of
// a plaintext call to a TLS server, or of a TLS call to a plaintext one;
// nil otherwise.
func (s Security) securityMismatch(peer string, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case s.GRPCSection == "" && (strings.Contains(msg, "error reading server preface") || strings.Contains(msg, "http2: frame too large")):
		return fmt.Errorf("%w: %w: %s closes plaintext gRPC connections, so the cluster uses TLS: give the gateway a certificate in security.toml, [grpc.client] cert and key (or [grpc.mq] client_cert and client_key) and [grpc] ca (%v)", ErrUnavailable, ErrSecurity, peer, err)
	case s.GRPCSection != "" && strings.Contains(msg, "first record does not look like a TLS handshake"):
		return fmt.Errorf("%w: %w: %s does not speak TLS, but [%s] of %s gives the gateway a certificate: remove it, or secure the cluster with the same security.toml (%v)", ErrUnavailable, ErrSecurity, peer, s.GRPCSection, s.where(), err)
	case s.GRPCSection != "" && (strings.Contains(msg, "certificate signed by unknown authority") || strings.Contains(msg, "bad certificate") || strings.Contains(msg, "unknown certificate authority")):
		return fmt.Errorf("%w: %w: the TLS handshake with %s failed: is [grpc] ca of %s the cluster's CA, and [%s]'s certificate issued by it? (%v)", ErrUnavailable, ErrSecurity, peer, s.where(), s.GRPCSection, err)
	}
	return nil
}
