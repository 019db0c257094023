package cluster

import (
	"context"
	"testing"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// The first id written is the cluster's: a gateway that would give it
// another (another -master spelling) reads the one kept.
func TestClusterIDKeptOnce(t *testing.T) {
	ctx := context.Background()
	files := filerfstest.New()
	id, err := EnsureID(ctx, files, "first")
	if err != nil || id != "first" {
		t.Fatalf("first: %q %v", id, err)
	}
	if id, err = EnsureID(ctx, files, "second"); err != nil || id != "first" {
		t.Fatalf("second: %q %v, want the first's", id, err)
	}
	// Two at once: the one whose create loses reads the winner's.
	files2 := filerfstest.New()
	files2.BeforeNextWriteIf(func() {
		if id, err := EnsureID(ctx, files2, "b"); err != nil || id != "b" {
			t.Errorf("b: %q %v", id, err)
		}
	})
	if id, err := EnsureID(ctx, files2, "a"); err != nil || id != "b" {
		t.Fatalf("a racing b: %q %v, want b", id, err)
	}
}

// The password gateways before the cluster's secret kept in a file the
// filer's HTTP API served is removed once; the gateways' password is
// derived from the secret, the same on every gateway, and another secret
// gives another.
func TestLegacyPasswordRemovedAndPasswordDerived(t *testing.T) {
	ctx := context.Background()
	files := filerfstest.New()
	if err := files.WriteFile(ctx, legacyDir, legacyFile, []byte("the old password")); err != nil {
		t.Fatal(err)
	}
	if removed, err := RemoveLegacyPassword(ctx, files); !removed || err != nil {
		t.Fatalf("first removal: %v %v", removed, err)
	}
	if _, err := files.ReadFile(ctx, legacyDir, legacyFile); err == nil {
		t.Fatal("the old password is still in the filer")
	}
	if removed, err := RemoveLegacyPassword(ctx, files); removed || err != nil {
		t.Fatalf("second removal: %v %v", removed, err)
	}
	users := user.NewStore(files, user.NewSealer([]byte("secret")))
	var a, b, c Identity
	for _, x := range []struct {
		id     *Identity
		secret string
	}{{&a, "the cluster's secret"}, {&b, "the cluster's secret"}, {&c, "another secret"}} {
		if err := x.id.Ensure(ctx, []byte(x.secret), users); err != nil {
			t.Fatal(err)
		}
	}
	if a.Password() == "" || a.Password() != b.Password() || a.Password() == c.Password() {
		t.Fatalf("passwords %q %q %q", a.Password(), b.Password(), c.Password())
	}
	if ok, err := users.VerifyPassword(ctx, protocol.GatewayUser, c.Password()); !ok || err != nil {
		t.Fatalf("the gateways' user does not have the last password: %v %v", ok, err)
	}
}
