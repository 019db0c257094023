package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTransactionsGroupTransactSession: consume-transform-produce with
// franz-go's GroupTransactSession. The session consumes an input topic
// read_committed and, per poll, produces each record's value + "-out" to an
// output topic and commits the consumed offsets in the same transaction;
// every third transaction aborts instead, and its records are consumed
// again (the session rewinds to the committed offsets). The gateway is
// restarted once between transactions. At the end a read_committed reader
// of the output gets each input record's output exactly once, a
// read_uncommitted one gets the aborted copies too, and the group's
// commits are the input's high watermarks.
func TestTransactionsGroupTransactSession(t *testing.T) {
	in := newTopic(t)
	createTopic(t, in, 4, nil)
	createTopic(t, in+"-out", 3, nil)
	transactSession(t, in, in+"-group", in+"-txn", nil, func() { restartGateway(t) })
}

// transactSession consumes 300 records of topic in (4 partitions) in group
// and writes each to in+"-out" (3 partitions) in transactions of txnID,
// every third aborted, with disturb run after the second commit; every
// input's output is read once read_committed and the group's commits reach
// the input's end.
func transactSession(t *testing.T, in, group, txnID string, opts []kgo.Opt, disturb func()) {
	const n = 300
	out := in + "-out"
	produced := map[int32][]string{}
	produceBatch(t, in, 0, n, produced)

	sess, err := kgo.NewGroupTransactSession(append(append(memberOpts("eos", group, in),
		kgo.TransactionalID(txnID), kgo.TransactionTimeout(10*time.Second),
		txnReadCommitted(), kgo.RetryTimeout(time.Minute)), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	var closeOnce sync.Once
	closeSess := func() { closeOnce.Do(sess.Close) }
	t.Cleanup(closeSess)

	done := map[recordAt]int{}       // input records whose output was committed, and how often
	committedOut := map[string]int{} // outputs of committed transactions
	next := map[int32]int64{}        // where each input partition's next transaction must start
	var txns, commits, aborts, deliberate, producedOut int
	restarted := false
	deadline := time.Now().Add(2 * time.Minute)
	for len(done) < n {
		if time.Now().After(deadline) || txns >= 100 {
			t.Fatalf("after %d transactions (%d committed, %d aborted), %d of %d input records committed", txns, commits, aborts, len(done), n)
		}
		pctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		fs := sess.PollRecords(pctx, 50)
		cancel()
		fs.EachError(func(tp string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				t.Logf("poll %s/%d: %v", tp, p, err)
			}
		})
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		txns++
		first := map[int32]int64{}
		last := map[int32]int64{}
		for _, r := range recs {
			vals := produced[r.Partition]
			if r.Offset >= int64(len(vals)) || vals[r.Offset] != string(r.Value) {
				t.Fatalf("polled %q at %d/%d, which does not hold that record", r.Value, r.Partition, r.Offset)
			}
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
			} else if r.Offset != last[r.Partition]+1 {
				t.Errorf("transaction %d: partition %d polled offset %d after %d", txns, r.Partition, r.Offset, last[r.Partition])
			}
			last[r.Partition] = r.Offset
		}
		// A transaction starts where the last committed one stopped: the
		// aborted ones were consumed again.
		for p, o := range first {
			if o != next[p] {
				t.Errorf("transaction %d: partition %d consumed from %d, the committed position is %d", txns, p, o, next[p])
			}
		}
		if err := sess.Begin(); err != nil {
			t.Fatalf("transaction %d: begin: %v", txns, err)
		}
		outs := make([]*kgo.Record, 0, len(recs))
		for _, r := range recs {
			outs = append(outs, &kgo.Record{Topic: out, Key: r.Key, Value: append(slices.Clone(r.Value), "-out"...)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := sess.ProduceSync(ctx, outs...).FirstErr(); err != nil {
			cancel()
			t.Fatalf("transaction %d: produce: %v", txns, err)
		}
		producedOut += len(outs)
		abort := txns%3 == 0
		how := kgo.TryCommit
		if abort {
			how = kgo.TryAbort
		}
		committed, err := sess.End(ctx, how)
		cancel()
		if err != nil {
			t.Fatalf("transaction %d: end (commit %v): %v", txns, how, err)
		}
		switch {
		case committed && abort:
			t.Fatalf("transaction %d committed though it was ended with TryAbort", txns)
		case committed:
			commits++
			for _, r := range recs {
				done[recordAt{r.Partition, r.Offset}]++
			}
			for _, o := range outs {
				committedOut[string(o.Value)]++
			}
			for p, o := range last {
				next[p] = o + 1
			}
		default:
			// Deliberately, or because the group rebalanced (after the
			// restart) before the commit.
			aborts++
			if abort {
				deliberate++
			}
		}
		if commits == 2 && !restarted {
			restarted = true
			disturb()
		}
	}
	t.Logf("%d transactions: %d committed, %d aborted (%d deliberately)", txns, commits, aborts, deliberate)
	if !restarted || deliberate == 0 {
		t.Fatalf("restarted %v, %d deliberate aborts: the test did not exercise what it is for", restarted, deliberate)
	}
	for at, c := range done {
		if c > 1 {
			t.Errorf("input %d/%d committed in %d transactions", at.partition, at.offset, c)
		}
	}
	closeSess()

	waitCommitted(t, group, in, highWatermarks(t, in, produced))

	ends := txnAppendEnds(t, out, 3)
	got := map[string]int{}
	total := 0
	for _, recs := range txnReadTo(t, out, ends, time.Minute, txnReadCommitted()) {
		for _, r := range recs {
			got[string(r.Value)]++
			total++
		}
	}
	for p, vals := range produced {
		for o, v := range vals {
			if c := got[v+"-out"]; c != 1 {
				t.Errorf("input %d/%d (%s): its output read %d times read_committed, want once", p, o, v, c)
			}
		}
	}
	if total != n || !maps.Equal(got, committedOut) {
		t.Errorf("read_committed: %d records, want %d; equal to the committed transactions' outputs: %v", total, n, maps.Equal(got, committedOut))
	}
	all := 0
	for _, recs := range txnReadTo(t, out, ends, time.Minute) {
		all += len(recs)
	}
	if all != producedOut || all <= n {
		t.Errorf("read_uncommitted: %d records, want the %d produced in all transactions (more than the %d committed)", all, producedOut, n)
	}
}

// TestTransactionsConfluent: librdkafka's transactional producer commits
// one transaction and aborts another (after its records were delivered);
// librdkafka consumers with isolation.level read_committed get only the
// committed records, with read_uncommitted both, at the offsets delivered
// (the markers skipped). franz-go reads them the same.
func TestTransactionsConfluent(t *testing.T) {
	const parts, k = 2, 5
	topic := newTopic(t)
	createTopic(t, topic, parts, nil)
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": gw.addr, "transactional.id": topic + "-txn",
		"transaction.timeout.ms": 60000, "linger.ms": 5})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := ctxT(t)
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatalf("InitTransactions: %v", err)
	}
	// send produces k records to each partition in the open transaction
	// and waits until all are delivered, at offsets from, from+1, ...
	send := func(tx string, from int64) map[int32][]string {
		t.Helper()
		delivered := make(chan kafka.Event, parts*k)
		vals := map[int32][]string{}
		for part := range int32(parts) {
			for i := range k {
				v := fmt.Sprintf("%s-p%d-%d", tx, part, i)
				vals[part] = append(vals[part], v)
				if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: part},
					Value: []byte(v)}, delivered); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i := 0; i < parts*k; i++ {
			select {
			case e := <-delivered:
				m, ok := e.(*kafka.Message)
				if !ok {
					t.Fatalf("%s: event %v", tx, e)
				}
				if m.TopicPartition.Error != nil {
					t.Fatalf("%s: delivery: %v", tx, m.TopicPartition.Error)
				}
				part := m.TopicPartition.Partition
				if idx := slices.Index(vals[part], string(m.Value)); idx < 0 || int64(m.TopicPartition.Offset) != from+int64(idx) {
					t.Errorf("%s: %q delivered at %d/%d, want offset %d", tx, m.Value, part, m.TopicPartition.Offset, from+int64(idx))
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("%s: %d of %d delivered", tx, i, parts*k)
			}
		}
		return vals
	}
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	committed := send("commit", 0)
	if err := p.CommitTransaction(ctx); err != nil {
		t.Fatalf("CommitTransaction: %v", err)
	}
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	aborted := send("abort", k+1)
	if err := p.AbortTransaction(ctx); err != nil {
		t.Fatalf("AbortTransaction: %v", err)
	}

	ends := txnAppendEnds(t, topic, parts)
	rc := txnReadConfluentTo(t, topic, ends, "read_committed")
	ru := txnReadConfluentTo(t, topic, ends, "read_uncommitted")
	fc := txnReadTo(t, topic, ends, time.Minute, txnReadCommitted())
	for part := range int32(parts) {
		if ends[part] != 2*k+2 {
			t.Errorf("partition %d: record after the transactions at %d, want %d", part, ends[part], 2*k+2)
		}
		want := txnNumbered(committed[part], 0)
		if !slices.Equal(rc[part], want) {
			t.Errorf("partition %d: librdkafka read_committed got %v, want %v", part, rc[part], want)
		}
		if got := txnAt(fc[part]); !slices.Equal(got, want) {
			t.Errorf("partition %d: franz-go read_committed got %v, want %v", part, got, want)
		}
		want = slices.Concat(want, txnNumbered(aborted[part], k+1))
		if !slices.Equal(ru[part], want) {
			t.Errorf("partition %d: librdkafka read_uncommitted got %v, want %v", part, ru[part], want)
		}
	}
}

