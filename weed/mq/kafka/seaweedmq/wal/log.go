// Package wal is the gateways' write-ahead log: what makes an acks=all
// produce durable the moment it is acknowledged. The leading gateway gives
// a batch its offsets and hands it to its log; the batch is acknowledged
// once the log holds it, long before the partition's segments do. A log is
// files under Dir/<gateway>, whose chunks are on the volume servers (the
// cluster's replication applies) and are listed in the filer entry.
// Batches that arrive together, from any partition and connection, share
// one chunk: one upload to a volume server and one filer update per group
// commit, done at once.
//
// The logs are read by whichever gateway starts to serve a partition next
// (Reader): what they hold and the segments do not is written back at its
// offsets. A file is removed once the segments cover everything in it, or
// its partitions are gone (trim.go).
package wal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/storage/needle"
	"github.com/seaweedfs/seaweedfs/weed/storage/types"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// Dir is where the gateways keep their write-ahead logs, one folder each.
const Dir = "/etc/kafka-gateway/wal"

const (
	// maxCommitBytes bounds one group commit (one chunk).
	maxCommitBytes = 8 << 20
	// maxQueuedBytes bounds what waits for a commit; past it Add
	// waits, and with it the producers.
	maxQueuedBytes = 256 << 20
	// fileChunks and fileAge bound one log file: every commit
	// rewrites the file's entry with all its chunks, and a whole file is
	// removed once covered, so files stay small and young.
	fileChunks = 16
	fileAge    = 2 * time.Second
	// trimEvery is how often covered files are looked for.
	trimEvery = 2 * time.Second
	// retryMax is the longest pause between attempts to commit while
	// SeaweedFS does not take the log's writes.
	retryMax = time.Second
)

// pending is a batch waiting for its commit.
type pending struct {
	Batch
	done func(error) // called once the batch is in the log, or cannot be
}

// logFile is one of this gateway's log files.
type logFile struct {
	name    string
	entry   *filer_pb.Entry
	created time.Time
	// ends holds, for each partition dir in the file, one past the
	// highest offset it holds there.
	ends map[string]int64
}

// Log is one gateway's write-ahead log, the one it writes.
type Log struct {
	opts Options
	dir  string // Dir/<gateway>

	mu      sync.Mutex
	changed *sync.Cond // queue got entries, room, or commits
	queue   []*pending
	queued  int    // bytes in queue
	added   uint64 // entries ever queued
	written uint64 // entries ever finished (committed or failed)
	closing bool

	// Owned by the commit loop.
	fids map[Replication]*fidPool
	// framed and frames are the bytes and frames committed, whose average
	// is what each reserved file id is announced to hold.
	framed, frames uint64

	// Under filesMu. The commit loop appends to cur; a file is closed when
	// full or old, by the next commit or, if none comes, by the trimmer.
	filesMu    sync.Mutex
	cur        *logFile
	files      []*logFile // closed and not yet removed, oldest first
	committing bool

	done    chan struct{}  // closed when the commit loop has stopped
	trimmer sync.WaitGroup // the trim loop, which stops after it
}

// Options configure a Log.
type Options struct {
	Store Store
	// Name is the gateway's: its log is Dir/Name.
	Name string
	// Covered reports whether the segments of the partition named part
	// (PartKey) hold every offset below end, or, if orGone, whether the
	// partition is gone (its topic deleted or created anew): a file is
	// removed once every partition in it is covered. orGone is set for
	// files older than a minute only, so that young files cost no topic
	// lookups.
	Covered func(ctx context.Context, part string, end int64, orGone bool) bool
}

// New returns the log of the gateway opts name; Start starts it.
func New(opts Options) *Log {
	w := &Log{opts: opts, dir: Dir + "/" + opts.Name, done: make(chan struct{})}
	w.changed = sync.NewCond(&w.mu)
	return w
}

// Start runs the commit loop and the trimmer; the files of an earlier run
// of this gateway are trimmed like its own.
func (w *Log) Start() {
	go w.commitLoop()
	w.trimmer.Add(1)
	go func() {
		defer w.trimmer.Done()
		w.trimLoop()
	}()
}

// Add queues a batch for the log. It waits while too much is queued.
func (w *Log) Add(b Batch, done func(error)) {
	w.mu.Lock()
	for w.queued > maxQueuedBytes && !w.closing {
		w.changed.Wait()
	}
	if w.closing {
		w.mu.Unlock()
		done(ErrClosed)
		return
	}
	w.queue = append(w.queue, &pending{Batch: b, done: done})
	w.queued += len(b.Recs)
	w.added++
	w.changed.Broadcast()
	w.mu.Unlock()
}

var ErrClosed = errors.New("write-ahead log closed")

// Barrier waits until every batch queued before it is committed or failed.
func (w *Log) Barrier(ctx context.Context) error {
	w.mu.Lock()
	target := w.added
	w.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		w.mu.Lock()
		w.changed.Broadcast()
		w.mu.Unlock()
	})
	defer stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.written < target {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.changed.Wait()
	}
	return nil
}

