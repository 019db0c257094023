package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// keyedLoad produces rounds of one record per key (values "<key>@<round>")
// to a one-partition topic, and remembers the newest value of each key (nil
// for a tombstone).
type keyedLoad struct {
	topic  string
	keys   int
	pad    int // bytes added to each value
	newest map[string][]byte
}

func (l *keyedLoad) produce(t *testing.T, cl *kgo.Client, rounds int) {
	t.Helper()
	for r := 0; r < rounds; r++ {
		recs := make([]*kgo.Record, 0, l.keys)
		for k := 0; k < l.keys; k++ {
			key := fmt.Sprintf("key-%04d", k)
			v := []byte(fmt.Sprintf("%s@%d%s", key, r, strings.Repeat("x", l.pad)))
			recs = append(recs, &kgo.Record{Topic: l.topic, Key: []byte(key), Value: v})
			l.newest[key] = v
		}
		produceSync(t, cl, recs...)
	}
}

func (l *keyedLoad) tombstone(t *testing.T, cl *kgo.Client, keys int) {
	t.Helper()
	var recs []*kgo.Record
	for k := 0; k < keys; k++ {
		key := fmt.Sprintf("key-%04d", k)
		recs = append(recs, &kgo.Record{Topic: l.topic, Key: []byte(key)})
		l.newest[key] = nil
	}
	produceSync(t, cl, recs...)
}

// ticking produces a record of key "tick" every 200 ms until the test
// ends, so that the broker keeps flushing new segments and the older ones
// close; opts may name other seeds than the suite's gateway.
func ticking(t *testing.T, topic string, opts ...kgo.Opt) {
	cl := newClient(t, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte("tick"), Value: []byte(time.Now().String())}, nil)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// compactedView is a full read of a partition from its start.
type compactedView struct {
	perKey map[string]int    // records read per key
	last   map[string][]byte // the last value read per key
	total  int
}

// readCompacted reads partition 0 of topic from offset 0 to its end,
// checking that offsets ascend; opts may name other seeds than the
// suite's gateway.
func readCompacted(t *testing.T, topic string, opts ...kgo.Opt) compactedView {
	t.Helper()
	end := listEndVia(t, newClient(t, opts...), topic, 0)
	cl := newClient(t, append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(500*time.Millisecond))...)
	v := compactedView{perKey: map[string]int{}, last: map[string][]byte{}}
	prev := int64(-1)
	empty := 0
	for prev < end-1 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		if ctx.Err() != nil && fs.NumRecords() == 0 {
			// Nothing more: the end was compacted away, or the gateway
			// is starved on a loaded machine; twice in a row, the former.
			if empty++; empty == 2 {
				break
			}
			continue
		}
		empty = 0
		if err := fs.Err0(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("fetch: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset <= prev {
				t.Fatalf("offset %d read after %d", r.Offset, prev)
			}
			prev = r.Offset
			k := string(r.Key)
			v.perKey[k]++
			v.last[k] = r.Value
			v.total++
		})
	}
	cl.Close()
	return v
}

// check fails the test unless every key's newest value is the last one
// read (a tombstone read as a null value, or its key gone once tombstones
// may be removed).
func (l *keyedLoad) check(t *testing.T, v compactedView, tombstonesGone bool) {
	t.Helper()
	for key, want := range l.newest {
		got, ok := v.last[key]
		switch {
		case want == nil && !ok && tombstonesGone:
		case want == nil && ok && got == nil:
		case want != nil && ok && string(got) == string(want):
		default:
			t.Fatalf("key %s: last read %q (read: %v), newest produced %q", key, got, ok, want)
		}
	}
}

