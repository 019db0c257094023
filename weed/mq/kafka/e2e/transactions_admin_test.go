package e2e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// TestTransactionsAdmin: kadm's DescribeTransactions, ListTransactions and
// DescribeProducers while a transaction is open and after it committed.
func TestTransactionsAdmin(t *testing.T) {
	const k = 3
	topic := newTopic(t)
	createTopic(t, topic, 3, nil)
	id := topic + "-txn"
	ctx := ctxT(t)
	adm := kadm.NewClient(newClient(t))
	// Three plain records first in partition 0: the transaction starts at
	// offset 3 there, at 0 in partition 1; partition 2 is not in it.
	produceSync(t, newClient(t, kgo.RecordPartitioner(kgo.ManualPartitioner())),
		&kgo.Record{Topic: topic, Partition: 0, Value: []byte("plain-0")},
		&kgo.Record{Topic: topic, Partition: 0, Value: []byte("plain-1")},
		&kgo.Record{Topic: topic, Partition: 0, Value: []byte("plain-2")})
	txnStart := map[int32]int64{0: 3, 1: 0}

	cl := txnProducer(t, id, 20*time.Second)
	started := time.Now()
	txnBegin(t, cl)
	rs := txnRecords(topic, "admin", 2, k)
	produceSync(t, cl, rs...)
	pid, epoch := rs[0].ProducerID, rs[0].ProducerEpoch

	d, err := txnDescribe(ctx, adm, id)
	if err != nil {
		t.Fatalf("DescribeTransactions: %v", err)
	}
	if d.State != "Ongoing" || d.ProducerID != pid || d.ProducerEpoch != epoch || d.TimeoutMillis != 20000 {
		t.Errorf("described state %q, producer %d epoch %d, timeout %d ms; want Ongoing, %d, %d, 20000", d.State, d.ProducerID, d.ProducerEpoch, d.TimeoutMillis, pid, epoch)
	}
	if d.StartTimestamp < started.Add(-time.Second).UnixMilli() || d.StartTimestamp > time.Now().Add(time.Second).UnixMilli() {
		t.Errorf("transaction start %d, want between %d and now", d.StartTimestamp, started.UnixMilli())
	}
	if len(d.Topics) != 1 || len(d.Topics[topic]) != 2 || !d.Topics.Lookup(topic, 0) || !d.Topics.Lookup(topic, 1) {
		t.Errorf("transaction partitions %v, want %s 0 and 1", d.Topics, topic)
	}
	unknown := id + "-unknown"
	ds, err := adm.DescribeTransactions(ctx, unknown)
	if u, ok := ds[unknown]; err != nil || !ok || !errors.Is(u.Err, kerr.TransactionalIDNotFound) {
		t.Errorf("DescribeTransactions of an unknown id: %+v (%v), want TRANSACTIONAL_ID_NOT_FOUND", u, err)
	}

	// listed is whether ListTransactions with these filters lists the
	// transaction, and in which state.
	listed := func(pids []int64, states ...string) (string, bool) {
		t.Helper()
		l, err := adm.ListTransactions(ctx, pids, states)
		if err != nil {
			t.Fatalf("ListTransactions %v %v: %v", pids, states, err)
		}
		lt, ok := l[id]
		if ok && lt.ProducerID != pid {
			t.Errorf("listed with producer id %d, want %d", lt.ProducerID, pid)
		}
		return lt.State, ok
	}
	if state, ok := listed(nil); !ok || state != "Ongoing" {
		t.Errorf("ListTransactions: listed %v in state %q, want Ongoing", ok, state)
	}
	if _, ok := listed(nil, "Ongoing"); !ok {
		t.Errorf("ListTransactions of Ongoing ones does not list it")
	}
	if _, ok := listed(nil, "CompleteCommit", "CompleteAbort"); ok {
		t.Errorf("ListTransactions of complete ones lists it")
	}
	if _, ok := listed([]int64{pid}); !ok {
		t.Errorf("ListTransactions of producer %d does not list it", pid)
	}
	if _, ok := listed([]int64{pid + 1000000}); ok {
		t.Errorf("ListTransactions of another producer lists it")
	}

	// producers describes partitions 0-2 and returns, by partition, what
	// is said of the transactional producer.
	producers := func() (map[int32]kadm.DescribedProducer, error) {
		var s kadm.TopicsSet
		s.Add(topic, 0, 1, 2)
		dt, err := adm.DescribeProducers(ctx, s)
		if err != nil {
			return nil, err
		}
		out := map[int32]kadm.DescribedProducer{}
		for p, dp := range dt[topic].Partitions {
			if dp.Err != nil {
				return nil, fmt.Errorf("partition %d: %w", p, dp.Err)
			}
			if prod, ok := dp.ActiveProducers[pid]; ok {
				out[p] = prod
			}
		}
		if len(dt[topic].Partitions) != 3 {
			return nil, fmt.Errorf("%d partitions described", len(dt[topic].Partitions))
		}
		return out, nil
	}
	checkProducers := func(txnStart map[int32]int64) error {
		got, err := producers()
		if err != nil {
			return err
		}
		if _, ok := got[2]; ok {
			return errors.New("the producer is described in partition 2, where it never produced")
		}
		for p := range int32(2) {
			prod, ok := got[p]
			if !ok {
				return fmt.Errorf("partition %d: producer %d not described", p, pid)
			}
			if prod.ProducerEpoch != epoch || prod.LastSequence != k-1 || prod.CurrentTxnStartOffset != txnStart[p] {
				return fmt.Errorf("partition %d: epoch %d, last sequence %d, transaction start %d; want %d, %d, %d",
					p, prod.ProducerEpoch, prod.LastSequence, prod.CurrentTxnStartOffset, epoch, k-1, txnStart[p])
			}
			if prod.LastTimestamp < started.Add(-time.Second).UnixMilli() {
				return fmt.Errorf("partition %d: last timestamp %d, before the transaction began (%d)", p, prod.LastTimestamp, started.UnixMilli())
			}
		}
		return nil
	}
	if err := checkProducers(txnStart); err != nil {
		t.Errorf("DescribeProducers with the transaction open: %v", err)
	}

	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	eventually(t, 15*time.Second, "the transaction described as committed", func() error {
		d, err := txnDescribe(ctx, adm, id)
		if err != nil {
			return err
		}
		if d.State != "CompleteCommit" || d.ProducerID != pid || len(d.Topics) != 0 {
			return fmt.Errorf("state %q, producer %d, partitions %v", d.State, d.ProducerID, d.Topics)
		}
		return nil
	})
	if state, ok := listed(nil, "CompleteCommit"); !ok || state != "CompleteCommit" {
		t.Errorf("ListTransactions of CompleteCommit ones: listed %v in state %q", ok, state)
	}
	if _, ok := listed(nil, "Ongoing"); ok {
		t.Errorf("ListTransactions of Ongoing ones lists the committed transaction")
	}
	// The classic protocol (no transaction.version 2) keeps the epoch
	// across transactions; no transaction is open any more.
	eventually(t, 15*time.Second, "DescribeProducers after the commit", func() error {
		return checkProducers(map[int32]int64{0: -1, 1: -1})
	})
}

