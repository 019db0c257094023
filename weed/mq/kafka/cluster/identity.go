package cluster

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// The cluster's secret is 32 bytes the gateways of a cluster share. The
// SCRAM credentials kept in the filer are sealed with it (user.Sealer),
// and the gateways' password to one another is derived from it: nothing
// the filer's HTTP API serves logs in, or lets a password be guessed
// offline. It comes from -cluster.secret.file, the same file on every
// gateway, or else the first gateway makes it and keeps it in the filer's
// key-value store, which its HTTP API does not serve (only its gRPC
// clients reach it, and mutual TLS guards those in a secured cluster).
//
// The gateways log in to one another as protocol.GatewayUser (principal
// GatewayPrincipal, a super user of the authorizer) with SCRAM.

// GatewayPrincipal is the principal of the gateways themselves.
const GatewayPrincipal = "User:" + protocol.GatewayUser

// secretName is the key of the cluster's secret in the filer's key-value
// store.
const secretName = "kafka-gateway/cluster.secret"

// legacyDir, legacyFile held the gateways' password in the clear before
// the secret (gateways before it wrote it there); a gateway removes it.
const legacyDir, legacyFile = "/etc/kafka-gateway", "gateway.secret"

// Locker takes the filer locks (seaweedmq.Client).
type Locker interface {
	Lock(ctx context.Context, name, owner, token string, ttl time.Duration) (string, error)
	Unlock(ctx context.Context, name, token string) error
}

// Secrets keep values where the filer's HTTP API does not serve them
// (seaweedmq.Client: the filer's key-value store).
type Secrets interface {
	ReadSecret(ctx context.Context, name string) ([]byte, error)
	WriteSecret(ctx context.Context, name string, value []byte) error
}

// SecretFromFile reads -cluster.secret.file: any text or bytes of 16 or
// more, of which the secret is the SHA-256.
func SecretFromFile(data []byte) ([]byte, error) {
	if len(data) < 16 {
		return nil, fmt.Errorf("%d bytes: the cluster's secret needs 16 or more (32 random bytes, or a long passphrase)", len(data))
	}
	sum := sha256.Sum256(data)
	return sum[:], nil
}

// EnsureSecret returns the secret kept in secrets, making it if no
// gateway has (under a filer lock, so that two gateways starting together
// agree).
func EnsureSecret(ctx context.Context, secrets Secrets, locks Locker, owner string) ([]byte, error) {
	secret, err := secrets.ReadSecret(ctx, secretName)
	if err != nil || len(secret) > 0 {
		return secret, err
	}
	const lock = "kafka-gateway-identity"
	token, err := locks.Lock(ctx, lock, owner, "", 30*time.Second)
	if err != nil {
		return nil, err
	}
	defer locks.Unlock(context.WithoutCancel(ctx), lock, token) //nolint:errcheck // it expires
	if secret, err = secrets.ReadSecret(ctx, secretName); err != nil || len(secret) > 0 {
		return secret, err
	}
	secret = make([]byte, 32)
	rand.Read(secret)
	if err := secrets.WriteSecret(ctx, secretName, secret); err != nil {
		return nil, err
	}
	return secret, nil
}

// RemoveLegacyPassword removes the gateways' password that gateways
// before the secret kept in a file, which the filer's HTTP API served.
func RemoveLegacyPassword(ctx context.Context, files filerfs.Files) (bool, error) {
	if _, err := files.ReadFile(ctx, legacyDir, legacyFile); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, files.Remove(ctx, legacyDir, legacyFile)
}

// Identity is this gateway's login to the others.
type Identity struct {
	mu       sync.Mutex
	password string
}

// Password is the gateways' password, "" until Ensure has made it.
func (id *Identity) Password() string {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.password
}

// Ensure derives the gateways' password from the cluster's secret and
// gives GatewayUser its SCRAM credentials (kept if they are the
// password's already).
func (id *Identity) Ensure(ctx context.Context, secret []byte, users *user.Store) error {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("kafka gateway: the gateways' login to one another"))
	pw := hex.EncodeToString(m.Sum(nil))
	if err := users.SetPassword(ctx, protocol.GatewayUser, pw); err != nil {
		return err
	}
	id.mu.Lock()
	id.password = pw
	id.mu.Unlock()
	return nil
}

// idDir, idFile keep the cluster's id (Metadata's cluster id).
const idDir, idFile = "/etc/kafka-gateway", "cluster.id"

// EnsureID returns the cluster's id as the filer keeps it, keeping first
// if no gateway has written one: the first gateway's id stays the
// cluster's, whatever the others' -master lists say. Two gateways writing
// it at once agree (the file is made only if there is none).
func EnsureID(ctx context.Context, files filerfs.VersionedFiles, first string) (string, error) {
	for range 3 {
		data, err := files.ReadFile(ctx, idDir, idFile)
		if err == nil && len(data) > 0 {
			return string(data), nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if _, err := files.WriteFileIf(ctx, idDir, idFile, []byte(first), ""); err == nil {
			return first, nil
		} else if !errors.Is(err, filerfs.ErrChanged) {
			return "", err
		}
	}
	return "", errors.New("the cluster id changes as it is read")
}
