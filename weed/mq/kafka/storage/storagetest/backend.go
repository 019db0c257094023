// Package storagetest is an in-memory storage.Backend for tests that run
// the gateway in-process: the handlers', the node's and the fuzzers'.
// Topics keep dense offsets, log start offsets, settings, idempotent
// producers and transaction markers as the SeaweedMQ backend keeps them.
// Only tests import it (the layers test checks): it is never a runtime
// stand-in for SeaweedMQ.
package storagetest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// Backend is an in-memory storage.Backend.
type Backend struct {
	mu      sync.Mutex
	topics  map[string]*memTopic
	nextPID int64
	// MaxReplicationFactor is the most copies a topic may ask for (as
	// a cluster of that many volume servers); 1 when 0.
	MaxReplicationFactor int16
	// TopicDefaults, if set, gives topics the configs they inherit, as
	// the SeaweedMQ backend's Options.TopicDefaults.
	TopicDefaults func() (uint64, map[string]string)
}

// infoOf is a topic's info with what it inherits.
func (b *Backend) infoOf(t *memTopic) storage.TopicInfo {
	if b.TopicDefaults == nil {
		return t.info
	}
	_, defaults := b.TopicDefaults()
	return t.info.WithDefaults(defaults)
}

type memTopic struct {
	info  storage.TopicInfo
	parts []*memPart
}

type memPart struct {
	start   int64
	recs    []storage.StoredRecord // from offset start on
	changed chan struct{}          // closed when records come
	ongoing map[int64]int64        // producer id -> first offset of its open transaction
	aborted []storage.AbortedTxn
	// producers are the idempotent producers' last batches, by id
	producers map[int64]storage.ProducerInfo
	// coordinators: producer id -> the coordinator epoch of its last marker
	coordinators map[int64]int32
	// removed are offsets a log cleaner took out (compact): reads skip them
	removed map[int64]bool
	// raw are the batches AppendBatch stored, by base offset; batchOf
	// names the base offset of each of their records' offsets
	raw     map[int64][]byte
	batchOf map[int64]int64
}

// Compact removes records from a partition as a log cleaner would: their
// offsets stay, readers skip them.
func (b *Backend) Compact(topic string, partition int32, offsets ...int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.part(topic, partition)
	if err != nil {
		panic(err)
	}
	if p.removed == nil {
		p.removed = map[int64]bool{}
	}
	for _, o := range offsets {
		p.removed[o] = true
	}
}

// New returns an empty Backend.
func New() *Backend { return &Backend{topics: map[string]*memTopic{}} }

func (p *memPart) end() int64 { return p.start + int64(len(p.recs)) }

func (b *Backend) part(topic string, partition int32) (*memPart, error) {
	t, ok := b.topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.parts) {
		return nil, kerr.UnknownTopicOrPartition
	}
	return t.parts[partition], nil
}

func (b *Backend) ListTopics(context.Context) ([]storage.TopicInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []storage.TopicInfo
	for _, name := range slices.Sorted(maps.Keys(b.topics)) {
		out = append(out, b.infoOf(b.topics[name]))
	}
	return out, nil
}

func (b *Backend) DescribeTopic(_ context.Context, name string) (storage.TopicInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.topics[name]; ok {
		return b.infoOf(t), nil
	}
	return storage.TopicInfo{}, kerr.UnknownTopicOrPartition
}

func (b *Backend) TopicByID(_ context.Context, id [16]byte) (storage.TopicInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.topics {
		if t.info.ID == id {
			return b.infoOf(t), nil
		}
	}
	return storage.TopicInfo{}, kerr.UnknownTopicID
}

// TopicID is a topic's id in the in-memory backend: from its name.
func TopicID(name string) [16]byte {
	sum := sha256.Sum256([]byte(name))
	var id [16]byte
	copy(id[:], sum[:])
	return id
}

func (b *Backend) CreatePartitions(_ context.Context, name string, count int32, validateOnly bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.topics[name]
	if !ok {
		return kerr.UnknownTopicOrPartition
	}
	if count <= t.info.Partitions {
		return kerr.InvalidPartitions
	}
	if validateOnly {
		return nil
	}
	for int32(len(t.parts)) < count {
		t.parts = append(t.parts, &memPart{changed: make(chan struct{})})
	}
	t.info.Partitions = count
	return nil
}

func (b *Backend) CreateTopic(_ context.Context, spec storage.TopicSpec) (storage.TopicInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.topics[spec.Name]; ok {
		return storage.TopicInfo{}, kerr.TopicAlreadyExists
	}
	factor := spec.ReplicationFactor
	if factor <= 0 {
		factor = 1
	}
	if factor > max(b.MaxReplicationFactor, 1) {
		return storage.TopicInfo{}, fmt.Errorf("%w: %d copies, at most %d", kerr.InvalidReplicationFactor, factor, max(b.MaxReplicationFactor, 1))
	}
	info := storage.TopicInfo{Name: spec.Name, Partitions: spec.Partitions, ReplicationFactor: factor, Configs: maps.Clone(spec.Configs), ID: TopicID(spec.Name)}
	if spec.ValidateOnly {
		return info, nil
	}
	t := &memTopic{info: info}
	for range spec.Partitions {
		t.parts = append(t.parts, &memPart{changed: make(chan struct{})})
	}
	b.topics[spec.Name] = t
	return info, nil
}

