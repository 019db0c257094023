package sasl

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// plain is a PLAIN login (RFC 4616): one message, [authzid] NUL authcid NUL
// passwd, checked against the user's SCRAM credentials. As in Kafka, an
// authorization id other than the user's own is refused.
type plain struct {
	users Users
	name  string
	done  bool
}

// parsePlain splits a PLAIN message into its three fields.
func parsePlain(msg []byte) (authzid, authcid, passwd string, err error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", "", "", failf("malformed PLAIN message: want [authzid] NUL user NUL password")
	}
	if len(parts[1]) == 0 || len(parts[2]) == 0 {
		return "", "", "", failf("malformed PLAIN message: empty user or password")
	}
	return string(parts[0]), string(parts[1]), string(parts[2]), nil
}

func (p *plain) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	if p.done {
		return nil, false, failf("PLAIN takes one message")
	}
	p.done = true
	authzid, name, passwd, err := parsePlain(msg)
	if err != nil {
		return nil, false, err
	}
	if authzid != "" && authzid != name {
		return nil, false, failf("authentication failed: an authorization id other than the user is not allowed")
	}
	ok, err := p.users.VerifyPassword(ctx, name, passwd)
	if err != nil && !errors.Is(err, user.ErrNotFound) {
		return nil, false, err
	}
	if !ok {
		return nil, false, failf("authentication failed: invalid username or password")
	}
	p.name = name
	return []byte{}, true, nil
}

func (p *plain) Principal() string  { return "User:" + p.name }
func (p *plain) Expires() time.Time { return time.Time{} }
func (p *plain) Token() bool        { return false }
