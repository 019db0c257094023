package user

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
)

// Two gateways changing one user at once, each a mechanism of its own:
// both changes stay (before, the second write replaced the first's).
func TestUserChangesOnTwoGatewaysBothStay(t *testing.T) {
	ctx := context.Background()
	files := filerfstest.New()
	sealer := NewSealer([]byte("secret"))
	here, there := NewStore(files, sealer), NewStore(files, sealer)
	c256, err := FromPassword(SHA256, "p256", MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	c512, err := FromPassword(SHA512, "p512", MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	files.BeforeNextWriteIf(func() {
		if err := there.Apply(ctx, "alice", []Change{{Mechanism: SHA512, Credential: &c512}}); err != nil {
			t.Error(err)
		}
	})
	if err := here.Apply(ctx, "alice", []Change{{Mechanism: SHA256, Credential: &c256}}); err != nil {
		t.Fatal(err)
	}
	info, err := here.Describe(ctx, "alice")
	if err != nil || len(info) != 2 {
		t.Fatalf("alice has %v (%v), want both mechanisms", info, err)
	}
}

// A token renewed on one gateway while another expires it at once
// (removes it) does not come back: the renewal finds it gone.
func TestExpiredTokenNotRenewedBack(t *testing.T) {
	ctx := context.Background()
	files := filerfstest.New()
	opts := TokenOptions{Files: files, Secret: "s", Sealer: NewSealer([]byte("secret")), RenewTime: time.Hour, MaxLifetime: 2 * time.Hour}
	here := NewTokens(opts)
	defer here.Close()
	there := NewTokens(opts)
	defer there.Close()
	tok, err := here.Create(ctx, "User:alice", "User:alice", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	mac := here.HMAC(tok.ID)
	files.BeforeNextWriteIf(func() {
		if _, err := there.Expire(ctx, "User:alice", mac, -1); err != nil {
			t.Error(err)
		}
	})
	if _, err := here.Renew(ctx, "User:alice", mac, time.Hour); !errors.Is(err, ErrTokenNotFound) {
		t.Fatalf("renewing a token expired meanwhile: %v, want it not found", err)
	}
	if all, err := here.List(ctx); err != nil || len(all) != 0 {
		t.Fatalf("tokens %v (%v), want none", all, err)
	}
}
