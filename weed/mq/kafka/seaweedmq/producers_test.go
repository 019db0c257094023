package seaweedmq

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/wal"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

func TestProducerSequences(t *testing.T) {
	ps := &producerState{m: map[int64]*producerEntry{}}
	batch := func(epoch int16, first, last int32) *record.ProducerBatch {
		return &record.ProducerBatch{ID: 7, Epoch: epoch, FirstSeq: first, LastSeq: last}
	}
	write := func(pb *record.ProducerBatch, base int64, err error) *storage.Appended {
		t.Helper()
		dup, e := ps.check(pb)
		if dup != nil || e != nil {
			t.Fatalf("batch %+v: duplicate %v, error %v", *pb, dup != nil, e)
		}
		app := storage.NewAppended()
		ps.add(pb, app, -1, 0)
		if base >= 0 || err != nil {
			app.Finish(base, err)
		}
		return app
	}
	expect := func(pb *record.ProducerBatch, want *kerr.Error) {
		t.Helper()
		if _, got := ps.check(pb); got != want {
			t.Fatalf("batch %+v: %v, want %v", *pb, got, want)
		}
	}

	expect(batch(0, 5, 9), nil) // an unknown producer at any sequence, as Kafka
	write(batch(0, 0, 4), 100, nil)
	pending := write(batch(0, 5, 9), -1, nil) // still being written
	write(batch(0, 10, 10), -1, nil)

	// Retries get the first write's outcome, stored or not yet.
	dup, _ := ps.check(batch(0, 0, 4))
	if dup == nil || duplicate(dup).Base != 100 {
		t.Fatal("a retry of a stored batch is not answered with its offset")
	}
	dup, _ = ps.check(batch(0, 5, 9))
	if dup == nil {
		t.Fatal("a retry of a batch being written is written again")
	}
	retry := duplicate(dup)
	pending.Finish(105, nil)
	<-retry.Done
	if retry.Base != 105 || retry.Err != nil {
		t.Fatalf("the retry got %d, %v", retry.Base, retry.Err)
	}

	expect(batch(0, 12, 12), kerr.OutOfOrderSequenceNumber)
	expect(batch(0, 3, 7), kerr.OutOfOrderSequenceNumber) // overlaps
	expect(batch(1, 3, 3), kerr.OutOfOrderSequenceNumber) // a new epoch starts at 0

	// A failed write is forgotten with everything after it: the producer
	// sends it again, and then it is written.
	failed := ps.m[7].batches[len(ps.m[7].batches)-1].app
	failed.Finish(-1, errors.New("stream broke"))
	if dup, e := ps.check(batch(0, 10, 10)); dup != nil || e != nil {
		t.Fatalf("the failed batch again: duplicate %v, error %v", dup != nil, e)
	}

	// A new epoch fences the old one.
	write(batch(1, 0, 0), 200, nil)
	expect(batch(0, 10, 10), kerr.InvalidProducerEpoch)

	// Only the last five stored batches are remembered.
	for i := int32(1); i <= 6; i++ {
		write(batch(1, i, i), 200+int64(i), nil)
	}
	ps.m[7].settle()
	if n := len(ps.m[7].batches); n != keptBatches {
		t.Fatalf("%d batches kept", n)
	}
	expect(batch(1, 1, 1), kerr.OutOfOrderSequenceNumber)
	if dup, _ := ps.check(batch(1, 6, 6)); dup == nil || duplicate(dup).Base != 206 {
		t.Fatal("the last batch is not remembered")
	}
}

func TestLastSequenceWraps(t *testing.T) {
	if nextSeq(1<<31-1) != 0 || nextSeq(4) != 5 {
		t.Fatal("sequence numbers do not wrap at MaxInt32")
	}
}

