package seaweedmq

// Idempotent producers: for each partition, the last batches each producer
// wrote, so that a retried batch is answered with its first offset instead
// of being written again, and a gap in the sequence numbers is refused, as
// Kafka does.
//
// The state survives a restart: the first record of each idempotent batch
// carries the batch's producer id, epoch and sequence numbers (see
// record.ProducerBatch), and the state is saved now and then to the filer
// together with the offset it covers; a gateway that opens the partition
// again reads the saved state and the records written after that offset.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// ProducersDir is where the filer keeps the partitions' producer states.
const ProducersDir = "/etc/kafka-gateway/producers"

// keptBatches is how many of a producer's last stored batches a partition
// remembers to answer retries (Kafka's too).
const keptBatches = 5

// producerIdle is how long a producer's state is kept after its last
// write (Kafka's producer.id.expiration.ms).
const producerIdle = 24 * time.Hour

// saveProducersEvery is how often a partition's changed producer state is
// saved; a restarted gateway reads the records written since.
const saveProducersEvery = 10 * time.Second

type producerBatch struct {
	firstSeq, lastSeq int32
	base              int64             // first offset, once stored
	app               *storage.Appended // while being written; nil once stored
	lowBound          int64             // the batch's offsets are at least this
}

type producerEntry struct {
	epoch int16
	// batches are the last keptBatches stored batches, oldest first,
	// then those still being written.
	batches []producerBatch
	lastSeq int32 // of the newest stored batch; -1 if none
	used    time.Time
}

// producerState is a partition's idempotent producers; guarded by the
// partition's writeMu.
type producerState struct {
	loaded  bool
	version string // of the state file, as read or written last
	m       map[int64]*producerEntry
	dirty   atomic.Bool // changed since saved
	saved   time.Time

	// Transactions, under txnMu (fetches read them without writeMu).
	txnMu   sync.Mutex
	ongoing map[int64]int64 // producer id -> first offset (at least) of its open transaction here
	aborted []storage.AbortedTxn
	// pending markers being written -> the offset they are at least at.
	pendingMarks map[int64]int64
	markSeq      int64
	// coordinators: producer id -> the highest coordinator epoch of the
	// markers written (or being written) for it here.
	coordinators map[int64]coordinatorMark
	// fences: producer id -> the highest producer epoch of the markers
	// written (or being written) for it here. A batch of an older epoch
	// is refused: with transactions v2 (and a coordinator's own aborts)
	// the marker carries the epoch that ended the transaction, and a
	// write of the transaction let through by a check made before the end
	// (AddPartitionsToTxn answered by the coordinator, the write run
	// after its abort) would land past the marker, outside the aborted
	// range, and be read as committed (a fault run found one so). Kept
	// when the state is read again: a marker given its offset and not yet
	// logged is in no segment to read it back from.
	fences map[int64]epochFence
}

// epochFence is the producer epoch a partition's markers raised a
// producer's to, and when.
type epochFence struct {
	Epoch int16 `json:"epoch"`
	At    int64 `json:"at"` // unix ms
}

// noteFence raises the producer's fence to epoch. Called with txnMu held.
func (ps *producerState) noteFence(producerID int64, epoch int16, at time.Time) {
	if ps.fences == nil {
		ps.fences = map[int64]epochFence{}
	}
	if f, ok := ps.fences[producerID]; !ok || epoch > f.Epoch {
		ps.fences[producerID] = epochFence{Epoch: epoch, At: at.UnixMilli()}
		ps.dirty.Store(true)
	}
}

// fenced reports whether a batch of the producer's epoch comes after a
// marker of a later epoch here.
func (ps *producerState) fenced(producerID int64, epoch int16) bool {
	ps.txnMu.Lock()
	defer ps.txnMu.Unlock()
	f, ok := ps.fences[producerID]
	return ok && epoch < f.Epoch
}

// coordinatorMark is the coordinator epoch a partition last took a
// producer's marker from, and when.
type coordinatorMark struct {
	Epoch int32 `json:"epoch"`
	At    int64 `json:"at"` // unix ms
}

// noteCoordinator raises the producer's coordinator epoch to epoch. Called
// with txnMu held.
func (ps *producerState) noteCoordinator(producerID int64, epoch int32, at time.Time) {
	if c, ok := ps.coordinators[producerID]; !ok || epoch >= c.Epoch {
		ps.coordinators[producerID] = coordinatorMark{Epoch: epoch, At: at.UnixMilli()}
		ps.dirty.Store(true)
	}
}

