package cluster

import (
	"context"
	"errors"
	"testing"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
)

// A cluster without a stated format, or with an older one, gets this
// gateway's; a newer one is refused and left as it is.
func TestEnsureFormat(t *testing.T) {
	ctx := context.Background()
	files := filerfstest.New()
	if v, err := EnsureFormat(ctx, files); err != nil || v != FormatVersion {
		t.Fatalf("a new cluster: %d %v", v, err)
	}
	if v, err := EnsureFormat(ctx, files); err != nil || v != FormatVersion {
		t.Fatalf("again: %d %v", v, err)
	}
	if err := files.WriteFile(ctx, idDir, formatFile, []byte(`{"version":0}`)); err != nil {
		t.Fatal(err)
	}
	if v, err := EnsureFormat(ctx, files); err != nil || v != FormatVersion {
		t.Fatalf("an older format: %d %v", v, err)
	}
	if data, _ := files.ReadFile(ctx, idDir, formatFile); string(data) != `{"version":1}` {
		t.Fatalf("the older format raised to %s", data)
	}
	if err := files.WriteFile(ctx, idDir, formatFile, []byte(`{"version":2}`)); err != nil {
		t.Fatal(err)
	}
	if v, err := EnsureFormat(ctx, files); !errors.Is(err, ErrNewerFormat) || v != 2 {
		t.Fatalf("a newer format: %d %v", v, err)
	}
	if data, _ := files.ReadFile(ctx, idDir, formatFile); string(data) != `{"version":2}` {
		t.Fatalf("a newer format overwritten: %s", data)
	}
	if err := files.WriteFile(ctx, idDir, formatFile, []byte(`not json`)); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureFormat(ctx, files); !errors.Is(err, ErrNewerFormat) {
		t.Fatalf("an unreadable format file: %v", err)
	}
}