// Close commits what is queued (for a while) and stops.
func (w *Log) Close(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	w.Barrier(ctx) //nolint:errcheck // what is left fails below
	w.mu.Lock()
	w.closing = true
	w.changed.Broadcast()
	w.mu.Unlock()
	<-w.done
	w.trimmer.Wait()
}

// commitLoop takes what is queued, writes it as one chunk and finishes its
// batches; while a commit is under way the next one gathers.
func (w *Log) commitLoop() {
	defer close(w.done)
	frame := make([]byte, 0, 1<<20)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closing {
			w.changed.Wait()
		}
		if len(w.queue) == 0 {
			w.mu.Unlock()
			return
		}
		n, size := 0, 0
		for n < len(w.queue) && (n == 0 || size+len(w.queue[n].Recs) <= maxCommitBytes) {
			size += len(w.queue[n].Recs)
			n++
		}
		batch := w.queue[:n:n]
		w.queue = w.queue[n:]
		w.queued -= size
		w.changed.Broadcast()
		w.mu.Unlock()

		frame = frame[:8]
		records := 0
		var replication Replication
		for _, e := range batch {
			frame = appendBatch(frame, &e.Batch)
			records += e.N
			replication.Want = Wider(replication.Want, e.Replication.Want)
			replication.Min = max(replication.Min, e.Replication.Min)
		}
		frame = sealFrame(frame)
		err := w.commitRetrying(frame, replication, batch)
		if err == nil {
			metrics.WALCommitBatches.Observe(float64(len(batch)))
			metrics.WALCommitRecords.Observe(float64(records))
			metrics.WALBytes.Add(float64(len(frame)))
		}
		for _, e := range batch {
			guard.Run("WALCommitted", func() { e.done(err) }) //nolint:errcheck // logged and counted; the other batches are still told
		}
		w.mu.Lock()
		w.written += uint64(len(batch))
		w.changed.Broadcast()
		w.mu.Unlock()
		if cap(frame) > 4<<20 {
			frame = make([]byte, 0, 1<<20)
		}
	}
}

// commitRetrying commits a frame, trying again while SeaweedFS does not
// take it: the batches' producers wait (their requests time out and are
// retried; an idempotent retry waits for this outcome). Only a gateway
// that stops gives up, and then nothing of it is acknowledged.
func (w *Log) commitRetrying(frame []byte, replication Replication, batch []*pending) error {
	pause := 20 * time.Millisecond
	var logged string
	for attempt := 1; ; attempt++ {
		start := time.Now()
		// A panic is tried again, as a filer that does not answer.
		err := guard.Try("WALCommit", func() error { return w.commit(frame, replication, batch) })
		metrics.WALCommitSeconds.Observe(time.Since(start).Seconds())
		if err == nil {
			if logged != "" {
				glog.V(0).Infof("kafka write-ahead log %s: writing again after %d attempts", w.dir, attempt)
			}
			return nil
		}
		metrics.WALErrors.Inc()
		if msg := err.Error(); msg != logged {
			glog.Warningf("kafka write-ahead log %s: commit of %d batches failed, trying again: %v", w.dir, len(batch), err)
			logged = msg
		}
		w.mu.Lock()
		closing := w.closing
		w.mu.Unlock()
		if closing && attempt >= 3 {
			return fmt.Errorf("%w: write-ahead log: %v", kerr.NotEnoughReplicasAfterAppend, err)
		}
		time.Sleep(pause)
		pause = min(2*pause, retryMax)
	}
}