// A partition's aborted transactions below its log start are forgotten,
// and a read_committed fetch gets those among its records only: the whole
// list was kept forever and copied for every fetch.
func TestAbortedTransactionsBounded(t *testing.T) {
	ps := &producerState{ongoing: map[int64]int64{}}
	// Producer 1 aborts 0-9, 20-29, ...; producer 2 one long transaction
	// 5-95.
	ps.applyTxnMark(&record.TxnMark{ProducerID: 2, Control: record.NotControl}, 5)
	for i := int64(0); i < 10; i++ {
		if i == 5 {
			ps.applyTxnMark(&record.TxnMark{ProducerID: 2, Control: record.ControlAbort}, 95)
		}
		ps.applyTxnMark(&record.TxnMark{ProducerID: 1, Control: record.NotControl}, 20*i)
		ps.applyTxnMark(&record.TxnMark{ProducerID: 1, Control: record.ControlAbort}, 20*i+9)
	}
	firsts := func(a []storage.AbortedTxn) []int64 {
		var out []int64
		for _, x := range a {
			out = append(out, x.FirstOffset)
		}
		return out
	}
	if got := firsts(ps.abortedBetween(42, 61)); !slices.Equal(got, []int64{40, 60, 5}) {
		t.Fatalf("aborted among offsets 42-61: %v", got)
	}
	if got := ps.abortedBetween(1, 0); got != nil {
		t.Fatalf("none asked: %v", got)
	}
	ps.trimAborted(150)
	if got := firsts(ps.aborted); !slices.Equal(got, []int64{160, 180}) {
		t.Fatalf("kept after the log start moved to 150: %v", got)
	}
}

// A partition takes a producer's markers from its transaction
// coordinator's epoch or a later one, and refuses one from an earlier (a
// deposed coordinator's, late); the epochs are saved with the producer
// state, and an idle producer's are forgotten with it.
func TestMarkerFromDeposedCoordinatorRefused(t *testing.T) {
	p := &partition{hw: 10, next: 10, ready: true}
	ps := &p.producers
	ps.loaded, ps.m, ps.ongoing, ps.coordinators = true, map[int64]*producerEntry{}, map[int64]int64{}, map[int64]coordinatorMark{}
	now := time.Now()
	for _, c := range []struct {
		pid   int64
		epoch int32
		want  error
	}{{7, 3, nil}, {7, 3, nil}, {7, 2, kerr.TransactionCoordinatorFenced}, {8, 1, nil}, {7, 4, nil}, {7, 3, kerr.TransactionCoordinatorFenced}} {
		if err := ps.admitMarker(c.pid, c.epoch, now); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Fatalf("producer %d, coordinator epoch %d: %v, want %v", c.pid, c.epoch, err, c.want)
		}
	}
	ps.coordinators[9] = coordinatorMark{Epoch: 1, At: now.Add(-producerIdle - time.Minute).UnixMilli()}
	s, ok := p.snapshotProducers()
	if !ok || len(s.Coordinators) != 2 || s.Coordinators["7"].Epoch != 4 || s.Coordinators["8"].Epoch != 1 {
		t.Fatalf("saved: %v %+v, want producers 7 (epoch 4) and 8 (epoch 1)", ok, s.Coordinators)
	}
}

// A producer state read again (after another gateway saved it, or after a
// recovery) while batches are still being written keeps them: a retry of
// one waits for its outcome, and its transaction stays open from where it
// was. Found by TestFaults (the volume server killed while batches waited
// for the write-ahead log): the retry was written a second time, and an
// aborted transaction's record was left outside its abort.
func TestReloadKeepsBatchesInFlight(t *testing.T) {
	ps := &producerState{m: map[int64]*producerEntry{}, ongoing: map[int64]int64{}}
	stored := &record.ProducerBatch{ID: 7, Epoch: 0, FirstSeq: 0, LastSeq: 4}
	ps.add(stored, nil, 90, 90)
	flying := &record.ProducerBatch{ID: 7, Epoch: 0, FirstSeq: 5, LastSeq: 9}
	app := storage.NewAppended()
	ps.add(flying, app, -1, 95)
	ps.ongoing[7] = 95
	done := &record.ProducerBatch{ID: 8, Epoch: 0, FirstSeq: 0, LastSeq: 0}
	ps.add(done, storage.NewAppended(), -1, 95)
	ps.m[8].batches[0].app.Finish(96, nil)

	kept := ps.inflight()
	if len(kept) != 1 || kept[0].pb != *flying || kept[0].txnFirst != 95 {
		t.Fatalf("in flight: %+v, want producer 7's batch 5-9 of the transaction open from 95", kept)
	}
	// Read again: the log holds the stored batch, not the one in flight.
	ps.m, ps.ongoing = map[int64]*producerEntry{}, map[int64]int64{}
	ps.add(stored, nil, 90, 90)
	ps.restore(kept)
	dup, e := ps.check(flying)
	if e != nil || dup == nil || dup.app != app {
		t.Fatalf("a retry of the batch in flight: %+v %v, want the batch in flight", dup, e)
	}
	if ps.ongoing[7] != 95 {
		t.Fatalf("the transaction open from %d, want 95", ps.ongoing[7])
	}
	// A state whose log holds the batch (it landed) keeps it once.
	ps.m = map[int64]*producerEntry{}
	ps.add(stored, nil, 90, 90)
	ps.add(flying, nil, 95, 95)
	ps.restore(kept)
	if n := len(ps.m[7].batches); n != 2 {
		t.Fatalf("%d batches, want the stored two", n)
	}
}

