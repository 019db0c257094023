package sasl

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/xdg-go/scram"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// scramLogin is a SCRAM login: client-first, server-first, client-final,
// server-final, by xdg-go/scram's server conversation. A client-first
// message with Kafka's extension "tokenauth=true" logs in with a
// delegation token: the user name is the token's id, the password its
// HMAC, and the principal the token's owner, until the token's expiry.
type scramLogin struct {
	mechanism string
	users     Users
	tokens    Tokens
	// tokenAuth is set by the client-first message's extension; token is
	// the token once looked up.
	tokenAuth bool
	token     *user.Token
	// ctx is the context of the Step that looks the user up: xdg-go's
	// lookup callback takes none.
	ctx       context.Context
	conv      *scram.ServerConversation
	err       error
	lookupErr error // the store failing, rather than an unknown user
}

func newScram(mechanism string, users Users, tokens Tokens) *scramLogin {
	s := &scramLogin{mechanism: mechanism, users: users, tokens: tokens}
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
	var cred user.Credential
	var err error
	if s.tokenAuth {
		var t user.Token
		if s.tokens == nil {
			err = user.ErrNotFound
		} else if cred, t, err = s.tokens.Login(s.ctx, name, s.mechanism); err == nil {
			s.token = &t
		}
	} else {
		cred, err = s.users.Credential(s.ctx, name, s.mechanism)
	}
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
	if s.token == nil && !s.tokenAuth {
		s.tokenAuth = tokenAuth(string(msg))
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
		if errors.Is(s.lookupErr, user.ErrTokenExpired) {
			return nil, false, failf("authentication failed during %s: the delegation token has expired", s.mechanism)
		}
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

// tokenAuth reports whether a client-first message carries Kafka's
// extension tokenauth=true: "gs2-header,n=name,r=nonce,ext=value,...".
func tokenAuth(clientFirst string) bool {
	fields := strings.Split(clientFirst, ",")
	if len(fields) < 4 {
		return false
	}
	for _, f := range fields[4:] {
		if k, v, ok := strings.Cut(f, "="); ok && k == "tokenauth" {
			return strings.EqualFold(v, "true")
		}
	}
	return false
}

func (s *scramLogin) Principal() string {
	if s.token != nil {
		return s.token.Owner
	}
	return "User:" + s.conv.Username()
}

func (s *scramLogin) Expires() time.Time {
	if s.token != nil {
		return time.UnixMilli(s.token.Expires)
	}
	return time.Time{}
}

func (s *scramLogin) Token() bool { return s.token != nil }
