package user

// Delegation tokens (KIP-48): a token is a credential a user hands a job
// (Spark, Flink, Kafka Connect on Kubernetes) so that it logs in as that
// user with SCRAM, without the user's password and for a bounded time. As
// in Kafka, a token has an id, an owner, the principal that asked for it,
// renewers, an issue time, an expiry (moved by renewals, never past the
// max) and a max time; its HMAC (HMAC-SHA512 of the id under the cluster's
// delegation.token.secret.key) is the password the job logs in with, and
// what renewing, expiring and describing name it by. The HMAC is never
// stored: the token's file holds the SCRAM credentials derived from it,
// sealed as a user's file holds those of a password (seal.go), and every
// gateway with the same secret recomputes it.
//
// Layout, under TokenDir:
//
//	<token id>.json   the token (id escaped as filerfs.Escape does)
//
// Every login reads the filer, so a token created, renewed or expired on
// one gateway applies on every other at the next login; tokens past their
// expiry no longer log in and are removed by the sweep (every gateway runs
// it; removing a file twice is harmless).

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/sync/semaphore"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
)

// TokenDir is where the filer keeps the delegation tokens.
const TokenDir = "/etc/kafka-gateway/tokens"

// Kafka's defaults for the token settings.
const (
	// DefaultTokenMaxLifetime is delegation.token.max.lifetime.ms: no
	// renewal takes a token past this long after its creation.
	DefaultTokenMaxLifetime = 7 * 24 * time.Hour
	// DefaultTokenRenewTime is delegation.token.expiry.time.ms: a new
	// token, and a renewal that names no period, lasts this long.
	DefaultTokenRenewTime = 24 * time.Hour
	// DefaultTokenCheckEvery is delegation.token.expiry.check.interval.ms:
	// how often expired tokens are removed.
	DefaultTokenCheckEvery = time.Hour
)

// The ways a token operation fails, as Kafka's errors of the same names.
var (
	ErrTokensDisabled  = errors.New("delegation tokens are not enabled: the gateways have no delegation.token.secret.key")
	ErrTokenNotFound   = errors.New("no delegation token has that HMAC")
	ErrTokenNotOwner   = errors.New("the principal is neither the token's owner, its requester nor one of its renewers")
	ErrTokenExpired    = errors.New("the delegation token has expired")
	errTokenUnreadable = errors.New("unreadable delegation token file")
)

// Token is one delegation token. Principals are "Type:name"; times are
// Unix milliseconds, as Kafka answers them.
type Token struct {
	ID        string   `json:"id"`
	Owner     string   `json:"owner"`
	Requester string   `json:"requester"`
	Renewers  []string `json:"renewers,omitempty"`
	Issued    int64    `json:"issued"`
	Expires   int64    `json:"expires"`
	Max       int64    `json:"max"`
	// SCRAM are the credentials derived from the HMAC, by mechanism:
	// in the file only as gateways wrote them before sealing.
	SCRAM map[string]Credential `json:"scram,omitempty"`
	// Sealed are SCRAM as the file keeps them (seal.go).
	Sealed []byte `json:"sealed,omitempty"`
}

// OwnerOrRenewer reports whether principal owns the token, asked for it or
// may renew it: who may renew, expire and describe it without an ACL.
func (t Token) OwnerOrRenewer(principal string) bool {
	return principal == t.Owner || principal == t.Requester || slices.Contains(t.Renewers, principal)
}

