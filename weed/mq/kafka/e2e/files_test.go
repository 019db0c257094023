package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/seaweedfs/seaweedfs/weed/pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq"
)

// The filer's conditional writes fence what only one gateway may write:
// a write naming a version the file no longer has is refused, atomically,
// also for a file written before versions were kept.
func TestConditionalFilerWrites(t *testing.T) {
	c := seaweedmq.New(seaweedmq.Options{Masters: []pb.ServerAddress{pb.ServerAddress(cluster.master)},
		DialOption: grpc.WithTransportCredentials(insecure.NewCredentials()), WALName: "e2e-conditional-writes"})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := "/etc/kafka-gateway-e2e/" + newTopic(t)

	// A new file: created once; a second creation is refused.
	v1, err := c.WriteFileIf(ctx, dir, "f", []byte("one"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteFileIf(ctx, dir, "f", []byte("again"), ""); !errors.Is(err, offset.ErrChanged) {
		t.Fatalf("creating an existing file: %v, want ErrChanged", err)
	}
	// Written at its version; then that version is stale.
	v2, err := c.WriteFileIf(ctx, dir, "f", []byte("two"), v1)
	if err != nil || v2 == v1 {
		t.Fatalf("write at the current version: %q %v", v2, err)
	}
	if _, err := c.WriteFileIf(ctx, dir, "f", []byte("late"), v1); !errors.Is(err, offset.ErrChanged) {
		t.Fatalf("write at a stale version: %v, want ErrChanged", err)
	}
	data, v, err := c.ReadFileVersion(ctx, dir, "f")
	if err != nil || string(data) != "two" || v != v2 {
		t.Fatalf("read back: %q %q %v, want two at %q", data, v, err, v2)
	}
	// A file written the old way (no version kept) is versioned by what
	// the filer compares, and fenced the same way.
	if err := c.WriteFile(ctx, dir, "old", []byte("unversioned")); err != nil {
		t.Fatal(err)
	}
	_, vOld, err := c.ReadFileVersion(ctx, dir, "old")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteFileIf(ctx, dir, "old", []byte("versioned"), vOld); err != nil {
		t.Fatalf("first conditional write over an unversioned file: %v", err)
	}
	if _, err := c.WriteFileIf(ctx, dir, "old", []byte("late"), vOld); !errors.Is(err, offset.ErrChanged) {
		t.Fatalf("a stale write over it: %v, want ErrChanged", err)
	}
	files, err := c.ListFiles(ctx, dir)
	if err != nil || len(files) != 2 {
		t.Fatalf("listing: %+v %v", files, err)
	}
	for _, f := range files {
		if _, v, _ := c.ReadFileVersion(ctx, dir, f.Name); f.Version != v {
			t.Fatalf("%s listed at version %q, read at %q", f.Name, f.Version, v)
		}
	}
	c.Remove(ctx, "/etc", "kafka-gateway-e2e") //nolint:errcheck
}
