package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTransactionsFranzProducer: a franz-go transactional producer writes
// three transactions over three partitions: the first commits, the second
// aborts, the third commits. Each transaction's records and marker take
// offsets, so in each partition tx1 is at 0..k-1 with its commit marker at
// k, tx2 at k+1..2k with its abort marker at 2k+1, tx3 at 2k+2..3k+1 with
// its commit marker at 3k+2, and the end is 3k+3. While tx3 is open the
// last stable offset stays at its first offset. A read_committed consumer
// gets tx1 and tx3, a read_uncommitted one all three, each up to the end;
// read_committed Fetch lists tx2 as aborted and returns the markers.
func TestTransactionsFranzProducer(t *testing.T) {
	const parts, k = 3, 4
	topic := newTopic(t)
	createTopic(t, topic, parts, nil)
	cl := txnProducer(t, topic+"-txn", 10*time.Second)
	ctx := ctxT(t)
	produce := func(tx string, from int64) []*kgo.Record {
		t.Helper()
		txnBegin(t, cl)
		rs := txnRecords(topic, tx, parts, k)
		produceSync(t, cl, rs...)
		txnCheckAcks(t, tx, rs, from)
		return rs
	}
	end := func(tx string, how kgo.TransactionEndTry) {
		t.Helper()
		if err := cl.EndTransaction(ctx, how); err != nil {
			t.Fatalf("%s: end (commit %v): %v", tx, how, err)
		}
	}
	tx1 := produce("tx1", 0)
	end("tx1", kgo.TryCommit)
	tx2 := produce("tx2", k+1)
	end("tx2", kgo.TryAbort)
	tx3 := produce("tx3", 2*k+2)
	// tx3 is open: the last stable offset is its first offset.
	txnWaitOffsets(t, topic, txnUniform(parts, 3*k+2), txnUniform(parts, 2*k+2))
	end("tx3", kgo.TryCommit)
	txnWaitOffsets(t, topic, txnUniform(parts, 3*k+3), txnUniform(parts, 3*k+3))

	pid := tx1[0].ProducerID
	for _, r := range slices.Concat(tx1, tx2, tx3) {
		if r.ProducerID != pid || pid < 0 {
			t.Fatalf("%q acknowledged for producer id %d, the first record for %d", r.Value, r.ProducerID, pid)
		}
	}

	// What read_committed Fetch returns: every record and marker up to the
	// last stable offset, and tx2 among the aborted transactions.
	raw := newClient(t)
	for p := range int32(parts) {
		log, aborted, hwm, lso := txnFetchLog(t, raw, topic, p)
		want := map[int64]string{}
		for i, v := range txnValuesIn(tx1, p) {
			want[int64(i)] = fmt.Sprintf("record %q by %d", v, pid)
		}
		want[k] = fmt.Sprintf("commit by %d", pid)
		for i, v := range txnValuesIn(tx2, p) {
			want[k+1+int64(i)] = fmt.Sprintf("record %q by %d", v, pid)
		}
		want[2*k+1] = fmt.Sprintf("abort by %d", pid)
		for i, v := range txnValuesIn(tx3, p) {
			want[2*k+2+int64(i)] = fmt.Sprintf("record %q by %d", v, pid)
		}
		want[3*k+2] = fmt.Sprintf("commit by %d", pid)
		if !maps.Equal(log, want) {
			t.Errorf("partition %d: read_committed Fetch returned\n%v\nwant\n%v", p, txnSortedLog(log), txnSortedLog(want))
		}
		if hwm != 3*k+3 || lso != 3*k+3 {
			t.Errorf("partition %d: Fetch high watermark %d, last stable offset %d, want %d", p, hwm, lso, 3*k+3)
		}
		if wantAborted := []string{fmt.Sprintf("%d@%d", pid, k+1)}; !slices.Equal(aborted, wantAborted) {
			t.Errorf("partition %d: aborted transactions %v, want %v", p, aborted, wantAborted)
		}
	}

	ends := txnAppendEnds(t, topic, parts)
	for p, o := range ends {
		if o != 3*k+3 {
			t.Errorf("partition %d: record after the transactions at offset %d, want %d (records and markers)", p, o, 3*k+3)
		}
	}
	committed := txnReadTo(t, topic, ends, time.Minute, txnReadCommitted())
	uncommitted := txnReadTo(t, topic, ends, time.Minute)
	for p := range int32(parts) {
		want := slices.Concat(txnNumbered(txnValuesIn(tx1, p), 0), txnNumbered(txnValuesIn(tx3, p), 2*k+2))
		if got := txnAt(committed[p]); !slices.Equal(got, want) {
			t.Errorf("partition %d: read_committed got %v, want %v", p, got, want)
		}
		want = slices.Concat(txnNumbered(txnValuesIn(tx1, p), 0), txnNumbered(txnValuesIn(tx2, p), k+1), txnNumbered(txnValuesIn(tx3, p), 2*k+2))
		if got := txnAt(uncommitted[p]); !slices.Equal(got, want) {
			t.Errorf("partition %d: read_uncommitted got %v, want %v", p, got, want)
		}
		for _, r := range uncommitted[p] {
			if !r.Attrs.IsTransactional() || r.ProducerID != pid {
				t.Errorf("%q at %d/%d: transactional %v, producer id %d, want a transactional record of %d", r.Value, p, r.Offset, r.Attrs.IsTransactional(), r.ProducerID, pid)
			}
		}
	}
}

