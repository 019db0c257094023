package txn

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
)

// Transactions v2 (KIP-890): a produce adds its partition to the
// transaction, beginning it; EndTxn v5 bumps the epoch, the markers carry
// the new one, the answer names it; a retry with the epoch before gets the
// same answer, an end of the other kind INVALID_TXN_STATE, another epoch
// PRODUCER_FENCED; an abort of no transaction bumps the epoch too.
func TestEndTxnV2BumpsTheEpoch(t *testing.T) {
	files, log, groups := filerfstest.New(), &fakeLog{}, &fakeGroups{}
	c := start(t, files, log, groups)
	ctx := context.Background()
	id := "tv2"
	pid, epoch, e := c.InitProducerID(ctx, id, time.Minute, -1, -1)
	if e != nil {
		t.Fatal(e)
	}
	wrote := false
	if e := c.Verify(ctx, &id, pid, epoch, "a", 3, true, func() { wrote = true }); e != nil || !wrote {
		t.Fatalf("a produce adding its partition: %v (written %v)", e, wrote)
	}
	if e := c.AddGroup(ctx, id, pid, epoch, "g"); e != nil {
		t.Fatal(e)
	}
	gotPID, next, e := c.EndTxnV2(ctx, id, pid, epoch, true)
	if e != nil || gotPID != pid || next != epoch+1 {
		t.Fatalf("commit: producer %d epoch %d, %v; want %d epoch %d", gotPID, next, e, pid, epoch+1)
	}
	if len(log.markers) != 1 || log.markers[0] != (marker{"a", 3, pid, next, true, true}) {
		t.Errorf("markers %+v, want a/3 committed at epoch %d", log.markers, next)
	}
	if len(groups.ends) != 1 || groups.ends[0] != (groupEnd{"g", pid, next, true}) {
		t.Errorf("group markers %+v", groups.ends)
	}
	if p, ep, e := c.EndTxnV2(ctx, id, pid, epoch, true); e != nil || p != pid || ep != next {
		t.Errorf("a retried commit: %d %d %v, want the same answer", p, ep, e)
	}
	if _, _, e := c.EndTxnV2(ctx, id, pid, epoch, false); e != kerr.InvalidTxnState {
		t.Errorf("an abort retrying the commit: %v, want INVALID_TXN_STATE", e)
	}
	if _, _, e := c.EndTxnV2(ctx, id, pid, epoch-1, true); e != kerr.ProducerFenced {
		t.Errorf("an older epoch: %v, want PRODUCER_FENCED", e)
	}
	if _, _, e := c.EndTxnV2(ctx, id, pid, next, true); e != kerr.InvalidTxnState {
		t.Errorf("a commit of no transaction: %v, want INVALID_TXN_STATE", e)
	}
	if _, _, e := c.EndTxnV2(ctx, id, pid+100, next, true); e != kerr.InvalidProducerIDMapping {
		t.Errorf("another producer id: %v, want INVALID_PRODUCER_ID_MAPPING", e)
	}
	// The old epoch cannot write any more; the new one begins the next
	// transaction by producing.
	if e := c.Verify(ctx, &id, pid, epoch, "a", 3, true, func() {}); e != kerr.InvalidProducerEpoch {
		t.Errorf("a produce at the old epoch: %v, want INVALID_PRODUCER_EPOCH", e)
	}
	if e := c.Verify(ctx, &id, pid, next, "a", 4, true, func() {}); e != nil {
		t.Fatalf("the next transaction's produce: %v", e)
	}
	p, aborted, e := c.EndTxnV2(ctx, id, pid, next, false)
	if e != nil || p != pid || aborted != next+1 {
		t.Fatalf("abort: %d %d %v", p, aborted, e)
	}
	if m := log.markers[len(log.markers)-1]; m != (marker{"a", 4, pid, aborted, false, true}) {
		t.Errorf("abort marker %+v", m)
	}
	// An abort with nothing open: no marker, a new epoch.
	n := len(log.markers)
	if p, ep, e := c.EndTxnV2(ctx, id, pid, aborted, false); e != nil || p != pid || ep != aborted+1 {
		t.Errorf("an empty abort: %d %d %v, want epoch %d", p, ep, e, aborted+1)
	}
	if len(log.markers) != n {
		t.Errorf("an empty abort wrote markers: %+v", log.markers[n:])
	}
}