// commit writes one frame as a chunk of the current file, kept with
// replication.
func (w *Log) commit(frame []byte, replication Replication, batch []*pending) (err error) {
	w.filesMu.Lock()
	w.committing = true
	if w.cur != nil && (len(w.cur.entry.Chunks) >= fileChunks || time.Since(w.cur.created) > fileAge) {
		w.files = append(w.files, w.cur)
		w.cur = nil
	}
	w.filesMu.Unlock()
	defer func() {
		w.filesMu.Lock()
		w.committing = false
		w.filesMu.Unlock()
	}()
	if w.cur == nil {
		now := time.Now()
		name := fmt.Sprintf("%020d", now.UnixNano())
		w.cur = &logFile{name: name, created: now, ends: map[string]int64{},
			entry: &filer_pb.Entry{Name: name, Attributes: &filer_pb.FuseAttributes{
				Crtime: now.Unix(), Mtime: now.Unix(), FileMode: 0o644,
			}}}
	}
	f := w.cur
	slot, err := w.reserve(replication)
	if err != nil {
		return err
	}
	// The chunk's id and size are known before it is uploaded, so the
	// upload and the filer update go at once. A gateway that dies between
	// them leaves a file whose last chunk may be missing; its commit was
	// never acknowledged, and readers skip it (readChunks).
	size := int64(filer.TotalSize(f.entry.Chunks))
	fid, _ := filer_pb.ToFileIdObject(slot.fid)
	chunk := &filer_pb.FileChunk{FileId: slot.fid, Fid: fid, Offset: size, Size: uint64(len(frame)), ModifiedTsNs: clock.Now().UnixNano()}
	f.entry.Chunks = append(f.entry.Chunks, chunk)
	f.entry.Attributes.FileSize = uint64(size) + chunk.Size
	f.entry.Attributes.Mtime = clock.Now().Unix()
	committed := false
	defer func() {
		if !committed { // failed or panicked: the next commit's filer update leaves this chunk out
			f.entry.Chunks = f.entry.Chunks[:len(f.entry.Chunks)-1]
			f.entry.Attributes.FileSize = uint64(size)
		}
	}()
	w.filesMu.Lock()
	ends := maps.Clone(f.ends)
	for _, e := range batch {
		ends[e.Dir] = max(ends[e.Dir], e.Base+int64(e.N))
	}
	w.filesMu.Unlock()
	if f.entry.Extended == nil {
		f.entry.Extended = map[string][]byte{}
	}
	f.entry.Extended[partitionsAttr] = encodeEnds(ends)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	uploaded := make(chan error, 1)
	go func() { uploaded <- guard.Try("WALUpload", func() error { return w.put(ctx, slot, frame) }) }()
	err = w.opts.Store.Save(ctx, w.dir, f.entry, len(f.entry.Chunks)-1)
	if uerr := <-uploaded; uerr != nil {
		delete(w.fids, replication) // the volume may be gone or full
		if err == nil {
			err = uerr
		}
	}
	if errors.Is(err, ErrChanged) {
		// A save of this file that failed here landed since (its
		// answer lost, or late): the file holds a chunk the log took
		// back. Its batches were not acknowledged and are in this
		// frame again; the file is left as it is, and the frame goes
		// to a new one, whose records win where the two disagree (the
		// later file's, in one term).
		glog.V(0).Infof("kafka write-ahead log %s/%s: %v; going on in a new file", w.dir, f.name, err)
		w.filesMu.Lock()
		w.files = append(w.files, f)
		w.cur = nil
		w.filesMu.Unlock()
	}
	if err != nil {
		return err
	}
	committed = true
	w.filesMu.Lock()
	f.ends = ends
	w.filesMu.Unlock()
	w.framed += uint64(len(frame))
	w.frames++
	return nil
}

// assignCount is how many file ids one volume assignment reserves: the
// log's chunks need one each, and an assignment is a round trip to the
// filer and the master.
const assignCount = 256

// fidPool holds file ids reserved on a volume server for the log's chunks.
type fidPool struct {
	a       Assignment
	base    *needle.FileId
	next, n uint64
}

// chunkSlot is a file id reserved for one chunk of the log.
type chunkSlot struct {
	a   Assignment
	fid string
}

// reserve takes the next file id reserved with replication, reserving
// more when none is left.
func (w *Log) reserve(replication Replication) (chunkSlot, error) {
	pool := w.fids[replication]
	if pool == nil || pool.next >= pool.n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		// The expected size per id: without it the master counts 1 MB
		// for each, and grows new volumes all the time.
		a, err := w.opts.Store.Assign(ctx, w.dir+"/", replication, assignCount, w.expectedFrame())
		cancel()
		if err != nil {
			return chunkSlot{}, fmt.Errorf("assign a volume for the write-ahead log: %w", err)
		}
		base, err := needle.ParseFileIdFromString(a.FileID)
		if err != nil {
			return chunkSlot{}, err
		}
		n := uint64(max(a.Count, 1))
		if a.Auth != "" {
			n = 1 // a signed write is for the assigned id only
		}
		if w.fids == nil {
			w.fids = map[Replication]*fidPool{}
		}
		pool = &fidPool{a: a, base: base, n: n}
		w.fids[replication] = pool
	}
	id := *pool.base
	id.Key += types.NeedleId(pool.next)
	pool.next++
	return chunkSlot{a: pool.a, fid: id.String()}, nil
}

// Wider is of two replication strings the one that keeps more copies
// ("" is the cluster's default, which any named one is taken over).
func Wider(a, b string) string {
	if copies(b) > copies(a) || a == "" {
		return b
	}
	return a
}

// copies is the number of copies a replication string keeps (its digits
// and the first).
func copies(replication string) int {
	n := 1
	for _, c := range replication {
		if c >= '0' && c <= '9' {
			n += int(c - '0')
		}
	}
	return n
}

// expectedFrame is the average frame committed so far, at least 4 KB.
func (w *Log) expectedFrame() uint64 {
	if w.frames == 0 {
		return 4 << 10
	}
	return max(4<<10, w.framed/w.frames)
}

// put stores a frame on its volume server, as it is (never compressed: its
// size is in the filer entry already).
func (w *Log) put(ctx context.Context, slot chunkSlot, frame []byte) error {
	if err := w.opts.Store.Upload(ctx, slot.a, slot.fid, frame); err != nil {
		return fmt.Errorf("upload to %s: %w", slot.a.URL, err)
	}
	return nil
}
