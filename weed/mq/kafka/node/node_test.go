package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/cluster"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage/storagetest"
	"go.uber.org/goleak"
)

// ignored are goroutines of the process, not of a node: those running
// before the test (packages' init: glog's flusher, SeaweedFS's metrics
// and signal handler), and the gRPC connections SeaweedFS's pb package
// keeps for the life of the process.
func ignored() []goleak.Option {
	return append([]goleak.Option{goleak.IgnoreCurrent()}, grpcCache...)
}

var grpcCache = []goleak.Option{
	goleak.IgnoreAnyFunction("google.golang.org/grpc.(*addrConn).resetTransportAndUnlock"),
	goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	goleak.IgnoreAnyFunction("google.golang.org/grpc.(*ccBalancerWrapper).watcher"),
	goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.(*http2Client).keepalive"),
	goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.(*controlBuffer).get"),
}

// config is a gateway on 127.0.0.1 with the flags' defaults, whose
// SeaweedFS (masters) is nowhere.
func config(t *testing.T) Config {
	t.Helper()
	nowhere, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	masters := nowhere.Addr().String()
	nowhere.Close()
	cfg := Defaults()
	cfg.IP, cfg.Listeners, cfg.NodeID, cfg.Masters = "127.0.0.1", "PLAINTEXT://127.0.0.1:"+strconv.Itoa(freePort(t)), 1, masters
	cfg.DefaultPartitions, cfg.GroupInitialDelayMs, cfg.TxnIDExpirationMs, cfg.OffsetsRetentionMin = 1, 0, -1, -1
	cfg.RegistryListeners = "none"
	return cfg
}

// A node whose start fails (its metrics port is taken) closes everything
// it built: no goroutine of it is left (the command's error path once
// left the ACL refresh and the peers running).
func TestFailedStartLeavesNothing(t *testing.T) {
	defer goleak.VerifyNone(t, ignored()...)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := config(t)
	cfg.Authorizer, cfg.SuperUsers = true, "User:admin"
	cfg.MetricsIP, cfg.MetricsPort = "127.0.0.1", taken.Addr().(*net.TCPAddr).Port
	if n, err := New(cfg); err == nil || !strings.Contains(err.Error(), "metrics on 127.0.0.1:"+strconv.Itoa(cfg.MetricsPort)) {
		if n != nil {
			n.Close(context.Background()) //nolint:errcheck
		}
		t.Fatalf("New with the metrics port taken: %v", err)
	}
}

// A node started and closed, with its SeaweedFS unreachable all along
// (every part retrying), stops every loop it started, and its Kafka
// server reports the end.
func TestCloseStopsEverything(t *testing.T) {
	defer goleak.VerifyNone(t, ignored()...)
	cfg := config(t)
	cfg.Authorizer, cfg.SuperUsers = true, "User:admin"
	cfg.Listeners = "PLAINTEXT://127.0.0.1:" + strconv.Itoa(freePort(t)) + ",SASL_PLAINTEXT://127.0.0.1:" + strconv.Itoa(freePort(t))
	cfg.MetricsIP, cfg.MetricsPort = "127.0.0.1", freePort(t)
	cfg.PprofPort = freePort(t)
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the loops are running, retrying
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case err := <-n.Served():
		if err != nil {
			t.Fatalf("the server's end: %v", err)
		}
	default:
		t.Fatal("the server's end not reported")
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A node over another storage than SeaweedMQ refuses what needs SeaweedFS
// itself: the Iceberg tables (their compaction is SeaweedFS's), leaving
// nothing running.
func TestOtherStorageRefusesIcebergTables(t *testing.T) {
	defer goleak.VerifyNone(t, ignored()...)
	cfg := config(t)
	cfg.Storage = storagetest.NewStorage()
	cfg.IcebergCatalog = "http://127.0.0.1:1"
	n, err := New(cfg)
	if err == nil || !strings.Contains(err.Error(), "the Iceberg tables need SeaweedFS") {
		if n != nil {
			n.Close(context.Background()) //nolint:errcheck
		}
		t.Fatalf("New with a catalog over an in-memory storage: %v", err)
	}
}

// A cluster whose state is of a newer format than the gateway's: the
// gateway never joins, and Served says why; a cluster of no stated
// format gets the gateway's.
func TestNewerFormatRefused(t *testing.T) {
	st := storagetest.NewStorage()
	ctx := context.Background()
	if err := st.WriteFile(ctx, "/etc/kafka-gateway", "format", []byte(`{"version":99}`)); err != nil {
		t.Fatal(err)
	}
	cfg := config(t)
	cfg.Storage = st
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-n.Served():
		if !errors.Is(err, cluster.ErrNewerFormat) || !strings.Contains(err.Error(), "version 99") {
			t.Fatalf("served: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a gateway joined a cluster of a newer format")
	}
	if len(n.members.Members()) != 0 {
		t.Fatalf("members %v", n.members.Members())
	}
	closeCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := n.Close(closeCtx); err != nil {
		t.Fatal(err)
	}

	fresh := storagetest.NewStorage()
	cfg = config(t)
	cfg.Storage = fresh
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx) //nolint:errcheck
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := fresh.ReadFile(ctx, "/etc/kafka-gateway", "format")
		if err == nil && string(data) == fmt.Sprintf(`{"version":%d}`, cluster.FormatVersion) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the format a new cluster got: %q %v", data, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