// TokenOptions configure Tokens.
type TokenOptions struct {
	Files filerfs.VersionedFiles
	// Secret is delegation.token.secret.key, the same on every gateway;
	// "": tokens are disabled (DELEGATION_TOKEN_AUTH_DISABLED).
	Secret string
	// Sealer seals the tokens' credentials in their files.
	Sealer *Sealer
	// MaxLifetime, RenewTime and CheckEvery: the Default* above when 0.
	MaxLifetime, RenewTime, CheckEvery time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Tokens keeps the cluster's delegation tokens in the filer.
type Tokens struct {
	o TokenOptions
	// writing orders this gateway's changes of a token's file, waited
	// for within the caller's context.
	writing *semaphore.Weighted
	loop    *filerfs.Loop
}

// NewTokens returns the token store of o.
func NewTokens(o TokenOptions) *Tokens {
	if o.MaxLifetime <= 0 {
		o.MaxLifetime = DefaultTokenMaxLifetime
	}
	if o.RenewTime <= 0 {
		o.RenewTime = DefaultTokenRenewTime
	}
	if o.CheckEvery <= 0 {
		o.CheckEvery = DefaultTokenCheckEvery
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Tokens{o: o, writing: semaphore.NewWeighted(1)}
	s.loop = filerfs.NewLoop(o.CheckEvery, func(ctx context.Context) {
		if n, err := s.Sweep(ctx); err != nil {
			glog.Warningf("delegation tokens: removing the expired: %v", err)
		} else if n > 0 {
			glog.V(1).Infof("delegation tokens: %d expired removed", n)
		}
	})
	return s
}

// Enabled reports whether tokens are served: the secret is set.
func (s *Tokens) Enabled() bool { return s != nil && s.o.Secret != "" }

func (s *Tokens) now() int64 { return s.o.Now().UnixMilli() }

// HMAC is the token's password: HMAC-SHA512 of its id under the secret.
func (s *Tokens) HMAC(id string) []byte {
	m := hmac.New(sha512.New, []byte(s.o.Secret))
	m.Write([]byte(id))
	return m.Sum(nil)
}

// Password is what a client logs in with for the token: its HMAC in
// base64, as Kafka's clients take it (SCRAM with tokenauth=true, the
// token id as the user name).
func Password(hmac []byte) string { return base64.StdEncoding.EncodeToString(hmac) }

// newTokenID is a random id as Kafka makes them: 16 random bytes,
// URL-safe base64 without padding.
func newTokenID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func tokenFile(id string) string { return filerfs.Escape(id) + ".json" }

// sealedAs is what a token's credentials are bound to when sealed: not
// a user's name.
func sealedAs(id string) string { return "delegation token " + id }

// decodeToken reads a token's file, its credentials opened.
func (s *Tokens) decodeToken(data []byte) (Token, error) {
	var t Token
	if err := json.Unmarshal(data, &t); err != nil {
		return t, err
	}
	if t.Sealed != nil {
		creds, err := s.o.Sealer.open(sealedAs(t.ID), t.Sealed)
		if err != nil {
			return t, err
		}
		t.SCRAM, t.Sealed = creds, nil
	}
	return t, nil
}

// encodeToken is a token's file as written, its credentials sealed.
func (s *Tokens) encodeToken(t Token) ([]byte, error) {
	sealed, err := s.o.Sealer.seal(sealedAs(t.ID), t.SCRAM)
	if err != nil {
		return nil, err
	}
	t.SCRAM, t.Sealed = nil, sealed
	return json.Marshal(t)
}

func (s *Tokens) write(ctx context.Context, t Token) error {
	data, err := s.encodeToken(t)
	if err != nil {
		return err
	}
	return s.o.Files.WriteFile(ctx, TokenDir, tokenFile(t.ID), data)
}

// Create makes a token for owner at requester's request. maxLifetime
// shortens the cluster's max lifetime (<= 0: the cluster's); the token
// lasts the renew time (never past its max).
func (s *Tokens) Create(ctx context.Context, owner, requester string, renewers []string, maxLifetime time.Duration) (Token, error) {
	if !s.Enabled() {
		return Token{}, ErrTokensDisabled
	}
	life := s.o.MaxLifetime
	if maxLifetime > 0 {
		life = min(life, maxLifetime)
	}
	now := s.now()
	t := Token{ID: newTokenID(), Owner: owner, Requester: requester, Renewers: renewers, Issued: now,
		Max: now + life.Milliseconds(), SCRAM: map[string]Credential{}}
	t.Expires = min(t.Max, now+s.o.RenewTime.Milliseconds())
	password := Password(s.HMAC(t.ID))
	for _, m := range Mechanisms {
		cred, err := FromPassword(m, password, MinIterations)
		if err != nil {
			return Token{}, err
		}
		t.SCRAM[m] = cred
	}
	if err := s.write(ctx, t); err != nil {
		return Token{}, err
	}
	return t, nil
}

// List returns every token still kept (those past their expiry too, until
// the sweep removes them, as Kafka describes them).
func (s *Tokens) List(ctx context.Context) ([]Token, error) {
	if !s.Enabled() {
		return nil, ErrTokensDisabled
	}
	files, err := s.o.Files.ListFiles(ctx, TokenDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var out []Token
	for _, f := range files {
		if f.Dir || !strings.HasSuffix(f.Name, ".json") {
			continue
		}
		t, err := s.decodeToken(f.Data)
		if errors.Is(err, ErrNoKey) {
			return nil, err
		}
		if err != nil || t.ID == "" {
			glog.Warningf("delegation tokens: %s/%s: %v", TokenDir, f.Name, errTokenUnreadable)
			continue
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Token) int { return int(a.Issued - b.Issued) })
	return out, nil
}

// byHMAC finds the token whose HMAC is mac.
func (s *Tokens) byHMAC(ctx context.Context, mac []byte) (Token, error) {
	all, err := s.List(ctx)
	if err != nil {
		return Token{}, err
	}
	for _, t := range all {
		if hmac.Equal(s.HMAC(t.ID), mac) {
			return t, nil
		}
	}
	return Token{}, ErrTokenNotFound
}

// change finds the token of mac, checks that principal may change it and
// that it is still valid, and hands it to apply with its file's version.
// A token written over only at the version read cannot come back once
// expired (removed) on another gateway meanwhile, nor undo a change made
// there: the change is made again on the token as it is now, or fails as
// for a token not found.
func (s *Tokens) change(ctx context.Context, principal string, mac []byte, apply func(t *Token, now int64, version string) error) (int64, error) {
	if err := s.writing.Acquire(ctx, 1); err != nil {
		return 0, err
	}
	defer s.writing.Release(1)
	for attempt := 1; ; attempt++ {
		t, err := s.byHMAC(ctx, mac)
		if err != nil {
			return 0, err
		}
		data, version, err := s.o.Files.ReadFileVersion(ctx, TokenDir, tokenFile(t.ID))
		if errors.Is(err, fs.ErrNotExist) {
			return 0, ErrTokenNotFound
		}
		if err != nil {
			return 0, err
		}
		if t, err = s.decodeToken(data); err != nil {
			return 0, fmt.Errorf("delegation token %s: %w: %w", t.ID, errTokenUnreadable, err)
		}
		if !t.OwnerOrRenewer(principal) {
			return 0, ErrTokenNotOwner
		}
		now := s.now()
		if t.Max < now || t.Expires < now {
			return 0, ErrTokenExpired
		}
		err = apply(&t, now, version)
		switch {
		case err == nil:
			return t.Expires, nil
		case !errors.Is(err, filerfs.ErrChanged) || attempt == 3:
			return 0, err
		}
	}
}

// writeIf writes a token's file over the version read.
func (s *Tokens) writeIf(ctx context.Context, t Token, version string) error {
	data, err := s.encodeToken(t)
	if err != nil {
		return err
	}
	_, err = s.o.Files.WriteFileIf(ctx, TokenDir, tokenFile(t.ID), data, version)
	return err
}

// SealAll seals the credentials of the tokens whose files gateways wrote
// before credentials were sealed, each written over the version read.
func (s *Tokens) SealAll(ctx context.Context) (int, error) {
	files, err := s.o.Files.ListFiles(ctx, TokenDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	sealed := 0
	for _, f := range files {
		var t Token
		if f.Dir || json.Unmarshal(f.Data, &t) != nil || t.Sealed != nil || len(t.SCRAM) == 0 {
			continue
		}
		if err := s.writeIf(ctx, t, f.Version); err != nil && !errors.Is(err, filerfs.ErrChanged) {
			return sealed, fmt.Errorf("seal delegation token %s: %w", t.ID, err)
		}
		sealed++
	}
	return sealed, nil
}

// Renew moves the token's expiry to period from now (period < 0: the
// renew time), never past its max; it returns the new expiry.
func (s *Tokens) Renew(ctx context.Context, principal string, mac []byte, period time.Duration) (int64, error) {
	if !s.Enabled() {
		return 0, ErrTokensDisabled
	}
	if period < 0 {
		period = s.o.RenewTime
	}
	return s.change(ctx, principal, mac, func(t *Token, now int64, version string) error {
		t.Expires = min(t.Max, now+period.Milliseconds())
		return s.writeIf(ctx, *t, version)
	})
}

// Expire moves the token's expiry to period from now, never past its max;
// a negative period removes the token at once (its expiry is then now).
func (s *Tokens) Expire(ctx context.Context, principal string, mac []byte, period time.Duration) (int64, error) {
	if !s.Enabled() {
		return 0, ErrTokensDisabled
	}
	return s.change(ctx, principal, mac, func(t *Token, now int64, version string) error {
		if period < 0 {
			t.Expires = now
			return s.o.Files.Remove(ctx, TokenDir, tokenFile(t.ID))
		}
		t.Expires = min(t.Max, now+period.Milliseconds())
		return s.writeIf(ctx, *t, version)
	})
}

// Login returns the credential of a token for a SCRAM mechanism, with the
// token: ErrNotFound for an unknown token or mechanism (as an unknown
// user), ErrTokenExpired for one past its expiry.
func (s *Tokens) Login(ctx context.Context, id, mechanism string) (Credential, Token, error) {
	if !s.Enabled() {
		return Credential{}, Token{}, ErrNotFound
	}
	data, err := s.o.Files.ReadFile(ctx, TokenDir, tokenFile(id))
	if errors.Is(err, fs.ErrNotExist) {
		return Credential{}, Token{}, ErrNotFound
	}
	if err != nil {
		return Credential{}, Token{}, err
	}
	t, err := s.decodeToken(data)
	if err != nil {
		return Credential{}, Token{}, fmt.Errorf("token %s: %w: %w", id, errTokenUnreadable, err)
	}
	if t.ID != id {
		return Credential{}, Token{}, ErrNotFound // another id escaped to the same hash
	}
	cred, ok := t.SCRAM[mechanism]
	if !ok {
		return Credential{}, Token{}, ErrNotFound
	}
	if t.Expires < s.now() {
		return Credential{}, Token{}, ErrTokenExpired
	}
	return cred, t, nil
}

// Sweep removes the tokens past their expiry; it returns how many.
func (s *Tokens) Sweep(ctx context.Context) (int, error) {
	all, err := s.List(ctx)
	if err != nil {
		return 0, err
	}
	if err := s.writing.Acquire(ctx, 1); err != nil {
		return 0, err
	}
	defer s.writing.Release(1)
	now, n := s.now(), 0
	for _, t := range all {
		if t.Expires >= now {
			continue
		}
		if err := s.o.Files.Remove(ctx, TokenDir, tokenFile(t.ID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, err
		}
		n++
	}
	return n, nil
}

// Start runs the sweep now and every CheckEvery until Close (nothing
// without the secret).
func (s *Tokens) Start() {
	if s.Enabled() {
		s.loop.Start()
	}
}

// Close stops the sweep and waits for it.
func (s *Tokens) Close() { s.loop.Close() }