func (b *Backend) DeleteTopic(_ context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.topics[name]; !ok {
		return kerr.UnknownTopicOrPartition
	}
	delete(b.topics, name)
	return nil
}

func (b *Backend) AlterTopicConfigs(_ context.Context, name string, change func(map[string]string) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.topics[name]
	if !ok {
		return kerr.UnknownTopicOrPartition
	}
	configs := maps.Clone(t.info.Configs)
	if configs == nil {
		configs = map[string]string{}
	}
	if err := change(configs); err != nil {
		return err
	}
	t.info.Configs = configs
	return nil
}

func (b *Backend) DeleteRecords(_ context.Context, topic string, partition int32, before int64) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.part(topic, partition)
	if err != nil {
		return 0, err
	}
	if before == -1 {
		before = p.end()
	}
	if before < 0 || before > p.end() {
		return 0, kerr.OffsetOutOfRange
	}
	if before > p.start {
		p.recs = p.recs[before-p.start:]
		p.start = before
	}
	return p.start, nil
}

func (b *Backend) PartitionSize(_ context.Context, topic string, partition int32) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.part(topic, partition)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range p.recs {
		n += len(r.Key) + len(r.Value)
	}
	return int64(n), nil
}

func (b *Backend) appendLocked(p *memPart, records []record.Record) int64 {
	base := p.end()
	for i, r := range records {
		p.recs = append(p.recs, storage.StoredRecord{Offset: base + int64(i), Record: r})
	}
	if t := records[0].Txn; t != nil {
		if p.ongoing == nil {
			p.ongoing = map[int64]int64{}
		}
		first, open := p.ongoing[t.ProducerID]
		switch {
		case t.Control == record.NotControl && !open:
			p.ongoing[t.ProducerID] = base
		case t.Control != record.NotControl:
			delete(p.ongoing, t.ProducerID)
			if t.Control == record.ControlAbort && open {
				p.aborted = append(p.aborted, storage.AbortedTxn{ProducerID: t.ProducerID, FirstOffset: first, LastOffset: base})
			}
		}
	}
	close(p.changed)
	p.changed = make(chan struct{})
	return base
}

func (b *Backend) Append(_ context.Context, topic string, partition int32, records []record.Record, _ bool) *storage.Appended {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.part(topic, partition)
	if err != nil {
		return storage.FailedAppend(err)
	}
	// The records' bytes are the request's: keep copies, as a log does.
	kept := make([]record.Record, len(records))
	for i, r := range records {
		r.Key, r.Value = slices.Clone(r.Key), slices.Clone(r.Value)
		kept[i] = r
	}
	if pb := records[0].Producer; pb != nil {
		if p.producers == nil {
			p.producers = map[int64]storage.ProducerInfo{}
		}
		p.producers[pb.ID] = storage.ProducerInfo{ProducerID: pb.ID, Epoch: pb.Epoch, LastSequence: pb.LastSeq, LastTimestamp: records[len(records)-1].Timestamp}
	}
	app := storage.NewAppended()
	app.Finish(b.appendLocked(p, kept), nil)
	return app
}

