package sasl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// OAuthConfig is how OAUTHBEARER tokens are checked, after Kafka's
// OAuthBearerValidatorCallbackHandler (sasl.oauthbearer.*).
type OAuthConfig struct {
	// JWKSFile holds the JSON Web Key Set whose keys sign valid tokens;
	// it is read again when it changes.
	JWKSFile string
	// Issuer and Audience, when set, must be the token's iss and one of
	// its aud.
	Issuer, Audience string
	// SubClaim names the claim that holds the principal (default "sub").
	SubClaim string
	// Unsecured accepts unsigned tokens (alg "none"), as Kafka's default
	// unsecured validator does: for tests, never for production.
	Unsecured bool
	// ClockSkew is the leeway on exp, nbf and iat (default 30 s, as
	// Kafka's sasl.oauthbearer.clock.skew.seconds).
	ClockSkew time.Duration
}

// signedAlgs are the JWS algorithms accepted for signed tokens.
var signedAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

type oauthValidator struct {
	cfg  OAuthConfig
	keys *keyFile
}

func newOAuthValidator(cfg OAuthConfig) (*oauthValidator, error) {
	if cfg.JWKSFile == "" && !cfg.Unsecured {
		return nil, errors.New("OAUTHBEARER needs -sasl.oauthbearer.jwks (or -sasl.oauthbearer.unsecured for tests)")
	}
	if cfg.SubClaim == "" {
		cfg.SubClaim = "sub"
	}
	if cfg.ClockSkew == 0 {
		cfg.ClockSkew = 30 * time.Second
	}
	v := &oauthValidator{cfg: cfg}
	if cfg.JWKSFile != "" {
		v.keys = &keyFile{path: cfg.JWKSFile}
		if _, err := v.keys.get(); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// keyFile is a JWKS file, read again when its modification time changes.
type keyFile struct {
	path string

	mu      sync.Mutex
	checked time.Time
	mod     time.Time
	set     *jose.JSONWebKeySet
}

func (k *keyFile) get() (*jose.JSONWebKeySet, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.set != nil && time.Since(k.checked) < time.Second {
		return k.set, nil
	}
	k.checked = time.Now()
	st, err := os.Stat(k.path)
	if err != nil {
		if k.set != nil {
			return k.set, nil // keep the last good keys
		}
		return nil, fmt.Errorf("JWKS file: %w", err)
	}
	if k.set != nil && st.ModTime().Equal(k.mod) {
		return k.set, nil
	}
	data, err := os.ReadFile(k.path)
	if err != nil {
		return nil, fmt.Errorf("JWKS file: %w", err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		if k.set != nil {
			return k.set, nil
		}
		return nil, fmt.Errorf("JWKS file %s: %w", k.path, err)
	}
	k.set, k.mod = &set, st.ModTime()
	return k.set, nil
}

// validate checks a token and returns its principal's name and expiry.
func (v *oauthValidator) validate(token string) (string, time.Time, error) {
	methods := signedAlgs
	if v.cfg.Unsecured {
		methods = append([]string{"none"}, signedAlgs...)
	}
	opts := []jwt.ParserOption{jwt.WithValidMethods(methods), jwt.WithExpirationRequired(), jwt.WithLeeway(v.cfg.ClockSkew)}
	if v.cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(v.cfg.Issuer))
	}
	if v.cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(v.cfg.Audience))
	}
	claims := jwt.MapClaims{}
	_, err := jwt.NewParser(opts...).ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		if t.Method == jwt.SigningMethodNone {
			return jwt.UnsafeAllowNoneSignatureType, nil
		}
		if v.keys == nil {
			return nil, errors.New("signed tokens need -sasl.oauthbearer.jwks")
		}
		set, err := v.keys.get()
		if err != nil {
			return nil, err
		}
		kid, _ := t.Header["kid"].(string)
		var candidates []jose.JSONWebKey
		if kid != "" {
			candidates = set.Key(kid)
		} else if len(set.Keys) == 1 {
			candidates = set.Keys
		}
		if len(candidates) == 0 {
			return nil, fmt.Errorf("no key %q in the JWKS", kid)
		}
		return candidates[0].Key, nil
	})
	if err != nil {
		return "", time.Time{}, err
	}
	sub, _ := claims[v.cfg.SubClaim].(string)
	if sub == "" {
		return "", time.Time{}, fmt.Errorf("no %q claim", v.cfg.SubClaim)
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		return "", time.Time{}, errors.New("no exp claim")
	}
	return sub, exp.Time, nil
}

