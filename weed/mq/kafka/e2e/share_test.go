package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// setGroupConfigs sets a group's configs (IncrementalAlterConfigs on the
// GROUP resource).
func setGroupConfigs(t *testing.T, group string, kvs ...string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i+1 < len(kvs); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kvs[i], kmsg.StringPtr(kvs[i+1])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctxT(t), newClient(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("setting %v of %s: %v", kvs, group, err)
	}
}

// delivery is a record as a share group member got it.
type delivery struct {
	member string
	count  int32
	at     time.Time
	status kgo.AckStatus
}

// shareLog collects the deliveries of a share group's records.
type shareLog struct {
	mu  sync.Mutex
	got map[string][]delivery
}

func (l *shareLog) add(value string, d delivery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got[value] = append(l.got[value], d)
}

// done counts the records accepted or rejected.
func (l *shareLog) done() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ds := range l.got {
		if s := ds[len(ds)-1].status; s == kgo.AckAccept || s == kgo.AckReject {
			n++
		}
	}
	return n
}

// bufferedLog logs, as deliveries to member, the records its client
// buffers: what the gateway gave the member, polled or not.
type bufferedLog struct {
	log    *shareLog
	member string
	n      atomic.Int64
}

func (b *bufferedLog) OnFetchRecordBuffered(r *kgo.Record) {
	b.log.add(string(r.Value), delivery{member: b.member, count: r.DeliveryCount(), at: time.Now()})
	b.n.Add(1)
}