func txnSortedLog(log map[int64]string) string {
	var b strings.Builder
	for _, o := range slices.Sorted(maps.Keys(log)) {
		fmt.Fprintf(&b, "  %d: %s\n", o, log[o])
	}
	return b.String()
}

// TestTransactionsFencing: a second producer with the same transactional
// id fences the first: its InitProducerId aborts the first's open
// transaction and bumps the epoch. The first's next produce, or its commit,
// fails with PRODUCER_FENCED or INVALID_PRODUCER_EPOCH; the second commits.
// Only the second's records are read_committed; the first's are stored,
// aborted.
func TestTransactionsFencing(t *testing.T) {
	const parts, k = 2, 3
	topic := newTopic(t)
	createTopic(t, topic, parts, nil)
	adm := kadm.NewClient(newClient(t))
	ctx := ctxT(t)
	fenced := func(err error) bool {
		return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
	}
	wantCommitted := map[int32][]string{}
	wantAll := map[int32][]string{}
	var offset int64 // the same in every partition
	for _, how := range []string{"produce", "commit"} {
		id := topic + "-" + how
		first := txnProducer(t, id, 10*time.Second)
		txnBegin(t, first)
		r1 := txnRecords(topic, how+"-first", parts, k)
		produceSync(t, first, r1...)
		txnCheckAcks(t, how+" first", r1, offset)

		second := txnProducer(t, id, 10*time.Second)
		txnBegin(t, second)
		r2 := txnRecords(topic, how+"-second", parts, k)
		produceSync(t, second, r2...)
		// After the first's records and the abort marker the second's
		// InitProducerId wrote.
		txnCheckAcks(t, how+" second", r2, offset+k+1)
		if r2[0].ProducerID != r1[0].ProducerID || r2[0].ProducerEpoch <= r1[0].ProducerEpoch {
			t.Errorf("%s: the second producer has id %d epoch %d, the first id %d epoch %d: want the same id, a newer epoch",
				how, r2[0].ProducerID, r2[0].ProducerEpoch, r1[0].ProducerID, r1[0].ProducerEpoch)
		}

		switch how {
		case "produce":
			err := first.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("produce-first-late")}).FirstErr()
			if !fenced(err) {
				t.Errorf("the fenced producer's produce: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
			}
			if err := first.EndTransaction(ctx, kgo.TryCommit); err == nil {
				t.Errorf("the fenced producer committed after its produce failed")
			}
		case "commit":
			if err := first.EndTransaction(ctx, kgo.TryCommit); !fenced(err) {
				t.Errorf("the fenced producer's commit: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
			}
		}

		d, err := txnDescribe(ctx, adm, id)
		if err != nil || d.State != "Ongoing" || d.ProducerID != r2[0].ProducerID || d.ProducerEpoch != r2[0].ProducerEpoch {
			t.Errorf("%s: described %+v (%v), want the second producer's transaction Ongoing", how, d, err)
		}
		if err := second.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("%s: the second producer's commit: %v", how, err)
		}
		for p := range int32(parts) {
			wantAll[p] = slices.Concat(wantAll[p], txnNumbered(txnValuesIn(r1, p), offset), txnNumbered(txnValuesIn(r2, p), offset+k+1))
			wantCommitted[p] = slices.Concat(wantCommitted[p], txnNumbered(txnValuesIn(r2, p), offset+k+1))
		}
		offset += 2*k + 2
	}

	ends := txnAppendEnds(t, topic, parts)
	committed := txnReadTo(t, topic, ends, time.Minute, txnReadCommitted())
	all := txnReadTo(t, topic, ends, time.Minute)
	for p := range int32(parts) {
		if ends[p] != offset {
			t.Errorf("partition %d: record after the transactions at %d, want %d", p, ends[p], offset)
		}
		if got := txnAt(committed[p]); !slices.Equal(got, wantCommitted[p]) {
			t.Errorf("partition %d: read_committed got %v, want %v", p, got, wantCommitted[p])
		}
		if got := txnAt(all[p]); !slices.Equal(got, wantAll[p]) {
			t.Errorf("partition %d: read_uncommitted got %v, want %v", p, got, wantAll[p])
		}
	}
}

