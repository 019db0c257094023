package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage/storagetest"
)

// readsBackend has one topic of 10 records, which its reads do not return,
// and remembers what each Read asked.
type readsBackend struct {
	storage.Backend // not called
	asked           []int
}

func (b *readsBackend) DescribeTopic(_ context.Context, name string) (storage.TopicInfo, error) {
	return storage.TopicInfo{Name: name, Partitions: 2}, nil
}

func (b *readsBackend) Read(_ context.Context, _ string, _ int32, _ int64, maxBytes int) (storage.ReadResult, error) {
	b.asked = append(b.asked, maxBytes)
	return storage.ReadResult{}, nil
}

func (b *readsBackend) ReadBatches(ctx context.Context, topic string, partition int32, offset int64, maxBytes int) (storage.ReadResult, error) {
	return b.Read(ctx, topic, partition, offset, maxBytes)
}

func (b *readsBackend) Offsets(context.Context, string, int32) (storage.Offsets, error) {
	return storage.Offsets{HighWatermark: 10}, nil
}

func (b *readsBackend) Changed(string, int32, int64) <-chan struct{} { return closedChan }

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// A Fetch asking for 2 GiB reads at most the gateway's fetch.max.bytes in
// all: it once honoured any size a client asked and built it in memory.
func TestFetchMaxBytesCapped(t *testing.T) {
	b := &readsBackend{}
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.MaxBytes, req.MaxWaitMillis = 1<<31-1, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	for p := int32(0); p < 2; p++ {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, 1<<31-1
		rt.Partitions = append(rt.Partitions, fp)
	}
	req.Topics = append(req.Topics, rt)
	handle(t, New(Config{}, b, nil, nil), req)
	if len(b.asked) != 2 {
		t.Fatalf("%d reads", len(b.asked))
	}
	for _, n := range b.asked {
		if n > DefaultFetchMaxBytes {
			t.Fatalf("a read of up to %d bytes, past fetch.max.bytes %d", n, DefaultFetchMaxBytes)
		}
	}
}

// quietBackend has one empty topic that never changes.
type quietBackend struct{ readsBackend }

func (b *quietBackend) Changed(string, int32, int64) <-chan struct{} { return make(chan struct{}) }