// txnReadConfluentTo reads topic from its start with a librdkafka consumer
// with isolation.level isolation, up to the records txnAppendEnds appended
// (at ends), and returns the records before them as value@offset.
func txnReadConfluentTo(t *testing.T, topic string, ends map[int32]int64, isolation string) map[int32][]string {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": gw.addr, "group.id": "unused-" + topic,
		"enable.auto.commit": false, "auto.offset.reset": "earliest", "isolation.level": isolation, "fetch.wait.max.ms": 200})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var tps []kafka.TopicPartition
	for p := range ends {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: kafka.OffsetBeginning})
	}
	if err := c.Assign(tps); err != nil {
		t.Fatal(err)
	}
	got := map[int32][]string{}
	reached := map[int32]bool{}
	for deadline := time.Now().Add(time.Minute); len(reached) < len(ends); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the end was not reached within a minute: reached %v, got %v", isolation, reached, got)
		}
		m, err := c.ReadMessage(time.Second)
		if err != nil {
			if ke, ok := err.(kafka.Error); ok && ke.IsTimeout() {
				continue
			}
			t.Fatalf("%s: %v", isolation, err)
		}
		part, off := m.TopicPartition.Partition, int64(m.TopicPartition.Offset)
		end, ok := ends[part]
		switch {
		case !ok || off > end:
			t.Fatalf("%s: %q at %d/%d, past the end", isolation, m.Value, part, off)
		case off == end:
			if string(m.Value) != txnEndValue {
				t.Fatalf("%s: %q at %d/%d, where the end record was acknowledged", isolation, m.Value, part, off)
			}
			reached[part] = true
		default:
			got[part] = append(got[part], fmt.Sprintf("%s@%d", m.Value, off))
		}
	}
	return got
}
