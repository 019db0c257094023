package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/e2e/history"
)

// queueWorkload is Jepsen's queue workload in Go: producers (idempotent,
// plain, transactional with aborts) send unique values to random
// partitions of one topic while consumers read it (two classic group
// members, two KIP-848 group members, one consumer of assigned
// partitions), all with read_committed, and two transformers turn each
// record into another in the same topic, exactly once (consume-transform-
// produce: so that a transaction's reads and writes can form a cycle with
// another's); every send, acknowledgement, transaction outcome, poll, read
// and assignment goes into the history.
type queueWorkload struct {
	t          *testing.T
	seeds      []string
	topic      string
	partitions int32
	h          *history.History

	ctx    context.Context
	cancel context.CancelFunc
	prod   sync.WaitGroup // the producers
	trans  sync.WaitGroup // the transformers
	cons   sync.WaitGroup // the consumers
	stopT  context.CancelFunc
	stopC  context.CancelFunc
}

const (
	workloadRate   = 40 // values per second per producer
	faultGroup     = "faults-classic"
	faultGroup2    = "faults-next"
	transformGroup = "faults-transform"
)

func startQueueWorkload(t *testing.T, seeds []string, topic string, partitions int32) *queueWorkload {
	w := &queueWorkload{t: t, seeds: seeds, topic: topic, partitions: partitions, h: history.New()}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	consCtx, stopC := context.WithCancel(context.Background())
	transCtx, stopT := context.WithCancel(context.Background())
	w.stopC, w.stopT = stopC, stopT
	t.Cleanup(func() { w.cancel(); stopT(); stopC() })
	for _, c := range []struct{ name, group string }{
		{"classic-1", faultGroup}, {"classic-2", faultGroup},
		{"next-1", faultGroup2}, {"next-2", faultGroup2},
		{"assigned", ""},
	} {
		w.h.Consumer(c.name, c.group)
		w.cons.Add(1)
		go w.consume(consCtx, c.name, c.group)
	}
	for _, name := range []string{"transform-1", "transform-2"} {
		w.h.Producer(name, history.Transactional)
		w.h.Consumer(name, transformGroup)
		w.trans.Add(1)
		go w.transform(transCtx, name)
	}
	for _, p := range []struct{ name, kind string }{
		{"idempotent-1", history.Idempotent}, {"idempotent-2", history.Idempotent},
		{"plain-1", history.Plain},
		{"txn-1", history.Transactional}, {"txn-2", history.Transactional},
	} {
		w.h.Producer(p.name, p.kind)
		w.prod.Add(1)
		if p.kind == history.Transactional {
			go w.transact(p.name)
		} else {
			go w.produce(p.name, p.kind)
		}
	}
	return w
}

func (w *queueWorkload) client(opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(w.seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(500 * time.Millisecond)}, opts...)...)
	if err != nil {
		w.t.Error(err)
		return nil
	}
	return cl
}

func (w *queueWorkload) record(value string) *kgo.Record {
	return &kgo.Record{Topic: w.topic, Partition: rand.Int32N(w.partitions), Value: []byte(value)}
}

// produce sends values at workloadRate until the workload stops.
func (w *queueWorkload) produce(name, kind string) {
	defer w.prod.Done()
	opts := []kgo.Opt{}
	if kind == history.Plain {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl := w.client(opts...)
	if cl == nil {
		return
	}
	tick := time.NewTicker(time.Second / workloadRate)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-w.ctx.Done():
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			cl.Flush(ctx) //nolint:errcheck // what is not flushed fails at Close
			cancel()
			cl.Close()
			return
		case <-tick.C:
		}
		v := name + "/" + strconv.Itoa(n)
		w.h.Send(name, v, "")
		cl.Produce(context.Background(), w.record(v), func(r *kgo.Record, err error) {
			if err != nil {
				w.h.Nack(name, v, err)
				return
			}
			w.h.Ack(name, v, r.Partition, r.Offset)
		})
	}
}