// TestShareGroupFranz: a share group of franz-go consumers on a topic of
// three partitions. A member that acquired records and hangs (its
// connection open, no acknowledgement) has them delivered to others once
// their lock (2 s) runs out, their delivery count raised; a member killed
// while holding records (its connections closed) has them released at
// once, to be delivered again with their count raised; three members share
// the rest, each record delivered to one of them; a record rejected is
// never delivered again. At the end the group has nothing in flight
// (DescribeShareGroupOffsets: no lag).
func TestShareGroupFranz(t *testing.T) {
	topic := newTopic(t)
	group := topic + "-share"
	createTopic(t, topic, 3, nil)
	produced := map[int32][]string{}
	produceBatch(t, topic, 0, 600, produced)
	const lock = 2 * time.Second
	setGroupConfigs(t, group, "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", strconv.Itoa(int(lock.Milliseconds())))
	id := topicID(t, newClient(t), topic)

	// The hung member: a raw ShareFetch acquires 20 records of partition
	// 0, and nothing more is ever sent on its connection.
	hung := dialRaw(t)
	member, g := "hung-member", group
	sf := kmsg.NewPtrShareFetchRequest()
	sf.Version = 1
	sf.GroupID, sf.MemberID, sf.MaxWaitMillis, sf.MaxBytes, sf.MaxRecords, sf.BatchSize = &g, &member, 2000, 1<<20, 20, 20
	sf.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}}}
	resp := hung.request(sf).(*kmsg.ShareFetchResponse)
	hungAt := time.Now()
	held := map[int64]bool{}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			for _, a := range p.AcquiredRecords {
				for o := a.FirstOffset; o <= a.LastOffset; o++ {
					held[o] = true
				}
			}
		}
	}
	if resp.ErrorCode != 0 || len(held) != 20 || !held[0] || !held[19] {
		t.Fatalf("the hung member's fetch: %s, acquired %v", kerr.ErrorForCode(resp.ErrorCode), held)
	}

	log := &shareLog{got: map[string][]delivery{}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	consume := func(name string, cl *kgo.Client, decide func(r *kgo.Record) kgo.AckStatus) {
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 50)
			fs.EachError(func(_ string, _ int32, err error) {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
					t.Logf("%s: %v", name, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				st := decide(r)
				log.add(string(r.Value), delivery{member: name, count: r.DeliveryCount(), at: time.Now(), status: st})
				if st != 0 {
					r.Ack(st)
				}
			})
			cl.FlushAcks(ctx) //nolint:errcheck // what is acknowledged is checked by the deliveries
		}
	}
	shareClient := func(name string, opts ...kgo.Opt) *kgo.Client {
		return newClient(t, append([]kgo.Opt{kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID(name),
			kgo.FetchMaxWait(500 * time.Millisecond), kgo.ShareMaxRecords(40)}, opts...)...)
	}

	// The killed member: it takes records and dies holding them. What the
	// gateway gave it is logged as its client buffers it, polled or not.
	// Once its first fetch is polled, its client fetches again and holds
	// what it gets until that is polled; only then is it cut off, with no
	// fetch in flight whose records nobody would have seen.
	var killed cutDialer
	kb := &bufferedLog{log: log, member: "killed"}
	kc := shareClient("killed", kgo.Dialer(killed.dial), kgo.WithHooks(kb))
	polled := 0
	for polled == 0 && ctx.Err() == nil {
		polled = len(kc.PollRecords(ctx, 50).Records())
	}
	eventually(t, 10*time.Second, "the killed member's second fetch buffered", func() error {
		if n := kb.n.Load(); n <= int64(polled) {
			return fmt.Errorf("%d records buffered, %d polled", n, polled)
		}
		return nil
	})
	killed.cutOff()
	kc.Close()

	// Three members share the rest; the second rejects records whose
	// number ends in 7.
	accept := func(*kgo.Record) kgo.AckStatus { return kgo.AckAccept }
	var wg sync.WaitGroup
	for i, decide := range []func(*kgo.Record) kgo.AckStatus{accept, func(r *kgo.Record) kgo.AckStatus {
		if strings.HasSuffix(string(r.Value), "7") {
			return kgo.AckReject
		}
		return kgo.AckAccept
	}, accept} {
		name := "s" + strconv.Itoa(i+1)
		cl := shareClient(name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			consume(name, cl, decide)
		}()
	}
	eventually(t, 90*time.Second, "every record accepted or rejected", func() error {
		if n := log.done(); n < 600 {
			return fmt.Errorf("%d of 600", n)
		}
		return nil
	})
	cancel()
	wg.Wait()

	log.mu.Lock()
	defer log.mu.Unlock()
	killedHeld := 0
	for p, vals := range produced {
		for o, v := range vals {
			ds := log.got[v]
			var final []delivery
			for _, d := range ds {
				if d.member != "killed" {
					final = append(final, d)
				}
			}
			switch {
			case len(final) != 1:
				t.Errorf("%s (%d/%d) delivered to the members %d times: %+v", v, p, o, len(final), ds)
				continue
			case p == 0 && held[int64(o)]:
				// The hung member's: back after the lock, second delivery.
				if final[0].count != 2 || final[0].at.Sub(hungAt) < lock-200*time.Millisecond {
					t.Errorf("%s, held by the hung member: delivered %v after it (lock %v) as delivery %d", v, final[0].at.Sub(hungAt), lock, final[0].count)
				}
			case len(ds) == 2 && ds[0].member == "killed":
				killedHeld++
				if final[0].count != 2 {
					t.Errorf("%s, held by the killed member: delivered again as delivery %d", v, final[0].count)
				}
			case final[0].count != 1:
				t.Errorf("%s: delivery %d, want the first", v, final[0].count)
			}
		}
	}
	if killedHeld == 0 {
		t.Error("the killed member held no record that came back")
	}

	// Nothing in flight any more: no lag.
	admin := newClient(t)
	eventually(t, 30*time.Second, "no lag", func() error {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group, Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0, 1, 2}}}}}
		resp, err := req.RequestWith(ctxT(t), admin)
		if err != nil {
			return err
		}
		for _, g := range resp.Groups {
			if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
				return err
			}
			for _, tp := range g.Topics {
				for _, p := range tp.Partitions {
					if p.StartOffset != int64(len(produced[p.Partition])) || p.Lag != 0 {
						return fmt.Errorf("partition %d: start %d, lag %d", p.Partition, p.StartOffset, p.Lag)
					}
				}
			}
		}
		return nil
	})
}