// A fetch long-polling when the gateway stops answers at once, empty: the
// gateway's stop once waited out every consumer's max wait.
func TestDrainAnswersWaitingFetches(t *testing.T) {
	h := New(Config{}, &quietBackend{}, nil, nil)
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.MaxWaitMillis, req.MinBytes = 25_000, 1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	rt.Partitions = []kmsg.FetchRequestTopicPartition{kmsg.NewFetchRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	go func() {
		time.Sleep(200 * time.Millisecond)
		h.Drain()
	}()
	resp := handle(t, h, req).(*kmsg.FetchResponse) // handle gives up after 5 s
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 || len(resp.Topics[0].Partitions[0].RecordBatches) != 0 {
		t.Fatalf("the drained fetch's answer: %+v", resp.Topics)
	}
	// Fetches that come while draining do not wait either.
	handle(t, h, req)
}

// fetchReq fetches partitions of a topic (by name, or by id from v13) from
// offsets, without waiting.
func fetchReq(topic string, id [16]byte, offsets map[int32]int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 0, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	for p := int32(-1); p < 16; p++ {
		if o, ok := offsets[p]; ok {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, o, 1<<20
			rt.Partitions = append(rt.Partitions, fp)
		}
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func fetched(t *testing.T, resp kmsg.Response) map[int32]kmsg.FetchResponseTopicPartition {
	t.Helper()
	out := map[int32]kmsg.FetchResponseTopicPartition{}
	for _, rt := range resp.(*kmsg.FetchResponse).Topics {
		for _, p := range rt.Partitions {
			out[p.Partition] = p
		}
	}
	return out
}

// fetchedBatch is a returned batch: its header and records.
type fetchedBatch struct {
	first   int64
	attrs   int16
	pid     int64
	records []record.Record
}

// batchesOf decodes returned record batches, checking each one's CRC, and
// the offsets they give each record.
func batchesOf(t *testing.T, raw []byte) ([]fetchedBatch, []int64) {
	t.Helper()
	if len(raw) == 0 {
		return nil, nil
	}
	bs, err := record.ParseBatches(raw, 1<<30)
	if err != nil {
		t.Fatalf("returned batches: %v", err)
	}
	var out []fetchedBatch
	var offsets []int64
	for _, b := range bs {
		out = append(out, fetchedBatch{b.Header.FirstOffset, b.Header.Attributes, b.Header.ProducerID, b.Records})
		for i := range b.Records {
			offsets = append(offsets, b.Header.FirstOffset+int64(i))
		}
	}
	return out, offsets
}

func appendValues(t *testing.T, b *storagetest.Backend, topic string, partition int32, mark *record.TxnMark, vs ...string) {
	t.Helper()
	recs := make([]record.Record, len(vs))
	for i, v := range vs {
		recs[i] = record.Record{Key: []byte("k"), Value: []byte(v), Timestamp: int64(100 + i), Txn: mark,
			Headers: []kmsg.Header{{Key: "h", Value: nil}}}
	}
	if app := b.Append(context.Background(), topic, partition, recs, true); app.Err != nil {
		t.Fatal(app.Err)
	}
}

// Fetch v4-18: records from the offset asked, as uncompressed v2 batches
// with their keys, values, headers and timestamps; the high watermark,
// last stable offset (v4+), log start offset (v5+); no fetch session
// (v7+: session id 0); no preferred read replica (v11+: -1); topics by id
// from v13; an empty partition has empty (not null) records. v3 and v19
// are refused.
func TestFetchVersions(t *testing.T) {
	if min, max, _ := Supported(int16(kmsg.Fetch)); min != 4 || max != 18 {
		t.Fatalf("Fetch served %d-%d, want 4-18", min, max)
	}
	h, b := testHandler(t, nil)
	info, _ := b.CreateTopic(context.Background(), storage.TopicSpec{Name: "f", Partitions: 2})
	appendValues(t, b, "f", 0, nil, "a", "b", "c", "d", "e")
	for _, v := range []int16{4, 5, 7, 11, 12, 13, 15, 18} {
		var id [16]byte
		if v >= 13 {
			id = info.ID
		}
		resp := exchange(t, h, anonymous, fetchReq("f", id, map[int32]int64{0: 2, 1: 0}), v).(*kmsg.FetchResponse)
		if v >= 7 && (resp.SessionID != 0 || resp.ErrorCode != 0) {
			t.Errorf("v%d: session %d, error %s", v, resp.SessionID, kerr.ErrorForCode(resp.ErrorCode))
		}
		if len(resp.Topics) != 1 || (v < 13 && resp.Topics[0].Topic != "f") || (v >= 13 && resp.Topics[0].TopicID != info.ID) {
			t.Fatalf("v%d: topics %+v", v, resp.Topics)
		}
		parts := fetched(t, resp)
		p0, p1 := parts[0], parts[1]
		wantCode(t, "partition 0", p0.ErrorCode, nil)
		if p0.HighWatermark != 5 || p0.LastStableOffset != 5 || (v >= 5 && p0.LogStartOffset != 0) || (v >= 11 && p0.PreferredReadReplica != -1) {
			t.Errorf("v%d: high watermark %d, last stable %d, log start %d, read replica %d", v, p0.HighWatermark, p0.LastStableOffset, p0.LogStartOffset, p0.PreferredReadReplica)
		}
		batches, offsets := batchesOf(t, p0.RecordBatches)
		if !slices.Equal(offsets, []int64{2, 3, 4}) || len(batches) != 1 || batches[0].attrs != 0 || batches[0].pid != -1 {
			t.Fatalf("v%d: offsets %v in %d batches", v, offsets, len(batches))
		}
		for i, r := range batches[0].records {
			if string(r.Value) != string(rune('c'+i)) || string(r.Key) != "k" || r.Timestamp != int64(102+i) || len(r.Headers) != 1 || r.Headers[0].Value != nil {
				t.Errorf("v%d: record %d: %q %q %d %+v", v, i, r.Key, r.Value, r.Timestamp, r.Headers)
			}
		}
		if p1.ErrorCode != 0 || p1.HighWatermark != 0 || p1.RecordBatches == nil || len(p1.RecordBatches) != 0 {
			t.Errorf("v%d: the empty partition: %s, high watermark %d, records %v (nil %v)", v, kerr.ErrorForCode(p1.ErrorCode), p1.HighWatermark, p1.RecordBatches, p1.RecordBatches == nil)
		}
	}
	for _, v := range []uint16{3, 19} {
		frame := requestFrame(fetchReq("f", [16]byte{}, map[int32]int64{0: 0}), 1)
		binary.BigEndian.PutUint16(frame[2:], v)
		if _, err := Decode(frame); err == nil {
			t.Errorf("Fetch v%d decoded", v)
		}
	}
}

// Fetch errors, per partition: an offset past the high watermark or below
// the log start (after DeleteRecords) is OFFSET_OUT_OF_RANGE; unknown
// topics (names no topic can have too) and partitions
// UNKNOWN_TOPIC_OR_PARTITION; an unknown topic id (v13+) UNKNOWN_TOPIC_ID.
func TestFetchErrors(t *testing.T) {
	h, b := testHandler(t, nil)
	ctx := context.Background()
	b.CreateTopic(ctx, storage.TopicSpec{Name: "fe", Partitions: 1})
	appendValues(t, b, "fe", 0, nil, "0", "1", "2", "3", "4")
	parts := fetched(t, exchange(t, h, anonymous, fetchReq("fe", [16]byte{}, map[int32]int64{0: 6, 3: 0, -1: 0}), 12))
	wantCode(t, "past the high watermark", parts[0].ErrorCode, kerr.OffsetOutOfRange)
	wantCode(t, "partition 3 of 1", parts[3].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "partition -1", parts[-1].ErrorCode, kerr.UnknownTopicOrPartition)
	if len(parts[0].RecordBatches) != 0 || parts[0].RecordBatches == nil {
		t.Errorf("out of range: records %v", parts[0].RecordBatches)
	}
	parts = fetched(t, exchange(t, h, anonymous, fetchReq("fe", [16]byte{}, map[int32]int64{0: 5}), 12))
	if wantCode(t, "at the high watermark", parts[0].ErrorCode, nil); len(parts[0].RecordBatches) != 0 {
		t.Errorf("at the high watermark: %d bytes of records", len(parts[0].RecordBatches))
	}
	if _, err := b.DeleteRecords(ctx, "fe", 0, 3); err != nil {
		t.Fatal(err)
	}
	parts = fetched(t, exchange(t, h, anonymous, fetchReq("fe", [16]byte{}, map[int32]int64{0: 2}), 12))
	wantCode(t, "below the log start", parts[0].ErrorCode, kerr.OffsetOutOfRange)
	parts = fetched(t, exchange(t, h, anonymous, fetchReq("fe", [16]byte{}, map[int32]int64{0: 3}), 12))
	if _, offsets := batchesOf(t, parts[0].RecordBatches); parts[0].ErrorCode != 0 || parts[0].LogStartOffset != 3 || !slices.Equal(offsets, []int64{3, 4}) {
		t.Errorf("from the log start: %s, log start %d, offsets %v", kerr.ErrorForCode(parts[0].ErrorCode), parts[0].LogStartOffset, offsets)
	}
	for _, name := range []string{"absent", "bad/name"} {
		parts = fetched(t, exchange(t, h, anonymous, fetchReq(name, [16]byte{}, map[int32]int64{0: 0}), 12))
		wantCode(t, name, parts[0].ErrorCode, kerr.UnknownTopicOrPartition)
	}
	parts = fetched(t, exchange(t, h, anonymous, fetchReq("", [16]byte{7}, map[int32]int64{0: 0}), 13))
	wantCode(t, "unknown topic id", parts[0].ErrorCode, kerr.UnknownTopicID)
}

// Batches: at most 1000 records each; the first record goes out whatever
// the partition's max bytes (KIP-74); once the request's max bytes are
// used up the other partitions get no records but their offsets.
func TestFetchBatchesAndSizes(t *testing.T) {
	h, b := testHandler(t, nil)
	b.CreateTopic(context.Background(), storage.TopicSpec{Name: "fb", Partitions: 2})
	many := make([]string, 1500)
	for i := range many {
		many[i] = strconv.Itoa(i)
	}
	appendValues(t, b, "fb", 0, nil, many...)
	appendValues(t, b, "fb", 1, nil, "x", "y")
	parts := fetched(t, exchange(t, h, anonymous, fetchReq("fb", [16]byte{}, map[int32]int64{0: 0}), 12))
	batches, offsets := batchesOf(t, parts[0].RecordBatches)
	if len(batches) != 2 || len(batches[0].records) != 1000 || batches[1].first != 1000 || len(offsets) != 1500 || offsets[1499] != 1499 {
		t.Fatalf("%d batches, %d records", len(batches), len(offsets))
	}
	req := fetchReq("fb", [16]byte{}, map[int32]int64{0: 10, 1: 0})
	req.Topics[0].Partitions[0].PartitionMaxBytes = 1
	parts = fetched(t, exchange(t, h, anonymous, req, 12))
	if _, offsets := batchesOf(t, parts[0].RecordBatches); !slices.Equal(offsets, []int64{10}) {
		t.Errorf("partition max bytes 1: offsets %v, want the one record at 10", offsets)
	}
	req = fetchReq("fb", [16]byte{}, map[int32]int64{0: 0, 1: 0})
	req.MaxBytes = 100
	parts = fetched(t, exchange(t, h, anonymous, req, 12))
	_, offsets0 := batchesOf(t, parts[0].RecordBatches)
	if len(offsets0) == 0 || len(parts[1].RecordBatches) != 0 || parts[1].ErrorCode != 0 || parts[1].HighWatermark != 2 {
		t.Errorf("max bytes 100: %d records of partition 0; partition 1: %d bytes, %s, high watermark %d",
			len(offsets0), len(parts[1].RecordBatches), kerr.ErrorForCode(parts[1].ErrorCode), parts[1].HighWatermark)
	}
}

// fetch.max.bytes: a response holds whole batches within the request's
// max bytes, but for the first batch of its first partition with records,
// which goes whole however large (KIP-74); a partition whose next batch
// does not fit gets none, only its offsets. librdkafka closes the
// connection on a larger response and consumed nothing from then on.
func TestFetchMaxBytesWholeBatches(t *testing.T) {
	h, b := testHandler(t, nil)
	b.CreateTopic(context.Background(), storage.TopicSpec{Name: "fm", Partitions: 3})
	big := strings.Repeat("v", 40_000)
	for p := int32(0); p < 3; p++ {
		appendValues(t, b, "fm", p, nil, big)
	}
	appendValues(t, b, "fm", 2, nil, "a", "b")
	for _, c := range []struct {
		maxBytes int32
		want     [3]int // records of each partition
	}{{50_000, [3]int{1, 0, 0}}, {10_000, [3]int{1, 0, 0}}, {0, [3]int{1, 0, 0}}, {90_000, [3]int{1, 1, 0}}, {200_000, [3]int{1, 1, 3}}} {
		req := fetchReq("fm", [16]byte{}, map[int32]int64{0: 0, 1: 0, 2: 0})
		req.MaxBytes = c.maxBytes
		for i := range req.Topics[0].Partitions {
			req.Topics[0].Partitions[i].PartitionMaxBytes = 20_000_000
		}
		for v := int16(4); v <= 12; v++ {
			parts := fetched(t, exchange(t, h, anonymous, req, v))
			wholeBatchesWithin(t, v, c.maxBytes, c.want, parts)
		}
	}
}

// wholeBatchesWithin checks a fetch of the three partitions at version v
// with max bytes maxBytes: want[p] records of partition p, no more bytes
// than maxBytes unless partition 0's one batch.
func wholeBatchesWithin(t *testing.T, v int16, maxBytes int32, want [3]int, parts map[int32]kmsg.FetchResponseTopicPartition) {
	t.Helper()
	total := 0
	for p := int32(0); p < 3; p++ {
		_, offsets := batchesOf(t, parts[p].RecordBatches)
		if len(offsets) != want[p] || parts[p].ErrorCode != 0 || parts[p].HighWatermark != int64(1+2*(p/2)) {
			t.Errorf("v%d, max bytes %d: partition %d: %d records, %s, high watermark %d; want %d records",
				v, maxBytes, p, len(offsets), kerr.ErrorForCode(parts[p].ErrorCode), parts[p].HighWatermark, want[p])
		}
		total += len(parts[p].RecordBatches)
	}
	if first := len(parts[0].RecordBatches); total > int(maxBytes) && total != first {
		t.Errorf("v%d, max bytes %d: %d bytes of records", v, maxBytes, total)
	}
}

// read_committed: records up to the last stable offset (before the open
// transaction); once the transaction aborted, its records come with the
// aborted transaction named, in a transactional batch, then the abort
// marker as a control batch. read_uncommitted gets everything.
func TestFetchReadCommitted(t *testing.T) {
	h, b := testHandler(t, nil)
	ctx := context.Background()
	b.CreateTopic(ctx, storage.TopicSpec{Name: "rc", Partitions: 1})
	appendValues(t, b, "rc", 0, nil, "before")
	mark := &record.TxnMark{ProducerID: 42, Epoch: 3, Control: record.NotControl}
	appendValues(t, b, "rc", 0, mark, "t1", "t2")
	committed := func() kmsg.FetchResponseTopicPartition {
		req := fetchReq("rc", [16]byte{}, map[int32]int64{0: 0})
		req.IsolationLevel = 1
		return fetched(t, exchange(t, h, anonymous, req, 11))[0]
	}
	p := committed()
	if _, offsets := batchesOf(t, p.RecordBatches); p.LastStableOffset != 1 || p.HighWatermark != 3 || !slices.Equal(offsets, []int64{0}) || len(p.AbortedTransactions) != 0 {
		t.Fatalf("open transaction: last stable %d, high watermark %d, offsets %v, aborted %v", p.LastStableOffset, p.HighWatermark, offsets, p.AbortedTransactions)
	}
	if err := b.WriteMarker(ctx, "rc", 0, storage.Marker{ProducerID: 42, Epoch: 3}); err != nil {
		t.Fatal(err)
	}
	p = committed()
	batches, offsets := batchesOf(t, p.RecordBatches)
	if p.LastStableOffset != 4 || !slices.Equal(offsets, []int64{0, 1, 2, 3}) || len(batches) != 3 {
		t.Fatalf("after the abort: last stable %d, offsets %v in %d batches", p.LastStableOffset, offsets, len(batches))
	}
	if len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != 42 || p.AbortedTransactions[0].FirstOffset != 1 {
		t.Errorf("aborted transactions %+v, want producer 42 from offset 1", p.AbortedTransactions)
	}
	if tb := batches[1]; tb.attrs&record.AttrTransactional == 0 || tb.attrs&record.AttrControl != 0 || tb.pid != 42 {
		t.Errorf("the transaction's batch: attributes %x, producer %d", tb.attrs, tb.pid)
	}
	if cb := batches[2]; cb.attrs&record.AttrControl == 0 || cb.pid != 42 || !bytes.Equal(cb.records[0].Key, record.ControlKey(record.ControlAbort)) {
		t.Errorf("the marker's batch: attributes %x, producer %d, key %x", cb.attrs, cb.pid, cb.records[0].Key)
	}
	req := fetchReq("rc", [16]byte{}, map[int32]int64{0: 0})
	if _, offsets := batchesOf(t, fetched(t, exchange(t, h, anonymous, req, 11))[0].RecordBatches); len(offsets) != 4 {
		t.Errorf("read_uncommitted: offsets %v", offsets)
	}
}

// waitedBackend tells when a fetch waits for a partition to change.
type waitedBackend struct {
	*storagetest.Backend
	waiting chan struct{}
}

func (b *waitedBackend) Changed(topic string, partition int32, hw int64) <-chan struct{} {
	ch := b.Backend.Changed(topic, partition, hw)
	select {
	case b.waiting <- struct{}{}:
	default:
	}
	return ch
}

// A fetch with too few bytes waits up to its max wait: it is answered as
// soon as a record comes, and empty once the max wait has passed.
func TestFetchLongPoll(t *testing.T) {
	waiting := make(chan struct{}, 1)
	h, b := testHandler(t, nil, func(m *storagetest.Backend) storage.Backend { return &waitedBackend{m, waiting} })
	b.CreateTopic(context.Background(), storage.TopicSpec{Name: "lp", Partitions: 1})
	req := fetchReq("lp", [16]byte{}, map[int32]int64{0: 0})
	req.MinBytes, req.MaxWaitMillis = 1, 10_000
	go func() {
		<-waiting
		appendValues(t, b, "lp", 0, nil, "woken")
	}()
	start := time.Now()
	p := fetched(t, exchange(t, h, anonymous, req, 12))[0]
	if _, offsets := batchesOf(t, p.RecordBatches); len(offsets) != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("woken fetch: %d records after %v", len(offsets), time.Since(start))
	}
	req = fetchReq("lp", [16]byte{}, map[int32]int64{0: 1})
	req.MinBytes, req.MaxWaitMillis = 1, 150
	start = time.Now()
	p = fetched(t, exchange(t, h, anonymous, req, 12))[0]
	if took := time.Since(start); len(p.RecordBatches) != 0 || p.ErrorCode != 0 || took < 140*time.Millisecond || took > 5*time.Second {
		t.Fatalf("nothing came: %d bytes, %s, after %v (max wait 150 ms)", len(p.RecordBatches), kerr.ErrorForCode(p.ErrorCode), took)
	}
}

// With an authorizer a fetch needs Read on the topic:
// TOPIC_AUTHORIZATION_FAILED without it, for a topic that does not exist
// too; by id (v13+) as by name.
func TestFetchAuthorization(t *testing.T) {
	authz := testAuthorizer(t, allow(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "readable"),
		allow(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "described"))
	h, b := testHandler(t, authz)
	ctx := context.Background()
	b.CreateTopic(ctx, storage.TopicSpec{Name: "readable", Partitions: 1})
	described, _ := b.CreateTopic(ctx, storage.TopicSpec{Name: "described", Partitions: 1})
	appendValues(t, b, "readable", 0, nil, "r")
	for name, want := range map[string]*kerr.Error{"readable": nil, "described": kerr.TopicAuthorizationFailed, "absent": kerr.TopicAuthorizationFailed} {
		p := fetched(t, exchange(t, h, anonymous, fetchReq(name, [16]byte{}, map[int32]int64{0: 0}), 12))[0]
		wantCode(t, name, p.ErrorCode, want)
		if want != nil && len(p.RecordBatches) != 0 {
			t.Errorf("%s: records returned", name)
		}
	}
	p := fetched(t, exchange(t, h, anonymous, fetchReq("", described.ID, map[int32]int64{0: 0}), 18))[0]
	wantCode(t, "described, by id", p.ErrorCode, kerr.TopicAuthorizationFailed)
}