func (b *Backend) AppendBatch(ctx context.Context, topic string, partition int32, batch []byte, durable bool) *storage.Appended {
	parsed, err := record.ParseBatch(batch, math.MaxInt32)
	if err != nil {
		return storage.FailedAppend(err)
	}
	parsed.Mark()
	records := parsed.Records
	app := b.Append(ctx, topic, partition, records, durable)
	if app.Err != nil {
		return app
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.part(topic, partition)
	if err != nil {
		return storage.FailedAppend(err)
	}
	kept := slices.Clone(batch)
	record.SetBaseOffset(kept, app.Base)
	if p.raw == nil {
		p.raw, p.batchOf = map[int64][]byte{}, map[int64]int64{}
	}
	p.raw[app.Base] = kept
	for i := range records {
		p.batchOf[app.Base+int64(i)] = app.Base
	}
	return app
}

// ReadBatches is Read with the batches AppendBatch stored whole, those of
// them the log cleaner did not touch.
func (b *Backend) ReadBatches(ctx context.Context, topic string, partition int32, offset int64, maxBytes int) (storage.ReadResult, error) {
	res, err := b.Read(ctx, topic, partition, offset, maxBytes)
	if err != nil || len(res.Records) == 0 {
		return res, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p, _ := b.part(topic, partition)
	recs := res.Records
	res.Records = nil
	for len(recs) > 0 {
		base, ok := p.batchOf[recs[0].Offset]
		raw := p.raw[base]
		span := int64(record.Span(raw))
		whole := ok
		for o := base; ok && o < base+span; o++ {
			whole = whole && !p.removed[o] && o < p.end()
		}
		if !whole {
			res.Records = append(res.Records, recs[0])
			recs = recs[1:]
			continue
		}
		res.Raw = append(res.Raw, storage.RawBatch{Base: base, Count: int32(span), Codec: record.BatchCodec(raw), Data: raw})
		for len(recs) > 0 && recs[0].Offset < base+span {
			recs = recs[1:]
		}
	}
	return res, nil
}

func (b *Backend) Read(_ context.Context, topic string, partition int32, offset int64, maxBytes int) (storage.ReadResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.part(topic, partition)
	if err != nil {
		return storage.ReadResult{}, err
	}
	res := storage.ReadResult{Offsets: storage.Offsets{LogStart: p.start, HighWatermark: p.end()}}
	if offset < p.start || offset > p.end() {
		return res, kerr.OffsetOutOfRange
	}
	size := 0
	for _, r := range p.recs[offset-p.start:] {
		if p.removed[r.Offset] {
			continue
		}
		if len(res.Records) > 0 && size+len(r.Key)+len(r.Value) > maxBytes {
			break
		}
		size += len(r.Key) + len(r.Value)
		res.Records = append(res.Records, r)
	}
	return res, nil
}

func (b *Backend) Offsets(_ context.Context, topic string, partition int32) (storage.Offsets, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.part(topic, partition)
	if err != nil {
		return storage.Offsets{}, err
	}
	return storage.Offsets{LogStart: p.start, HighWatermark: p.end()}, nil
}

func (b *Backend) OffsetForTime(_ context.Context, topic string, partition int32, ts int64) (int64, int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.part(topic, partition)
	if err != nil {
		return 0, 0, err
	}
	for _, r := range p.recs {
		if r.Timestamp >= ts {
			return r.Offset, r.Timestamp, nil
		}
	}
	return -1, -1, nil
}

func (b *Backend) MaxTimestamp(_ context.Context, topic string, partition int32) (int64, int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.part(topic, partition)
	if err != nil {
		return 0, 0, err
	}
	off, ts := int64(-1), int64(-1)
	for _, r := range p.recs {
		if r.Timestamp > ts {
			off, ts = r.Offset, r.Timestamp
		}
	}
	return off, ts, nil
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (b *Backend) Changed(topic string, partition int32, hw int64) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.part(topic, partition)
	if err != nil || p.end() > hw {
		return closedChan
	}
	return p.changed
}

func (b *Backend) NewProducerID(context.Context) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextPID++
	return b.nextPID, nil
}

func (b *Backend) WriteMarker(_ context.Context, topic string, partition int32, m storage.Marker) error {
	producerID, epoch, coordinatorEpoch, commit := m.ProducerID, m.Epoch, m.CoordinatorEpoch, m.Commit
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.part(topic, partition)
	if err != nil {
		return err
	}
	if coordinatorEpoch < p.coordinators[producerID] {
		return kerr.TransactionCoordinatorFenced
	}
	if pi, ok := p.producers[producerID]; ok && (epoch < pi.Epoch || m.Bumped && epoch == pi.Epoch) {
		return kerr.InvalidProducerEpoch
	}
	if p.coordinators == nil {
		p.coordinators = map[int64]int32{}
	}
	p.coordinators[producerID] = coordinatorEpoch
	control := int8(record.ControlAbort)
	if commit {
		control = record.ControlCommit
	}
	b.appendLocked(p, []record.Record{{
		Key: record.ControlKey(control), Value: record.ControlValue(coordinatorEpoch),
		Txn: &record.TxnMark{ProducerID: producerID, Epoch: epoch, Control: control},
	}})
	return nil
}

func (b *Backend) Transactions(_ context.Context, topic string, partition int32, from, to int64) (storage.PartitionTxns, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.part(topic, partition)
	if err != nil {
		return storage.PartitionTxns{}, err
	}
	out := storage.PartitionTxns{FirstUnstable: -1}
	for _, first := range p.ongoing {
		if out.FirstUnstable < 0 || first < out.FirstUnstable {
			out.FirstUnstable = first
		}
	}
	for _, a := range p.aborted {
		if from <= to && a.LastOffset >= from && a.FirstOffset <= to {
			out.Aborted = append(out.Aborted, a)
		}
	}
	return out, nil
}

func (b *Backend) Producers(_ context.Context, topic string, partition int32) ([]storage.ProducerInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.part(topic, partition)
	if err != nil {
		return nil, err
	}
	var out []storage.ProducerInfo
	for _, id := range slices.Sorted(maps.Keys(p.producers)) {
		info := p.producers[id]
		info.TxnStartOffset = -1
		if first, open := p.ongoing[id]; open {
			info.TxnStartOffset = first
		}
		out = append(out, info)
	}
	return out, nil
}
