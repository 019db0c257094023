package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/txn"
)

// panicky is a backend whose topic lookups panic.
type panicky struct{ storage.Backend }

func (panicky) DescribeTopic(context.Context, string) (storage.TopicInfo, error) {
	panic("a bug in a handler")
}

// A panic in a handler closes that connection only: it once ended the
// process and every client's connection.
func TestPanicClosesOnlyItsConnection(t *testing.T) {
	srv, err := NewServer(Options{Listen: "127.0.0.1:0", Backend: panicky{}, Groups: group.New(group.Options{}), Txns: txn.New(txn.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	addr := srv.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	bystander, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer bystander.Close()
	if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, bystander); err != nil {
		t.Fatal(err)
	}

	before := testutil.ToFloat64(metrics.Panics.WithLabelValues("Metadata"))
	victim, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	md := kmsg.NewPtrMetadataRequest()
	topic := "boom"
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
	if _, err := md.RequestWith(ctx, victim.SeedBrokers()[0]); err == nil {
		t.Fatal("the panicking request was answered")
	}
	if got := testutil.ToFloat64(metrics.Panics.WithLabelValues("Metadata")) - before; got != 1 {
		t.Fatalf("%v panics counted", got)
	}
	// The gateway goes on, for the others and for new connections.
	if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, bystander); err != nil {
		t.Fatalf("another client after the panic: %v", err)
	}
	// A new client: the victim's own may still hold the closed
	// connection, and with no retries it reports that (it did, under
	// -race, 2 runs in 20).
	again, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, again); err != nil {
		t.Fatalf("a new connection after the panic: %v", err)
	}
}
