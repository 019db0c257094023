package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage/storagetest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/txn"
)

// stalledBackend has one topic whose appends never finish: a broker that
// takes records and does not answer.
type stalledBackend struct {
	storage.Backend // not called
	appends         int
	configs         map[string]string // its topics'
}

func (b *stalledBackend) DescribeTopic(_ context.Context, name string) (storage.TopicInfo, error) {
	return storage.TopicInfo{Name: name, Partitions: 3, Configs: b.configs}, nil
}

func (b *stalledBackend) Append(context.Context, string, int32, []record.Record, bool) *storage.Appended {
	b.appends++
	return storage.NewAppended()
}

func (b *stalledBackend) AppendBatch(ctx context.Context, topic string, partition int32, batch []byte, durable bool) *storage.Appended {
	return b.Append(ctx, topic, partition, recordsOf(batch), durable)
}

// recordsOf is a produced batch's records, as a backend's AppendBatch
// reads them; nil if it does not parse.
func recordsOf(batch []byte) []record.Record {
	b, err := record.ParseBatch(batch, 1<<30)
	if err != nil {
		return nil
	}
	b.Mark()
	return b.Records
}

func produceTo(partitions int, acks int16, timeoutMs int32) *kmsg.ProduceRequest {
	var rb record.Builder
	rb.Reset(0)
	rb.Add(&record.Record{Value: []byte("v"), Timestamp: 1})
	batch := rb.AppendTo(nil)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(12)
	req.Acks, req.TimeoutMillis = acks, timeoutMs
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	for p := 0; p < partitions; p++ {
		rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: int32(p), Records: batch})
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func handle(t *testing.T, h *Handler, req kmsg.Request) kmsg.Response {
	t.Helper()
	r := &Request{Header: Header{Key: req.Key(), Version: req.GetVersion()}, Body: req}
	done := make(chan kmsg.Response, 1)
	go func() {
		resp, err := h.Handle(context.Background(), r)()
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	select {
	case resp := <-done:
		return resp
	case <-time.After(5 * time.Second):
		t.Fatal("no answer within 5 s")
		return nil
	}
}

// The produce timeout is the request's across all its partitions: it once
// covered only the first partition waited on, and a request to three
// stalled partitions was never answered.
func TestProduceTimeoutCoversEveryPartition(t *testing.T) {
	b := &stalledBackend{}
	resp := handle(t, New(Config{}, b, nil, nil), produceTo(3, -1, 100)).(*kmsg.ProduceResponse)
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != kerr.RequestTimedOut.Code {
			t.Errorf("partition %d: %v, want REQUEST_TIMED_OUT", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
}

// acks other than 0, 1 and -1 get INVALID_REQUIRED_ACKS (they were taken
// as 1), and nothing is written.
func TestProduceInvalidRequiredAcks(t *testing.T) {
	for _, acks := range []int16{2, -2, 5} {
		b := &stalledBackend{}
		resp := handle(t, New(Config{}, b, nil, nil), produceTo(2, acks, 100)).(*kmsg.ProduceResponse)
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != kerr.InvalidRequiredAcks.Code {
				t.Errorf("acks %d, partition %d: %v, want INVALID_REQUIRED_ACKS", acks, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
		if b.appends != 0 {
			t.Errorf("acks %d: %d appends", acks, b.appends)
		}
	}
}

// compressedBatch is one zstd batch of n records of size bytes each (all
// 'x': it compresses to almost nothing).
func compressedBatch(t *testing.T, n, size int) []byte {
	t.Helper()
	var rb record.Builder
	rb.Reset(0)
	for i := 0; i < n; i++ {
		rb.Add(&record.Record{Value: bytes.Repeat([]byte("x"), size), Timestamp: 1})
	}
	out, err := rb.AppendCompressedTo(nil, record.CodecZstd)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// gatedBackend holds each Append until gate is closed, counting them.
type gatedBackend struct {
	stalledBackend
	gate    chan struct{}
	mu      sync.Mutex
	entered int
	values  int
}

func (b *gatedBackend) Append(_ context.Context, _ string, _ int32, records []record.Record, _ bool) *storage.Appended {
	b.mu.Lock()
	b.entered++
	b.values += len(records)
	b.mu.Unlock()
	<-b.gate
	app := storage.NewAppended()
	app.Finish(0, nil)
	return app
}

func (b *gatedBackend) AppendBatch(ctx context.Context, topic string, partition int32, batch []byte, durable bool) *storage.Appended {
	return b.Append(ctx, topic, partition, recordsOf(batch), durable)
}

func (b *gatedBackend) appends() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.entered
}

func produceRaw(batch []byte, timeoutMs int32) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(12)
	req.Acks, req.TimeoutMillis = -1, timeoutMs
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batch}}
	req.Topics = append(req.Topics, rt)
	return req
}

// The gateway's decompressed bytes are bounded as a whole, not only per
// batch: a partition whose batch needs room that others hold waits for it,
// up to the request's timeout. Each connection's own limit once allowed
// any number of them to hold 128 MiB each at once. A batch stored as it
// was produced takes room only while its records are checked, not while
// the log takes it.
func TestDecompressionBudget(t *testing.T) {
	b := &gatedBackend{gate: make(chan struct{})}
	h := New(Config{DecompressionMaxBytes: 4 << 20}, b, nil, nil)
	// 3 MiB decompressed from a few KiB: the first guess of room is too
	// small, and the batch is decompressed again in a larger one.
	big := compressedBatch(t, 3, 1<<20)
	if len(big) > 64<<10 {
		t.Fatalf("the batch compressed to %d bytes", len(big))
	}
	answers := make(chan kmsg.Response, 2)
	for range 2 {
		go func() { answers <- handle(t, h, produceRaw(big, 10_000)) }()
	}
	for b.appends() < 2 {
		time.Sleep(time.Millisecond)
	}
	// Both are with the log, checked: they hold no room.
	if !h.inflate.TryAcquire(4 << 20) {
		t.Fatal("walked batches handed to the log still hold room")
	}
	// All the room held elsewhere: a third finds none and times out,
	// decompressing nothing.
	resp := handle(t, h, produceRaw(big, 200)).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.RequestTimedOut.Code {
		t.Fatalf("produce while the room is held: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
	}
	if n := b.appends(); n != 2 {
		t.Fatalf("%d appends while the room was held", n)
	}
	h.inflate.Release(4 << 20)
	close(b.gate)
	for range 2 {
		if code := (<-answers).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(code))
		}
	}
	resp = handle(t, h, produceRaw(big, 200)).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce after the room was freed: %v", kerr.ErrorForCode(code))
	}
	if b.values != 9 {
		t.Fatalf("%d records appended, want 9", b.values)
	}
	// More than the whole budget can never fit: MESSAGE_TOO_LARGE at once.
	resp = handle(t, h, produceRaw(compressedBatch(t, 5, 1<<20), 10_000)).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.MessageTooLarge.Code {
		t.Fatalf("a batch larger than the budget: %v, want MESSAGE_TOO_LARGE", kerr.ErrorForCode(code))
	}
	// Every room taken was given back.
	if !h.inflate.TryAcquire(4 << 20) {
		t.Fatal("room still held after every produce ended")
	}
}

