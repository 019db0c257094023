package seaweedmq

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/grpc"

	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
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

// panicStream is a publish stream whose Recv panics.
type panicStream struct {
	grpc.BidiStreamingClient[mq_pb.PublishMessageRequest, mq_pb.PublishMessageResponse]
}

func (panicStream) Recv() (*mq_pb.PublishMessageResponse, error) { panic("a bug in the ack reader") }

// A panic in a partition's ack reader breaks that stream only: its batches
// fail with a retriable error, and the gateway goes on (it once ended the
// process and every client's connection).
func TestAckReaderPanicBreaksOnlyItsStream(t *testing.T) {
	pub := &publisher{stream: panicStream{}, slots: make(chan struct{}, 1), done: make(chan struct{})}
	b := &pendingBatch{n: 1, app: protocol.NewAppended()}
	pub.slots <- struct{}{}
	pub.queue = []*pendingBatch{b}
	before := testutil.ToFloat64(metrics.Panics.WithLabelValues("PublishAckReader"))
	go pub.readAcks()
	select {
	case <-pub.done:
	case <-time.After(2 * time.Second):
		t.Fatal("the ack reader did not stop")
	}
	<-b.app.Done
	if !errors.Is(b.app.Err, kerr.NotLeaderForPartition) || !errors.Is(pub.broken(), ErrUnavailable) {
		t.Fatalf("batch error %v, stream error %v", b.app.Err, pub.broken())
	}
	if got := testutil.ToFloat64(metrics.Panics.WithLabelValues("PublishAckReader")) - before; got != 1 {
		t.Fatalf("%v panics counted", got)
	}
}