// transact runs transactions of one to four values, a quarter of them
// aborted; a commit whose answer is lost has an unknown outcome, and the
// client is made again (its transactional id fences what it left).
func (w *queueWorkload) transact(name string) {
	defer w.prod.Done()
	newClient := func() *kgo.Client {
		return w.client(kgo.TransactionalID(name), kgo.TransactionTimeout(10*time.Second),
			kgo.RequestTimeoutOverhead(5*time.Second))
	}
	cl := newClient()
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	n := 0
	for txn := 0; w.ctx.Err() == nil && cl != nil; txn++ {
		id := strconv.Itoa(txn)
		if err := cl.BeginTransaction(); err != nil {
			w.t.Logf("%s: begin: %v", name, err)
			cl.Close()
			cl = newClient()
			continue
		}
		var failed error
		var mu sync.Mutex
		var sends sync.WaitGroup
		for range 1 + rand.IntN(4) {
			v := name + "/" + strconv.Itoa(n)
			n++
			w.h.Send(name, v, id)
			sends.Add(1)
			cl.Produce(context.Background(), w.record(v), func(r *kgo.Record, err error) {
				defer sends.Done()
				if err != nil {
					w.h.Nack(name, v, err)
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
				w.h.Ack(name, v, r.Partition, r.Offset)
			})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := cl.Flush(ctx); err != nil {
			failed = err
		}
		cancel()
		sends.Wait()
		commit := failed == nil && rand.IntN(4) != 0
		end := kgo.TryAbort
		if commit {
			end = kgo.TryCommit
		}
		ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
		if failed != nil {
			cl.AbortBufferedRecords(ctx) //nolint:errcheck
		}
		err := cl.EndTransaction(ctx, end)
		cancel()
		switch {
		case !commit:
			// Never committed: aborted, by this EndTxn or by the
			// coordinator once the transaction times out or the id is
			// fenced.
			w.h.TxnEnd(name, id, history.Aborted, err)
		case err != nil:
			w.h.TxnEnd(name, id, history.Unknown, err)
		default:
			w.h.TxnEnd(name, id, history.Committed, nil)
		}
		if err != nil {
			cl.Close()
			cl = newClient()
		}
		time.Sleep(time.Duration(rand.IntN(100)) * time.Millisecond)
	}
}

// transform consumes the topic and writes a value to it for each record it
// reads (but the transformers' own), to the record's partition, in a
// transaction that commits the group's offsets too (Kafka's exactly-once
// consume-transform-produce, franz-go's GroupTransactSession): what a
// transaction read is recorded with it.
func (w *queueWorkload) transform(ctx context.Context, name string) {
	defer w.trans.Done()
	parts := func(m map[string][]int32) []int32 { return m[w.topic] }
	newSession := func() *kgo.GroupTransactSession {
		s, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(w.seeds...), kgo.MetadataMinAge(500*time.Millisecond),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.TransactionalID(name), kgo.TransactionTimeout(10*time.Second), kgo.RequestTimeoutOverhead(5*time.Second),
			kgo.ConsumerGroup(transformGroup), kgo.ConsumeTopics(w.topic), kgo.SessionTimeout(10*time.Second),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(), kgo.FetchMaxWait(500*time.Millisecond),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { w.h.Assign(name, parts(m)) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { w.h.Revoke(name, parts(m)) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { w.h.Revoke(name, parts(m)) }))
		if err != nil {
			w.t.Error(err)
			return nil
		}
		return s
	}
	sess := newSession()
	if sess == nil {
		return
	}
	defer func() { sess.Close() }()
	n := 0
	for txn := 0; ctx.Err() == nil; {
		var recs []history.Rec
		fetches := sess.PollFetches(ctx)
		w.fetchErrors(name, fetches)
		fetches.EachRecord(func(r *kgo.Record) {
			recs = append(recs, history.Rec{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
		})
		if len(recs) == 0 {
			continue
		}
		id := strconv.Itoa(txn)
		txn++
		if err := sess.Begin(); err != nil {
			w.t.Logf("%s: begin: %v", name, err)
			sess.Close()
			if sess = newSession(); sess == nil {
				return
			}
			continue
		}
		w.h.Read(name, id, recs)
		for _, r := range recs {
			if strings.HasPrefix(r.Value, "transform-") {
				continue
			}
			v := name + "/" + strconv.Itoa(n)
			n++
			w.h.Send(name, v, id)
			sess.Produce(context.Background(), &kgo.Record{Topic: w.topic, Partition: r.Partition, Value: []byte(v)}, func(r *kgo.Record, err error) {
				if err != nil {
					w.h.Nack(name, v, err)
					return
				}
				w.h.Ack(name, v, r.Partition, r.Offset)
			})
		}
		endCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		committed, err := sess.End(endCtx, kgo.TryCommit)
		cancel()
		switch {
		case err != nil:
			w.h.TxnEnd(name, id, history.Unknown, err)
			sess.Close()
			if sess = newSession(); sess == nil {
				return
			}
		case committed:
			w.h.TxnEnd(name, id, history.Committed, nil)
		default:
			w.h.TxnEnd(name, id, history.Aborted, nil)
		}
	}
}

// consume polls until the consumers stop, recording every poll and every
// change of assignment.
func (w *queueWorkload) consume(ctx context.Context, name, group string) {
	defer w.cons.Done()
	parts := func(m map[string][]int32) []int32 { return m[w.topic] }
	opts := []kgo.Opt{kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500 * time.Millisecond)}
	if group == "" {
		all := map[int32]kgo.Offset{}
		for p := range w.partitions {
			all[p] = kgo.NewOffset().AtStart()
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.topic: all}))
	} else {
		opts = append(opts, kgo.ConsumeTopics(w.topic), kgo.ConsumerGroup(group),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(10*time.Second),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { w.h.Assign(name, parts(m)) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { w.h.Revoke(name, parts(m)) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { w.h.Revoke(name, parts(m)) }))
		if group == faultGroup2 {
			opts = append(opts, kgo.ServerSideBalancer())
		}
	}
	cl := w.client(opts...)
	if cl == nil {
		return
	}
	defer cl.Close()
	if group == "" {
		w.h.Assign(name, func() []int32 {
			var ps []int32
			for p := range w.partitions {
				ps = append(ps, p)
			}
			return ps
		}())
	}
	for ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		w.fetchErrors(name, fetches)
		var recs []history.Rec
		fetches.EachRecord(func(r *kgo.Record) {
			recs = append(recs, history.Rec{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
		})
		w.h.Poll(name, recs)
	}
}

// fetchErrors records the errors of a poll's partitions, but those of the
// poll's own end (its context done, the client closed).
func (w *queueWorkload) fetchErrors(proc string, fetches kgo.Fetches) {
	fetches.EachError(func(topic string, p int32, err error) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) {
			return
		}
		var loss *kgo.ErrDataLoss
		var ke *kerr.Error
		kind := "other"
		switch {
		case errors.As(err, &loss):
			kind = "data loss"
		case errors.As(err, &ke):
			kind = ke.Message
		}
		w.h.FetchError(proc, p, kind, err)
	})
}

// stopProducing stops the producers and waits until every send has its
// outcome.
func (w *queueWorkload) stopProducing() {
	w.cancel()
	w.prod.Wait()
}

// stopTransforming lets the transformers go on until they read every value
// the producers wrote, or timeout, then stops them.
func (w *queueWorkload) stopTransforming(timeout time.Duration) {
	for deadline := time.Now().Add(timeout); w.h.Unread("group "+transformGroup) > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Second)
	}
	w.stopT()
	w.trans.Wait()
}