// settle takes the batches whose writes ended out of the pending ones:
// stored ones are kept, failed ones dropped with every batch after them
// (they went on the same stream and failed too, or must be sent again
// after them).
func (e *producerEntry) settle() {
	for i := range e.batches {
		b := &e.batches[i]
		if b.app == nil {
			continue
		}
		select {
		case <-b.app.Done:
		default:
			return
		}
		if b.app.Err != nil {
			e.batches = e.batches[:i]
			break
		}
		b.base, b.app = b.app.Base, nil
		e.lastSeq = b.lastSeq
	}
	stored := 0
	for _, b := range e.batches {
		if b.app == nil {
			stored++
		}
	}
	if drop := stored - keptBatches; drop > 0 {
		e.batches = e.batches[drop:]
	}
}

func nextSeq(s int32) int32 {
	if s == 1<<31-1 {
		return 0
	}
	return s + 1
}

// check decides about an idempotent batch: a duplicate of a batch written
// or being written (returned), or an error, or nil and nil to write it.
func (ps *producerState) check(pb *record.ProducerBatch) (*producerBatch, *kerr.Error) {
	e := ps.m[pb.ID]
	if e == nil {
		// As Kafka (KIP-360): a producer the partition holds no state of
		// is taken at any sequence; it may have outlived its state here
		// (expired, or its batches removed), and UNKNOWN_PRODUCER_ID
		// left the Java producer retrying until its delivery timeout.
		return nil, nil
	}
	e.settle()
	switch {
	case pb.Epoch < e.epoch:
		return nil, kerr.InvalidProducerEpoch
	case pb.Epoch > e.epoch:
		if pb.FirstSeq != 0 {
			return nil, kerr.OutOfOrderSequenceNumber
		}
		return nil, nil
	}
	for i := range e.batches {
		if b := &e.batches[i]; b.firstSeq == pb.FirstSeq && b.lastSeq == pb.LastSeq {
			return b, nil
		}
	}
	want := nextSeq(e.lastSeq)
	if n := len(e.batches); n > 0 {
		want = nextSeq(e.batches[n-1].lastSeq)
	}
	if pb.FirstSeq != want {
		return nil, kerr.OutOfOrderSequenceNumber
	}
	return nil, nil
}

// add records a batch being written (app) or stored at base (app nil).
func (ps *producerState) add(pb *record.ProducerBatch, app *storage.Appended, base, lowBound int64) {
	e := ps.m[pb.ID]
	if e == nil || pb.Epoch > e.epoch {
		e = &producerEntry{epoch: pb.Epoch, lastSeq: -1}
		ps.m[pb.ID] = e
	}
	b := producerBatch{firstSeq: pb.FirstSeq, lastSeq: pb.LastSeq, base: base, app: app, lowBound: lowBound}
	if app == nil {
		// Stored: it goes before any pending batch.
		i := 0
		for i < len(e.batches) && e.batches[i].app == nil {
			i++
		}
		e.batches = append(e.batches[:i], append([]producerBatch{b}, e.batches[i:]...)...)
		e.lastSeq = pb.LastSeq
	} else {
		e.batches = append(e.batches, b)
	}
	e.settle()
	e.used = time.Now()
	ps.dirty.Store(true)
}

// duplicate answers a retried batch with the outcome of its first write.
func duplicate(b *producerBatch) *storage.Appended {
	if b.app == nil {
		app := storage.NewAppended()
		app.Finish(b.base, nil)
		return app
	}
	app := storage.NewAppended()
	b.app.Then(func(orig *storage.Appended) { app.Finish(orig.Base, orig.Err) })
	return app
}

// savedProducers is a partition's producer state file.
type savedProducers struct {
	// Offset: the state holds every idempotent batch, transaction record
	// and marker stored below it.
	Offset    int64                    `json:"offset"`
	Producers map[string]savedProducer `json:"producers"`
	// Ongoing: producer id -> first offset of its open transaction.
	Ongoing map[string]int64     `json:"ongoing,omitempty"`
	Aborted []storage.AbortedTxn `json:"aborted,omitempty"`
	// Coordinators: producer id -> the coordinator epoch of its markers.
	Coordinators map[string]coordinatorMark `json:"coordinators,omitempty"`
	// Fences: producer id -> the producer epoch of its markers.
	Fences map[string]epochFence `json:"fences,omitempty"`
}

