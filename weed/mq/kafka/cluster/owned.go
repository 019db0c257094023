package cluster

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// Releaser forgets what a backend holds of a partition: its publish stream
// and its producers' state (saved first).
type Releaser interface {
	Release(topic string, partition int32)
}

// Releasers release a partition from each of them, in order.
type Releasers []Releaser

func (rs Releasers) Release(topic string, partition int32) {
	for _, r := range rs {
		r.Release(topic, partition)
	}
}

// Owned is a backend that serves only the partitions this gateway leads
// (NOT_LEADER_OR_FOLLOWER for the others, so clients re-read metadata) and
// releases what it held of a partition when its leadership ends or breaks:
// another gateway may have written it meanwhile, so it is read afresh from
// SeaweedMQ and the filer when it comes back. Close stops it.
//
// Every method of storage.Backend is spelled out here, with or without
// the check: a method added to the contract does not compile until it is
// decided which.
type Owned struct {
	b       storage.Backend
	rel     Releaser
	serving func(key string) (term int64, ok bool)
	changed func() <-chan struct{}

	mu    sync.Mutex
	terms map[partition]int64 // partitions in use, and the term they are held in

	stop chan struct{}
	done chan struct{}
}

type partition struct {
	topic string
	index int32
}

// NewOwned wraps b; serving and changed are the membership's Serving and
// Changed: the partitions whose leadership ended are released at each
// change.
func NewOwned(b storage.Backend, rel Releaser, serving func(key string) (int64, bool), changed func() <-chan struct{}) *Owned {
	o := &Owned{b: b, rel: rel, serving: serving, changed: changed, terms: map[partition]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	go o.sweepLoop()
	return o
}

// Close stops releasing partitions.
func (o *Owned) Close() {
	close(o.stop)
	<-o.done
}

func (o *Owned) sweepLoop() {
	defer close(o.done)
	for {
		changed := o.changed()               // before looking: no change goes unseen
		guard.Run("PartitionSweep", o.sweep) //nolint:errcheck // logged and counted; the next change tries again
		select {
		case <-o.stop:
			return
		case <-changed:
		}
	}
}

// sweep releases the partitions whose leadership ended or broke.
func (o *Owned) sweep() {
	var lost []partition
	o.mu.Lock()
	for p, term := range o.terms {
		if now, ok := o.serving(membership.PartitionKey(p.topic, p.index)); !ok || now != term {
			lost = append(lost, p)
			delete(o.terms, p)
		}
	}
	o.mu.Unlock()
	for _, p := range lost {
		glog.V(1).Infof("kafka partition %s-%d: no longer led here", p.topic, p.index)
		o.rel.Release(p.topic, p.index)
	}
}

// lead checks that this gateway leads the partition, releasing what it
// held of it from an earlier term.
func (o *Owned) lead(topic string, index int32) error {
	p := partition{topic, index}
	// Asked and noted under the lock sweep holds while it looks: a view
	// that takes the partition away is either seen here, or sees the
	// partition noted and releases it (asked outside the lock, a sweep
	// could pass between the two, and the partition stayed held, and
	// written, by a gateway that no longer led it: TestFaults found a
	// deposed leader's tail written over its successor's records).
	o.mu.Lock()
	term, ok := o.serving(membership.PartitionKey(topic, index))
	if !ok {
		o.mu.Unlock()
		return kerr.NotLeaderForPartition
	}
	held, known := o.terms[p]
	if !known || held != term {
		o.terms[p] = term
	}
	o.mu.Unlock()
	if known && held != term {
		o.rel.Release(topic, index)
	}
	return nil
}

var _ storage.Backend = (*Owned)(nil)

// What concerns a topic as a whole is done by any gateway: the filer
// orders it (a topic is created under its lock, its configuration only if
// it has none; its changes are made under the same lock).

func (o *Owned) ListTopics(ctx context.Context) ([]storage.TopicInfo, error) {
	return o.b.ListTopics(ctx)
}

func (o *Owned) DescribeTopic(ctx context.Context, name string) (storage.TopicInfo, error) {
	return o.b.DescribeTopic(ctx, name)
}

func (o *Owned) TopicByID(ctx context.Context, id [16]byte) (storage.TopicInfo, error) {
	return o.b.TopicByID(ctx, id)
}

func (o *Owned) CreateTopic(ctx context.Context, spec storage.TopicSpec) (storage.TopicInfo, error) {
	return o.b.CreateTopic(ctx, spec)
}

func (o *Owned) CreatePartitions(ctx context.Context, name string, count int32, validateOnly bool) error {
	return o.b.CreatePartitions(ctx, name, count, validateOnly)
}

func (o *Owned) AlterTopicConfigs(ctx context.Context, name string, change func(configs map[string]string) error) error {
	return o.b.AlterTopicConfigs(ctx, name, change)
}

// PartitionSize is what the partition's segments take, which any gateway
// can read; DescribeLogDirs asks it of the partitions the view gives this
// gateway.
func (o *Owned) PartitionSize(ctx context.Context, topic string, partition int32) (int64, error) {
	return o.b.PartitionSize(ctx, topic, partition)
}

// Changed wakes a fetch waiting for records; what it reads then is
// checked.
func (o *Owned) Changed(topic string, partition int32, hw int64) <-chan struct{} {
	return o.b.Changed(topic, partition, hw)
}

// NewProducerID is the cluster's: ids come from blocks reserved in the
// filer, under its lock.
func (o *Owned) NewProducerID(ctx context.Context) (int64, error) {
	return o.b.NewProducerID(ctx)
}

// DeleteTopic deletes the topic and forgets its partitions' terms.
func (o *Owned) DeleteTopic(ctx context.Context, topic string) error {
	err := o.b.DeleteTopic(ctx, topic)
	if err == nil {
		o.mu.Lock()
		for p := range o.terms {
			if p.topic == topic {
				delete(o.terms, p)
			}
		}
		o.mu.Unlock()
	}
	return err
}

func (o *Owned) DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (int64, error) {
	if err := o.lead(topic, partition); err != nil {
		return -1, err
	}
	return o.b.DeleteRecords(ctx, topic, partition, before)
}

// Append writes to a partition this gateway leads, and answers it only if
// it still leads the partition in the same term once the records are
// stored: a gateway cut off from the cluster stops serving within its view
// lease, and the next leader starts only after the settle time, longer
// than that lease, so a write stored while this gateway still served is
// one the next leader's recovery finds; any other is answered
// NOT_LEADER_OR_FOLLOWER and the producer sends it again.
func (o *Owned) Append(ctx context.Context, topic string, partition int32, records []record.Record, durable bool) *storage.Appended {
	if err := o.lead(topic, partition); err != nil {
		return storage.FailedAppend(err)
	}
	return o.whileLeading(topic, partition, func() *storage.Appended {
		return o.b.Append(ctx, topic, partition, records, durable)
	})
}

// AppendBatch is Append of one batch as produced.
func (o *Owned) AppendBatch(ctx context.Context, topic string, partition int32, batch []byte, durable bool) *storage.Appended {
	if err := o.lead(topic, partition); err != nil {
		return storage.FailedAppend(err)
	}
	return o.whileLeading(topic, partition, func() *storage.Appended {
		return o.b.AppendBatch(ctx, topic, partition, batch, durable)
	})
}

// whileLeading runs an append and answers it only if the partition's
// leadership held, in the same term, until it was done.
func (o *Owned) whileLeading(topic string, partition int32, appendFn func() *storage.Appended) *storage.Appended {
	key := membership.PartitionKey(topic, partition)
	term, _ := o.serving(key)
	app := appendFn()
	out := storage.NewAppended()
	app.Then(func(a *storage.Appended) {
		if now, ok := o.serving(key); a.Err == nil && (!ok || now != term) {
			out.Finish(-1, kerr.NotLeaderForPartition)
			return
		}
		out.Finish(a.Base, a.Err)
	})
	return out
}

func (o *Owned) Read(ctx context.Context, topic string, partition int32, offset int64, maxBytes int) (storage.ReadResult, error) {
	if err := o.lead(topic, partition); err != nil {
		return storage.ReadResult{}, err
	}
	return o.b.Read(ctx, topic, partition, offset, maxBytes)
}

func (o *Owned) ReadBatches(ctx context.Context, topic string, partition int32, offset int64, maxBytes int) (storage.ReadResult, error) {
	if err := o.lead(topic, partition); err != nil {
		return storage.ReadResult{}, err
	}
	return o.b.ReadBatches(ctx, topic, partition, offset, maxBytes)
}

func (o *Owned) Offsets(ctx context.Context, topic string, partition int32) (storage.Offsets, error) {
	if err := o.lead(topic, partition); err != nil {
		return storage.Offsets{}, err
	}
	return o.b.Offsets(ctx, topic, partition)
}

func (o *Owned) OffsetForTime(ctx context.Context, topic string, partition int32, ts int64) (int64, int64, error) {
	if err := o.lead(topic, partition); err != nil {
		return -1, -1, err
	}
	return o.b.OffsetForTime(ctx, topic, partition, ts)
}

func (o *Owned) MaxTimestamp(ctx context.Context, topic string, partition int32) (int64, int64, error) {
	if err := o.lead(topic, partition); err != nil {
		return -1, -1, err
	}
	return o.b.MaxTimestamp(ctx, topic, partition)
}

func (o *Owned) WriteMarker(ctx context.Context, topic string, partition int32, m storage.Marker) error {
	if err := o.lead(topic, partition); err != nil {
		return err
	}
	return o.b.WriteMarker(ctx, topic, partition, m)
}

func (o *Owned) Transactions(ctx context.Context, topic string, partition int32, from, to int64) (storage.PartitionTxns, error) {
	if err := o.lead(topic, partition); err != nil {
		return storage.PartitionTxns{}, err
	}
	return o.b.Transactions(ctx, topic, partition, from, to)
}

func (o *Owned) Producers(ctx context.Context, topic string, partition int32) ([]storage.ProducerInfo, error) {
	if err := o.lead(topic, partition); err != nil {
		return nil, err
	}
	return o.b.Producers(ctx, topic, partition)
}

// AppendMirrored is AppendBatch of a topic link's batches (storage.Mirror),
// on a partition this gateway leads.
func (o *Owned) AppendMirrored(ctx context.Context, topic string, partition int32, batches [][]byte) *storage.Appended {
	m, ok := o.b.(storage.Mirror)
	if !ok {
		return storage.FailedAppend(errNoMirror)
	}
	if err := o.lead(topic, partition); err != nil {
		return storage.FailedAppend(err)
	}
	return o.whileLeading(topic, partition, func() *storage.Appended {
		return m.AppendMirrored(ctx, topic, partition, batches)
	})
}

// MirroredProducers is storage.Mirror's, on a partition led here.
func (o *Owned) MirroredProducers(ctx context.Context, topic string, partition int32) (int64, error) {
	m, ok := o.b.(storage.Mirror)
	if !ok {
		return -1, errNoMirror
	}
	if err := o.lead(topic, partition); err != nil {
		return -1, err
	}
	return m.MirroredProducers(ctx, topic, partition)
}

// RaiseProducerIDs is storage.Mirror's.
func (o *Owned) RaiseProducerIDs(ctx context.Context, floor int64) error {
	m, ok := o.b.(storage.Mirror)
	if !ok {
		return errNoMirror
	}
	return m.RaiseProducerIDs(ctx, floor)
}

// DropProducerIDs is storage.Mirror's.
func (o *Owned) DropProducerIDs(floor int64) {
	if m, ok := o.b.(storage.Mirror); ok {
		m.DropProducerIDs(floor)
	}
}

var _ storage.Mirror = (*Owned)(nil)