// finalRead reads every partition from its start with read_committed
// until it is past every value a reader must find and nothing new came
// for 5 s (2 minutes at most), and records it.
func (w *queueWorkload) finalRead() {
	all := map[int32]kgo.Offset{}
	for p := range w.partitions {
		all[p] = kgo.NewOffset().AtStart()
	}
	cl := w.client(kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(time.Second),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.topic: all}))
	defer cl.Close()
	var recs []history.Rec
	must := w.h.MustSee()[""]
	at := map[int32]int64{}
	past := func() bool {
		for p, o := range must {
			if got, ok := at[p]; !ok || got < o {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(2 * time.Minute)
	last := time.Now()
	for (time.Since(last) < 5*time.Second || !past()) && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fetches := cl.PollFetches(ctx)
		cancel()
		w.fetchErrors("final", fetches)
		fetches.EachRecord(func(r *kgo.Record) {
			recs = append(recs, history.Rec{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
			at[r.Partition] = r.Offset
			last = time.Now()
		})
	}
	w.h.Final(recs)
}

// drain lets the consumers read on until every reader has read every
// value it must find, or timeout, then stops them.
func (w *queueWorkload) drain(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		done := true
		for _, r := range []string{"group " + faultGroup, "group " + faultGroup2, "assigned"} {
			if w.h.Unread(r) > 0 {
				done = false
			}
		}
		if done {
			break
		}
		time.Sleep(time.Second)
	}
	w.stopC()
	w.cons.Wait()
}

func (w *queueWorkload) String() string {
	return fmt.Sprintf("topic %s, %d partitions", w.topic, w.partitions)
}