type savedProducer struct {
	Epoch   int16        `json:"epoch"`
	LastSeq int32        `json:"lastSeq"`
	Used    int64        `json:"used"` // unix ms
	Batches []savedBatch `json:"batches"`
}

type savedBatch struct {
	FirstSeq int32 `json:"firstSeq"`
	LastSeq  int32 `json:"lastSeq"`
	Base     int64 `json:"base"`
}

func (p *partition) producersFile() (string, string) {
	return ProducersDir + "/" + p.topic, strconv.Itoa(int(p.index))
}

// loadProducers reads the partition's producer state: the saved one, then
// the idempotent batches stored after the offset it covers. Called with
// writeMu held, before the first idempotent write.
func (c *Client) loadProducers(ctx context.Context, p *partition) error {
	ps := &p.producers
	flying := ps.inflight()
	ps.m = map[int64]*producerEntry{}
	ps.txnMu.Lock()
	ps.ongoing, ps.aborted, ps.pendingMarks, ps.coordinators = map[int64]int64{}, nil, map[int64]int64{}, map[int64]coordinatorMark{}
	ps.txnMu.Unlock()
	defer ps.restore(flying)
	dir, name := p.producersFile()
	data, version, err := c.ReadFileVersion(ctx, dir, name)
	ps.version = version
	var saved savedProducers
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// No idempotent producer wrote here yet: the state starts at
		// the end of the partition, saved before the first write.
		offs, err := c.offsets(ctx, p)
		if err != nil {
			return err
		}
		saved.Offset = offs.HighWatermark
		if ps.version, err = c.saveProducerState(ctx, p, saved, ""); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(data, &saved); err != nil {
			return fmt.Errorf("producer state of %s/%d: %w", p.topic, p.index, err)
		}
		// Claimed: written back as read, so that a gateway that led the
		// partition before and does not know it lost it yet cannot save
		// over it any more (its version is gone).
		if ps.version, err = c.saveProducerState(ctx, p, saved, version); err != nil {
			return fmt.Errorf("claiming the producer state of %s/%d: %w", p.topic, p.index, err)
		}
	}
	for id, sp := range saved.Producers {
		pid, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			continue
		}
		e := &producerEntry{epoch: sp.Epoch, lastSeq: sp.LastSeq, used: time.UnixMilli(sp.Used)}
		for _, b := range sp.Batches {
			e.batches = append(e.batches, producerBatch{firstSeq: b.FirstSeq, lastSeq: b.LastSeq, base: b.Base})
		}
		ps.m[pid] = e
	}
	ps.txnMu.Lock()
	for id, first := range saved.Ongoing {
		if pid, err := strconv.ParseInt(id, 10, 64); err == nil {
			ps.ongoing[pid] = first
		}
	}
	ps.aborted = saved.Aborted
	for id, cm := range saved.Coordinators {
		if pid, err := strconv.ParseInt(id, 10, 64); err == nil {
			ps.coordinators[pid] = cm
		}
	}
	for id, f := range saved.Fences {
		if pid, err := strconv.ParseInt(id, 10, 64); err == nil {
			ps.noteFence(pid, f.Epoch, time.UnixMilli(f.At))
		}
	}
	ps.txnMu.Unlock()
	// The batches, transaction records and markers stored after the saved
	// offset.
	scanned := 0
	// Records below the log start (DeleteRecords) are not read.
	for off := max(saved.Offset, c.logStartOf(ctx, p.topic, p.index)); ; {
		res, err := c.read(ctx, p, off, 4<<20)
		if err != nil {
			return err
		}
		for _, r := range res.Records {
			if pb := r.Record.Producer; pb != nil {
				if e := ps.m[pb.ID]; e == nil || pb.Epoch > e.epoch || (pb.Epoch == e.epoch && !e.has(pb)) {
					ps.add(pb, nil, r.Offset, r.Offset)
					scanned++
				}
			}
			if t := r.Record.Txn; t != nil {
				ps.txnMu.Lock()
				ps.applyTxnMark(t, r.Offset)
				if t.Control != record.NotControl {
					ps.noteCoordinator(t.ProducerID, record.ControlCoordinatorEpoch(r.Record.Value), time.UnixMilli(r.Record.Timestamp))
					ps.noteFence(t.ProducerID, t.Epoch, time.UnixMilli(r.Record.Timestamp))
				}
				ps.txnMu.Unlock()
			}
			off = r.Offset + 1
		}
		if len(res.Records) == 0 || off >= res.HighWatermark {
			break
		}
	}
	ps.loaded = true
	ps.saved = time.Now()
	glog.V(1).Infof("kafka partition %s/%d: %d idempotent producers known, %d batches read since offset %d", p.topic, p.index, len(ps.m), scanned, saved.Offset)
	return nil
}

