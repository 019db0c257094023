package protocol

import (
	"errors"
	"testing"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// Then runs once the outcome is known, with it: later if the append is
// under way, at once if it is done; Done is closed before.
func TestAppendedThen(t *testing.T) {
	a := storage.NewAppended()
	var got []int64
	a.Then(func(a *storage.Appended) {
		select {
		case <-a.Done:
		default:
			t.Error("Then ran before Done was closed")
		}
		got = append(got, a.Base)
	})
	if len(got) != 0 {
		t.Fatal("Then ran before Finish")
	}
	a.Finish(42, nil)
	a.Then(func(a *storage.Appended) { got = append(got, a.Base+1) })
	if len(got) != 2 || got[0] != 42 || got[1] != 43 {
		t.Fatalf("outcomes seen %v", got)
	}
	f := storage.FailedAppend(errors.New("down"))
	var err error
	f.Then(func(a *storage.Appended) { err = a.Err })
	if err == nil || f.Base != -1 {
		t.Fatalf("a failed append: %v %d", err, f.Base)
	}
}
