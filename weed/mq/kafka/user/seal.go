package user

// Credentials are kept sealed: a user's or a token's SCRAM credentials
// (salt, iterations, StoredKey, ServerKey) are written into the filer
// encrypted with AES-256-GCM under a key derived from the cluster's secret
// (cluster.Secret: a file every gateway is given, or a key kept in the
// filer's key-value store, which its HTTP API does not serve). Whoever
// reads the files over the filer's HTTP API learns users' and tokens'
// names, never what a login or an offline guess of a password needs. The
// ciphertext is bound to the name it belongs to, so that one user's
// credentials cannot be copied into another's file.
//
// Files written by gateways before sealing hold the credentials in the
// clear; they are read as they are and sealed at the next start
// (Store.SealAll) or change.

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
)

// ErrNoKey: the cluster's secret has not been read yet (the gateway is
// starting); sealed credentials can be neither read nor written.
var ErrNoKey = errors.New("the cluster's secret is not read yet")

// Sealer seals and opens credentials with the key it was given.
type Sealer struct {
	aead atomic.Pointer[cipher.AEAD]
}

// NewSealer returns a sealer; secret may be nil, to be set later by
// SetSecret once read.
func NewSealer(secret []byte) *Sealer {
	s := &Sealer{}
	if secret != nil {
		s.SetSecret(secret)
	}
	return s
}

// SetSecret gives the sealer the cluster's secret, from which its key is
// derived (the secret serves other purposes too).
func (s *Sealer) SetSecret(secret []byte) {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("kafka gateway: SCRAM credentials sealed in the filer"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		panic(err) // a 32-byte key always makes a cipher
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	s.aead.Store(&aead)
}

// seal encrypts creds, bound to name.
func (s *Sealer) seal(name string, creds map[string]Credential) ([]byte, error) {
	plain, err := json.Marshal(creds)
	if err != nil {
		return nil, err
	}
	return s.Seal(name, plain)
}

// Seal encrypts plain, bound to name (another secret the gateways keep in
// the filer: a topic link's password for its source cluster).
func (s *Sealer) Seal(name string, plain []byte) ([]byte, error) {
	aead := s.aead.Load()
	if aead == nil {
		return nil, ErrNoKey
	}
	nonce := make([]byte, (*aead).NonceSize(), (*aead).NonceSize()+len(plain)+(*aead).Overhead())
	rand.Read(nonce)
	return (*aead).Seal(nonce, nonce, plain, []byte(name)), nil
}

// Open decrypts what Seal made for name.
func (s *Sealer) Open(name string, sealed []byte) ([]byte, error) {
	aead := s.aead.Load()
	if aead == nil {
		return nil, ErrNoKey
	}
	n := (*aead).NonceSize()
	if len(sealed) < n {
		return nil, fmt.Errorf("%s: sealed data too short", name)
	}
	plain, err := (*aead).Open(nil, sealed[:n], sealed[n:], []byte(name))
	if err != nil {
		return nil, fmt.Errorf("%s: sealed data does not open with the cluster's secret (another -cluster.secret.file?): %w", name, err)
	}
	return plain, nil
}

// open decrypts what seal made for name.
func (s *Sealer) open(name string, sealed []byte) (map[string]Credential, error) {
	plain, err := s.Open(name, sealed)
	if err != nil {
		return nil, err
	}
	var creds map[string]Credential
	if err := json.Unmarshal(plain, &creds); err != nil {
		return nil, fmt.Errorf("%s: sealed credentials: %w", name, err)
	}
	return creds, nil
}
