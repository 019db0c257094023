package cluster

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// observe records a call to SeaweedFS that started at start.
func observe(call string, start time.Time, err error) {
	metrics.BackendSeconds.WithLabelValues(call).Observe(time.Since(start).Seconds())
	if err != nil {
		metrics.BackendErrors.WithLabelValues(call).Inc()
	}
}

// Instrument wraps a backend so that the time each call waits on SeaweedFS,
// and its failures, are in the metrics.
func Instrument(b storage.Backend) storage.Backend { return instrumented{b} }

type instrumented struct{ b storage.Backend }

func (i instrumented) ListTopics(ctx context.Context) ([]storage.TopicInfo, error) {
	start := time.Now()
	t, err := i.b.ListTopics(ctx)
	observe("ListTopics", start, err)
	return t, err
}

func (i instrumented) DescribeTopic(ctx context.Context, name string) (storage.TopicInfo, error) {
	start := time.Now()
	t, err := i.b.DescribeTopic(ctx, name)
	observe("DescribeTopic", start, ignoreKafka(err))
	return t, err
}

func (i instrumented) TopicByID(ctx context.Context, id [16]byte) (storage.TopicInfo, error) {
	start := time.Now()
	t, err := i.b.TopicByID(ctx, id)
	observe("TopicByID", start, ignoreKafka(err))
	return t, err
}

func (i instrumented) CreateTopic(ctx context.Context, spec storage.TopicSpec) (storage.TopicInfo, error) {
	start := time.Now()
	t, err := i.b.CreateTopic(ctx, spec)
	observe("CreateTopic", start, ignoreKafka(err))
	return t, err
}

func (i instrumented) CreatePartitions(ctx context.Context, name string, count int32, validateOnly bool) error {
	start := time.Now()
	err := i.b.CreatePartitions(ctx, name, count, validateOnly)
	observe("CreatePartitions", start, ignoreKafka(err))
	return err
}

func (i instrumented) DeleteTopic(ctx context.Context, name string) error {
	start := time.Now()
	err := i.b.DeleteTopic(ctx, name)
	observe("DeleteTopic", start, ignoreKafka(err))
	if err == nil {
		metrics.ForgetTopic(name)
	}
	return err
}

func (i instrumented) AlterTopicConfigs(ctx context.Context, name string, change func(map[string]string) error) error {
	start := time.Now()
	err := i.b.AlterTopicConfigs(ctx, name, change)
	observe("AlterTopicConfigs", start, ignoreKafka(err))
	return err
}

func (i instrumented) DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (int64, error) {
	start := time.Now()
	low, err := i.b.DeleteRecords(ctx, topic, partition, before)
	observe("DeleteRecords", start, ignoreKafka(err))
	return low, err
}

func (i instrumented) PartitionSize(ctx context.Context, topic string, partition int32) (int64, error) {
	start := time.Now()
	n, err := i.b.PartitionSize(ctx, topic, partition)
	observe("PartitionSize", start, ignoreKafka(err))
	return n, err
}

// Append is timed until the records are stored (acknowledged, or flushed
// for acks=all).
func (i instrumented) Append(ctx context.Context, topic string, partition int32, records []record.Record, durable bool) *storage.Appended {
	start := time.Now()
	app := i.b.Append(ctx, topic, partition, records, durable)
	call := "Append"
	if durable {
		call = "AppendDurable"
	}
	app.Then(func(app *storage.Appended) { observe(call, start, ignoreKafka(app.Err)) })
	return app
}

func (i instrumented) AppendBatch(ctx context.Context, topic string, partition int32, batch []byte, durable bool) *storage.Appended {
	start := time.Now()
	app := i.b.AppendBatch(ctx, topic, partition, batch, durable)
	call := "Append"
	if durable {
		call = "AppendDurable"
	}
	app.Then(func(app *storage.Appended) { observe(call, start, ignoreKafka(app.Err)) })
	return app
}

func (i instrumented) ReadBatches(ctx context.Context, topic string, partition int32, offset int64, maxBytes int) (storage.ReadResult, error) {
	start := time.Now()
	r, err := i.b.ReadBatches(ctx, topic, partition, offset, maxBytes)
	observe("Read", start, ignoreKafka(err))
	return r, err
}

func (i instrumented) Read(ctx context.Context, topic string, partition int32, offset int64, maxBytes int) (storage.ReadResult, error) {
	start := time.Now()
	r, err := i.b.Read(ctx, topic, partition, offset, maxBytes)
	observe("Read", start, ignoreKafka(err))
	return r, err
}

func (i instrumented) Offsets(ctx context.Context, topic string, partition int32) (storage.Offsets, error) {
	start := time.Now()
	o, err := i.b.Offsets(ctx, topic, partition)
	observe("Offsets", start, ignoreKafka(err))
	return o, err
}

func (i instrumented) OffsetForTime(ctx context.Context, topic string, partition int32, ts int64) (int64, int64, error) {
	start := time.Now()
	o, t, err := i.b.OffsetForTime(ctx, topic, partition, ts)
	observe("OffsetForTime", start, ignoreKafka(err))
	return o, t, err
}

func (i instrumented) MaxTimestamp(ctx context.Context, topic string, partition int32) (int64, int64, error) {
	start := time.Now()
	o, t, err := i.b.MaxTimestamp(ctx, topic, partition)
	observe("MaxTimestamp", start, ignoreKafka(err))
	return o, t, err
}