// While a v2 transaction ends, a produce of the next one gets
// CONCURRENT_TRANSACTIONS (retriable); once it ended, the produce begins
// it.
func TestImplicitAddWhileEnding(t *testing.T) {
	files, log, groups := filerfstest.New(), &fakeLog{}, &fakeGroups{}
	c := start(t, files, log, groups)
	ctx := context.Background()
	id := "tv2-ending"
	pid, epoch, _ := c.InitProducerID(ctx, id, time.Minute, -1, -1)
	if e := c.Verify(ctx, &id, pid, epoch, "a", 0, true, func() {}); e != nil {
		t.Fatal(e)
	}
	log.mu.Lock()
	log.fail = true // the markers cannot be written: the end stays prepared
	log.mu.Unlock()
	if _, _, e := c.EndTxnV2(ctx, id, pid, epoch, true); e == nil {
		t.Fatal("an end whose markers failed succeeded")
	}
	if e := c.Verify(ctx, &id, pid, epoch+1, "a", 0, true, func() {}); e != kerr.ConcurrentTransactions {
		t.Errorf("a produce while the last transaction ends: %v, want CONCURRENT_TRANSACTIONS", e)
	}
	log.mu.Lock()
	log.fail = false
	log.mu.Unlock()
	if p, ep, e := c.EndTxnV2(ctx, id, pid, epoch, true); e != nil || p != pid || ep != epoch+1 {
		t.Fatalf("the retried end: %d %d %v", p, ep, e)
	}
	if e := c.Verify(ctx, &id, pid, epoch+1, "a", 0, true, func() {}); e != nil {
		t.Errorf("the next transaction's produce: %v", e)
	}
}

// A transaction open past its timeout is aborted with a new epoch; its
// producer's EndTxn(abort) at the old epoch is then a retry of that abort
// and gets the new epoch, its commit INVALID_TXN_STATE.
func TestTimeoutAbortV2(t *testing.T) {
	files, log, groups := filerfstest.New(), &fakeLog{}, &fakeGroups{}
	c := start(t, files, log, groups)
	ctx := context.Background()
	id := "tv2-timeout"
	pid, epoch, _ := c.InitProducerID(ctx, id, 100*time.Millisecond, -1, -1)
	if e := c.Verify(ctx, &id, pid, epoch, "a", 0, true, func() {}); e != nil {
		t.Fatal(e)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		log.mu.Lock()
		n := len(log.markers)
		log.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not aborted after its timeout")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the end saved
	if _, _, e := c.EndTxnV2(ctx, id, pid, epoch, true); e != kerr.InvalidTxnState {
		t.Errorf("a commit after the timeout: %v, want INVALID_TXN_STATE", e)
	}
	if p, ep, e := c.EndTxnV2(ctx, id, pid, epoch, false); e != nil || p != pid || ep != epoch+1 {
		t.Errorf("the producer's abort: %d %d %v, want epoch %d", p, ep, e, epoch+1)
	}
}

// Epochs used up: the end at epoch 32766 writes its markers at 32767 and
// moves the transactional id to a new producer id at epoch 0; its retry,
// with the old id, gets the same answer; the state survives a reload.
func TestEndTxnV2NewProducerIDAtTheLastEpoch(t *testing.T) {
	files, log, groups := filerfstest.New(), &fakeLog{}, &fakeGroups{}
	c := start(t, files, log, groups)
	ctx := context.Background()
	id := "tv2-overflow"
	pid, _, _ := c.InitProducerID(ctx, id, time.Minute, -1, -1)
	last := int16(math.MaxInt16 - 1)
	c.mu.Lock()
	tx := c.txns[id]
	c.mu.Unlock()
	tx.mu.Lock()
	tx.st.Epoch = last
	tx.mu.Unlock()
	if e := c.Verify(ctx, &id, pid, last, "a", 0, true, func() {}); e != nil {
		t.Fatal(e)
	}
	np, ne, e := c.EndTxnV2(ctx, id, pid, last, true)
	if e != nil || np == pid || ne != 0 {
		t.Fatalf("the end at the last epoch: %d %d %v, want a new producer id at epoch 0", np, ne, e)
	}
	if m := log.markers[len(log.markers)-1]; m != (marker{"a", 0, pid, math.MaxInt16, true, true}) {
		t.Errorf("marker %+v, want the old id at epoch 32767", m)
	}
	if p, ep, e := c.EndTxnV2(ctx, id, pid, last, true); e != nil || p != np || ep != 0 {
		t.Errorf("the retry with the old id: %d %d %v", p, ep, e)
	}
	if e := c.Verify(ctx, &id, np, 0, "b", 0, true, func() {}); e != nil {
		t.Errorf("the new id's produce: %v", e)
	}
	c2 := start(t, files, log, groups)
	if p, ep, e := c2.EndTxnV2(ctx, id, np, 0, false); e != nil || p != np || ep != 1 {
		t.Errorf("after a reload, the new id's abort: %d %d %v", p, ep, e)
	}
}
