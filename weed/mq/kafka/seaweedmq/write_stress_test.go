package seaweedmq

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/logentry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq/wal"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// TestWriteStress runs the write path of one partition under the race
// detector: four writers append batches (as records and as produced
// batches) while the log finishes them on goroutines of its own, in any
// order, now and then refusing one; a reader follows the tail and a
// flusher-like goroutine takes batches out of it. Readers only ever see
// dense offsets in order up to the high watermark, every answered batch
// is at the offsets it got and in the tail or taken from it, a refused one
// makes the partition recover, and every batch is answered.
func TestWriteStress(t *testing.T) {
	c := &Client{}
	c.flusher = newFlusher(c)
	var logMu sync.Mutex
	refused := 0
	c.logBatch = func(b wal.Batch, done func(error)) {
		go func() {
			time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
			logMu.Lock()
			fail := rand.IntN(200) == 0
			if fail {
				refused++
			}
			logMu.Unlock()
			if fail {
				done(errors.New("refused"))
				return
			}
			done(nil)
		}()
	}
	p := &partition{c: c, hw: 0, ready: true, walKey: "/d@1", dir: "/d"}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(2)
	// The reader: the tail from where it is, dense, up to the watermark.
	var readErr error
	go func() {
		defer readers.Done()
		next := int64(0)
		for {
			select {
			case <-stop:
				return
			default:
			}
			tail, hw := p.tailFrom(next)
			for _, b := range tail {
				if b.base > next {
					next = b.base // taken out of the tail meanwhile: segments hold it
				}
				wb := wal.Batch{Base: b.base, N: b.n, Recs: b.recs}
				err := wb.Each(next, func(e logentry.Raw) error {
					if e.Offset+e.Span() <= next || e.Offset > next {
						return fmt.Errorf("entry at %d, reading %d", e.Offset, next)
					}
					next = e.End()
					return nil
				})
				if err != nil && readErr == nil {
					readErr = err
				}
			}
			if next > hw && hw >= 0 && readErr == nil {
				readErr = fmt.Errorf("read to %d past the high watermark %d", next, hw)
			}
		}
	}()
	// The flusher: takes the oldest batches out of the tail.
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			p.notifyMu.Lock()
			if n := len(p.tail) / 2; n > 0 {
				for _, b := range p.tail[:n] {
					p.tailBytes -= len(b.recs)
				}
				p.tail = append(p.tail[:0:0], p.tail[n:]...)
			}
			p.notifyMu.Unlock()
		}
	}()
	var writers sync.WaitGroup
	var mu sync.Mutex
	var apps []*storage.Appended
	batch := testBatch(3)
	for w := 0; w < 4; w++ {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := 0; i < 300; i++ {
				p.writeMu.Lock()
				if !p.ready {
					// Recovery, as openPartition does it: once the
					// log has answered what it was given (its
					// barrier), the next offset from where readers
					// are.
					for {
						p.notifyMu.Lock()
						n := len(p.pending)
						p.notifyMu.Unlock()
						if n == 0 {
							break
						}
						time.Sleep(100 * time.Microsecond)
					}
					p.next = p.knownHW()
					p.ready = true
				}
				var app *storage.Appended
				if i%2 == 0 {
					app = p.write([]record.Record{{Value: []byte("a")}, {Value: []byte("b")}}, true)
				} else {
					app = p.writeBatch(batch, 3, true)
				}
				p.writeMu.Unlock()
				mu.Lock()
				apps = append(apps, app)
				mu.Unlock()
			}
		}()
	}
	writers.Wait()
	for _, app := range apps {
		select {
		case <-app.Done:
		case <-time.After(10 * time.Second):
			t.Fatal("an append never answered")
		}
	}
	close(stop)
	readers.Wait()
	if readErr != nil {
		t.Fatal(readErr)
	}
	ok := 0
	for _, app := range apps {
		if app.Err == nil {
			ok++
			if app.Base < 0 || app.Base >= p.knownHW() {
				t.Fatalf("answered at %d, high watermark %d", app.Base, p.knownHW())
			}
		}
	}
	t.Logf("%d appends, %d answered as stored, %d refused by the log", len(apps), ok, refused)
	if ok == 0 {
		t.Fatal("nothing stored")
	}
}