// testHandler is a Handler over the in-memory backend with real group and
// transaction coordinators, as the gateway runs it; authz (if not nil)
// decides its requests; wrap (if given) puts a backend around the
// in-memory one.
func testHandler(t *testing.T, authz *acl.Authorizer, wrap ...func(*storagetest.Backend) storage.Backend) (*Handler, *storagetest.Backend) {
	t.Helper()
	b := storagetest.New()
	var backend storage.Backend = b
	for _, w := range wrap {
		backend = w(b)
	}
	files := NewMemFiles()
	groups := group.New(group.Options{Store: offset.NewStore(files), InitialRebalanceDelay: time.Millisecond})
	groups.Start()
	txns := txn.New(txn.Options{Files: files, Log: b, Groups: groups})
	txns.Start()
	t.Cleanup(func() {
		txns.Close()
		groups.Close()
	})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, e := txns.List(); e == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the transaction coordinator did not load")
		}
	}
	return New(Config{ClusterID: func() string { return "in-package" }, DefaultPartitions: 3, AutoCreateTopics: true, Authorizer: authz}, backend, groups, txns), b
}

// exchange takes req at version the way the gateway does: encoded as a
// client sends it, decoded (Decode checks the version), handled as
// principal, and its answer encoded and decoded again, which must give
// exactly the bytes of a response of that version. A nil response is none
// sent (acks=0).
func exchange(t *testing.T, h *Handler, principal string, req kmsg.Request, version int16) kmsg.Response {
	t.Helper()
	return exchangeFrom(t, h, principal, "", req, version)
}