// A compacted topic: 100,000 records over 1,000 keys, then tombstones for
// 100 of them. Once the log cleaner ran, a full read has the newest value
// of every key, offsets ascending, at most a few records per key; the
// tombstoned keys are gone after delete.retention.ms; the cleaner's
// metrics show what it removed. A keyless record is refused.
func TestCompactedTopic(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, map[string]*string{
		"cleanup.policy": kmsg.StringPtr("compact"), "min.cleanable.dirty.ratio": kmsg.StringPtr("0.01"), "delete.retention.ms": kmsg.StringPtr("20000"),
	})
	cl := newClient(t, kgo.ProducerLinger(5*time.Millisecond))
	err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("a keyless record: %v, want INVALID_RECORD", err)
	}
	load := &keyedLoad{topic: topic, keys: 1000, newest: map[string][]byte{}}
	load.produce(t, cl, 100)
	load.tombstone(t, cl, 100)
	ticking(t, topic)

	var v compactedView
	eventually(t, 3*time.Minute, "the log cleaner to compact the topic", func() error {
		v = readCompacted(t, topic)
		load.check(t, v, false)
		for key := range load.newest {
			if n := v.perKey[key]; n > 3 {
				return fmt.Errorf("%d records read, %d of key %s", v.total, n, key)
			}
		}
		return nil
	})
	t.Logf("after cleaning: %d records read of %d produced", v.total, 100_100)
	removed, _ := metricValue(scrape(t), "SeaweedFS_kafka_compaction_removed_records_total", map[string]string{"topic": topic})
	if removed < 90_000 {
		t.Errorf("compaction_removed_records_total %v, want at least 90000", removed)
	}
	if _, ok := metricValue(scrape(t), "SeaweedFS_kafka_compaction_dirty_ratio", map[string]string{"topic": topic, "partition": "0"}); !ok {
		t.Errorf("no compaction_dirty_ratio for the partition")
	}
	eventually(t, 2*time.Minute, "the tombstones to go after delete.retention.ms", func() error {
		v = readCompacted(t, topic)
		load.check(t, v, true)
		for k := 0; k < 100; k++ {
			if key := fmt.Sprintf("key-%04d", k); v.perKey[key] > 0 {
				return fmt.Errorf("key %s still read %d times", key, v.perKey[key])
			}
		}
		return nil
	})
}

// The gateway cleaning a compacted partition is SIGKILLed while it cleans
// (its log shows a cleaning begun and not ended), four times, 0 to 150 ms
// into a cleaning (one takes 150-700 ms here); after each restart every key's newest value is
// there, and once cleaning is done, only it. On a cluster of its own, so
// that it runs beside the others at the end.
func TestCompactionSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	c := startSplitCluster(t, 1)
	var g *gatewayProc
	chaosGateway(t, "compaction-gateway", c.master, &g)
	at := kgo.SeedBrokers(g.addr) // restarted on the same port
	topic := newTopic(t)
	createTopicVia(t, newClient(t, at), topic, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact"), "min.cleanable.dirty.ratio": kmsg.StringPtr("0.01")})
	cl := newClient(t, at, kgo.ProducerLinger(5*time.Millisecond))
	// 20,000 keys of 1 KB: each cleaning rewrites about 20 MB.
	load := &keyedLoad{topic: topic, keys: 20_000, pad: 1000, newest: map[string][]byte{}}
	load.produce(t, cl, 3)
	ticking(t, topic, at)
	begun := "kafka log cleaner: " + topic + "/0: cleaning "
	ended := "kafka log cleaner: " + topic + "/0: cleaned "
	interrupted := 0
	for i, after := range []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond} {
		from := logSize(t, g.log)
		eventually(t, 2*time.Minute, "a cleaning to begin", func() error {
			if !strings.Contains(logSince(t, g.log, from), begun) {
				return errors.New("not yet")
			}
			return nil
		})
		time.Sleep(after)
		g.kill()
		if since := logSince(t, g.log, from); !strings.Contains(since[strings.LastIndex(since, begun):], ended) {
			interrupted++
		}
		restarted, err := startNamedGateway("compaction-gateway", c.master, g.port)
		if err != nil {
			t.Fatal(err)
		}
		g = restarted
		v := readCompacted(t, topic, at)
		load.check(t, v, false)
		t.Logf("kill %d, %v into a cleaning: %d records read, every newest value there", i+1, after, v.total)
		load.produce(t, cl, 1) // more to clean
	}
	if interrupted == 0 {
		t.Fatalf("every cleaning ended before its kill: nothing shown")
	}
	t.Logf("%d of 4 kills interrupted a cleaning", interrupted)
	eventually(t, 3*time.Minute, "the log cleaner to finish", func() error {
		v := readCompacted(t, topic, at)
		load.check(t, v, false)
		for key := range load.newest {
			if n := v.perKey[key]; n > 3 {
				return fmt.Errorf("%d records read, %d of key %s", v.total, n, key)
			}
		}
		return nil
	})
}

func logSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// logSince is what a log got past offset from.
func logSince(t *testing.T, path string, from int64) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[min(from, int64(len(b))):])
}