// A gateway that no longer leads a partition in the term it read its
// producer state in saves none: not on release, not at its next round
// once back from a pause. Found by TestFaults (a leader paused, resumed,
// and saved what it held after its successor had written other records at
// its last offsets; every later leader skipped them, and an aborted
// transaction's records were read).
func TestDeposedLeaderSavesNoProducerState(t *testing.T) {
	term := int64(9)
	c := &Client{opts: Options{Term: func(string, int32) int64 { return term }}}
	p := &partition{c: c, topic: "t", term: 7, hw: 10}
	p.producers = producerState{m: map[int64]*producerEntry{}, ongoing: map[int64]int64{}, loaded: true}
	p.producers.add(&record.ProducerBatch{ID: 3, FirstSeq: 0, LastSeq: 0}, nil, 9, 9)
	p.producers.dirty.Store(true)
	c.saveProducers(p, true)
	if !p.producers.saved.IsZero() || !p.producers.dirty.Load() {
		t.Fatal("a partition led in another term now: its producer state was taken to be saved")
	}
	term = 7
	p.release()
	c.saveProducers(p, true)
	if !p.producers.saved.IsZero() {
		t.Fatal("a released partition: its producer state was taken to be saved")
	}
	if p2 := (&partition{c: c, term: 7}); !p2.leads() {
		t.Fatal("a partition led in its term: not led")
	}
}