// exchangeFrom is exchange of a client with a client id.
func exchangeFrom(t *testing.T, h *Handler, principal, clientID string, req kmsg.Request, version int16) kmsg.Response {
	t.Helper()
	req.SetVersion(version)
	r, err := Decode(kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, 9)[4:])
	if err != nil {
		t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	r.Principal, r.ClientHost, r.Listener = principal, "/127.0.0.1", "PLAINTEXT"
	done := make(chan kmsg.Response, 1)
	go func() {
		resp, err := h.Handle(context.Background(), r)()
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	var resp kmsg.Response
	select {
	case resp = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s v%d: no answer within 10 s", kmsg.NameForKey(req.Key()), version)
	}
	if resp == nil {
		return nil
	}
	frame := AppendResponse(nil, 9, resp)
	body := frame[8:]
	back := req.ResponseKind()
	back.SetVersion(version)
	if back.IsFlexible() {
		if body, err = SkipHeaderTags(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := back.ReadFrom(body); err != nil {
		t.Fatalf("%s v%d response: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	if again := back.AppendTo(nil); !bytes.Equal(again, body) {
		t.Fatalf("%s v%d response: %d bytes, a v%d response is %d", kmsg.NameForKey(req.Key()), version, len(body), version, len(again))
	}
	return back
}

const anonymous = "User:ANONYMOUS"

// testAuthorizer is an authorizer with bindings only (no super user, no
// allow.everyone.if.no.acl.found).
func testAuthorizer(t *testing.T, bindings ...acl.Binding) *acl.Authorizer {
	t.Helper()
	authz := acl.New(acl.Options{Files: NewMemFiles()})
	if err := authz.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, err := range authz.Create(context.Background(), bindings) {
		if err != nil {
			t.Fatal(err)
		}
	}
	return authz
}

// allow is an ALLOW of op on a literal resource for User:ANONYMOUS.
func allow(op acl.Operation, rt acl.ResourceType, name string) acl.Binding {
	return acl.Binding{ResourceType: rt, ResourceName: name, PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: anonymous, Host: "*", Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

// batchOf is one uncompressed batch of values; edit changes its header
// (producer, sequence, attributes) before its CRC is computed.
func batchOf(t *testing.T, edit func(*kmsg.RecordBatch), values ...string) []byte {
	t.Helper()
	var rb record.Builder
	rb.Reset(0)
	for i, v := range values {
		rb.Add(&record.Record{Key: []byte("k" + v), Value: []byte(v), Timestamp: 1_700_000_000_000 + int64(i),
			Headers: []kmsg.Header{{Key: "h", Value: []byte(v)}}})
	}
	raw := rb.AppendTo(nil)
	if edit == nil {
		return raw
	}
	var b kmsg.RecordBatch
	if err := b.ReadFrom(raw); err != nil {
		t.Fatal(err)
	}
	edit(&b)
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// produceReq produces batches to partitions of a topic (by name, or by id
// from v13).
func produceReq(topic string, id [16]byte, batches map[int32][]byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	for p := int32(0); p < 16; p++ {
		if b, ok := batches[p]; ok {
			rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p, Records: b})
		}
	}
	for p, b := range batches {
		if p < 0 || p >= 16 {
			rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p, Records: b})
		}
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func produceCodes(resp kmsg.Response) map[int32]int16 {
	out := map[int32]int16{}
	for _, rt := range resp.(*kmsg.ProduceResponse).Topics {
		for _, p := range rt.Partitions {
			out[p.Partition] = p.ErrorCode
		}
	}
	return out
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	name := "no error"
	if got != 0 {
		name = fmt.Sprint(got)
		if ke, ok := kerr.ErrorForCode(got).(*kerr.Error); ok {
			name = ke.Message
		}
	}
	switch {
	case want == nil && got != 0:
		t.Errorf("%s: %s, want no error", what, name)
	case want != nil && got != want.Code:
		t.Errorf("%s: %s, want %s", what, name, want.Message)
	}
}

// values reads a partition's records' values.
func values(t *testing.T, b *storagetest.Backend, topic string, partition int32) []string {
	t.Helper()
	res, err := b.Read(context.Background(), topic, partition, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res.Records {
		out = append(out, string(r.Value))
	}
	return out
}

// Produce v3 (the first served) to v13 (topics by id): the records land in
// order with contiguous offsets and their keys, values, headers and
// timestamps; each answer has the base offset and what its version
// carries. v0-2 are advertised (librdkafka reads the minimum) and answered
// UNSUPPORTED_FOR_MESSAGE_FORMAT, writing nothing; v14 is refused.
func TestProduceVersions(t *testing.T) {
	if min, max, _ := Supported(int16(kmsg.Produce)); min != 0 || max != 13 {
		t.Fatalf("Produce served %d-%d, want 0-13", min, max)
	}
	h, b := testHandler(t, nil)
	info, _ := b.CreateTopic(context.Background(), storage.TopicSpec{Name: "p", Partitions: 2})
	base := int64(0)
	for _, v := range []int16{3, 5, 8, 9, 12, 13} {
		var id [16]byte
		if v >= 13 {
			id = info.ID
		}
		resp := exchange(t, h, anonymous, produceReq("p", id, map[int32][]byte{0: batchOf(t, nil, "a", "b", "c")}), v).(*kmsg.ProduceResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
		rt, p := resp.Topics[0], resp.Topics[0].Partitions[0]
		if (v < 13 && rt.Topic != "p") || (v >= 13 && rt.TopicID != info.ID) {
			t.Errorf("v%d: answered for topic %q %x", v, rt.Topic, rt.TopicID)
		}
		wantCode(t, "produce", p.ErrorCode, nil)
		if p.BaseOffset != base || p.LogAppendTime != -1 || resp.ThrottleMillis != 0 {
			t.Errorf("v%d: base offset %d (want %d), log append time %d, throttle %d", v, p.BaseOffset, base, p.LogAppendTime, resp.ThrottleMillis)
		}
		base += 3
	}
	res, _ := b.Read(context.Background(), "p", 0, 0, 1<<20)
	if len(res.Records) != 18 {
		t.Fatalf("%d records stored", len(res.Records))
	}
	for i, r := range res.Records {
		v := []string{"a", "b", "c"}[i%3]
		if r.Offset != int64(i) || string(r.Value) != v || string(r.Key) != "k"+v || r.Timestamp != 1_700_000_000_000+int64(i%3) ||
			len(r.Headers) != 1 || string(r.Headers[0].Value) != v {
			t.Fatalf("record %d: offset %d key %q value %q ts %d headers %v", i, r.Offset, r.Key, r.Value, r.Timestamp, r.Headers)
		}
	}
	for _, v := range []int16{0, 1, 2} {
		resp := exchange(t, h, anonymous, produceReq("p", [16]byte{}, map[int32][]byte{1: batchOf(t, nil, "old")}), v)
		wantCode(t, fmt.Sprintf("v%d", v), produceCodes(resp)[1], kerr.UnsupportedForMessageFormat)
	}
	if got := values(t, b, "p", 1); len(got) != 0 {
		t.Errorf("v0-2 wrote %v", got)
	}
	req := produceReq("p", [16]byte{}, map[int32][]byte{0: batchOf(t, nil, "x")})
	frame := requestFrame(req, 1)
	binary.BigEndian.PutUint16(frame[2:], 14)
	if _, err := Decode(frame); err == nil {
		t.Error("Produce v14 decoded")
	}
}

// Errors per partition, as Kafka gives them, the other partitions of the
// request written all the same: unknown topic (a name no topic can have
// too), unknown topic id (v13), a partition the topic lacks, a batch over
// the topic's max.message.bytes, corrupt batches (CORRUPT_MESSAGE with a
// message), magic 0/1, control batches and transactional ones without a
// producer, several batches, an idempotent batch without a sequence,
// records other than the header says (INVALID_RECORD, as Kafka 4).
func TestProduceErrors(t *testing.T) {
	h, b := testHandler(t, nil)
	ctx := context.Background()
	b.CreateTopic(ctx, storage.TopicSpec{Name: "e", Partitions: 3})
	b.CreateTopic(ctx, storage.TopicSpec{Name: "small", Partitions: 1, Configs: map[string]string{"max.message.bytes": "200"}})
	good := batchOf(t, nil, "ok")
	for _, name := range []string{"nope", "bad/name"} {
		resp := exchange(t, h, anonymous, produceReq(name, [16]byte{}, map[int32][]byte{0: good}), 12)
		wantCode(t, name, produceCodes(resp)[0], kerr.UnknownTopicOrPartition)
	}
	resp := exchange(t, h, anonymous, produceReq("", [16]byte{9, 9}, map[int32][]byte{0: good}), 13)
	wantCode(t, "unknown topic id", produceCodes(resp)[0], kerr.UnknownTopicID)

	corrupt := batchOf(t, nil, "c")
	corrupt[len(corrupt)-1] ^= 0xff // the CRC no longer matches
	truncated := good[:len(good)-3]
	oldMagic := batchOf(t, nil, "m")
	oldMagic[16] = 1
	control := batchOf(t, func(b *kmsg.RecordBatch) { b.Attributes |= record.AttrControl }, "ctl")
	noProducer := batchOf(t, func(b *kmsg.RecordBatch) { b.Attributes |= record.AttrTransactional }, "tx")
	idem := func(seq int32) []byte {
		return batchOf(t, func(b *kmsg.RecordBatch) { b.ProducerID, b.ProducerEpoch, b.FirstSequence = 1, 0, seq }, "i")
	}
	for _, tc := range []struct {
		name  string
		batch []byte
		want  *kerr.Error
	}{
		{"a corrupt batch", corrupt, kerr.CorruptMessage},
		{"a truncated batch", truncated, kerr.CorruptMessage},
		{"magic 1", oldMagic, kerr.InvalidRecord},
		{"a control batch", control, kerr.InvalidRecord},
		{"a transactional batch without a producer", noProducer, kerr.InvalidRecord},
		{"two batches of an idempotent producer", append(idem(0), idem(1)...), kerr.InvalidRecord},
		{"two batches", append(batchOf(t, nil, "1"), batchOf(t, nil, "2")...), kerr.InvalidRecord},
		{"an idempotent batch without a sequence", idem(-1), kerr.InvalidRecord},
		{"a last offset delta past its records", batchOf(t, func(b *kmsg.RecordBatch) { b.LastOffsetDelta = 4 }, "a", "b"), kerr.InvalidRecord},
		{"no records", batchOf(t, func(b *kmsg.RecordBatch) { b.NumRecords = 0 }, "a"), kerr.InvalidRecord},
	} {
		resp := exchange(t, h, anonymous, produceReq("e", [16]byte{}, map[int32][]byte{0: tc.batch, 1: good, 7: good}), 12).(*kmsg.ProduceResponse)
		codes := produceCodes(resp)
		wantCode(t, tc.name, codes[0], tc.want)
		wantCode(t, tc.name+": its neighbour", codes[1], nil)
		wantCode(t, tc.name+": partition 7 of 3", codes[7], kerr.UnknownTopicOrPartition)
		for _, p := range resp.Topics[0].Partitions {
			if p.Partition == 0 && tc.want == kerr.CorruptMessage && (p.ErrorMessage == nil || *p.ErrorMessage == "") {
				t.Errorf("%s: no error message", tc.name)
			}
			if p.Partition != 1 && p.BaseOffset != -1 {
				t.Errorf("%s: partition %d base offset %d", tc.name, p.Partition, p.BaseOffset)
			}
		}
	}
	if got := values(t, b, "e", 0); len(got) != 0 {
		t.Errorf("refused batches were written: %v", got)
	}
	if got := values(t, b, "e", 1); len(got) != 10 { // one for each case
		t.Errorf("the good neighbours: %v", got)
	}
	// zstd needs Produce v7 (KIP-110).
	var zb record.Builder
	zb.Reset(0)
	zb.Add(&record.Record{Key: []byte("z"), Value: []byte("zstd"), Timestamp: 1_700_000_000_000})
	zstd, err := zb.AppendCompressedTo(nil, record.CodecZstd)
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[int16]*kerr.Error{6: kerr.UnsupportedCompressionType, 7: nil} {
		resp := exchange(t, h, anonymous, produceReq("e", [16]byte{}, map[int32][]byte{2: zstd}), v)
		wantCode(t, fmt.Sprintf("zstd at v%d", v), produceCodes(resp)[2], want)
	}
	big := batchOf(t, nil, strings.Repeat("x", 300))
	resp = exchange(t, h, anonymous, produceReq("small", [16]byte{}, map[int32][]byte{0: big}), 12)
	wantCode(t, "a batch over max.message.bytes", produceCodes(resp)[0], kerr.MessageTooLarge)
	resp = exchange(t, h, anonymous, produceReq("small", [16]byte{}, map[int32][]byte{0: batchOf(t, nil, "fits")}), 12)
	wantCode(t, "a batch under max.message.bytes", produceCodes(resp)[0], nil)
}

// acks=0 is answered with nothing, and written; acks=1 and -1 are
// answered once the records are stored.
func TestProduceAcks(t *testing.T) {
	h, b := testHandler(t, nil)
	b.CreateTopic(context.Background(), storage.TopicSpec{Name: "a", Partitions: 1})
	for i, acks := range []int16{0, 1, -1} {
		req := produceReq("a", [16]byte{}, map[int32][]byte{0: batchOf(t, nil, strconv.Itoa(i))})
		req.Acks = acks
		resp := exchange(t, h, anonymous, req, 9)
		if (resp == nil) != (acks == 0) {
			t.Errorf("acks=%d: answered %v", acks, resp != nil)
		}
		if resp != nil {
			wantCode(t, fmt.Sprintf("acks=%d", acks), produceCodes(resp)[0], nil)
		}
	}
	if got := values(t, b, "a", 0); !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Errorf("stored %v", got)
	}
	// acks=0 to a partition that is not there: the connection closes.
	req := produceReq("a", [16]byte{}, map[int32][]byte{7: batchOf(t, nil, "lost")})
	req.Acks = 0
	req.SetVersion(9)
	r, err := Decode(requestFrame(req, 9))
	if err != nil {
		t.Fatal(err)
	}
	r.Principal, r.ClientHost, r.Listener = anonymous, "/127.0.0.1", "PLAINTEXT"
	if resp, err := h.Handle(context.Background(), r)(); resp != nil || err == nil {
		t.Errorf("acks=0 to an unknown partition: %v, %v; want the connection closed", resp, err)
	}
}

// A transactional batch goes only to a partition of its producer's open
// transaction (INVALID_TXN_STATE otherwise) before v12; v12+
// (transaction.version 2) adds its partition to the transaction itself;
// after a newer producer of the transactional id is initialized, the old
// one gets INVALID_PRODUCER_EPOCH.
func TestProduceTransactional(t *testing.T) {
	h, b := testHandler(t, nil)
	b.CreateTopic(context.Background(), storage.TopicSpec{Name: "tx", Partitions: 2})
	id := "tx-prod"
	initReq := kmsg.NewPtrInitProducerIDRequest()
	initReq.TransactionalID, initReq.TransactionTimeoutMillis = &id, 60_000
	first := exchange(t, h, anonymous, initReq, 4).(*kmsg.InitProducerIDResponse)
	batch := func(epoch int16, seq int32) []byte {
		return batchOf(t, func(rb *kmsg.RecordBatch) {
			rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = first.ProducerID, epoch, seq
			rb.Attributes |= record.AttrTransactional
		}, "t")
	}
	txnProduceTo := func(partition int32, epoch int16, seq int32, version int16) int16 {
		req := produceReq("tx", [16]byte{}, map[int32][]byte{partition: batch(epoch, seq)})
		req.TransactionID = &id
		return produceCodes(exchange(t, h, anonymous, req, version))[partition]
	}
	txnProduce := func(epoch int16, seq int32) int16 { return txnProduceTo(0, epoch, seq, 11) }
	wantCode(t, "before AddPartitionsToTxn", txnProduce(first.ProducerEpoch, 0), kerr.InvalidTxnState)
	wantCode(t, "v12, adding its partition", txnProduceTo(1, first.ProducerEpoch, 0, 12), nil)
	if got := values(t, b, "tx", 1); len(got) != 1 || got[0] != "t" {
		t.Errorf("stored by v12: %q", got)
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, first.ProducerID, first.ProducerEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "tx", Partitions: []int32{0}}}
	exchange(t, h, anonymous, add, 3)
	wantCode(t, "in the transaction", txnProduce(first.ProducerEpoch, 0), nil)
	exchange(t, h, anonymous, initReq, 4) // fences the first producer
	wantCode(t, "from the fenced producer", txnProduce(first.ProducerEpoch, 1), kerr.InvalidProducerEpoch)
	if got := values(t, b, "tx", 0); len(got) != 2 || got[0] != "t" { // the record and the abort marker
		t.Errorf("stored %q", got)
	}
}

// With an authorizer: Write on the topic is needed
// (TOPIC_AUTHORIZATION_FAILED, whether or not the topic exists), and Write
// on the transactional id for a transactional producer
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
func TestProduceAuthorization(t *testing.T) {
	authz := testAuthorizer(t, allow(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "w"),
		allow(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "r"))
	ctx := context.Background()
	h, b := testHandler(t, authz)
	b.CreateTopic(ctx, storage.TopicSpec{Name: "w", Partitions: 1})
	b.CreateTopic(ctx, storage.TopicSpec{Name: "r", Partitions: 1})
	for name, want := range map[string]*kerr.Error{"w": nil, "r": kerr.TopicAuthorizationFailed, "absent": kerr.TopicAuthorizationFailed} {
		resp := exchange(t, h, anonymous, produceReq(name, [16]byte{}, map[int32][]byte{0: batchOf(t, nil, "v")}), 12)
		wantCode(t, "topic "+name, produceCodes(resp)[0], want)
	}
	id := "not-mine"
	req := produceReq("w", [16]byte{}, map[int32][]byte{0: batchOf(t, func(rb *kmsg.RecordBatch) {
		rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = 5, 0, 0
		rb.Attributes |= record.AttrTransactional
	}, "v")})
	req.TransactionID = &id
	wantCode(t, "transactional id without Write", produceCodes(exchange(t, h, anonymous, req, 12))[0], kerr.TransactionalIDAuthorizationFailed)
	if got := values(t, b, "w", 0); len(got) != 1 {
		t.Errorf("stored %q", got)
	}
}

// A compacted topic takes only records with a key (an empty key is one):
// a batch with keyless records is refused whole, INVALID_RECORD, and each
// keyless record is named by its index with Kafka's message (KIP-467,
// Produce v8+; librdkafka fails those and retries the others); a topic
// that deletes takes it.
func TestProduceCompactedNeedsKeys(t *testing.T) {
	h, b := testHandler(t, nil)
	ctx := context.Background()
	b.CreateTopic(ctx, storage.TopicSpec{Name: "c", Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}})
	b.CreateTopic(ctx, storage.TopicSpec{Name: "cd", Partitions: 1, Configs: map[string]string{"cleanup.policy": "delete,compact"}})
	b.CreateTopic(ctx, storage.TopicSpec{Name: "d", Partitions: 1, Configs: map[string]string{"cleanup.policy": "delete"}})
	keyless := func(keys ...[]byte) []byte {
		var rb record.Builder
		rb.Reset(0)
		for i, k := range keys {
			rb.Add(&record.Record{Key: k, Value: []byte(fmt.Sprint(i)), Timestamp: 1})
		}
		return rb.AppendTo(nil)
	}
	mixed := keyless([]byte("a"), []byte{}, nil, []byte("b"), nil)
	for _, topic := range []string{"c", "cd"} {
		for _, v := range []int16{7, 8, 12} {
			resp := exchange(t, h, anonymous, produceReq(topic, [16]byte{}, map[int32][]byte{0: mixed}), v).(*kmsg.ProduceResponse)
			p := resp.Topics[0].Partitions[0]
			wantCode(t, topic+": a keyless record", p.ErrorCode, kerr.InvalidRecord)
			if v < 8 {
				continue // no record errors before v8
			}
			want := "storage.Compacted topic cannot accept message without key in topic partition " + topic + "-0."
			if p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, want) {
				t.Errorf("%s v%d: message %v", topic, v, p.ErrorMessage)
			}
			var at []int32
			for _, e := range p.ErrorRecords {
				at = append(at, e.RelativeOffset)
				if e.ErrorMessage == nil || *e.ErrorMessage != want {
					t.Errorf("%s v%d: record %d: message %v, want %q", topic, v, e.RelativeOffset, e.ErrorMessage, want)
				}
			}
			if !slices.Equal(at, []int32{2, 4}) {
				t.Errorf("%s v%d: record errors at %v, want 2 and 4", topic, v, at)
			}
		}
		if got := values(t, b, topic, 0); len(got) != 0 {
			t.Errorf("%s: a refused batch was written: %v", topic, got)
		}
		resp := exchange(t, h, anonymous, produceReq(topic, [16]byte{}, map[int32][]byte{0: keyless([]byte("a"), []byte{})}), 12).(*kmsg.ProduceResponse)
		wantCode(t, topic+": keyed records", resp.Topics[0].Partitions[0].ErrorCode, nil)
	}
	resp := exchange(t, h, anonymous, produceReq("d", [16]byte{}, map[int32][]byte{0: mixed}), 12)
	wantCode(t, "a topic that deletes", produceCodes(resp)[0], nil)
}

// Timestamps out of message.timestamp.after.max.ms (an hour by default)
// or message.timestamp.before.max.ms of the gateway's clock are refused,
// INVALID_TIMESTAMP with each such record named; timestamps within them,
// and records without one (-1), pass; a timestamp error outranks a keyless
// record's.
func TestProduceTimestampBounds(t *testing.T) {
	h, b := testHandler(t, nil)
	ctx := context.Background()
	b.CreateTopic(ctx, storage.TopicSpec{Name: "ts", Partitions: 1})
	b.CreateTopic(ctx, storage.TopicSpec{Name: "ts-before", Partitions: 1, Configs: map[string]string{"message.timestamp.before.max.ms": "60000"}})
	b.CreateTopic(ctx, storage.TopicSpec{Name: "ts-compact", Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}})
	now := time.Now().UnixMilli()
	batch := func(recs ...record.Record) []byte {
		var rb record.Builder
		rb.Reset(0)
		for i := range recs {
			rb.Add(&recs[i])
		}
		return rb.AppendTo(nil)
	}
	rec := func(key string, ts int64) record.Record {
		var k []byte
		if key != "" {
			k = []byte(key)
		}
		return record.Record{Key: k, Value: []byte("v"), Timestamp: ts}
	}
	for _, c := range []struct {
		topic string
		data  []byte
		want  *kerr.Error
		at    []int32
	}{
		{"ts", batch(rec("a", now), rec("a", now+2*3_600_000), rec("a", now+30*60_000), rec("a", now+3*3_600_000)), kerr.InvalidTimestamp, []int32{1, 3}},
		{"ts", batch(rec("a", now-10*365*86_400_000), rec("a", -1), rec("a", now+50*60_000)), nil, nil},
		{"ts-before", batch(rec("a", now-3_600_000), rec("a", now)), kerr.InvalidTimestamp, []int32{0}},
		{"ts-compact", batch(rec("", now), rec("a", now+5*3_600_000)), kerr.InvalidTimestamp, []int32{0, 1}},
	} {
		resp := exchange(t, h, anonymous, produceReq(c.topic, [16]byte{}, map[int32][]byte{0: c.data}), 12).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		wantCode(t, c.topic, p.ErrorCode, c.want)
		var at []int32
		for _, e := range p.ErrorRecords {
			at = append(at, e.RelativeOffset)
		}
		if !slices.Equal(at, c.at) {
			t.Errorf("%s: record errors at %v, want %v", c.topic, at, c.at)
		}
	}
	if got := values(t, b, "ts", 0); len(got) != 3 {
		t.Errorf("stored %d records, want the 3 of the batch within bounds", len(got))
	}
}

// A mirror topic of a topic link takes no produce until it is promoted:
// INVALID_REQUEST, with the link named; its neighbours do.
func TestProduceToMirrorTopic(t *testing.T) {
	h, b := testHandler(t, nil)
	ctx := context.Background()
	b.CreateTopic(ctx, storage.TopicSpec{Name: "mirror", Partitions: 1})
	b.CreateTopic(ctx, storage.TopicSpec{Name: "plain", Partitions: 1})
	promoted := false
	h.cfg.ReadOnly = func(topic string) (string, bool) { return "from-kafka", topic == "mirror" && !promoted }
	resp := exchange(t, h, anonymous, produceReq("mirror", [16]byte{}, map[int32][]byte{0: batchOf(t, nil, "x")}), 12).(*kmsg.ProduceResponse)
	p := resp.Topics[0].Partitions[0]
	wantCode(t, "produce to a mirror topic", p.ErrorCode, kerr.InvalidRequest)
	if p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "from-kafka") {
		t.Errorf("error message %v names no link", p.ErrorMessage)
	}
	resp = exchange(t, h, anonymous, produceReq("plain", [16]byte{}, map[int32][]byte{0: batchOf(t, nil, "y")}), 12).(*kmsg.ProduceResponse)
	wantCode(t, "produce to another topic", resp.Topics[0].Partitions[0].ErrorCode, nil)
	if got := values(t, b, "mirror", 0); len(got) != 0 {
		t.Fatalf("the mirror took %v", got)
	}
	promoted = true
	resp = exchange(t, h, anonymous, produceReq("mirror", [16]byte{}, map[int32][]byte{0: batchOf(t, nil, "z")}), 12).(*kmsg.ProduceResponse)
	wantCode(t, "produce once promoted", resp.Topics[0].Partitions[0].ErrorCode, nil)
}

// Decoded records count against the same budget as decompressed bytes,
// compressed or not: a batch of empty records takes about fourteen times
// its size decoded. The 1.9 GiB a flood of such batches once took was
// counted nowhere. Only a compacted topic's records are decoded now; any
// other batch is walked in place and takes nothing decoded.
func TestDecodedRecordsBudget(t *testing.T) {
	b := &gatedBackend{gate: make(chan struct{})}
	b.configs = map[string]string{"cleanup.policy": "compact"}
	h := New(Config{DecompressionMaxBytes: 4 << 20}, b, nil, nil)
	empty := func(n int) []byte {
		var rb record.Builder
		rb.Reset(0)
		for range n {
			rb.Add(&record.Record{Key: []byte{}, Timestamp: 1})
		}
		return rb.AppendTo(nil)
	}
	// A compacted topic's records are decoded and stored one by one:
	// they hold their room until the log has them.
	held := empty(30_000) // about 2.9 MiB decoded
	first := make(chan kmsg.Response, 1)
	go func() { first <- handle(t, h, produceRaw(held, 10_000)) }()
	for b.appends() == 0 {
		time.Sleep(time.Millisecond)
	}
	resp := handle(t, h, produceRaw(held, 200)).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.RequestTimedOut.Code {
		t.Fatalf("an uncompressed batch while another's records hold the budget: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
	}
	close(b.gate)
	if code := (<-first).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("first produce: %v", kerr.ErrorForCode(code))
	}
	resp = handle(t, h, produceRaw(empty(60_000), 10_000)).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.MessageTooLarge.Code {
		t.Fatalf("records that take more than the budget decoded: %v, want MESSAGE_TOO_LARGE", kerr.ErrorForCode(code))
	}
	// Any other topic's batch is stored as it was produced, its records
	// checked in place: Kafka takes it, and so does the gateway.
	b.configs = nil
	resp = handle(t, h, produceRaw(empty(60_000), 10_000)).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("60,000 empty records checked in place: %v", kerr.ErrorForCode(code))
	}
	if !h.inflate.TryAcquire(4 << 20) {
		t.Fatal("room still held after every produce ended")
	}
}