// txnBatch is a transactional batch of one record from producer id/epoch
// with sequence number seq.
func txnBatch(id int64, epoch int16, seq int32, value string) []byte {
	raw := idempotentBatch(id, epoch, seq, value)
	// Attributes are the int16 at byte 21; the CRC-32C at byte 17 covers
	// them to the end.
	binary.BigEndian.PutUint16(raw[21:], binary.BigEndian.Uint16(raw[21:])|record.AttrTransactional)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// TestTransactionsErrors drives the transaction protocol with raw requests
// and checks Kafka's answers to requests that break its rules. Produce is
// capped at v11 and EndTxn at v4: the classic protocol, where a partition
// must be added with AddPartitionsToTxn before a transactional produce.
func TestTransactionsErrors(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 2, nil)
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(kmsg.Produce.Int16(), 11)
	versions.SetMaxKeyVersion(kmsg.EndTxn.Int16(), 4)
	cl := newClient(t, kgo.MaxVersions(versions))
	adm := kadm.NewClient(cl)
	ctx := ctxT(t)
	id := topic + "-txn"

	// expect checks an answer's error code: one of want, or none if want
	// is empty.
	expect := func(what string, got int16, want ...*kerr.Error) {
		t.Helper()
		if len(want) == 0 {
			want = []*kerr.Error{nil}
		}
		for _, w := range want {
			if (w == nil && got == 0) || (w != nil && got == w.Code) {
				return
			}
		}
		t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
	// settled repeats a request while the coordinator answers
	// CONCURRENT_TRANSACTIONS (an end still writing its markers), as
	// clients do.
	settled := func(do func() int16) int16 {
		t.Helper()
		for i := 0; ; i++ {
			code := do()
			if code != kerr.ConcurrentTransactions.Code || i == 100 {
				return code
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	initPID := func(txnID string, timeoutMillis int32) *kmsg.InitProducerIDResponse {
		t.Helper()
		var resp *kmsg.InitProducerIDResponse
		settled(func() int16 {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionalID, req.TransactionTimeoutMillis = &txnID, timeoutMillis
			var err error
			if resp, err = req.RequestWith(ctx, cl); err != nil {
				t.Fatalf("InitProducerId: %v", err)
			}
			return resp.ErrorCode
		})
		return resp
	}
	addPartitions := func(txnID string, pid int64, epoch int16, partition int32) int16 {
		t.Helper()
		return settled(func() int16 {
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = txnID, pid, epoch
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = topic, []int32{partition}
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatalf("AddPartitionsToTxn: %v", err)
			}
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("AddPartitionsToTxn: answered for %+v", resp.Topics)
			}
			return resp.Topics[0].Partitions[0].ErrorCode
		})
	}
	endTxn := func(pid int64, epoch int16, commit bool) int16 {
		t.Helper()
		return settled(func() int16 {
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatalf("EndTxn: %v", err)
			}
			return resp.ErrorCode
		})
	}

	// Transaction timeouts: more than 15 minutes, or none, is refused,
	// and the refused InitProducerId leaves no transactional id behind.
	expect("InitProducerId with a 15 min + 1 ms timeout", initPID(id+"-long", 15*60*1000+1).ErrorCode, kerr.InvalidTransactionTimeout)
	expect("InitProducerId with a 0 ms timeout", initPID(id+"-zero", 0).ErrorCode, kerr.InvalidTransactionTimeout)
	if _, err := txnDescribe(ctx, adm, id+"-long"); !errors.Is(err, kerr.TransactionalIDNotFound) {
		t.Errorf("DescribeTransactions after a refused InitProducerId: %v, want TRANSACTIONAL_ID_NOT_FOUND", err)
	}
	expect("InitProducerId with a 15 min timeout", initPID(id+"-max", 15*60*1000).ErrorCode)

	expect("AddPartitionsToTxn for an unknown transactional id", addPartitions(id+"-unknown", 1234, 0, 0), kerr.InvalidProducerIDMapping)

	init := initPID(id, 60000)
	expect("InitProducerId", init.ErrorCode)
	pid, epoch0 := init.ProducerID, init.ProducerEpoch
	expect("EndTxn(commit) with no transaction", endTxn(pid, epoch0, true), kerr.InvalidTxnState)
	expect("AddPartitionsToTxn with another producer id", addPartitions(id, pid+1, epoch0, 0), kerr.InvalidProducerIDMapping)

	again := initPID(id, 60000)
	expect("InitProducerId again", again.ErrorCode)
	if again.ProducerID != pid || again.ProducerEpoch != epoch0+1 {
		t.Errorf("InitProducerId again: producer %d epoch %d, want %d epoch %d", again.ProducerID, again.ProducerEpoch, pid, epoch0+1)
	}
	epoch := again.ProducerEpoch
	expect("AddPartitionsToTxn with the fenced epoch", addPartitions(id, pid, epoch0, 0), kerr.ProducerFenced, kerr.InvalidProducerEpoch)
	expect("EndTxn with the fenced epoch", endTxn(pid, epoch0, false), kerr.ProducerFenced, kerr.InvalidProducerEpoch)

	expect("AddPartitionsToTxn partition 0", addPartitions(id, pid, epoch, 0))
	expect("transactional produce to partition 1, not added", produceRaw(t, cl, topic, 1, txnBatch(pid, epoch, 0, "not-added")).ErrorCode, kerr.InvalidTxnState)
	p0 := produceRaw(t, cl, topic, 0, txnBatch(pid, epoch, 0, "added"))
	expect("transactional produce to partition 0", p0.ErrorCode)
	if p0.ErrorCode == 0 && p0.BaseOffset != 0 {
		t.Errorf("transactional produce to partition 0 at offset %d, want 0", p0.BaseOffset)
	}
	expect("EndTxn(abort)", endTxn(pid, epoch, false))
	expect("EndTxn(abort) retried", endTxn(pid, epoch, false))
	expect("EndTxn(commit) of the aborted transaction", endTxn(pid, epoch, true), kerr.InvalidTxnState)

	// Partition 0 holds the record and the abort marker; partition 1
	// nothing, not even a marker: it was never in the transaction.
	txnWaitOffsets(t, topic, map[int32]int64{0: 2, 1: 0}, map[int32]int64{0: 2, 1: 0})
	ends := txnAppendEnds(t, topic, 2)
	all := txnReadTo(t, topic, ends, time.Minute)
	committed := txnReadTo(t, topic, ends, time.Minute, txnReadCommitted())
	if got := [][]string{txnAt(all[0]), txnAt(all[1])}; len(got[0]) != 1 || got[0][0] != "added@0" || len(got[1]) != 0 {
		t.Errorf("read_uncommitted got %v, want [[added@0] []]", got)
	}
	if len(committed[0])+len(committed[1]) != 0 {
		t.Errorf("read_committed got %v and %v, want nothing", txnAt(committed[0]), txnAt(committed[1]))
	}
}
