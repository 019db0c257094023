package cluster

import (
	"context"
	"testing"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
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
