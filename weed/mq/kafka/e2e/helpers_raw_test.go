package e2e

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// Helpers the tests share for raw Kafka requests: bare connections and
// hand-made frames, one request to one gateway alone, raw Produce requests
// and record batches, and error-code checks.

// rawConn is a bare TCP connection to the gateway for malformed input.
type rawConn struct {
	t  *testing.T
	nc net.Conn
}

func dialRaw(t *testing.T) *rawConn { return dialRawAt(t, gw.addr) }

func dialRawAt(t *testing.T, addr string) *rawConn {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t, nc}
}

// request frames a request header and body the way a client does.
func frame(key, version int16, correlationID int32, flexibleHeader bool, body []byte) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	if flexibleHeader {
		b = append(b, 0)
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func (c *rawConn) send(b []byte) {
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// sendUntilClosed writes b, which the gateway may close the connection
// before reading all of (a request it refuses from its size): a write cut
// short by that close is no failure; expectClosed says whether it closed.
func (c *rawConn) sendUntilClosed(b []byte) {
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(b); err != nil && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		c.t.Fatal(err)
	}
}

// readFrame reads one response frame (without its size).
func (c *rawConn) readFrame() ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c.nc, b)
	return b, err
}

// request sends req at the version it is set to and returns the answer.
func (c *rawConn) request(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	c.send(frame(req.Key(), req.GetVersion(), 1, req.IsFlexible(), req.AppendTo(nil)))
	return c.response(req)
}

// response reads the answer to req, sent before.
func (c *rawConn) response(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	b, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	b = b[4:] // correlation id
	if req.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		b = b[1:] // no tagged fields in the response header
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(b); err != nil {
		c.t.Fatalf("%s v%d response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

// expectClosed checks the gateway closed the connection (EOF or reset),
// rather than answering or leaving it hanging.
func (c *rawConn) expectClosed(what string) {
	c.t.Helper()
	b, err := c.readFrame()
	if err == nil {
		c.t.Fatalf("%s: got a %d-byte answer, want the connection closed", what, len(b))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("%s: connection left open", what)
	}
}

// askOne sends req to the gateway at addr, and only to it, on a connection
// of its own, and returns the answer.
func askOne[R kmsg.Response](t *testing.T, addr string, req kmsg.Request) R {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &rawConn{t, nc}
	c.send(frame(req.Key(), req.GetVersion(), 7, req.IsFlexible(), req.AppendTo(nil)))
	b, err := c.readFrame()
	if err != nil {
		t.Fatalf("%s from %s: %v", kmsg.NameForKey(req.Key()), addr, err)
	}
	resp := req.ResponseKind()
	b = b[4:] // correlation id
	if resp.IsFlexible() {
		b = b[1:] // no tagged fields in our answers' headers
	}
	if err := resp.ReadFrom(b); err != nil {
		t.Fatalf("%s from %s: %v", kmsg.NameForKey(req.Key()), addr, err)
	}
	return resp.(R)
}

// expectCode checks an error code; want nil is no error.
func expectCode(t testing.TB, what string, got int16, want *kerr.Error) {
	t.Helper()
	var code int16
	if want != nil {
		code = want.Code
	}
	if got != code {
		t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(code))
	}
}

// produceRaw sends one partition's records field in a Produce request.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, partition int32, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID(t, cl, topic)
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// topicID is a topic's id (Produce v13 names topics by id), or zero for a
// topic that does not exist.
func topicID(t *testing.T, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	details, err := kadm.NewClient(cl).ListTopics(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	return details[topic].ID
}

func batchOf(values ...[]byte) []byte {
	var b record.Builder
	b.Reset(0)
	now := time.Now().UnixMilli()
	for _, v := range values {
		b.Add(&record.Record{Value: v, Timestamp: now})
	}
	return b.AppendTo(nil)
}

// idempotentBatch is a batch of one record from producer id/epoch with
// sequence number seq.
func idempotentBatch(id int64, epoch int16, seq int32, value string) []byte {
	var b record.Builder
	b.Reset(0)
	b.Add(&record.Record{Value: []byte(value), Timestamp: time.Now().UnixMilli()})
	raw := b.AppendTo(nil)
	batch := kmsg.RecordBatch{}
	if err := batch.ReadFrom(raw); err != nil {
		panic(err)
	}
	batch.ProducerID, batch.ProducerEpoch, batch.FirstSequence = id, epoch, seq
	raw = batch.AppendTo(nil)
	// The CRC-32C at byte 17 covers the attributes (byte 21) to the end.
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}
