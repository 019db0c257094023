package seaweedmq

import (
	"errors"
	"testing"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
)

// The ack reader looks at the oldest pending batch and removes it once its
// acks are in; a stream failure in between takes the whole queue. Removing
// it then once indexed an empty queue (a panic that ended the gateway) and
// waited forever for a slot fail had freed.
func TestAckAfterStreamFailure(t *testing.T) {
	pub := &publisher{slots: make(chan struct{}, 2)}
	b := &pendingBatch{n: 1, app: protocol.NewAppended()}
	pub.slots <- struct{}{}
	pub.queue = []*pendingBatch{b}

	cur := pub.head()
	pub.fail(errors.New("stream broke")) // meanwhile, on another goroutine
	popped := make(chan bool, 1)
	go func() { popped <- pub.popHead(cur) }()
	select {
	case ok := <-popped:
		if ok {
			t.Fatal("a batch the failure took was removed again")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("removing the batch waits forever")
	}
	<-b.app.Done
	if b.app.Err == nil {
		t.Fatal("the failed batch has no error")
	}
	if len(pub.slots) != 0 {
		t.Fatalf("%d slots held after the failure", len(pub.slots))
	}
}