// A batch of a producer's epoch older than the epoch of a marker written
// for it here is refused, and so never stored past the marker. A fault
// run found a transaction's write, let through by its coordinator before
// it aborted the transaction on its timeout (with transactions v2 the
// abort's marker has the next epoch), stored after the marker: outside
// the aborted range, read as committed. The fence is saved with the
// state and survives its reading again.
func TestMarkerFencesEarlierEpochs(t *testing.T) {
	ctx := context.Background()
	c := &Client{opts: Options{TopicCacheTTL: time.Hour}}
	c.parts.init()
	c.flusher = newFlusher(c)
	c.topics.byName = map[string]*topicEntry{"t": {parts: []*mq_pb.BrokerPartitionAssignment{{}}, read: time.Now()}}
	c.logBatch = func(_ wal.Batch, done func(error)) { go done(nil) }
	p := c.parts.get(c, "t", 0)
	p.ready, p.hw = true, 0
	ps := &p.producers
	ps.loaded, ps.m, ps.ongoing, ps.coordinators, ps.pendingMarks = true, map[int64]*producerEntry{}, map[int64]int64{}, map[int64]coordinatorMark{}, map[int64]int64{}

	produce := func(epoch int16, seq int32) error {
		t.Helper()
		mark := &record.TxnMark{ProducerID: 7, Epoch: epoch, Control: record.NotControl}
		app := c.Append(ctx, "t", 0, []record.Record{{Value: []byte("v"), Producer: &record.ProducerBatch{ID: 7, Epoch: epoch, FirstSeq: seq, LastSeq: seq}, Txn: mark}}, true)
		<-app.Done
		return app.Err
	}
	if err := produce(3, 0); err != nil {
		t.Fatal(err)
	}
	// The coordinator aborts the transaction on its timeout, with the
	// producer's next epoch.
	if err := c.WriteMarker(ctx, "t", 0, storage.Marker{ProducerID: 7, Epoch: 4}); err != nil {
		t.Fatal(err)
	}
	if err := produce(3, 1); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("a batch of the aborted epoch after the marker: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	if err := produce(4, 0); err != nil {
		t.Fatalf("the next transaction's first batch: %v", err)
	}
	txns, err := c.Transactions(ctx, "t", 0, 0, 10)
	if err != nil || len(txns.Aborted) != 1 || txns.Aborted[0].FirstOffset != 0 || txns.Aborted[0].LastOffset != 1 {
		t.Fatalf("aborted %+v (%v), want offsets 0-1", txns.Aborted, err)
	}

	// A marker of the aborted transaction delivered late (sent before a
	// cut, the cut healed after the producer's next transaction began)
	// is refused: it would end the next transaction with the old one's
	// outcome.
	if err := c.WriteMarker(ctx, "t", 0, storage.Marker{ProducerID: 7, Epoch: 3}); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("a marker of epoch 3 after a batch of epoch 4: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	if txns, err := c.Transactions(ctx, "t", 0, 0, 10); err != nil || len(txns.Aborted) != 1 || txns.FirstUnstable != 2 {
		t.Fatalf("aborted %+v, open from %d (%v): want the next transaction open from offset 2", txns.Aborted, txns.FirstUnstable, err)
	}

	// With transactions v2 the end raises the epoch and the marker
	// carries the raised one, which the producer's next transaction then
	// runs in: a late marker of the epoch of the batches here is refused
	// as well when its end raised it (its batches had the epoch before).
	if err := c.WriteMarker(ctx, "t", 0, storage.Marker{ProducerID: 7, Epoch: 4, Bumped: true}); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("a marker of epoch 4 raised by its end, after a batch of epoch 4: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	if txns, err := c.Transactions(ctx, "t", 0, 0, 10); err != nil || len(txns.Aborted) != 1 || txns.FirstUnstable != 2 {
		t.Fatalf("aborted %+v, open from %d (%v): want the next transaction open from offset 2", txns.Aborted, txns.FirstUnstable, err)
	}

	// A marker given its offset by another object of the partition than
	// the one WriteMarker noted the fence on fences as well.
	marker := record.Record{Key: record.ControlKey(record.ControlAbort), Value: record.ControlValue(0), Txn: &record.TxnMark{ProducerID: 8, Epoch: 2, Control: record.ControlAbort}}
	app := c.Append(ctx, "t", 0, []record.Record{marker}, true)
	<-app.Done
	if app.Err != nil {
		t.Fatal(app.Err)
	}
	if !ps.fenced(8, 1) || ps.fenced(8, 2) {
		t.Fatal("a marker appended does not fence its producer's earlier epoch")
	}

	s, ok := p.snapshotProducers()
	if !ok || s.Fences["7"].Epoch != 4 {
		t.Fatalf("saved fences %+v", s.Fences)
	}
	// Read again (the state from the filer, nothing stored after it),
	// the fence stays, whether saved or only in memory.
	fresh := &producerState{}
	fresh.txnMu.Lock()
	for id, f := range s.Fences {
		pid, _ := strconv.ParseInt(id, 10, 64)
		fresh.noteFence(pid, f.Epoch, time.UnixMilli(f.At))
	}
	fresh.txnMu.Unlock()
	if !fresh.fenced(7, 3) || fresh.fenced(7, 4) || !fresh.fenced(8, 1) || fresh.fenced(9, 0) {
		t.Fatal("the saved fences do not refuse the earlier epochs alone")
	}

	// The next transaction's own end, raised to epoch 5, ends it.
	if err := c.WriteMarker(ctx, "t", 0, storage.Marker{ProducerID: 7, Epoch: 5, Commit: true, Bumped: true}); err != nil {
		t.Fatalf("the end of the transaction of epoch 4: %v", err)
	}
	if txns, err := c.Transactions(ctx, "t", 0, 0, 10); err != nil || len(txns.Aborted) != 1 || txns.FirstUnstable != -1 {
		t.Fatalf("aborted %+v, open from %d (%v): want nothing open", txns.Aborted, txns.FirstUnstable, err)
	}
}