// TestTransactionsTimeout: a producer begins a transaction, writes records
// and goes away without ending it (its connections are cut, as if it was
// killed). The transaction stays open until its 3 s timeout, then the
// gateway aborts it: the last stable offset moves past it, a
// read_committed consumer reaches the end without its records, and
// DescribeTransactions says CompleteAbort.
func TestTransactionsTimeout(t *testing.T) {
	const parts, k = 2, 3
	const timeout = 3 * time.Second
	topic := newTopic(t)
	createTopic(t, topic, parts, nil)
	id := topic + "-txn"
	adm := kadm.NewClient(newClient(t))
	var before []*kgo.Record
	for p := range int32(parts) {
		before = append(before, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "before-p%d", p)})
	}
	produceSync(t, newClient(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), before...)

	d := &cutDialer{}
	cl := txnProducer(t, id, timeout, kgo.Dialer(d.dial))
	begun := time.Now()
	txnBegin(t, cl)
	rs := txnRecords(topic, "abandoned", parts, k)
	produceSync(t, cl, rs...)
	txnCheckAcks(t, "abandoned", rs, 1)
	d.cutOff() // gone without EndTxn; closing the client sends nothing either

	if time.Since(begun) < timeout/2 {
		// Well within its timeout the transaction is open, although its
		// producer's connections are gone.
		ctx := ctxT(t)
		desc, err := txnDescribe(ctx, adm, id)
		if err != nil || desc.State != "Ongoing" || desc.TimeoutMillis != int32(timeout.Milliseconds()) {
			t.Errorf("described %+v (%v), want Ongoing with timeout %d ms", desc, err, timeout.Milliseconds())
		}
		lso, err := txnListOffsets(ctx, adm, topic, true)
		if err != nil || !maps.Equal(lso, txnUniform(parts, 1)) {
			t.Errorf("last stable offsets %v (%v) with the transaction open, want 1 (its first offset)", lso, err)
		}
	} else {
		t.Logf("producing took %v: not checking the transaction is open before its timeout", time.Since(begun))
	}

	ends := txnAppendEnds(t, topic, parts)
	got := txnReadTo(t, topic, ends, 30*time.Second, txnReadCommitted())
	took := time.Since(begun)
	t.Logf("a read_committed consumer reached the end %v after the transaction began", took)
	if took < timeout {
		t.Errorf("the transaction was over %v after it began, before its %v timeout", took, timeout)
	}
	for p := range int32(parts) {
		if want := []string{fmt.Sprintf("before-p%d@0", p)}; !slices.Equal(txnAt(got[p]), want) {
			t.Errorf("partition %d: read_committed got %v, want %v", p, txnAt(got[p]), want)
		}
	}
	eventually(t, 15*time.Second, "the transaction described as aborted", func() error {
		desc, err := txnDescribe(ctxT(t), adm, id)
		if err != nil {
			return err
		}
		if desc.State != "CompleteAbort" {
			return fmt.Errorf("state %q", desc.State)
		}
		t.Logf("after the timeout: producer id %d epoch %d (the producer had epoch %d)", desc.ProducerID, desc.ProducerEpoch, rs[0].ProducerEpoch)
		return nil
	})
	// The records, the plain records after them and one abort marker.
	txnWaitOffsets(t, topic, txnUniform(parts, k+3), txnUniform(parts, k+3))
	all := txnReadTo(t, topic, ends, time.Minute)
	for p := range int32(parts) {
		want := append([]string{fmt.Sprintf("before-p%d", p)}, txnValuesIn(rs, p)...)
		if got := txnValues(all[p]); !slices.Equal(got, want) {
			t.Errorf("partition %d: read_uncommitted got %v, want %v", p, got, want)
		}
	}
}

