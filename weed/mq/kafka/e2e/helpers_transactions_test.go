package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// Transactions, end to end. Every commit or abort writes one marker
// (control record) to each partition of the transaction, and the marker
// takes an offset: after a transaction the offsets consumers see skip it.
// Tests read a topic up to its end by first appending one plain record to
// each partition (txnAppendEnds) and then consuming until those records
// come: whatever was before them was read, and a read_committed consumer
// only gets there once the last stable offset passed every transaction.

// txnEndValue is the value of the plain record txnAppendEnds appends.
const txnEndValue = "end-of-test"

// txnReadCommitted is the consumer option of a read_committed consumer; kgo's
// default is read_uncommitted.
func txnReadCommitted() kgo.Opt { return kgo.FetchIsolationLevel(kgo.ReadCommitted()) }

// txnProducer is a franz-go transactional producer with transactional id
// id: records go to the partition they name.
func txnProducer(t *testing.T, id string, timeout time.Duration, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return newClient(t, append([]kgo.Opt{kgo.TransactionalID(id), kgo.TransactionTimeout(timeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
}

func txnBegin(t *testing.T, cl *kgo.Client) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("begin transaction: %v", err)
	}
}

// txnRecords is n records for each partition of topic, with values
// <prefix>-p<partition>-<i>, in order per partition.
func txnRecords(topic, prefix string, partitions int32, n int) []*kgo.Record {
	var rs []*kgo.Record
	for p := range partitions {
		for i := range n {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%s-p%d-%d", prefix, p, i)})
		}
	}
	return rs
}

// txnValuesIn is the values of the records of rs in partition p, in order.
func txnValuesIn(rs []*kgo.Record, p int32) []string {
	var vs []string
	for _, r := range rs {
		if r.Partition == p {
			vs = append(vs, string(r.Value))
		}
	}
	return vs
}

// txnNumbered is values as value@offset, at offsets from, from+1, ...
func txnNumbered(values []string, from int64) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = fmt.Sprintf("%s@%d", v, from+int64(i))
	}
	return out
}

// txnAt is records as value@offset.
func txnAt(recs []*kgo.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = fmt.Sprintf("%s@%d", r.Value, r.Offset)
	}
	return out
}

func txnValues(recs []*kgo.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}

// txnCheckAcks checks that the acknowledged records of rs are at offsets
// from, from+1, ... in each partition.
func txnCheckAcks(t *testing.T, what string, rs []*kgo.Record, from int64) {
	t.Helper()
	next := map[int32]int64{}
	for _, r := range rs {
		want := from + next[r.Partition]
		next[r.Partition]++
		if r.Offset != want {
			t.Errorf("%s: %q acknowledged at %d/%d, want offset %d", what, r.Value, r.Partition, r.Offset, want)
		}
	}
}

func txnUniform(partitions int32, offset int64) map[int32]int64 {
	m := map[int32]int64{}
	for p := range partitions {
		m[p] = offset
	}
	return m
}

// txnAppendEnds appends one plain (non-transactional) record to each
// partition of topic and returns their offsets.
func txnAppendEnds(t *testing.T, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	cl := newClient(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rs []*kgo.Record
	for p := range partitions {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(txnEndValue)})
	}
	produceSync(t, cl, rs...)
	ends := map[int32]int64{}
	for _, r := range rs {
		ends[r.Partition] = r.Offset
	}
	return ends
}

// txnReadTo reads topic from its start with a new consumer (opts add to its
// options, e.g. txnReadCommitted()) until it got the record at ends[p] of
// every partition p, the plain record txnAppendEnds appended, and returns
// each partition's records before it.
func txnReadTo(t *testing.T, topic string, ends map[int32]int64, timeout time.Duration, opts ...kgo.Opt) map[int32][]*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(gw.addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	got := map[int32][]*kgo.Record{}
	reached := map[int32]bool{}
	for len(reached) < len(ends) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			var where []string
			for p, end := range ends {
				if !reached[p] {
					where = append(where, fmt.Sprintf("partition %d: %d records before offset %d", p, len(got[p]), end))
				}
			}
			sort.Strings(where)
			t.Fatalf("reading %s: the end was not reached within %v (%s)", topic, timeout, strings.Join(where, "; "))
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := ends[r.Partition]
			switch {
			case !ok:
				t.Fatalf("record %q at %d/%d: partition not expected", r.Value, r.Partition, r.Offset)
			case r.Offset < end:
				got[r.Partition] = append(got[r.Partition], r)
			case r.Offset == end:
				if string(r.Value) != txnEndValue {
					t.Fatalf("partition %d: %q at offset %d, where the end record was acknowledged", r.Partition, r.Value, r.Offset)
				}
				reached[r.Partition] = true
			default:
				t.Fatalf("partition %d: %q at offset %d, after the end record at %d", r.Partition, r.Value, r.Offset, end)
			}
		})
	}
	return got
}

