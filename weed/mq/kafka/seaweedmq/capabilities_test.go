package seaweedmq

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
)

// A filer that checks every condition passes; one that ignores any of
// them (an older SeaweedFS: unknown fields and kinds are not checked, the
// write is made) is ErrFilerTooOld, naming what it let through and the
// version to upgrade to.
func TestFilerChecked(t *testing.T) {
	ctx := context.Background()
	if err := startSegmentFiler(t, &segmentFiler{entries: map[string]*filer_pb.Entry{}}).checkFiler(ctx); err != nil {
		t.Fatalf("a filer of this version: %v", err)
	}
	for what, f := range map[string]*segmentFiler{
		"IF_NOT_EXISTS":     {ignore: map[filer_pb.WriteCondition_Kind]bool{filer_pb.WriteCondition_IF_NOT_EXISTS: true}},
		"IF_ETAG_MATCH":     {ignore: map[filer_pb.WriteCondition_Kind]bool{filer_pb.WriteCondition_IF_ETAG_MATCH: true}},
		"IF_CHUNKS_EQUAL":   {ignore: map[filer_pb.WriteCondition_Kind]bool{filer_pb.WriteCondition_IF_CHUNKS_EQUAL: true}},
		"expected_extended": {ignoreExpected: true},
	} {
		f.entries = map[string]*filer_pb.Entry{}
		err := startSegmentFiler(t, f).checkFiler(ctx)
		if !errors.Is(err, ErrFilerTooOld) || !strings.Contains(err.Error(), what) || !strings.Contains(err.Error(), "SeaweedFS "+MinSeaweedFS+" or newer") {
			t.Errorf("a filer ignoring %s: %v", what, err)
		}
		if len(f.entries) != 0 {
			t.Errorf("a filer ignoring %s: the probe file is left", what)
		}
	}
}