// TestTransactionsKilledGateway: the gateway is killed (SIGKILL) while a
// transaction is open, its records written; after the restart the
// producer tries to commit it. Whether that works or the transaction is
// aborted, it is never partly visible read_committed; if the commit
// succeeded all of it is. A transaction committed before the kill is fully
// visible after it, and the transactional id of the interrupted one is
// usable again.
func TestTransactionsKilledGateway(t *testing.T) {
	const parts, k = 2, 5
	topic := newTopic(t)
	createTopic(t, topic, parts, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	producer := func(id string) *kgo.Client {
		return txnProducer(t, id, 30*time.Second, kgo.RetryTimeout(2*time.Minute))
	}

	a := producer(topic + "-a")
	txnBegin(t, a)
	ra := txnRecords(topic, "a", parts, k)
	produceSync(t, a, ra...)
	txnCheckAcks(t, "a", ra, 0)
	if err := a.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit a: %v", err)
	}

	b := producer(topic + "-b")
	txnBegin(t, b)
	rb := txnRecords(topic, "b", parts, k)
	produceSync(t, b, rb...)
	txnCheckAcks(t, "b", rb, k+1)

	gw.kill()
	g, err := startGateway(cluster.master, gw.port)
	if err != nil {
		t.Fatal(err)
	}
	gw = g

	commitErr := b.EndTransaction(ctx, kgo.TryCommit)
	if commitErr != nil {
		t.Logf("committing b after the restart: %v; aborting it", commitErr)
		if err := b.EndTransaction(ctx, kgo.TryAbort); err != nil {
			t.Logf("aborting b: %v", err)
		}
	}
	// A new producer with b's transactional id fences b and aborts
	// whatever of b's is still open, then commits its own transaction.
	c := producer(topic + "-b")
	txnBegin(t, c)
	rc := txnRecords(topic, "c", parts, k)
	produceSync(t, c, rc...)
	if err := c.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit c with b's transactional id: %v", err)
	}

	ends := txnAppendEnds(t, topic, parts)
	committed := txnReadTo(t, topic, ends, time.Minute, txnReadCommitted())
	all := txnReadTo(t, topic, ends, time.Minute)
	bVisible := map[int32]bool{}
	for p := range int32(parts) {
		va, vb, vc := txnValuesIn(ra, p), txnValuesIn(rb, p), txnValuesIn(rc, p)
		got := txnValues(committed[p])
		switch {
		case slices.Equal(got, slices.Concat(va, vb, vc)):
			bVisible[p] = true
		case slices.Equal(got, slices.Concat(va, vc)):
			bVisible[p] = false
		default:
			t.Errorf("partition %d: read_committed got %v, want a's records, all of b's or none, then c's", p, got)
		}
		if !slices.IsSortedFunc(committed[p], func(x, y *kgo.Record) int { return int(x.Offset - y.Offset) }) {
			t.Errorf("partition %d: offsets out of order: %v", p, txnAt(committed[p]))
		}
		if got, want := txnValues(all[p]), slices.Concat(va, vb, vc); !slices.Equal(got, want) {
			t.Errorf("partition %d: read_uncommitted got %v, want %v (b's records were acknowledged)", p, got, want)
		}
	}
	if bVisible[0] != bVisible[1] {
		t.Errorf("b is visible in partition 0: %v, in partition 1: %v: a transaction is all or nothing", bVisible[0], bVisible[1])
	}
	if commitErr == nil && (!bVisible[0] || !bVisible[1]) {
		t.Errorf("b's commit succeeded after the restart, yet its records are not read_committed")
	}
	t.Logf("b committed after the restart: %v (commit error %v)", bVisible[0], commitErr)
}
