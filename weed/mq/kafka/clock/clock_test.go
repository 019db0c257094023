package clock

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestFollowSkewFile(t *testing.T) {
	defer SetSkew(0)
	path := filepath.Join(t.TempDir(), "skew")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	Follow(ctx, path, 10*time.Millisecond)
	if Skew() != 0 {
		t.Fatalf("skew %v without a file", Skew())
	}
	if err := os.WriteFile(path, []byte("-30s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for Skew() != -30*time.Second && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if d := time.Until(Now()); d > -29*time.Second || d < -31*time.Second {
		t.Fatalf("Now is %v from the system's clock, want -30s", d)
	}
	if err := os.WriteFile(path, []byte("nonsense"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if Skew() != -30*time.Second {
		t.Fatalf("a file that is no duration changed the skew to %v", Skew())
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	for Skew() != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if Skew() != 0 {
		t.Fatalf("skew %v once the file is gone", Skew())
	}
}