// franz-go's kgo suite tests of share groups, which it skips against a
// broker without them: the share consumer itself, a chain of share groups
// consuming and producing with every way of acknowledging (accept,
// release, reject, records left to their locks), acknowledgements when
// closing, and the share offsets' admin calls.
func TestFranzGoSuiteShareGroups(t *testing.T) {
	kgoSuite(t, 8*time.Minute, []string{"KGO_TEST_RECORDS=20000"},
		"^(TestShareGroup|TestShareGroupETL|TestShareGroupAckOnClose|TestShareGroupOffsetsAdmin)$",
		"TestShareGroup", "TestShareGroupETL", "TestShareGroupAckOnClose", "TestShareGroupOffsetsAdmin")
}

// shareFetchRaw is a raw ShareFetch v1 of partition 0 by member, in a new
// session; it returns the acquired offsets with their delivery counts.
func shareFetchRaw(t *testing.T, c *rawConn, group, member string, id [16]byte, maxRecords int32) map[int64]int16 {
	t.Helper()
	sf := kmsg.NewPtrShareFetchRequest()
	sf.Version = 1
	sf.GroupID, sf.MemberID, sf.MaxWaitMillis, sf.MaxBytes, sf.MaxRecords, sf.BatchSize = &group, &member, 2000, 1<<20, maxRecords, maxRecords
	sf.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}}}
	resp := c.request(sf).(*kmsg.ShareFetchResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("ShareFetch of %s: %v", member, kerr.ErrorForCode(resp.ErrorCode))
	}
	out := map[int64]int16{}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("ShareFetch of %s: partition %v", member, kerr.ErrorForCode(p.ErrorCode))
			}
			for _, a := range p.AcquiredRecords {
				for o := a.FirstOffset; o <= a.LastOffset; o++ {
					out[o] = a.DeliveryCount
				}
			}
		}
	}
	return out
}

// TestShareGroupRestart: a share-partition's state is in the filer: after
// the gateway restarts, records accepted before are not delivered again,
// records acquired and not acknowledged come again as second deliveries,
// and the rest as first ones.
func TestShareGroupRestart(t *testing.T) {
	topic := newTopic(t)
	group := topic + "-share"
	createTopic(t, topic, 1, nil)
	produced := map[int32][]string{}
	produceBatch(t, topic, 0, 100, produced)
	setGroupConfigs(t, group, "share.auto.offset.reset", "earliest")
	id := topicID(t, newClient(t), topic)

	c := dialRaw(t)
	if got := shareFetchRaw(t, c, group, "before", id, 50); len(got) != 50 || got[0] != 1 || got[49] != 1 {
		t.Fatalf("before the restart: acquired %d records: %v", len(got), got)
	}
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.Version = 1
	member := "before"
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = &group, &member, 1
	ack.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0,
		AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 29, AcknowledgeTypes: []int8{1}}}}}}}
	if resp := c.request(ack).(*kmsg.ShareAcknowledgeResponse); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("accepting 0-29: %v %v", kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}

	restartGateway(t)
	var got map[int64]int16
	eventually(t, 30*time.Second, "a fetch after the restart", func() error {
		got = shareFetchRaw(t, dialRaw(t), group, "after", id, 100)
		if len(got) == 0 {
			return errors.New("nothing acquired")
		}
		return nil
	})
	for o := int64(0); o < 100; o++ {
		count, ok := got[o]
		switch {
		case o < 30 && ok:
			t.Errorf("%d, accepted before the restart, came again", o)
		case o >= 30 && o < 50 && count != 2:
			t.Errorf("%d, acquired and not acknowledged before the restart: delivery %d, want 2", o, count)
		case o >= 50 && count != 1:
			t.Errorf("%d: delivery %d, want 1", o, count)
		}
	}
}