// inflightBatch is a batch being written when the producer state is read
// again, and where its producer's transaction was open from.
type inflightBatch struct {
	pb       record.ProducerBatch
	b        producerBatch
	txnFirst int64 // -1: no open transaction of the producer
}

// inflight returns the batches still being written: in the write-ahead
// log's queue (SeaweedFS slow or down), in no saved state and not yet in
// the log, so that a state read again keeps them (restore).
func (ps *producerState) inflight() []inflightBatch {
	var out []inflightBatch
	ps.txnMu.Lock()
	defer ps.txnMu.Unlock()
	for pid, e := range ps.m {
		for _, b := range e.batches {
			if b.app == nil {
				continue
			}
			select {
			case <-b.app.Done:
				continue // settled by the next check
			default:
			}
			first, open := ps.ongoing[pid]
			if !open {
				first = -1
			}
			out = append(out, inflightBatch{pb: record.ProducerBatch{ID: pid, Epoch: e.epoch, FirstSeq: b.firstSeq, LastSeq: b.lastSeq}, b: b, txnFirst: first})
		}
	}
	return out
}

// restore puts batches still being written back into a state read again
// from the filer and the log, unless the log holds them already: a retry
// of one then waits for its outcome instead of being written a second
// time, and its producer's transaction stays open from where it was (the
// last stable offset below it, an abort covering it). A state read again
// without them took such a retry as a new batch (the record stored twice)
// and left a transaction's records outside its abort (read as committed).
func (ps *producerState) restore(flying []inflightBatch) {
	for _, f := range flying {
		e := ps.m[f.pb.ID]
		if e != nil && (f.pb.Epoch < e.epoch || (f.pb.Epoch == e.epoch && e.has(&f.pb))) {
			continue
		}
		ps.add(&f.pb, f.b.app, -1, f.b.lowBound)
		if f.txnFirst >= 0 {
			ps.txnMu.Lock()
			if first, open := ps.ongoing[f.pb.ID]; !open || f.txnFirst < first {
				ps.ongoing[f.pb.ID] = f.txnFirst
			}
			ps.txnMu.Unlock()
		}
	}
}

func (e *producerEntry) has(pb *record.ProducerBatch) bool {
	for _, b := range e.batches {
		if b.firstSeq == pb.FirstSeq && b.lastSeq == pb.LastSeq {
			return true
		}
	}
	return false
}

// saveProducerState writes the partition's producer state if the file is
// still at version (as this gateway read or wrote it last), and returns its
// new version: a gateway that lost the partition (paused, or slow) cannot
// write over what its new leader saved (filerfs.ErrChanged).
func (c *Client) saveProducerState(ctx context.Context, p *partition, s savedProducers, version string) (string, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	dir, name := p.producersFile()
	return c.WriteFileIf(ctx, dir, name, data, version)
}