func (i instrumented) Changed(topic string, partition int32, hw int64) <-chan struct{} {
	return i.b.Changed(topic, partition, hw)
}

func (i instrumented) NewProducerID(ctx context.Context) (int64, error) {
	start := time.Now()
	id, err := i.b.NewProducerID(ctx)
	observe("NewProducerID", start, err)
	return id, err
}

func (i instrumented) WriteMarker(ctx context.Context, topic string, partition int32, m storage.Marker) error {
	start := time.Now()
	err := i.b.WriteMarker(ctx, topic, partition, m)
	observe("WriteMarker", start, err)
	return err
}

func (i instrumented) Transactions(ctx context.Context, topic string, partition int32, from, to int64) (storage.PartitionTxns, error) {
	start := time.Now()
	t, err := i.b.Transactions(ctx, topic, partition, from, to)
	observe("Transactions", start, ignoreKafka(err))
	return t, err
}

func (i instrumented) Producers(ctx context.Context, topic string, partition int32) ([]storage.ProducerInfo, error) {
	start := time.Now()
	p, err := i.b.Producers(ctx, topic, partition)
	observe("Producers", start, ignoreKafka(err))
	return p, err
}

// ignoreKafka keeps the failures of SeaweedFS: a Kafka error the client is
// told about (an unknown topic, a sequence gap) is not one.
func ignoreKafka(err error) error {
	if storage.IsKafkaError(err) {
		return nil
	}
	return err
}

// InstrumentFiles wraps the filer's small files (offsets, group and
// transaction states) the same way.
func InstrumentFiles(f filerfs.VersionedFiles) filerfs.VersionedFiles { return instrumentedFiles{f} }

type instrumentedFiles struct{ f filerfs.VersionedFiles }

func (i instrumentedFiles) ReadFileVersion(ctx context.Context, dir, name string) ([]byte, string, error) {
	start := time.Now()
	d, v, err := i.f.ReadFileVersion(ctx, dir, name)
	observe("FilerRead", start, ignoreMissing(err))
	return d, v, err
}

func (i instrumentedFiles) WriteFileIf(ctx context.Context, dir, name string, data []byte, version string) (string, error) {
	start := time.Now()
	v, err := i.f.WriteFileIf(ctx, dir, name, data, version)
	observe("FilerWrite", start, ignoreChanged(err))
	return v, err
}

// ignoreChanged keeps the failures of SeaweedFS: a conditional write
// refused because another gateway wrote the file is not one.
func ignoreChanged(err error) error {
	if errors.Is(err, filerfs.ErrChanged) {
		return nil
	}
	return err
}

func (i instrumentedFiles) ReadFile(ctx context.Context, dir, name string) ([]byte, error) {
	start := time.Now()
	d, err := i.f.ReadFile(ctx, dir, name)
	observe("FilerRead", start, ignoreMissing(err))
	return d, err
}

func (i instrumentedFiles) WriteFile(ctx context.Context, dir, name string, data []byte) error {
	start := time.Now()
	err := i.f.WriteFile(ctx, dir, name, data)
	observe("FilerWrite", start, err)
	return err
}

func (i instrumentedFiles) ListFiles(ctx context.Context, dir string) ([]filerfs.File, error) {
	start := time.Now()
	l, err := i.f.ListFiles(ctx, dir)
	observe("FilerList", start, err)
	return l, err
}

func (i instrumentedFiles) RemoveIf(ctx context.Context, dir, name, version string) error {
	start := time.Now()
	err := i.f.RemoveIf(ctx, dir, name, version)
	observe("FilerRemove", start, ignoreChanged(err))
	return err
}

func (i instrumentedFiles) Remove(ctx context.Context, dir, name string) error {
	start := time.Now()
	err := i.f.Remove(ctx, dir, name)
	observe("FilerRemove", start, err)
	return err
}

func ignoreMissing(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// AppendMirrored, MirroredProducers, RaiseProducerIDs and DropProducerIDs
// pass storage.Mirror on, for a backend that is one.

func (i instrumented) AppendMirrored(ctx context.Context, topic string, partition int32, batches [][]byte) *storage.Appended {
	m, ok := i.b.(storage.Mirror)
	if !ok {
		return storage.FailedAppend(errNoMirror)
	}
	start := time.Now()
	app := m.AppendMirrored(ctx, topic, partition, batches)
	app.Then(func(a *storage.Appended) { observe("AppendMirrored", start, ignoreKafka(a.Err)) })
	return app
}

func (i instrumented) MirroredProducers(ctx context.Context, topic string, partition int32) (int64, error) {
	m, ok := i.b.(storage.Mirror)
	if !ok {
		return -1, errNoMirror
	}
	return m.MirroredProducers(ctx, topic, partition)
}

func (i instrumented) RaiseProducerIDs(ctx context.Context, floor int64) error {
	m, ok := i.b.(storage.Mirror)
	if !ok {
		return errNoMirror
	}
	start := time.Now()
	err := m.RaiseProducerIDs(ctx, floor)
	observe("RaiseProducerIDs", start, err)
	return err
}

func (i instrumented) DropProducerIDs(floor int64) {
	if m, ok := i.b.(storage.Mirror); ok {
		m.DropProducerIDs(floor)
	}
}

// errNoMirror is a mirrored write to a storage that keeps no other
// cluster's offsets.
var errNoMirror = errors.New("this storage cannot keep another cluster's batches at their offsets")