// txnListOffsets is each partition's high watermark, or with committed its
// last stable offset.
func txnListOffsets(ctx context.Context, adm *kadm.Client, topic string, committed bool) (map[int32]int64, error) {
	list := adm.ListEndOffsets
	if committed {
		list = adm.ListCommittedOffsets
	}
	listed, err := list(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	var perr error
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			perr = fmt.Errorf("partition %d: %w", o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out, perr
}

// txnWaitOffsets waits until topic's partitions have high watermarks hwm
// and last stable offsets lso (the end of a transaction moves them once its
// markers are written).
func txnWaitOffsets(t *testing.T, topic string, hwm, lso map[int32]int64) {
	t.Helper()
	adm := kadm.NewClient(newClient(t))
	eventually(t, 15*time.Second, "offsets of "+topic, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		gotHWM, err := txnListOffsets(ctx, adm, topic, false)
		if err != nil {
			return err
		}
		gotLSO, err := txnListOffsets(ctx, adm, topic, true)
		if err != nil {
			return err
		}
		if !maps.Equal(gotHWM, hwm) || !maps.Equal(gotLSO, lso) {
			return fmt.Errorf("high watermarks %v and last stable offsets %v, want %v and %v", gotHWM, gotLSO, hwm, lso)
		}
		return nil
	})
}

// txnDescribe is DescribeTransactions of one transactional id.
func txnDescribe(ctx context.Context, adm *kadm.Client, id string) (kadm.DescribedTransaction, error) {
	ds, err := adm.DescribeTransactions(ctx, id)
	if err != nil {
		return kadm.DescribedTransaction{}, err
	}
	d, ok := ds[id]
	if !ok {
		return d, fmt.Errorf("%s not described", id)
	}
	return d, d.Err
}

// txnFetchLog fetches a partition from offset 0 up to its last stable
// offset with raw read_committed Fetch requests and returns what each
// offset holds: `record "v" by <producer id>` (a transactional record),
// `plain "v"`, or `commit by <id>` / `abort by <id>` (a marker), with the
// aborted transactions the fetches listed, as producerID@firstOffset.
func txnFetchLog(t *testing.T, cl *kgo.Client, topic string, partition int32) (log map[int64]string, aborted []string, hwm, lso int64) {
	t.Helper()
	id := topicID(t, cl, topic)
	log = map[int64]string{}
	seenAborted := map[string]bool{}
	var offset int64
	for range 20 {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 200, 1, 8<<20
		req.IsolationLevel = 1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = topic, id
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = partition, offset, 4<<20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(ctxT(t), cl)
		if err != nil {
			t.Fatalf("fetch %s/%d at %d: %v", topic, partition, offset, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch %s/%d at %d: %d topics in the response", topic, partition, offset, len(resp.Topics))
		}
		rp := resp.Topics[0].Partitions[0]
		if rp.ErrorCode != 0 {
			t.Fatalf("fetch %s/%d at %d: %v", topic, partition, offset, kerr.ErrorForCode(rp.ErrorCode))
		}
		hwm, lso = rp.HighWatermark, rp.LastStableOffset
		for _, a := range rp.AbortedTransactions {
			k := fmt.Sprintf("%d@%d", a.ProducerID, a.FirstOffset)
			if !seenAborted[k] {
				seenAborted[k] = true
				aborted = append(aborted, k)
			}
		}
		if len(rp.RecordBatches) == 0 {
			break
		}
		batches, err := record.ParseBatches(rp.RecordBatches, 16<<20)
		if err != nil {
			t.Fatalf("fetch %s/%d at %d: %v", topic, partition, offset, err)
		}
		for _, b := range batches {
			h := b.Header
			for i, r := range b.Records {
				at := h.FirstOffset + int64(i)
				switch {
				case h.Attributes&record.AttrControl != 0:
					kind := fmt.Sprintf("control key %x", r.Key)
					if len(r.Key) == 4 && r.Key[0] == 0 && r.Key[1] == 0 {
						switch binary.BigEndian.Uint16(r.Key[2:]) {
						case 0:
							kind = "abort"
						case 1:
							kind = "commit"
						}
					}
					log[at] = fmt.Sprintf("%s by %d", kind, h.ProducerID)
				case h.Attributes&record.AttrTransactional != 0:
					log[at] = fmt.Sprintf("record %q by %d", r.Value, h.ProducerID)
				default:
					log[at] = fmt.Sprintf("plain %q", r.Value)
				}
				offset = max(offset, at+1)
			}
		}
		if offset >= lso {
			break
		}
	}
	return log, aborted, hwm, lso
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