// snapshotProducers returns the partition's producer state to save, if it
// changed: the stored batches, and the offset below which every
// idempotent batch is among them. Called with writeMu held.
func (p *partition) snapshotProducers() (savedProducers, bool) {
	ps := &p.producers
	if !ps.loaded || !ps.dirty.Load() {
		return savedProducers{}, false
	}
	// Every batch still being written has its offsets above its lowBound;
	// everything below the high watermark is acknowledged.
	covered := p.knownHW()
	s := savedProducers{Producers: map[string]savedProducer{}}
	for id, e := range ps.m {
		e.settle()
		if time.Since(e.used) > producerIdle {
			delete(ps.m, id)
			continue
		}
		sp := savedProducer{Epoch: e.epoch, LastSeq: e.lastSeq, Used: e.used.UnixMilli()}
		for _, b := range e.batches {
			if b.app != nil {
				covered = min(covered, b.lowBound)
				continue
			}
			sp.Batches = append(sp.Batches, savedBatch{b.firstSeq, b.lastSeq, b.base})
		}
		s.Producers[strconv.FormatInt(id, 10)] = sp
	}
	ps.txnMu.Lock()
	for _, low := range ps.pendingMarks {
		covered = min(covered, low)
	}
	if len(ps.ongoing) > 0 {
		s.Ongoing = map[string]int64{}
		for pid, first := range ps.ongoing {
			s.Ongoing[strconv.FormatInt(pid, 10)] = first
		}
	}
	s.Aborted = slices.Clone(ps.aborted)
	for pid, cm := range ps.coordinators {
		if _, open := ps.ongoing[pid]; !open && time.Since(time.UnixMilli(cm.At)) > producerIdle {
			delete(ps.coordinators, pid)
			continue
		}
		if s.Coordinators == nil {
			s.Coordinators = map[string]coordinatorMark{}
		}
		s.Coordinators[strconv.FormatInt(pid, 10)] = cm
	}
	for pid, f := range ps.fences {
		if _, open := ps.ongoing[pid]; !open && time.Since(time.UnixMilli(f.At)) > producerIdle {
			delete(ps.fences, pid)
			continue
		}
		if s.Fences == nil {
			s.Fences = map[string]epochFence{}
		}
		s.Fences[strconv.FormatInt(pid, 10)] = f
	}
	ps.txnMu.Unlock()
	if covered < 0 {
		return savedProducers{}, false
	}
	s.Offset = covered
	ps.dirty.Store(false)
	return s, true
}

// saveProducers saves the partition's producer state if it changed and was
// not saved for a while (always if force).
//
// Only the partition's leader saves, in the term it read the state in: a
// gateway deposed while it was paused or cut off may hold batches its
// successor gave other offsets (logged once it came back), and a state
// saved from them would have every later leader skip the successor's
// records (their transactions' beginnings, their producers' sequences).
func (c *Client) saveProducers(p *partition, force bool) {
	if !p.leads() {
		return
	}
	p.writeMu.Lock()
	if !force && time.Since(p.producers.saved) < saveProducersEvery {
		p.writeMu.Unlock()
		return
	}
	s, ok := p.snapshotProducers()
	if ok {
		p.producers.saved = time.Now()
	}
	version := p.producers.version
	p.writeMu.Unlock()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	next, err := c.saveProducerState(ctx, p, s, version)
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	switch {
	case errors.Is(err, filerfs.ErrChanged):
		// Another gateway led the partition and saved its producers
		// since: what this one holds is stale, and is read again before
		// its next idempotent write here.
		p.producers.loaded = false
		glog.Warningf("kafka partition %s/%d: producer state saved by another gateway since read here; reading it again before the next write", p.topic, p.index)
	case err != nil:
		p.producers.dirty.Store(true)
		glog.Warningf("kafka partition %s/%d: saving producer state: %v", p.topic, p.index, err)
	case p.producers.version == version:
		p.producers.version = next
	}
}

// appendIdempotent checks an idempotent producer's batch against what the
// partition's producers wrote: a retry is answered with its first write's
// outcome, a gap or an old epoch refused; otherwise the batch is written
// by write. Called with writeMu held.
func (c *Client) appendIdempotent(ctx context.Context, p *partition, head *record.Record, write func() *storage.Appended) *storage.Appended {
	if !p.producers.loaded {
		if err := c.loadProducers(ctx, p); err != nil {
			glog.Warningf("kafka partition %s/%d: loading producer state: %v", p.topic, p.index, err)
			return storage.FailedAppend(fmt.Errorf("%w: loading producer state: %v", kerr.NotLeaderForPartition, err))
		}
	}
	pb := head.Producer
	dup, e := p.producers.check(pb)
	if e != nil {
		return storage.FailedAppend(e)
	}
	if dup != nil {
		return duplicate(dup)
	}
	if p.producers.fenced(pb.ID, pb.Epoch) {
		return storage.FailedAppend(fmt.Errorf("%w: a marker of a later epoch of producer %d is written", kerr.InvalidProducerEpoch, pb.ID))
	}
	lowBound := max(p.knownHW(), 0)
	if t := head.Txn; t != nil {
		// The producer's transaction is open here from this batch on
		// (or from an earlier one): the last stable offset stays below.
		ps := &p.producers
		ps.txnMu.Lock()
		if _, open := ps.ongoing[t.ProducerID]; !open {
			ps.ongoing[t.ProducerID] = lowBound
			ps.dirty.Store(true)
		}
		ps.txnMu.Unlock()
	}
	app := write()
	p.producers.add(pb, app, -1, lowBound)
	return app
}
