package seaweedmq

import (
	"context"
	"testing"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
)

// A reservation that lands after another gateway's (its lock expired
// meanwhile) does not hand out the other's ids again: it reads the file
// again and takes the block after.
func TestProducerIDBlocksNeverShared(t *testing.T) {
	ctx := context.Background()
	files := filerfstest.New()
	first, err := claimProducerIDs(ctx, files, 1000)
	if err != nil || first != 0 {
		t.Fatalf("first block at %d, %v", first, err)
	}
	var other int64
	files.BeforeNextWriteIf(func() {
		var err error
		if other, err = claimProducerIDs(ctx, files, 1000); err != nil {
			t.Error(err)
		}
	})
	mine, err := claimProducerIDs(ctx, files, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if other != 1000 || mine != 2000 {
		t.Fatalf("blocks at %d (the other gateway's) and %d, want 1000 and 2000", other, mine)
	}
	if data, _ := files.ReadFile(ctx, producerIDDir, producerIDFile); string(data) != "3000" {
		t.Fatalf("next free id %q, want 3000", data)
	}
}