// oauthBearer is an OAUTHBEARER login: one client message carrying the
// token. A token that does not pass is answered as Kafka does (RFC 7628
// 3.2.2): an error challenge, {"status":"invalid_token"}, which the client
// acknowledges with a single %x01; the login then fails with the challenge
// as its message.
type oauthBearer struct {
	v       *oauthValidator
	name    string
	expires time.Time
	steps   int
	refused string // the error challenge sent
}

// invalidToken is the error challenge of a token that does not pass.
const invalidToken = `{"status":"invalid_token"}`

// parseOAuthBearer reads RFC 7628's initial client response:
//
//	gs2-header kvsep *(key "=" value kvsep) kvsep, kvsep = %x01
//
// and returns the bearer token, the authorization id of the gs2 header and
// the extensions.
func parseOAuthBearer(msg []byte) (token, authzid string, ext map[string]string, err error) {
	s := string(msg)
	gs2, rest, ok := strings.Cut(s, "\x01")
	if !ok {
		return "", "", nil, failf("malformed OAUTHBEARER message: no key-value pairs")
	}
	flag, tail, ok := strings.Cut(gs2, ",")
	if !ok || (flag != "n" && flag != "y") {
		return "", "", nil, failf("malformed OAUTHBEARER message: bad gs2 header (channel binding is not served)")
	}
	az, tail, ok := strings.Cut(tail, ",")
	if !ok || tail != "" {
		return "", "", nil, failf("malformed OAUTHBEARER message: bad gs2 header")
	}
	if az != "" {
		a, ok := strings.CutPrefix(az, "a=")
		if !ok || a == "" {
			return "", "", nil, failf("malformed OAUTHBEARER message: bad authorization id")
		}
		authzid = strings.NewReplacer("=2C", ",", "=3D", "=").Replace(a)
	}
	// rest is *(kvpair kvsep) kvsep: each pair ends with its own kvsep.
	body, ok := strings.CutSuffix(rest, "\x01")
	if body, ok = strings.CutSuffix(body, "\x01"); !ok {
		return "", "", nil, failf("malformed OAUTHBEARER message: not closed by %%x01%%x01")
	}
	ext = map[string]string{}
	for _, kv := range strings.Split(body, "\x01") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return "", "", nil, failf("malformed OAUTHBEARER message: bad key-value pair")
		}
		if _, dup := ext[k]; dup {
			return "", "", nil, failf("malformed OAUTHBEARER message: %s given twice", k)
		}
		ext[k] = v
	}
	auth, ok := ext["auth"]
	if !ok {
		return "", "", nil, failf("malformed OAUTHBEARER message: no auth")
	}
	delete(ext, "auth")
	scheme, tok, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", "", nil, failf("malformed OAUTHBEARER message: auth is not a bearer token")
	}
	return strings.TrimSpace(tok), authzid, ext, nil
}

func (o *oauthBearer) Step(_ context.Context, msg []byte) ([]byte, bool, error) {
	o.steps++
	switch {
	case o.steps == 2 && o.refused != "":
		if string(msg) != "\x01" {
			return nil, false, failf("malformed OAUTHBEARER message: the answer to an error challenge is %%x01")
		}
		return nil, false, failf("%s", o.refused)
	case o.steps > 1:
		return nil, false, failf("OAUTHBEARER takes one message")
	}
	token, authzid, _, err := parseOAuthBearer(msg)
	if err != nil {
		return nil, false, err
	}
	name, exp, err := o.v.validate(token)
	if err == nil && authzid != "" && authzid != name {
		err = fmt.Errorf("authorization id %q is not the token's principal", authzid)
	}
	if err != nil {
		o.refused = invalidToken + ": " + err.Error()
		return []byte(invalidToken), false, nil
	}
	o.name, o.expires = name, exp
	return []byte{}, true, nil
}

func (o *oauthBearer) Principal() string  { return "User:" + o.name }
func (o *oauthBearer) Expires() time.Time { return o.expires }
func (o *oauthBearer) Token() bool        { return false }
