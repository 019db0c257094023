package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// The gateways of a cluster log in to one another as protocol.GatewayUser
// (principal GatewayPrincipal, a super user of the authorizer) with SCRAM,
// with a password only the filer holds: a client that cannot read the
// filer cannot be a gateway.

// GatewayPrincipal is the principal of the gateways themselves.
const GatewayPrincipal = "User:" + protocol.GatewayUser

// identityFile holds the gateways' password.
const identityDir, identityFile = "/etc/kafka-gateway", "gateway.secret"

// Locker takes the filer locks (seaweedmq.Client).
type Locker interface {
	Lock(ctx context.Context, name, owner, token string, ttl time.Duration) (string, error)
	Unlock(ctx context.Context, name, token string) error
}

// Identity is this gateway's login to the others.
type Identity struct {
	mu       sync.Mutex
	password string
}

// Password is the gateways' password, "" until Ensure has read it.
func (id *Identity) Password() string {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.password
}

// Ensure reads the gateways' password from the filer, making it if no
// gateway has (under a filer lock, so that two gateways starting together
// agree), and gives GatewayUser its SCRAM credentials.
func (id *Identity) Ensure(ctx context.Context, files filerfs.Files, locks Locker, users *user.Store, owner string) error {
	read := func() (string, error) {
		data, err := files.ReadFile(ctx, identityDir, identityFile)
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return strings.TrimSpace(string(data)), err
	}
	pw, err := read()
	if err != nil {
		return err
	}
	if pw == "" {
		const lock = "kafka-gateway-identity"
		token, err := locks.Lock(ctx, lock, owner, "", 30*time.Second)
		if err != nil {
			return err
		}
		defer locks.Unlock(context.WithoutCancel(ctx), lock, token) //nolint:errcheck // it expires
		if pw, err = read(); err != nil {
			return err
		}
		if pw == "" {
			b := make([]byte, 32)
			rand.Read(b)
			pw = hex.EncodeToString(b)
			if err := files.WriteFile(ctx, identityDir, identityFile, []byte(pw)); err != nil {
				return err
			}
		}
	}
	if err := users.SetPassword(ctx, protocol.GatewayUser, pw); err != nil {
		return err
	}
	id.mu.Lock()
	id.password = pw
	id.mu.Unlock()
	return nil
}
