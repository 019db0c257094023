package user

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
)

// What the filer holds of a user is its name and credentials no one
// without the cluster's secret can open: not the salt, nor StoredKey or
// ServerKey, which would let a password be guessed offline. The user
// logs in all the same, and a gateway with another secret cannot read it.
func TestCredentialsSealedInTheFiler(t *testing.T) {
	ctx := context.Background()
	files := filerfstest.New()
	users := NewStore(files, NewSealer([]byte("the cluster's secret")))
	if err := users.SetPassword(ctx, "alice", "alice-password"); err != nil {
		t.Fatal(err)
	}
	cred, err := users.Credential(ctx, "alice", SHA512)
	if err != nil {
		t.Fatal(err)
	}
	data, err := files.ReadFile(ctx, Dir, fileName("alice"))
	if err != nil {
		t.Fatal(err)
	}
	for what, b := range map[string][]byte{"salt": cred.Salt, "StoredKey": cred.StoredKey, "ServerKey": cred.ServerKey} {
		if bytes.Contains(data, b) || bytes.Contains(data, []byte(jsonBytes(b))) {
			t.Errorf("the file holds alice's %s: %s", what, data)
		}
	}
	if bytes.Contains(data, []byte("storedKey")) || bytes.Contains(data, []byte("iterations")) {
		t.Errorf("the file shows credentials: %s", data)
	}
	if ok, err := users.VerifyPassword(ctx, "alice", "alice-password"); !ok || err != nil {
		t.Fatalf("alice's password: %v %v", ok, err)
	}

	// Another secret opens nothing; no secret yet is ErrNoKey.
	if _, err := NewStore(files, NewSealer([]byte("another secret"))).Credential(ctx, "alice", SHA512); err == nil {
		t.Fatal("credentials opened with another secret")
	}
	if _, err := NewStore(files, NewSealer(nil)).Credential(ctx, "alice", SHA512); !errors.Is(err, ErrNoKey) {
		t.Fatalf("without the secret: %v, want ErrNoKey", err)
	}

	// Sealed credentials moved into another user's file do not open.
	if err := users.SetPassword(ctx, "mallory", "mallory-password"); err != nil {
		t.Fatal(err)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	f.Name = "mallory"
	moved, _ := json.Marshal(f)
	if err := files.WriteFile(ctx, Dir, fileName("mallory"), moved); err != nil {
		t.Fatal(err)
	}
	if ok, err := users.VerifyPassword(ctx, "mallory", "alice-password"); ok || err == nil {
		t.Fatalf("alice's credentials opened as mallory's: %v %v", ok, err)
	}
}

func jsonBytes(b []byte) string { s, _ := json.Marshal(b); return string(s) }

// Files that gateways wrote before sealing are read as they are, and
// SealAll seals them, users' and tokens'.
func TestSealAllSealsWhatWasInTheClear(t *testing.T) {
	ctx := context.Background()
	files := filerfstest.New()
	cred, err := FromPassword(SHA512, "bob-password", MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := json.Marshal(map[string]any{"name": "bob", "scram": map[string]Credential{SHA512: cred}})
	if err := files.WriteFile(ctx, Dir, fileName("bob"), old); err != nil {
		t.Fatal(err)
	}
	sealer := NewSealer([]byte("secret"))
	users := NewStore(files, sealer)
	if ok, err := users.VerifyPassword(ctx, "bob", "bob-password"); !ok || err != nil {
		t.Fatalf("bob's password from the old file: %v %v", ok, err)
	}
	tokens := NewTokens(TokenOptions{Files: files, Secret: "token secret", Sealer: sealer, RenewTime: time.Hour})
	defer tokens.Close()
	tok, err := tokens.Create(ctx, "User:bob", "User:bob", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := files.ReadFile(ctx, TokenDir, tokenFile(tok.ID))
	var clear Token
	json.Unmarshal(data, &clear) //nolint:errcheck // checked below
	if clear.Sealed == nil || clear.SCRAM != nil {
		t.Fatalf("a new token's file: %s", data)
	}
	clear.SCRAM, clear.Sealed = tok.SCRAM, nil
	data, _ = json.Marshal(clear)
	files.WriteFile(ctx, TokenDir, tokenFile(tok.ID), data) //nolint:errcheck // read back below

	if n, err := users.SealAll(ctx); n != 1 || err != nil {
		t.Fatalf("users sealed: %d %v", n, err)
	}
	if n, err := tokens.SealAll(ctx); n != 1 || err != nil {
		t.Fatalf("tokens sealed: %d %v", n, err)
	}
	for _, f := range []struct{ dir, name string }{{Dir, fileName("bob")}, {TokenDir, tokenFile(tok.ID)}} {
		data, _ := files.ReadFile(ctx, f.dir, f.name)
		if bytes.Contains(data, []byte("storedKey")) {
			t.Errorf("%s/%s still in the clear: %s", f.dir, f.name, data)
		}
	}
	if ok, err := users.VerifyPassword(ctx, "bob", "bob-password"); !ok || err != nil {
		t.Fatalf("bob's password once sealed: %v %v", ok, err)
	}
	if _, _, err := tokens.Login(ctx, tok.ID, SHA512); err != nil {
		t.Fatalf("the token once sealed: %v", err)
	}
}
