package user

import (
	"bytes"
	"testing"

	"github.com/xdg-go/scram"
)

// A credential made here is the one xdg-go/scram's client derives from the
// same password, salt and iterations: any SCRAM client can log in with it.
func TestCredentialMatchesSCRAMClient(t *testing.T) {
	salt := []byte("0123456789abcdef")
	for _, tc := range []struct {
		mech string
		fn   scram.HashGeneratorFcn
	}{{SHA256, scram.SHA256}, {SHA512, scram.SHA512}} {
		got, err := fromPassword(tc.mech, "s3cret", salt, MinIterations)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := tc.fn.NewClient("alice", "s3cret", "")
		if err != nil {
			t.Fatal(err)
		}
		want := cl.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: MinIterations})
		if !bytes.Equal(got.StoredKey, want.StoredKey) || !bytes.Equal(got.ServerKey, want.ServerKey) {
			t.Fatalf("%s: credential differs from the SCRAM client's", tc.mech)
		}
		if !got.Verify(tc.mech, "s3cret") || got.Verify(tc.mech, "s3cret ") || got.Verify(tc.mech, "") {
			t.Fatalf("%s: Verify accepts the wrong password or refuses the right one", tc.mech)
		}
	}
}
