package share

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
)

// SetStart writes over the state it read only: a state the leader saved
// in between is read again, and the new state's epoch follows it.
func TestSetStartOverTheStateRead(t *testing.T) {
	ctx := context.Background()
	files := filerfstest.New()
	s := NewStore(files, nil)
	key := Key{Group: "g", Topic: "t", Partition: 0}
	if err := s.SetStart(ctx, key, 5); err != nil {
		t.Fatal(err)
	}
	files.BeforeNextWriteIf(func() {
		data, _ := json.Marshal(savedState{StateEpoch: 7, StartOffset: 40})
		if err := files.WriteFile(ctx, key.dir(), key.name(), data); err != nil {
			t.Error(err)
		}
	})
	if err := s.SetStart(ctx, key, 10); err != nil {
		t.Fatal(err)
	}
	data, err := files.ReadFile(ctx, key.dir(), key.name())
	if err != nil {
		t.Fatal(err)
	}
	var st savedState
	if err := json.Unmarshal(data, &st); err != nil || st.StateEpoch != 8 || st.StartOffset != 10 {
		t.Fatalf("state %+v (%v), want epoch 8 (after the leader's 7) starting at 10", st, err)
	}
}