// A topic of message.timestamp.type LogAppendTime stamps what is produced
// to it with the time the log appends it, as Kafka's LogValidator does:
// the produce answer's log append time; the batch fetched of timestamp
// type LogAppendTime with that max timestamp (its CRC computed again),
// which its records read as; so also for a compacted topic, whose records
// are stored one by one and fetched in batches built again.
func TestLogAppendTime(t *testing.T) {
	h, b := testHandler(t, nil)
	ctx := context.Background()
	for name, cfg := range map[string]map[string]string{
		"lat":           {"message.timestamp.type": "LogAppendTime"},
		"lat-compacted": {"message.timestamp.type": "LogAppendTime", "cleanup.policy": "compact"},
		"create-time":   {},
	} {
		if _, err := b.CreateTopic(ctx, storage.TopicSpec{Name: name, Partitions: 1, Configs: cfg}); err != nil {
			t.Fatal(err)
		}
		before := time.Now().UnixMilli()
		resp := exchange(t, h, anonymous, produceReq(name, [16]byte{}, map[int32][]byte{0: batchOf(t, nil, "a", "b")}), 9).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		after := time.Now().UnixMilli()
		logAppend := name != "create-time"
		if p.ErrorCode != 0 || logAppend && (p.LogAppendTime < before || p.LogAppendTime > after) || !logAppend && p.LogAppendTime != -1 {
			t.Fatalf("%s: %v, log append time %d (produced between %d and %d)", name, kerr.ErrorForCode(p.ErrorCode), p.LogAppendTime, before, after)
		}
		batches, offsets := batchesOf(t, fetched(t, exchange(t, h, anonymous, fetchReq(name, [16]byte{}, map[int32]int64{0: 0}), 11))[0].RecordBatches)
		if len(offsets) != 2 || len(batches) != 1 {
			t.Fatalf("%s: fetched %d batches, offsets %v", name, len(batches), offsets)
		}
		if got := batches[0].attrs&record.AttrLogAppendTime != 0; got != logAppend {
			t.Errorf("%s: the fetched batch's timestamp type LogAppendTime: %v", name, got)
		}
		for i, r := range batches[0].records {
			want := int64(1_700_000_000_000 + i) // batchOf's
			if logAppend {
				want = p.LogAppendTime
			}
			if r.Timestamp != want {
				t.Errorf("%s: record %d's timestamp %d, want %d", name, i, r.Timestamp, want)
			}
		}
	}
}

