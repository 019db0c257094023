package sasl

import (
	"context"
	"errors"
	"time"

	"github.com/xdg-go/scram"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// scramLogin is a SCRAM login: client-first, server-first, client-final,
// server-final, by xdg-go/scram's server conversation. Kafka's "tokenauth"
// extension (delegation tokens) is not served: such a login fails as an
// unknown user would.
type scramLogin struct {
	mechanism string
	users     Users
	// ctx is the context of the Step that looks the user up: xdg-go's
	// lookup callback takes none.
	ctx       context.Context
	conv      *scram.ServerConversation
	err       error
	lookupErr error // the store failing, rather than an unknown user
}

func newScram(mechanism string, users Users) *scramLogin {
	s := &scramLogin{mechanism: mechanism, users: users}
	fn := scram.SHA256
	if mechanism == ScramSHA512 {
		fn = scram.SHA512
	}
	server, err := fn.NewServer(s.lookup)
	if err != nil {
		s.err = err
		return s
	}
	s.conv = server.NewConversation()
	return s
}

func (s *scramLogin) lookup(name string) (scram.StoredCredentials, error) {
	cred, err := s.users.Credential(s.ctx, name, s.mechanism)
	if err != nil {
		if !errors.Is(err, user.ErrNotFound) {
			s.lookupErr = err
		}
		return scram.StoredCredentials{}, err
	}
	return scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(cred.Salt), Iters: cred.Iterations},
		StoredKey:  cred.StoredKey,
		ServerKey:  cred.ServerKey,
	}, nil
}

func (s *scramLogin) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	if s.err != nil {
		return nil, false, s.err
	}
	if s.conv.Done() {
		return nil, false, failf("SCRAM login already ended")
	}
	s.ctx = ctx
	answer, err := s.conv.Step(string(msg))
	s.ctx = nil
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		// An unknown user and a wrong proof read the same to the
		// client, so that logins do not tell which users exist; an
		// outage of the store says so.
		if s.lookupErr != nil {
			return nil, false, failf("authentication failed during %s: the user store cannot be read: %v", s.mechanism, s.lookupErr)
		}
		return nil, false, failf("authentication failed during %s: invalid username or password", s.mechanism)
	}
	if s.conv.Done() {
		if !s.conv.Valid() {
			return nil, false, failf("authentication failed during %s: invalid username or password", s.mechanism)
		}
		return []byte(answer), true, nil
	}
	return []byte(answer), false, nil
}

func (s *scramLogin) Principal() string  { return "User:" + s.conv.Username() }
func (s *scramLogin) Expires() time.Time { return time.Time{} }
