// Package user keeps the gateway's users: their SCRAM credentials (RFC 5802,
// RFC 7677), stored in the SeaweedFS filer and shared by every gateway of the
// cluster, as Kafka keeps them in its metadata log. A password is never
// stored: a credential is the salt, the iteration count and the two keys a
// SCRAM server needs (StoredKey, ServerKey), sealed with the cluster's
// secret (see seal.go). PLAIN logins are checked against the same
// credentials.
//
// Layout, under Dir:
//
//	<user>.json   the user's name and its sealed credentials by mechanism (file name escaped as filerfs.Escape does)
//
// Every lookup reads the filer, so a user created, changed or deleted on
// one gateway applies on every other at the next login.
package user

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/sync/semaphore"
	"hash"
	"io/fs"
	"slices"
	"strings"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
)

// Dir is where the filer keeps the users' files.
const Dir = "/etc/kafka-gateway/users"

// The SCRAM mechanisms, by their SASL names.
const (
	SHA256 = "SCRAM-SHA-256"
	SHA512 = "SCRAM-SHA-512"
)

// Mechanisms are the SCRAM mechanisms credentials are kept for.
var Mechanisms = []string{SHA256, SHA512}

// MinIterations and MaxIterations bound a credential's iteration count, as
// Kafka does (4096 is RFC 7677's minimum; more than 16384 makes every login
// a denial of service).
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// ErrNotFound is returned for a user or credential that does not exist.
var ErrNotFound = errors.New("no such user or credential")

