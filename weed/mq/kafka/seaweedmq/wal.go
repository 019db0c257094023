package seaweedmq

// The write-ahead log makes acks=all cheap. The MQ broker acknowledges a
// record once it holds it in memory and writes its memory to the filer's log
// segments every few seconds (-logFlushInterval); a broker that dies loses
// what it held. So every batch the broker acknowledged goes, with the
// offsets it got, into this gateway's log in SeaweedFS: files under
// WALDir/<gateway>, whose chunks are on the volume servers (the cluster's
// replication applies) and are listed in the filer entry. Batches that
// arrive together, from any partition and connection, share one chunk: one
// upload to a volume server and one filer update per group commit, done at
// once. A batch is logged as it is sent (at the offset the stream will give
// it, checked at the broker's acknowledgement); a durable (acks=all) batch
// is acknowledged once both the broker and the log hold it.
//
// The log is read by whichever gateway starts to serve a partition next
// (wal_read.go, recover.go): what it holds and neither the segments nor the
// broker do is written back at its offsets. A file is removed once the
// segments cover everything in it (wal_trim.go).

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
	"github.com/seaweedfs/seaweedfs/weed/operation"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/security"
	"github.com/seaweedfs/seaweedfs/weed/storage/needle"
	"github.com/seaweedfs/seaweedfs/weed/storage/types"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// WALDir is where the gateways keep their write-ahead logs, one folder
// each.
const WALDir = "/etc/kafka-gateway/wal"

const (
	// maxWALCommitBytes bounds one group commit (one chunk).
	maxWALCommitBytes = 8 << 20
	// maxWALQueuedBytes bounds what waits for a commit; past it the
	// broker's acks wait, and with them the partitions' streams.
	maxWALQueuedBytes = 256 << 20
	// walFileChunks and walFileAge bound one log file: every commit
	// rewrites the file's entry with all its chunks, and a whole file is
	// removed once covered, so files stay small and young.
	walFileChunks = 16
	walFileAge    = 2 * time.Second
	// walTrimEvery is how often covered files are looked for.
	walTrimEvery = 2 * time.Second
	// walRetryMax is the longest pause between attempts to commit while
	// SeaweedFS does not take the log's writes.
	walRetryMax = time.Second
)

// walEntry is a batch waiting for its commit.
type walEntry struct {
	walBatch
	done func(error) // called once the batch is in the log, or cannot be
}

// walFile is one of this gateway's log files.
type walFile struct {
	name    string
	entry   *filer_pb.Entry
	created time.Time
	// ends holds, for each partition dir in the file, one past the
	// highest offset it holds there.
	ends map[string]int64
}

// wal is this gateway's write-ahead log.
type wal struct {
	c   *Client
	dir string // WALDir/<gateway>

	mu      sync.Mutex
	changed *sync.Cond // queue got entries, room, or commits
	queue   []*walEntry
	queued  int    // bytes in queue
	added   uint64 // entries ever queued
	written uint64 // entries ever finished (committed or failed)
	closing bool

	// Owned by the commit loop.
	fids fidPool
	// framed and frames are the bytes and frames committed, whose average
	// is what each reserved file id is announced to hold.
	framed, frames uint64

	// Under filesMu. The commit loop appends to cur; a file is closed when
	// full or old, by the next commit or, if none comes, by the trimmer.
	filesMu    sync.Mutex
	cur        *walFile
	files      []*walFile // closed and not yet removed, oldest first
	committing bool

	done    chan struct{}  // closed when the commit loop has stopped
	trimmer sync.WaitGroup // the trim loop, which stops after it
}

func newWAL(c *Client, name string) *wal {
	w := &wal{c: c, dir: WALDir + "/" + name, done: make(chan struct{})}
	w.changed = sync.NewCond(&w.mu)
	return w
}

// start runs the commit loop and the trimmer; the files of an earlier run
// of this gateway are trimmed like its own.
func (w *wal) start() {
	go w.commitLoop()
	w.trimmer.Add(1)
	go func() {
		defer w.trimmer.Done()
		w.trimLoop()
	}()
}

