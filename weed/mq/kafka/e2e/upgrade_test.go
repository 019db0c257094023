package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
)

// TestRollingUpgrade: three gateways of the previous release (the test
// command builds it from its tag: WEED_PREVIOUS_BINARY) form a cluster of
// their own on the shared SeaweedFS. Under an idempotent producer, a
// transactional one that commits some transactions and aborts others,
// and a consumer group, each gateway in turn is stopped and started again
// from this build, on its port. Afterwards:
//   - every acknowledged record is in the log once, at the offset it was
//     acknowledged with; no record is there twice;
//   - read_committed reads every committed transaction's records once and
//     none of the aborted;
//   - the clients saw no error but retriable ones (none reached the
//     application);
//   - the group's committed offsets never went back across a restart,
//     and it reads on to the end of the log and commits it.
//
// Then the cluster's state is given a format newer than either binary's,
// and a gateway of the previous release refuses to join it, saying why.
func TestRollingUpgrade(t *testing.T) {
	t.Parallel() // a cluster of its own on the shared SeaweedFS
	prev := os.Getenv("WEED_PREVIOUS_BINARY")
	if prev == "" {
		t.Fatal("WEED_PREVIOUS_BINARY is not set: scripts/test.sh builds the previous release from its tag")
	}
	name := fmt.Sprintf("rolling%d", time.Now().UnixNano()%1e6)
	flags := []string{"-cluster.name=" + name}
	procs := make([]*gatewayProc, 3)
	var mu sync.Mutex
	for i := range procs {
		p, err := startGatewayBin(prev, fmt.Sprintf("%s-%d-previous", name, i), cluster.master, 0, lake, nil, flags...)
		if err != nil {
			t.Fatalf("the previous release's gateway %d: %v", i, err)
		}
		procs[i] = p
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range procs {
			p.stop()
		}
	})
	seeds := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, p := range procs {
			out = append(out, p.addr)
		}
		return out
	}
	allSee := func(what string) {
		t.Helper()
		eventually(t, 60*time.Second, what, func() error {
			for _, s := range seeds() {
				if n := len(metadataFrom(t, &gatewayProc{addr: s}, "").Brokers); n != 3 {
					return fmt.Errorf("%s lists %d brokers", s, n)
				}
			}
			return nil
		})
	}
	allSee("three gateways of the previous release")

	// Clients bootstrap from every gateway and keep their connections
	// across the restarts, as an application's do.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, kgo.SeedBrokers(seeds()...)))
	const partitions = 6
	plain, txnTopic, group := "upgrade-plain", "upgrade-txn", "upgrade-group"
	for _, topic := range []string{plain, txnTopic} {
		if r, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
	}

	var (
		appErrs  []string // errors that reached the application
		acked    = map[string]int64{}
		ackedAt  = map[int32]map[int64]string{}
		commits  = map[string]bool{} // the committed transactions' values
		aborts   = map[string]bool{} // the aborted ones'
		unknown  = map[string]bool{} // of transactions whose end was not answered
		loadMu   sync.Mutex
		stop     = make(chan struct{}) // the producers'
		stopRead = make(chan struct{}) // the group's
		load     sync.WaitGroup
		reading  sync.WaitGroup
		appError = func(format string, args ...any) {
			loadMu.Lock()
			appErrs = append(appErrs, fmt.Sprintf(format, args...))
			loadMu.Unlock()
		}
	)
	// The idempotent producer (acks=all, franz-go's default).
	load.Add(1)
	go func() {
		defer load.Done()
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds()...), kgo.DefaultProduceTopic(plain), kgo.ProducerLinger(2*time.Millisecond))
		if err != nil {
			appError("%v", err)
			return
		}
		defer cl.Close()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			var recs []*kgo.Record
			for i := range 20 {
				recs = append(recs, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprintf("plain-%d-%d", n, i))})
			}
			for _, r := range cl.ProduceSync(ctx, recs...) {
				loadMu.Lock()
				if r.Err != nil {
					appErrs = append(appErrs, fmt.Sprintf("produce %s: %v", r.Record.Value, r.Err))
				} else {
					acked[string(r.Record.Value)] = r.Record.Offset
					if ackedAt[r.Record.Partition] == nil {
						ackedAt[r.Record.Partition] = map[int64]string{}
					}
					ackedAt[r.Record.Partition][r.Record.Offset] = string(r.Record.Value)
				}
				loadMu.Unlock()
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	// The transactional producer: one transaction in three aborted.
	load.Add(1)
	go func() {
		defer load.Done()
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds()...), kgo.DefaultProduceTopic(txnTopic), kgo.TransactionalID(name+"-txn"))
		if err != nil {
			appError("%v", err)
			return
		}
		defer cl.Close()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := cl.BeginTransaction(); err != nil {
				appError("begin: %v", err)
				return
			}
			var values []string
			for i := range 10 {
				v := fmt.Sprintf("txn-%d-%d", n, i)
				values = append(values, v)
				cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(v)}, nil)
			}
			commit := n%3 != 2
			flushErr := cl.Flush(ctx)
			end := kgo.TransactionEndTry(commit && flushErr == nil)
			err := cl.EndTransaction(ctx, end)
			loadMu.Lock()
			for _, v := range values {
				switch {
				case err != nil:
					unknown[v] = true
				case bool(end):
					commits[v] = true
				default:
					aborts[v] = true
				}
			}
			loadMu.Unlock()
			if flushErr != nil && !retriable(flushErr) {
				appError("transaction %d: %v", n, flushErr)
			}
			if err != nil {
				if !retriable(err) {
					appError("end transaction %d: %v", n, err)
					return
				}
				// Its outcome is not known: abort what may be open.
				cl.AbortBufferedRecords(ctx)         //nolint:errcheck
				cl.EndTransaction(ctx, kgo.TryAbort) //nolint:errcheck
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	// The consumer group, committing as it goes.
	reading.Add(1)
	go func() {
		defer reading.Done()
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(plain),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(500*time.Millisecond))
		if err != nil {
			appError("%v", err)
			return
		}
		defer cl.Close()
		for {
			select {
			case <-stopRead:
				if err := cl.CommitUncommittedOffsets(ctx); err != nil {
					appError("final commit: %v", err)
				}
				return
			default:
			}
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			fs := cl.PollFetches(pctx)
			pcancel()
			fs.EachError(func(topic string, p int32, err error) {
				if !errors.Is(err, context.DeadlineExceeded) && !retriable(err) {
					appError("consume %s-%d: %v", topic, p, err)
				}
			})
		}
	}()

	committed := func() map[int32]int64 {
		t.Helper()
		out := map[int32]int64{}
		eventually(t, 30*time.Second, "the group's offsets", func() error {
			resp, err := adm.FetchOffsets(ctx, group)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				return err
			}
			resp.Each(func(o kadm.OffsetResponse) {
				if o.Topic == plain {
					out[o.Partition] = o.At
				}
			})
			return nil
		})
		return out
	}
	time.Sleep(3 * time.Second) // load before the first restart
	for i := range procs {
		before := committed()
		mu.Lock()
		old := procs[i]
		mu.Unlock()
		old.stop()
		p, err := startGatewayBin(weedBin, fmt.Sprintf("%s-%d-new", name, i), cluster.master, old.port, lake, nil, flags...)
		if err != nil {
			t.Fatalf("gateway %d from this build: %v", i, err)
		}
		mu.Lock()
		procs[i] = p
		mu.Unlock()
		allSee(fmt.Sprintf("three gateways after gateway %d's upgrade", i))
		time.Sleep(3 * time.Second) // load on the mixed cluster
		after := committed()
		for part, at := range before {
			if after[part] < at {
				t.Errorf("after gateway %d's upgrade, the group's offset of partition %d went back from %d to %d", i, part, at, after[part])
			}
		}
	}
	close(stop)
	load.Wait()
	ends, err := adm.ListEndOffsets(ctx, plain, txnTopic)
	if err != nil {
		t.Fatal(err)
	}
	// The group reads to the end and commits it.
	eventually(t, 60*time.Second, "the group committed at the end of the log", func() error {
		at := committed()
		for p := int32(0); p < partitions; p++ {
			if e, _ := ends.Lookup(plain, p); at[p] != e.Offset {
				return fmt.Errorf("partition %d: committed %d, the log ends at %d", p, at[p], e.Offset)
			}
		}
		return nil
	})
	close(stopRead)
	reading.Wait()
	for _, e := range appErrs {
		t.Errorf("an error reached the application: %s", e)
	}
	if len(acked) == 0 || len(commits) == 0 || len(aborts) == 0 {
		t.Fatalf("load: %d records acknowledged, %d committed, %d aborted", len(acked), len(commits), len(aborts))
	}

	// The log: each acknowledged record once, where it was acknowledged.
	// readAll reads a topic from its start until done says so of what it
	// read, and once more.
	readAll := func(topic string, done func(seen map[string]int, next map[int32]int64) bool, opts ...kgo.Opt) map[string]int {
		t.Helper()
		offsets := map[string]map[int32]kgo.Offset{topic: {}}
		for p := int32(0); p < partitions; p++ {
			offsets[topic][p] = kgo.NewOffset().AtStart()
		}
		cl := newClient(t, append([]kgo.Opt{kgo.SeedBrokers(seeds()...), kgo.ConsumePartitions(offsets)}, opts...)...)
		seen := map[string]int{}
		next := map[int32]int64{}
		for last := false; !last; {
			last = done(seen, next)
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			fs := cl.PollFetches(pctx)
			pcancel()
			if ctx.Err() != nil {
				t.Fatalf("%s: read up to %v of %v", topic, next, ends)
			}
			fs.EachRecord(func(r *kgo.Record) {
				seen[string(r.Value)]++
				next[r.Partition] = r.Offset + 1
				if topic == plain {
					if v, ok := ackedAt[r.Partition][r.Offset]; ok && v != string(r.Value) {
						t.Errorf("%s-%d offset %d holds %s, acknowledged as %s", topic, r.Partition, r.Offset, r.Value, v)
					}
				}
			})
		}
		return seen
	}
	plainSeen := readAll(plain, func(_ map[string]int, next map[int32]int64) bool {
		for p := int32(0); p < partitions; p++ {
			if e, _ := ends.Lookup(plain, p); next[p] < e.Offset {
				return false
			}
		}
		return true
	})
	for v := range acked {
		if plainSeen[v] != 1 {
			t.Errorf("acknowledged record %s is in the log %d times", v, plainSeen[v])
		}
	}
	for v, n := range plainSeen {
		if n > 1 {
			t.Errorf("record %s is in the log %d times", v, n)
		}
	}
	// read_committed never returns the markers: read until every
	// committed record is, and once more.
	txnSeen := readAll(txnTopic, func(seen map[string]int, _ map[int32]int64) bool {
		for v := range commits {
			if seen[v] == 0 {
				return false
			}
		}
		return true
	}, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	for v := range commits {
		if txnSeen[v] != 1 {
			t.Errorf("committed record %s read %d times", v, txnSeen[v])
		}
	}
	for v, n := range txnSeen {
		if aborts[v] {
			t.Errorf("aborted record %s read", v)
		}
		if n > 1 {
			t.Errorf("record %s read %d times", v, n)
		}
	}
	t.Logf("%d records acknowledged, %d committed and %d aborted in transactions (%d of unknown outcome) across the upgrade", len(acked), len(commits), len(aborts), len(unknown))

	// A cluster of a newer format: the previous release refuses it.
	dir := "/etc/kafka-gateway/clusters/" + name
	withFilerAt(t, cluster.filerPort, func(ctx context.Context, fc filer_pb.SeaweedFilerClient) error {
		resp, err := filer_pb.LookupEntry(ctx, fc, &filer_pb.LookupDirectoryEntryRequest{Directory: dir, Name: "format"})
		if err != nil {
			return fmt.Errorf("the cluster's format file %s/format: %w", dir, err)
		}
		e := resp.Entry
		if !strings.Contains(string(e.Content), `"version":1`) {
			return fmt.Errorf("the cluster's format: %q", e.Content)
		}
		e.Content = []byte(`{"version":2}`)
		_, err = fc.UpdateEntry(ctx, &filer_pb.UpdateEntryRequest{Directory: dir, Entry: e})
		return err
	})
	g, err := startGatewayBin(prev, name+"-previous-refused", cluster.master, 0, lake, nil, flags...)
	if err == nil {
		g.stop()
		t.Fatal("a gateway of the previous release joined a cluster of a newer format")
	}
	logged, _ := os.ReadFile(work + "/" + name + "-previous-refused.log")
	if want := "the cluster's state is of a newer format: version 2"; !strings.Contains(string(logged), want) {
		t.Errorf("the refused gateway's log does not say %q: %v", want, err)
	}
}

// retriable reports whether a client error is one Kafka clients retry:
// the errors a rolling restart may show.
func retriable(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable || ke == kerr.OperationNotAttempted
	}
	return false
}
