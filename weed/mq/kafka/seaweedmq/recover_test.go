package seaweedmq

import (
	"errors"
	"testing"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// TestWithFillers: offsets the logs lack get fillers, readers skip them,
// and the result is dense from the start.
func TestWithFillers(t *testing.T) {
	logged := []*filer_pb.LogEntry{
		{Offset: 12, TsNs: 5, Data: []byte("r12")},
		{Offset: 13, TsNs: 6, Data: []byte("r13")},
		{Offset: 16, TsNs: 9, Data: []byte("r16")},
	}
	out, fillers, err := withFillers(10, logged)
	if err != nil {
		t.Fatal(err)
	}
	if fillers != 4 || len(out) != 7 {
		t.Fatalf("%d fillers, %d entries", fillers, len(out))
	}
	for i, e := range out {
		if e.Offset != int64(10+i) {
			t.Fatalf("entry %d at offset %d", i, e.Offset)
		}
		_, err := record.FromStored(e.Key, e.Data, e.TsNs/1e6)
		isFiller := errors.Is(err, record.ErrFiller)
		if want := e.Offset == 10 || e.Offset == 11 || e.Offset == 14 || e.Offset == 15; isFiller != want {
			t.Fatalf("offset %d: filler %v (%v)", e.Offset, isFiller, err)
		}
		if i > 0 && e.TsNs < out[i-1].TsNs {
			t.Fatalf("ts_ns goes back at offset %d", e.Offset)
		}
	}
	if _, _, err := withFillers(0, []*filer_pb.LogEntry{{Offset: maxRecoveredGap + 1}}); err == nil {
		t.Fatal("a huge gap was filled")
	}
}