// add queues a batch for the log. It waits while too much is queued.
func (w *wal) add(b walBatch, done func(error)) {
	w.mu.Lock()
	for w.queued > maxWALQueuedBytes && !w.closing {
		w.changed.Wait()
	}
	if w.closing {
		w.mu.Unlock()
		done(errWALClosed)
		return
	}
	w.queue = append(w.queue, &walEntry{walBatch: b, done: done})
	w.queued += len(b.recs)
	w.added++
	w.changed.Broadcast()
	w.mu.Unlock()
}

var errWALClosed = errors.New("write-ahead log closed")

// barrier waits until every batch queued before it is committed or failed.
func (w *wal) barrier(ctx context.Context) error {
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

// close commits what is queued (for a while) and stops.
func (w *wal) close(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	w.barrier(ctx) //nolint:errcheck // what is left fails below
	w.mu.Lock()
	w.closing = true
	w.changed.Broadcast()
	w.mu.Unlock()
	<-w.done
	w.trimmer.Wait()
}

// commitLoop takes what is queued, writes it as one chunk and finishes its
// batches; while a commit is under way the next one gathers.
func (w *wal) commitLoop() {
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
		for n < len(w.queue) && (n == 0 || size+len(w.queue[n].recs) <= maxWALCommitBytes) {
			size += len(w.queue[n].recs)
			n++
		}
		batch := w.queue[:n:n]
		w.queue = w.queue[n:]
		w.queued -= size
		w.changed.Broadcast()
		w.mu.Unlock()

		frame = frame[:8]
		records := 0
		for _, e := range batch {
			frame = appendWALBatch(frame, &e.walBatch)
			records += e.n
		}
		frame = sealWALFrame(frame)
		err := w.commitRetrying(frame, batch)
		if err == nil {
			metrics.WALCommitBatches.Observe(float64(len(batch)))
			metrics.WALCommitRecords.Observe(float64(records))
			metrics.WALBytes.Add(float64(len(frame)))
		}
		for _, e := range batch {
			metrics.Guard("WALCommitted", func() { e.done(err) }) //nolint:errcheck // logged and counted; the other batches are still told
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
func (w *wal) commitRetrying(frame []byte, batch []*walEntry) error {
	pause := 20 * time.Millisecond
	var logged string
	for attempt := 1; ; attempt++ {
		start := time.Now()
		// A panic is tried again, as a filer that does not answer.
		err := metrics.Try("WALCommit", func() error { return w.commit(frame, batch) })
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
		pause = min(2*pause, walRetryMax)
	}
}

// commit writes one frame as a chunk of the current file.
func (w *wal) commit(frame []byte, batch []*walEntry) (err error) {
	w.filesMu.Lock()
	w.committing = true
	if w.cur != nil && (len(w.cur.entry.Chunks) >= walFileChunks || time.Since(w.cur.created) > walFileAge) {
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
		w.cur = &walFile{name: name, created: now, ends: map[string]int64{},
			entry: &filer_pb.Entry{Name: name, Attributes: &filer_pb.FuseAttributes{
				Crtime: now.Unix(), Mtime: now.Unix(), FileMode: 0o644,
			}}}
	}
	f := w.cur
	slot, err := w.reserve()
	if err != nil {
		return err
	}
	// The chunk's id and size are known before it is uploaded, so the
	// upload and the filer update go at once. A gateway that dies between
	// them leaves a file whose last chunk may be missing; its commit was
	// never acknowledged, and readers skip it (readWALFile).
	size := int64(filer.TotalSize(f.entry.Chunks))
	fid, _ := filer_pb.ToFileIdObject(slot.fid)
	chunk := &filer_pb.FileChunk{FileId: slot.fid, Fid: fid, Offset: size, Size: uint64(len(frame)), ModifiedTsNs: time.Now().UnixNano()}
	f.entry.Chunks = append(f.entry.Chunks, chunk)
	f.entry.Attributes.FileSize = uint64(size) + chunk.Size
	f.entry.Attributes.Mtime = time.Now().Unix()
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
		ends[e.dir] = max(ends[e.dir], e.base+int64(e.n))
	}
	w.filesMu.Unlock()
	if f.entry.Extended == nil {
		f.entry.Extended = map[string][]byte{}
	}
	f.entry.Extended[walPartitionsAttr] = encodeWALEnds(ends)
	uploaded := make(chan error, 1)
	go func() { uploaded <- metrics.Try("WALUpload", func() error { return w.put(slot, frame) }) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = w.c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		return filer_pb.CreateEntry(ctx, fc, &filer_pb.CreateEntryRequest{Directory: w.dir, Entry: f.entry})
	})
	if uerr := <-uploaded; uerr != nil {
		w.fids.base = nil // the volume may be gone or full
		err = uerr
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

// walAssignCount is how many file ids one volume assignment reserves: the
// log's chunks need one each, and an assignment is a round trip to the
// filer and the master.
const walAssignCount = 256

// fidPool holds file ids reserved on a volume server for the log's chunks.
type fidPool struct {
	base      *needle.FileId
	url, auth string
	fsync     bool
	next, n   uint64
}

// walSlot is a file id reserved for one chunk of the log.
type walSlot struct {
	fid, url, auth string
	fsync          bool
}

// reserve takes the next reserved file id, reserving more when none is
// left.
func (w *wal) reserve() (walSlot, error) {
	if w.fids.base == nil || w.fids.next >= w.fids.n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var resp *filer_pb.AssignVolumeResponse
		err := w.c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
			var err error
			// The expected size per id: without it the master counts
			// 1 MB for each, and grows new volumes all the time.
			resp, err = fc.AssignVolume(ctx, &filer_pb.AssignVolumeRequest{
				Count: walAssignCount, Path: w.dir + "/", ExpectedDataSize: w.expectedFrame(),
			})
			if err == nil && resp.Error != "" {
				err = errors.New(resp.Error)
			}
			return err
		})
		cancel()
		if err != nil {
			return walSlot{}, fmt.Errorf("%w: assign a volume for the write-ahead log: %v", ErrUnavailable, err)
		}
		base, err := needle.ParseFileIdFromString(resp.FileId)
		if err != nil {
			return walSlot{}, err
		}
		n := uint64(max(resp.Count, 1))
		if resp.Auth != "" {
			n = 1 // a signed write is for the assigned id only
		}
		w.fids = fidPool{base: base, url: resp.Location.Url, auth: resp.Auth, fsync: resp.Fsync, n: n}
	}
	id := *w.fids.base
	id.Key += types.NeedleId(w.fids.next)
	w.fids.next++
	return walSlot{fid: id.String(), url: w.fids.url, auth: w.fids.auth, fsync: w.fids.fsync}, nil
}

// expectedFrame is the average frame committed so far, at least 4 KB.
func (w *wal) expectedFrame() uint64 {
	if w.frames == 0 {
		return 4 << 10
	}
	return max(4<<10, w.framed/w.frames)
}

// put stores a frame on its volume server, as it is (never compressed: its
// size is in the filer entry already).
func (w *wal) put(slot walSlot, frame []byte) error {
	url := "http://" + slot.url + "/" + slot.fid
	if slot.fsync {
		url += "?fsync=true"
	}
	uploader, err := operation.NewUploader()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := uploader.UploadData(ctx, frame, &operation.UploadOption{
		UploadUrl: url, Jwt: security.EncodedJwt(slot.auth), MaxAttempts: 1, MimeType: "application/octet-stream",
	})
	if err == nil && res.Error != "" {
		err = errors.New(res.Error)
	}
	if err != nil {
		return fmt.Errorf("%w: upload to %s: %v", ErrUnavailable, slot.url, err)
	}
	return nil
}
