package protocol_test

import (
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// withClientID makes the connection's requests carry the client id.
func (c *rawConn) withClientID(id string) *rawConn {
	c.f = kmsg.NewRequestFormatter(kmsg.FormatterClientID(id))
	return c
}

// request_percentage: a client sending requests back to back is throttled
// (throttle_time_ms, at most one window) once its requests took more than
// its share of the gateway's time, and the time a fetch long-polls for
// records does not count: a consumer waiting on an empty partition under
// the same quota is never throttled. The windows are 50 ms (11 samples).
func TestRequestPercentageQuota(t *testing.T) {
	g := startGateway(t, gatewayOptions{quotaWindow: 50 * time.Millisecond})
	g.topic(t, "rq-t", 1, nil)
	admin := dial(t, g.addr)
	for _, id := range []string{"busy", "poller"} {
		code(t, id+"'s request quota", alterQuotas(t, admin, 1, false, "request_percentage", 1, quotaEntity("client-id", strp(id))).Entries[0].ErrorCode, nil)
	}
	before := testutil.ToFloat64(metrics.ThrottleSeconds.WithLabelValues("request", "User:ANONYMOUS"))

	// The poller first: five fetches of 200 ms each, a second of waiting
	// against 1% (5 ms a window of 550 ms): none throttled.
	poller := dial(t, g.addr).withClientID("poller")
	meta := kmsg.NewPtrMetadataRequest()
	topicID := poller.do(meta, 12).(*kmsg.MetadataResponse).Topics[0].TopicID
	for _, mt := range poller.do(meta, 12).(*kmsg.MetadataResponse).Topics {
		if mt.Topic != nil && *mt.Topic == "rq-t" {
			topicID = mt.TopicID
		}
	}
	for i := range 5 {
		f := kmsg.NewPtrFetchRequest()
		f.MaxWaitMillis, f.MinBytes, f.MaxBytes = 200, 1, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.TopicID = topicID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		f.Topics = append(f.Topics, ft)
		start := time.Now()
		resp := poller.do(f, 13).(*kmsg.FetchResponse)
		if took := time.Since(start); took < 150*time.Millisecond {
			t.Fatalf("fetch %d answered in %v: it did not long-poll", i, took)
		}
		code(t, "the long-poll", resp.Topics[0].Partitions[0].ErrorCode, nil)
		if resp.ThrottleMillis != 0 {
			t.Fatalf("fetch %d, a long-poll with nothing to read, throttled %d ms: the wait was counted", i, resp.ThrottleMillis)
		}
	}

	// The busy client: Metadata requests back to back until one is
	// throttled; never for more than a window.
	busy := dial(t, g.addr).withClientID("busy")
	throttled := 0
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; throttled < 3 && time.Now().Before(deadline); n++ {
		resp := busy.do(kmsg.NewPtrMetadataRequest(), 12).(*kmsg.MetadataResponse)
		if resp.ThrottleMillis > 0 {
			throttled++
			if resp.ThrottleMillis > 50 {
				t.Errorf("request %d throttled %d ms, more than the 50 ms window", n, resp.ThrottleMillis)
			}
		}
	}
	if throttled == 0 {
		t.Fatal("a client sending Metadata back to back past 1% of the gateway's time was never throttled")
	}
	if got := testutil.ToFloat64(metrics.ThrottleSeconds.WithLabelValues("request", "User:ANONYMOUS")); got <= before {
		t.Error("no request throttle time in SeaweedFS_kafka_throttle_seconds_total")
	}
	// Another client id beside it is not.
	other := dial(t, g.addr).withClientID("other")
	for range 200 {
		if resp := other.do(kmsg.NewPtrMetadataRequest(), 12).(*kmsg.MetadataResponse); resp.ThrottleMillis > 0 {
			t.Fatalf("a client without a request quota throttled %d ms", resp.ThrottleMillis)
		}
	}
}

// connection_creation_rate (KIP-612): connections from an IP past its
// quota are held unserved, then closed; connections already open go on,
// and once the rate is back under the quota new ones are served again.
// The windows are 50 ms (11 samples): at 20 a second, 10 connections at
// once.
func TestConnectionCreationQuota(t *testing.T) {
	g := startGateway(t, gatewayOptions{quotaWindow: 50 * time.Millisecond})
	admin := dial(t, g.addr)
	code(t, "the IP's quota", alterQuotas(t, admin, 1, false, "connection_creation_rate", 20, quotaEntity("ip", strp("127.0.0.1"))).Entries[0].ErrorCode, nil)
	before := testutil.ToFloat64(metrics.ConnectionsThrottled)

	served, refused := 0, 0
	for range 20 {
		c := dial(t, g.addr)
		c.nc.SetDeadline(time.Now().Add(5 * time.Second)) //nolint:errcheck // the read fails then
		_, err := c.send(kmsg.NewPtrApiVersionsRequest(), 3)
		switch {
		case err == nil:
			served++
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
			refused++
		default:
			t.Fatalf("a connection past the quota: %v, want it closed unserved", err)
		}
	}
	t.Logf("20 connections at once: %d served, %d closed unserved", served, refused)
	if served < 9 || served > 11 || refused == 0 {
		t.Errorf("%d of 20 connections served at 20 a second over 0.5 s, want 10", served)
	}
	if got := testutil.ToFloat64(metrics.ConnectionsThrottled); got-before != float64(refused) {
		t.Errorf("SeaweedFS_kafka_connections_throttled_total grew by %v, want %d", got-before, refused)
	}
	// The connection opened before still works.
	admin.do(kmsg.NewPtrApiVersionsRequest(), 3)
	// The window passes: connections are served again.
	time.Sleep(700 * time.Millisecond)
	if _, err := dial(t, g.addr).send(kmsg.NewPtrApiVersionsRequest(), 3); err != nil {
		t.Errorf("a connection after the window: %v", err)
	}
}