// Checking a batch of many records is long work, done on at most half the
// cores: while every slot for it is taken, a batch of 5,000 records waits
// (and times out with its request), and one of ten records, another
// client's, goes through at once.
func TestBulkWorkLeavesCoresToOthers(t *testing.T) {
	b := &gatedBackend{gate: make(chan struct{})}
	close(b.gate)
	h := New(Config{}, b, nil, nil)
	batch := func(n int) []byte {
		var rb record.Builder
		rb.Reset(0)
		for range n {
			rb.Add(&record.Record{Value: []byte("v"), Timestamp: time.Now().UnixMilli()})
		}
		out, err := rb.AppendCompressedTo(nil, record.CodecZstd)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if !h.bulk.TryAcquire(bulkSlots()) {
		t.Fatal("bulk slots taken before any produce")
	}
	resp := handle(t, h, produceRaw(batch(5000), 200)).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.RequestTimedOut.Code {
		t.Fatalf("5,000 records while every bulk slot is taken: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
	}
	resp = handle(t, h, produceRaw(batch(10), 200)).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("10 records while every bulk slot is taken: %v", kerr.ErrorForCode(code))
	}
	h.bulk.Release(bulkSlots())
	resp = handle(t, h, produceRaw(batch(5000), 200)).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("5,000 records with a slot free: %v", kerr.ErrorForCode(code))
	}
	if b.values != 5010 {
		t.Fatalf("%d records appended, want 5,010", b.values)
	}
}
