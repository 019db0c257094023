package protocol_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnOffsetCommit v5+ (transaction.version 2) adds its group to the
// transaction without AddOffsetsToTxn: the offsets are the group's once
// EndTxn v5 commits, with the bumped epoch; v4 does not add the group.
func TestTxnOffsetCommitAddsItsGroup(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "tocv2", 1, nil)
	p := initTxn(t, g.addr, "tocv2")
	resp := roundTrip(t, g.addr, txnOffsetCommit(p, "tocv2-g", "tocv2", map[int32]int64{0: 42}), 5).(*kmsg.TxnOffsetCommitResponse)
	if codes := txnCommitCodes(resp); !slices.Equal(codes, []int16{0}) {
		t.Fatalf("TxnOffsetCommit v5: %v", codes)
	}
	if s := describeTxn(t, g.addr, p.id); s.State != "Ongoing" {
		t.Errorf("after TxnOffsetCommit v5: %s, want Ongoing", s.State)
	}
	end := roundTrip(t, g.addr, endTxnReq(p, true), 5).(*kmsg.EndTxnResponse)
	code(t, "EndTxn v5", end.ErrorCode, nil)
	if end.ProducerEpoch != p.epoch+1 {
		t.Errorf("EndTxn v5: epoch %d, want %d", end.ProducerEpoch, p.epoch+1)
	}
	if got := committed(t, g.addr, "tocv2-g", "tocv2", 0); !slices.Equal(got, []int64{42}) {
		t.Errorf("committed %v, want [42]", got)
	}

	q := initTxn(t, g.addr, "tocv1")
	roundTrip(t, g.addr, txnOffsetCommit(q, "tocv1-g", "tocv2", map[int32]int64{0: 7}), 4)
	if s := describeTxn(t, g.addr, q.id); s.State != "Empty" {
		t.Errorf("after TxnOffsetCommit v4: %s, want Empty (no group added)", s.State)
	}
}

// keysHook counts the requests a client writes, by key.
type keysHook struct {
	mu   sync.Mutex
	sent map[int16]int
}

func (h *keysHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sent[key]++
}

// A franz-go transactional producer on a gateway finalizing
// transaction.version 2 uses transactions v2: no AddPartitionsToTxn, its
// produces add their partitions, EndTxn v5 bumps the epoch once per
// transaction; read_committed readers get the committed records only.
// With transaction.version 0 it keeps the classic protocol.
func TestFranzGoTransactionsV2(t *testing.T) {
	for _, tc := range []struct {
		name    string
		classic bool
	}{{"v2", false}, {"classic", true}} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGateway(t, gatewayOptions{classicTxns: tc.classic})
			g.topic(t, "fgtv2", 2, nil)
			hook := &keysHook{sent: map[int16]int{}}
			cl := client(t, g.addr, kgo.TransactionalID("fgtv2-"+tc.name), kgo.DefaultProduceTopic("fgtv2"), kgo.WithHooks(hook),
				kgo.RequiredAcks(kgo.AllISRAcks()))
			ctx := context.Background()
			var epochs []int16
			for i, commit := range []bool{true, false, true} {
				if err := cl.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				for p := int32(0); p < 2; p++ {
					r := &kgo.Record{Partition: p, Value: []byte{byte('a' + i)}}
					if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
						t.Fatalf("transaction %d: %v", i, err)
					}
				}
				if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
					t.Fatalf("transaction %d end: %v", i, err)
				}
				epochs = append(epochs, describeTxn(t, g.addr, "fgtv2-"+tc.name).ProducerEpoch)
			}
			hook.mu.Lock()
			adds := hook.sent[int16(kmsg.AddPartitionsToTxn)]
			hook.mu.Unlock()
			switch {
			case !tc.classic && (adds != 0 || epochs[1] != epochs[0]+1 || epochs[2] != epochs[1]+1):
				t.Errorf("v2: %d AddPartitionsToTxn, epochs %v, want none and one more per transaction", adds, epochs)
			case tc.classic && (adds == 0 || epochs[1] != epochs[0] || epochs[2] != epochs[0]):
				t.Errorf("classic: %d AddPartitionsToTxn, epochs %v, want some and one epoch", adds, epochs)
			}
			reader := client(t, g.addr, kgo.ConsumeTopics("fgtv2"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			var got []string
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			for len(got) < 4 && rctx.Err() == nil {
				reader.PollFetches(rctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
			}
			slices.Sort(got)
			if !slices.Equal(got, []string{"a", "a", "c", "c"}) {
				t.Errorf("read_committed: %q, want the two committed transactions' records", got)
			}
		})
	}
}
