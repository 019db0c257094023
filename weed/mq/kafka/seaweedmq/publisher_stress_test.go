package seaweedmq

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
)

// flakyStream is a broker's publish stream that acknowledges each record
// with the next offset and breaks after failAfter acks (never if < 0).
type flakyStream struct {
	grpc.BidiStreamingClient[mq_pb.PublishMessageRequest, mq_pb.PublishMessageResponse]
	sent      chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
	failAfter int
	acked     int
}

func (s *flakyStream) Send(*mq_pb.PublishMessageRequest) error {
	select {
	case <-s.closed:
		return io.ErrClosedPipe
	case s.sent <- struct{}{}:
		return nil
	}
}

func (s *flakyStream) Recv() (*mq_pb.PublishMessageResponse, error) {
	select {
	case <-s.sent:
	case <-s.closed:
		return nil, io.ErrUnexpectedEOF
	}
	if s.acked == s.failAfter {
		s.CloseSend() //nolint:errcheck
		return nil, errors.New("stream broke")
	}
	s.acked++
	return &mq_pb.PublishMessageResponse{AssignedOffset: int64(s.acked - 1)}, nil
}

func (s *flakyStream) CloseSend() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

// stressBatch is one batch of the stress test and what happened to it.
type stressBatch struct {
	b      *pendingBatch
	logged atomic.Bool // the write-ahead log said it holds the batch
}

// The produce path under injected stream failures, run with -race by the
// test command: four writers append batches (one at a time, as under the
// partition's writeMu) while the ack reader takes acks, the write-ahead
// log reports its commits (some failing) on goroutines of its own, and the
// stream breaks at a random ack or is failed from outside. Every batch is
// answered; a successful one has the offsets it was logged at, a durable
// one only after the log held it; the readers' end covers every success
// the log holds; no stream slot stays taken.
func TestPublisherStress(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	for round := 0; round < rounds; round++ {
		st := &flakyStream{sent: make(chan struct{}, 1<<12), closed: make(chan struct{}), failAfter: -1}
		if round%3 != 0 {
			st.failAfter = rand.IntN(200)
		}
		part := &partition{topic: "t", hw: -1}
		pub := &publisher{stream: st, slots: make(chan struct{}, 16), done: make(chan struct{})}
		go pub.readAcks()

		var writeMu sync.Mutex
		var next int64
		var mu sync.Mutex
		var batches []*stressBatch
		var wal, writers sync.WaitGroup
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for w := 0; w < 4; w++ {
			writers.Add(1)
			go func() {
				defer writers.Done()
				for i := 0; i < 20; i++ {
					writeMu.Lock()
					n := 1 + rand.IntN(5)
					sb := &stressBatch{b: &pendingBatch{n: n, app: protocol.NewAppended(), part: part, durable: rand.IntN(2) == 0, log: true, expected: -1}}
					if err := pub.enqueue(ctx, sb.b); err != nil {
						writeMu.Unlock()
						continue
					}
					sb.b.expected = next
					next += int64(n)
					sent := true
					for r := 0; r < n; r++ {
						if err := pub.stream.Send(&pub.req); err != nil {
							pub.fail(err)
							sent = false
							break
						}
					}
					mu.Lock()
					batches = append(batches, sb)
					mu.Unlock()
					writeMu.Unlock()
					if sent {
						wal.Add(1)
						go func() {
							defer wal.Done()
							time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
							var err error
							if rand.IntN(20) == 0 {
								err = errors.New("filer refused the commit")
							} else {
								sb.logged.Store(true)
							}
							part.walDone(sb.b, err)
						}()
					}
				}
			}()
		}
		if round%4 == 1 {
			go func() {
				time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
				pub.fail(errors.New("failed from outside")) // a partition moving away
			}()
		}
		writers.Wait()
		wal.Wait()
		// A stream that has not broken is closed once its acks are in.
		for _, sb := range batches {
			select {
			case <-sb.b.app.Done:
			case <-time.After(5 * time.Second):
				t.Fatalf("round %d: a batch of %d records was never answered", round, sb.b.n)
			}
		}
		st.CloseSend() //nolint:errcheck
		<-pub.done
		cancel()

		var end int64
		for _, sb := range batches {
			app := sb.b.app
			if app.Err != nil {
				continue
			}
			if app.Base != sb.b.expected {
				t.Fatalf("round %d: a batch logged at offset %d was answered with offset %d", round, sb.b.expected, app.Base)
			}
			if sb.b.durable && !sb.logged.Load() {
				t.Fatalf("round %d: a durable batch was acknowledged without the log holding it", round)
			}
			if sb.logged.Load() { // (the log fails a commit only when it stops)
				end = max(end, app.Base+int64(sb.b.n))
			}
		}
		if end > 0 && part.loggedEnd < end {
			t.Fatalf("round %d: readers' end %d is below the last success's %d", round, part.loggedEnd, end)
		}
		if len(pub.slots) != 0 {
			t.Fatalf("round %d: %d stream slots still taken", round, len(pub.slots))
		}
	}
}