// Credential is what a SCRAM server keeps of a password.
type Credential struct {
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"storedKey"`
	ServerKey  []byte `json:"serverKey"`
}

// file is a user's file.
type file struct {
	Name string `json:"name"`
	// SCRAM are the credentials by mechanism: in the file only as
	// gateways wrote them before sealing, in memory once opened.
	SCRAM map[string]Credential `json:"scram,omitempty"`
	// Sealed are the credentials as the file keeps them (seal.go).
	Sealed []byte `json:"sealed,omitempty"`
}

// Hash returns the hash function of a SCRAM mechanism, or nil.
func Hash(mechanism string) func() hash.Hash {
	switch mechanism {
	case SHA256:
		return sha256.New
	case SHA512:
		return sha512.New
	}
	return nil
}

// FromSaltedPassword derives a credential from a salted password
// (Hi(password, salt, iterations) of RFC 5802), as AlterUserScramCredentials
// carries it.
func FromSaltedPassword(mechanism string, salt, salted []byte, iterations int) Credential {
	h := Hash(mechanism)
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	d := h()
	d.Write(mac(salted, "Client Key"))
	return Credential{
		Salt:       slices.Clone(salt),
		Iterations: iterations,
		StoredKey:  d.Sum(nil),
		ServerKey:  mac(salted, "Server Key"),
	}
}

// FromPassword derives a credential from a password with a new random salt.
func FromPassword(mechanism, password string, iterations int) (Credential, error) {
	salt := make([]byte, 32)
	rand.Read(salt)
	return fromPassword(mechanism, password, salt, iterations)
}

func fromPassword(mechanism, password string, salt []byte, iterations int) (Credential, error) {
	h := Hash(mechanism)
	if h == nil {
		return Credential{}, fmt.Errorf("unknown mechanism %q", mechanism)
	}
	salted, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return Credential{}, err
	}
	return FromSaltedPassword(mechanism, salt, salted, iterations), nil
}

// Verify reports whether password is the one cred was made from.
func (cred Credential) Verify(mechanism, password string) bool {
	got, err := fromPassword(mechanism, password, cred.Salt, cred.Iterations)
	return err == nil && hmac.Equal(got.StoredKey, cred.StoredKey)
}

// Store reads and writes the users' files.
type Store struct {
	files  filerfs.VersionedFiles
	sealer *Sealer
	// writing orders this gateway's changes of a user's file, waited
	// for within the caller's context; a file another gateway changed
	// since it was read is read again (Apply).
	writing *semaphore.Weighted
}

// NewStore returns a store keeping its files under Dir in files, their
// credentials sealed by sealer.
func NewStore(files filerfs.VersionedFiles, sealer *Sealer) *Store {
	return &Store{files: files, sealer: sealer, writing: semaphore.NewWeighted(1)}
}

// decode reads a user's file, its credentials opened.
func (s *Store) decode(data []byte) (file, error) {
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return f, err
	}
	if f.Sealed != nil {
		creds, err := s.sealer.open(f.Name, f.Sealed)
		if err != nil {
			return f, err
		}
		f.SCRAM, f.Sealed = creds, nil
	}
	return f, nil
}

// encode is a user's file as written, its credentials sealed.
func (s *Store) encode(f file) ([]byte, error) {
	sealed, err := s.sealer.seal(f.Name, f.SCRAM)
	if err != nil {
		return nil, err
	}
	return json.Marshal(file{Name: f.Name, Sealed: sealed})
}

// SealAll seals the credentials of the files gateways wrote before
// credentials were sealed, each written over the version read.
func (s *Store) SealAll(ctx context.Context) (int, error) {
	files, err := s.files.ListFiles(ctx, Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	sealed := 0
	for _, fl := range files {
		var f file
		if fl.Dir || json.Unmarshal(fl.Data, &f) != nil || f.Sealed != nil || len(f.SCRAM) == 0 {
			continue
		}
		data, err := s.encode(f)
		if err != nil {
			return sealed, err
		}
		if _, err := s.files.WriteFileIf(ctx, Dir, fl.Name, data, fl.Version); err != nil && !errors.Is(err, filerfs.ErrChanged) {
			return sealed, fmt.Errorf("seal user %s: %w", f.Name, err)
		}
		sealed++
	}
	return sealed, nil
}

func fileName(name string) string { return filerfs.Escape(name) + ".json" }

func (s *Store) read(ctx context.Context, name string) (file, error) {
	f, _, err := s.readVersion(ctx, name)
	return f, err
}

// readVersion is read with the file's version ("" when there is none).
func (s *Store) readVersion(ctx context.Context, name string) (file, string, error) {
	data, version, err := s.files.ReadFileVersion(ctx, Dir, fileName(name))
	if errors.Is(err, fs.ErrNotExist) {
		return file{}, "", ErrNotFound
	}
	if err != nil {
		return file{}, "", err
	}
	f, err := s.decode(data)
	if errors.Is(err, ErrNoKey) {
		return file{}, "", err
	}
	if err != nil {
		return file{}, "", fmt.Errorf("user %s: unreadable file: %w", name, err)
	}
	if f.Name != name {
		return file{}, version, ErrNotFound // another name escaped to the same hash
	}
	return f, version, nil
}

// Credential returns a user's credential for mechanism, or ErrNotFound.
func (s *Store) Credential(ctx context.Context, name, mechanism string) (Credential, error) {
	f, err := s.read(ctx, name)
	if err != nil {
		return Credential{}, err
	}
	cred, ok := f.SCRAM[mechanism]
	if !ok {
		return Credential{}, ErrNotFound
	}
	return cred, nil
}

// VerifyPassword reports whether password is the user's, by any of its
// credentials (PLAIN logins); ErrNotFound for an unknown user.
func (s *Store) VerifyPassword(ctx context.Context, name, password string) (bool, error) {
	f, err := s.read(ctx, name)
	if err != nil {
		return false, err
	}
	for _, m := range []string{SHA512, SHA256} {
		if cred, ok := f.SCRAM[m]; ok {
			return cred.Verify(m, password), nil
		}
	}
	return false, ErrNotFound
}

// Info is what DescribeUserScramCredentials shows of a user: its
// mechanisms and their iteration counts.
type Info map[string]int

// Describe returns a user's mechanisms, or ErrNotFound.
func (s *Store) Describe(ctx context.Context, name string) (Info, error) {
	f, err := s.read(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(f.SCRAM) == 0 {
		return nil, ErrNotFound
	}
	info := Info{}
	for m, c := range f.SCRAM {
		info[m] = c.Iterations
	}
	return info, nil
}

// List returns every user with credentials.
func (s *Store) List(ctx context.Context) (map[string]Info, error) {
	files, err := s.files.ListFiles(ctx, Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	out := map[string]Info{}
	for _, fl := range files {
		if fl.Dir || !strings.HasSuffix(fl.Name, ".json") {
			continue
		}
		f, err := s.decode(fl.Data)
		if errors.Is(err, ErrNoKey) {
			return nil, err
		}
		if err != nil || len(f.SCRAM) == 0 {
			continue
		}
		info := Info{}
		for m, c := range f.SCRAM {
			info[m] = c.Iterations
		}
		out[f.Name] = info
	}
	return out, nil
}

// Change is one upsertion (Credential set) or deletion (Credential nil) of
// a user's credential for a mechanism.
type Change struct {
	Mechanism  string
	Credential *Credential
}

// Apply makes a user's changes in one write; deleting a credential the
// user does not have is ErrNotFound, and nothing is written then.
//
// The file is written over the one read only: two gateways changing one
// user at once (each a mechanism of its own) both take effect, the second
// reading the first's change.
func (s *Store) Apply(ctx context.Context, name string, changes []Change) error {
	if err := s.writing.Acquire(ctx, 1); err != nil {
		return err
	}
	defer s.writing.Release(1)
	for attempt := 1; ; attempt++ {
		err := s.apply(ctx, name, changes)
		if !errors.Is(err, filerfs.ErrChanged) || attempt == 5 {
			return err
		}
	}
}

func (s *Store) apply(ctx context.Context, name string, changes []Change) error {
	f, version, err := s.readVersion(ctx, name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	f.Name = name
	if f.SCRAM == nil {
		f.SCRAM = map[string]Credential{}
	}
	for _, c := range changes {
		if c.Credential == nil {
			if _, ok := f.SCRAM[c.Mechanism]; !ok {
				return ErrNotFound
			}
			delete(f.SCRAM, c.Mechanism)
			continue
		}
		f.SCRAM[c.Mechanism] = *c.Credential
	}
	if len(f.SCRAM) == 0 {
		return s.files.Remove(ctx, Dir, fileName(name))
	}
	data, err := s.encode(f)
	if err != nil {
		return err
	}
	_, err = s.files.WriteFileIf(ctx, Dir, fileName(name), data, version)
	return err
}

// SetPassword gives a user credentials of every SCRAM mechanism for
// password, unless it has them already (a user listed in -sasl.users keeps
// its salt across restarts).
func (s *Store) SetPassword(ctx context.Context, name, password string) error {
	f, err := s.read(ctx, name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	var changes []Change
	for _, m := range Mechanisms {
		if cred, ok := f.SCRAM[m]; ok && cred.Verify(m, password) {
			continue
		}
		cred, err := FromPassword(m, password, MinIterations)
		if err != nil {
			return err
		}
		changes = append(changes, Change{Mechanism: m, Credential: &cred})
	}
	if len(changes) == 0 {
		return nil
	}
	return s.Apply(ctx, name, changes)
}
