package e2e

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
)

// ackLog is what a load's producers were told: every acknowledged record's
// partition, offset and value, and when acknowledgements came.
type ackLog struct {
	mu     sync.Mutex
	at     map[int32]map[int64]string
	times  []time.Time
	failed int
}

func newAckLog() *ackLog { return &ackLog{at: map[int32]map[int64]string{}} }

func (l *ackLog) add(r *kgo.Record, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failed++
		return
	}
	if l.at[r.Partition] == nil {
		l.at[r.Partition] = map[int64]string{}
	}
	l.at[r.Partition][r.Offset] = string(r.Value)
	l.times = append(l.times, time.Now())
}

func (l *ackLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.times)
}

// longestGap is the longest time without an acknowledgement.
func (l *ackLog) longestGap() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var gap time.Duration
	for i := 1; i < len(l.times); i++ {
		gap = max(gap, l.times[i].Sub(l.times[i-1]))
	}
	return gap
}

// progress waits until each of the partitions got n more
// acknowledgements.
func (l *ackLog) progress(t *testing.T, partitions int32, n int, what string) {
	t.Helper()
	l.mu.Lock()
	start := map[int32]int{}
	for p, at := range l.at {
		start[p] = len(at)
	}
	l.mu.Unlock()
	eventually(t, 3*time.Minute, "every partition acknowledging after "+what, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		for p := int32(0); p < partitions; p++ {
			if len(l.at[p]) < start[p]+n {
				return fmt.Errorf("partition %d: %d more", p, len(l.at[p])-start[p])
			}
		}
		return nil
	})
}

// ackLoad produces to one partition of topic through cl, about rate
// records a second, until stop is closed or max records were sent; values
// are prefix-000001, ...
func ackLoad(t *testing.T, cl *kgo.Client, topic string, partition int32, prefix string, rate, maxRecords int, stop <-chan struct{}, acks *ackLog) func() {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		for i := 0; i < maxRecords; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 {
				time.Sleep(d)
			}
			r := &kgo.Record{Topic: topic, Partition: partition, Value: []byte(fmt.Sprintf("%s-%06d", prefix, i))}
			cl.Produce(context.Background(), r, acks.add)
		}
	}()
	return func() {
		<-done
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if err := cl.Flush(ctx); err != nil {
			t.Errorf("flush %s: %v", prefix, err)
		}
	}
}

// mixedLoad produces to partition 0 of topic as an idempotent producer and
// to partition 1 as a plain acks=all one, 300 records/s each and at most
// max each, through the gateways at seeds; stop ends both and waits for
// their last acknowledgements.
func mixedLoad(t *testing.T, seeds []string, topic string, max int) (acks *ackLog, stop func()) {
	t.Helper()
	acks = newAckLog()
	done := make(chan struct{})
	waitIdem := ackLoad(t, chaosProducer(t, seeds), topic, 0, "idempotent", 300, max, done, acks)
	waitPlain := ackLoad(t, chaosProducer(t, seeds, kgo.DisableIdempotentWrite()), topic, 1, "plain", 300, max, done, acks)
	return acks, func() {
		close(done)
		waitIdem()
		waitPlain()
	}
}

// checkAcknowledged reads every partition of topic from offset 0 to its
// end through the gateway at addr and checks what a user would: offsets
// come in order, no offset holds two records, every acknowledged record
// is at its acknowledged offset, and (for the partitions in once) no value
// is stored twice.
func checkAcknowledged(t *testing.T, addr, topic string, acks *ackLog, once map[int32]bool) {
	t.Helper()
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var ends kadm.ListedOffsets
	eventually(t, time.Minute, "listing the partitions' ends", func() error {
		ends, err = kadm.NewClient(admin).ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
		return err
	})
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	parts := map[string]map[int32]kgo.Offset{topic: {}}
	for p := range want {
		parts[topic][p] = kgo.NewOffset().At(0)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(parts), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int32]map[int64]string{}
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range want {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %v of %v before the deadline", next, want)
		}
		fetches.EachError(func(_ string, p int32, err error) { t.Logf("fetch partition %d: %v", p, err) })
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset < next[r.Partition] {
				t.Fatalf("partition %d: offset %d read after offset %d", r.Partition, r.Offset, next[r.Partition]-1)
			}
			next[r.Partition] = r.Offset + 1
			if got[r.Partition] == nil {
				got[r.Partition] = map[int64]string{}
			}
			got[r.Partition][r.Offset] = string(r.Value)
		})
	}
	acks.mu.Lock()
	defer acks.mu.Unlock()
	for p, at := range acks.at {
		lost := 0
		for off, v := range at {
			if got[p][off] != v {
				if lost < 5 {
					t.Errorf("partition %d: offset %d was acknowledged for %q, holds %q", p, off, v, got[p][off])
				}
				lost++
			}
		}
		if lost > 0 {
			t.Errorf("partition %d: %d of %d acknowledged records not at their offsets", p, lost, len(at))
			continue
		}
		if once[p] {
			seen := map[string]int64{}
			offs := make([]int64, 0, len(got[p]))
			for off := range got[p] {
				offs = append(offs, off)
			}
			sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
			for _, off := range offs {
				v := got[p][off]
				if prev, dup := seen[v]; dup {
					t.Errorf("partition %d: %q stored twice, at offsets %d and %d", p, v, prev, off)
				}
				seen[v] = off
			}
		}
		t.Logf("partition %d: %d acknowledged records all at their offsets, %d records stored (end %d)", p, len(at), len(got[p]), want[p])
	}
}

// chaosGateway starts a gateway on a split cluster, stopped (its log shown
// on failure) when the test ends; *g may be replaced by a restart.
func chaosGateway(t *testing.T, name, master string, g **gatewayProc) {
	t.Helper()
	var err error
	if *g, err = startNamedGateway(name, master, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		(*g).stop()
		if t.Failed() {
			dumpLog((*g).log)
		}
	})
}

// waitGateways waits until the Metadata of the gateways at seeds lists
// them all.
func waitGateways(t *testing.T, seeds []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	eventually(t, time.Minute, fmt.Sprintf("the %d gateways in the metadata", len(seeds)), func() error {
		md, err := kadm.NewClient(cl).BrokerMetadata(ctxT(t))
		if err == nil && len(md.Brokers) != len(seeds) {
			err = fmt.Errorf("%d brokers", len(md.Brokers))
		}
		return err
	})
}

// createTopicAt creates a topic with partitions through the gateways at
// seeds.
func createTopicAt(t *testing.T, seeds []string, partitions int32) string {
	t.Helper()
	topic := newTopic(t)
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := kadm.NewClient(admin).CreateTopic(ctxT(t), partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	return topic
}

// chaosProducer is a franz-go producer for the durability loads: records
// go to the partition they name, and give up only after minutes.
func chaosProducer(t *testing.T, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(3 * time.Minute), kgo.MaxBufferedRecords(6000)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestDurabilityChaos: master, volume server, filer and MQ broker each run
// as a process of their own; while an idempotent and a plain acks=all
// producer write, the broker is SIGKILLed and restarted twice, the gateway
// SIGKILLed and restarted once, and the filer SIGKILLed and restarted once.
// Every acknowledged record is then read back at its acknowledged offset,
// offsets come in order, and the idempotent producer stored nothing twice.
func TestDurabilityChaos(t *testing.T) {
	t.Parallel() // alone on a cluster of its own: beside the others, at the end
	c := startSplitCluster(t, 1)
	var g *gatewayProc
	chaosGateway(t, "chaos-gateway", c.master, &g)
	topic := createTopicAt(t, []string{g.addr}, 2)
	acks, stopLoad := mixedLoad(t, []string{g.addr}, topic, 30000)

	// Each step waits until both partitions take writes again, so that
	// each kill catches a broker holding records it has not flushed.
	acked := func(what string) { acks.progress(t, 2, 150, what) }
	acked("the start")
	for i := 0; i < 2; i++ {
		time.Sleep(3 * time.Second) // records the broker holds in memory
		c.kill("broker")
		time.Sleep(2 * time.Second)
		c.start("broker")
		acked("a broker restart")
	}
	time.Sleep(2 * time.Second)
	t.Log("SIGKILL gateway")
	g.kill()
	restarted, err := startNamedGateway("chaos-gateway", c.master, g.port)
	if err != nil {
		t.Fatal(err)
	}
	g = restarted
	acked("a gateway restart")
	time.Sleep(time.Second)
	c.kill("filer")
	time.Sleep(3 * time.Second)
	c.start("filer")
	acked("a filer restart")
	stopLoad()
	t.Logf("%d records acknowledged, %d failed; longest time without an acknowledgement %v", acks.count(), acks.failed, acks.longestGap())
	checkAcknowledged(t, g.addr, topic, acks, map[int32]bool{0: true})
}

// listDir calls fn for each entry of a filer directory.
func listDir(ctx context.Context, fc filer_pb.SeaweedFilerClient, dir string, fn func(*filer_pb.Entry)) error {
	return filer_pb.SeaweedList(ctx, fc, dir, "", func(e *filer_pb.Entry, _ bool) error {
		fn(e)
		return nil
	}, "", false, math.MaxInt32)
}

// partitionSegments lists the log segments of each partition of topic in
// the filer at filerPort, by partition directory.
func partitionSegments(t *testing.T, filerPort int, topic string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	withFilerAt(t, filerPort, func(ctx context.Context, fc filer_pb.SeaweedFilerClient) error {
		topicDir := "/topics/kafka/" + topic
		var versions []string
		if err := listDir(ctx, fc, topicDir, func(v *filer_pb.Entry) {
			if v.IsDirectory {
				versions = append(versions, topicDir+"/"+v.Name)
			}
		}); err != nil {
			return err
		}
		var parts []string
		for _, v := range versions {
			if err := listDir(ctx, fc, v, func(p *filer_pb.Entry) {
				if p.IsDirectory {
					parts = append(parts, v+"/"+p.Name)
				}
			}); err != nil {
				return err
			}
		}
		for _, dir := range parts {
			out[dir] = nil
			if err := listDir(ctx, fc, dir, func(s *filer_pb.Entry) {
				if !s.IsDirectory && !strings.HasSuffix(s.Name, ".offset") {
					out[dir] = append(out[dir], s.Name)
				}
			}); err != nil {
				return err
			}
		}
		return nil
	})
	return out
}

// TestSegmentsPerFlushInterval: a minute of acks=all load on one partition
// leaves about one log segment per broker flush interval (5 s) in the
// filer, not one per request, and every record is read back.
func TestSegmentsPerFlushInterval(t *testing.T) {
	t.Parallel() // on the shared cluster, its minute of load beside the others at the end
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	acks := newAckLog()
	cl := newClient(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	stop := make(chan struct{})
	wait := ackLoad(t, cl, topic, 0, "r", 500, 30000, stop, acks)
	time.Sleep(60 * time.Second)
	close(stop)
	wait()
	time.Sleep(6 * time.Second) // the last flush
	segs := partitionSegments(t, cluster.filerPort, topic)
	if len(segs) != 1 {
		t.Fatalf("partition directories %v", segs)
	}
	for dir, names := range segs {
		t.Logf("%s: %d segments for %d acknowledged records: %v", dir, len(names), acks.count(), names)
		if len(names) < 5 || len(names) > 20 {
			t.Fatalf("%d segments after a minute of load (the broker flushes every 5 s)", len(names))
		}
	}
	checkAcknowledged(t, gw.addr, topic, acks, map[int32]bool{0: true})
}

// leaderAddr returns the address of the gateway that leads a partition,
// as the gateway at addr reports it.
func leaderAddr(t *testing.T, addr, topic string, partition int32) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var leader string
	eventually(t, time.Minute, "a leader of the partition", func() error {
		md, err := kadm.NewClient(cl).Metadata(ctxT(t), topic)
		if err != nil {
			return err
		}
		p, ok := md.Topics[topic].Partitions[partition]
		if !ok || p.Err != nil {
			return fmt.Errorf("partition %d: %v", partition, p.Err)
		}
		for _, b := range md.Brokers {
			if b.NodeID == p.Leader {
				leader = fmt.Sprintf("%s:%d", b.Host, b.Port)
				return nil
			}
		}
		return fmt.Errorf("leader %d not among the brokers", p.Leader)
	})
	return leader
}

// TestDurabilityTwoGateways: two gateways on a cluster whose processes run
// apart; under an idempotent and a plain acks=all load, the gateway leading
// the idempotent partition is SIGKILLed (the other takes its partitions
// over and reads its write-ahead log), then the broker is SIGKILLed and
// restarted. Every acknowledged record is read back at its offset, the
// idempotent producer's records once each.
func TestDurabilityTwoGateways(t *testing.T) {
	t.Parallel() // alone on a cluster of its own: beside the others, at the end
	c := startSplitCluster(t, 1)
	var gws [2]*gatewayProc
	for i := range gws {
		chaosGateway(t, fmt.Sprintf("durability-gateway%d", i+1), c.master, &gws[i])
	}
	seeds := []string{gws[0].addr, gws[1].addr}
	waitGateways(t, seeds)
	topic := createTopicAt(t, seeds, 2)
	acks, stopLoad := mixedLoad(t, seeds, topic, 30000)
	acked := func(what string) { acks.progress(t, 2, 150, what) }
	acked("the start")
	time.Sleep(2 * time.Second)
	victim, survivor := 0, 1
	if leaderAddr(t, gws[0].addr, topic, 0) == gws[1].addr {
		victim, survivor = 1, 0
	}
	t.Logf("SIGKILL gateway %s (leads partition 0)", gws[victim].addr)
	gws[victim].kill()
	acked("the gateway's death")
	time.Sleep(2 * time.Second)
	c.kill("broker")
	time.Sleep(2 * time.Second)
	c.start("broker")
	acked("a broker restart")
	stopLoad()
	t.Logf("%d records acknowledged, %d failed; longest time without an acknowledgement %v", acks.count(), acks.failed, acks.longestGap())
	checkAcknowledged(t, gws[survivor].addr, topic, acks, map[int32]bool{0: true})
	// The killed gateway comes back under its node id and trims what its
	// log held once the segments cover it, as the survivor trims its own:
	// no log file from before the load stopped is left.
	stopped := time.Now()
	g, err := startNamedGateway(fmt.Sprintf("durability-gateway%d", victim+1), c.master, gws[victim].port)
	if err != nil {
		t.Fatal(err)
	}
	gws[victim] = g
	eventually(t, time.Minute, "the write-ahead logs trimmed", func() error {
		for _, f := range walFiles(t, c.ports["filer"]) {
			if ns, err := strconv.ParseInt(f[strings.LastIndexByte(f, '/')+1:], 10, 64); err == nil && ns < stopped.UnixNano() {
				return fmt.Errorf("%s is left", f)
			}
		}
		return nil
	})
}

// walFiles lists the write-ahead log files of every gateway in the filer at
// filerPort.
func walFiles(t *testing.T, filerPort int) []string {
	t.Helper()
	var out []string
	withFilerAt(t, filerPort, func(ctx context.Context, fc filer_pb.SeaweedFilerClient) error {
		const root = "/etc/kafka-gateway/wal"
		var dirs []string
		if err := listDir(ctx, fc, root, func(e *filer_pb.Entry) {
			if e.IsDirectory {
				dirs = append(dirs, root+"/"+e.Name)
			}
		}); err != nil {
			return err
		}
		for _, d := range dirs {
			if err := listDir(ctx, fc, d, func(e *filer_pb.Entry) { out = append(out, d+"/"+e.Name) }); err != nil {
				return err
			}
		}
		return nil
	})
	return out
}

// TestDurabilityBrokerLost: two MQ brokers; under an idempotent acks=all
// load over six partitions both are SIGKILLed for good. No broker is on a
// Kafka record's way: every partition goes on taking writes, and every
// acknowledged record is read back at its offset, once.
func TestDurabilityBrokerLost(t *testing.T) {
	t.Parallel() // alone on a cluster of its own: beside the others, at the end
	c := startSplitCluster(t, 2)
	var g *gatewayProc
	chaosGateway(t, "brokerlost-gateway", c.master, &g)
	const partitions = 6
	topic := createTopicAt(t, []string{g.addr}, partitions)
	acks := newAckLog()
	stop := make(chan struct{})
	cl := chaosProducer(t, []string{g.addr})
	var waits []func()
	for p := int32(0); p < partitions; p++ {
		waits = append(waits, ackLoad(t, cl, topic, p, fmt.Sprintf("p%d", p), 100, 30000, stop, acks))
	}
	everyPartition := func(what string) { acks.progress(t, partitions, 100, what) }
	everyPartition("the start")
	time.Sleep(3 * time.Second)
	killed := time.Now()
	c.kill("broker")
	c.kill("broker2")
	everyPartition("losing both brokers")
	t.Logf("every partition took 100 more records %v after the brokers' death", time.Since(killed).Round(100*time.Millisecond))
	close(stop)
	for _, w := range waits {
		w()
	}
	t.Logf("%d records acknowledged, %d failed; longest time without an acknowledgement %v", acks.count(), acks.failed, acks.longestGap())
	once := map[int32]bool{}
	for p := int32(0); p < partitions; p++ {
		once[p] = true
	}
	checkAcknowledged(t, g.addr, topic, acks, once)
}

// TestVolumeServerPaused: the volume server is stopped (SIGSTOP) for 60 s
// while an idempotent and a plain acks=all producer write. Meanwhile a
// produce request with a 5 s timeout is answered within it, with a
// retriable error, and the gateway's memory stays bounded; once the volume
// server goes on, both producers are acknowledged again, and every record
// acknowledged before, during and after is read back at its offset.
func TestVolumeServerPaused(t *testing.T) {
	t.Parallel() // alone on a cluster of its own: beside the others, at the end
	c := startSplitCluster(t, 1)
	var g *gatewayProc
	chaosGateway(t, "paused-volume-gateway", c.master, &g)
	topic := createTopicAt(t, []string{g.addr}, 2)
	acks, stopLoad := mixedLoad(t, []string{g.addr}, topic, 60000)
	acks.progress(t, 2, 300, "the start")

	admin, err := kgo.NewClient(kgo.SeedBrokers(g.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	id := topicID(t, admin, topic)
	base := rssOf(g.cmd.Process.Pid)
	t.Logf("SIGSTOP volume (gateway RSS %d MiB)", base>>20)
	c.procs["volume"].signal(syscall.SIGSTOP)
	paused := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			c.procs["volume"].signal(syscall.SIGCONT)
		}
	}()
	var peak int64
	answered := map[string]int{}
	for time.Since(paused) < 60*time.Second {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = 1 // the plain producer's: a value stored twice is no anomaly there
		rp.Records = batchOf([]byte("while the volume server is stopped"))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		resp, err := req.RequestWith(ctx, admin)
		cancel()
		took := time.Since(sent)
		switch {
		case err != nil:
			t.Errorf("a produce while the volume server is stopped: no answer in %v: %v", took, err)
		case took > 8*time.Second:
			t.Errorf("a produce with a 5 s timeout answered after %v", took)
		default:
			code := resp.Topics[0].Partitions[0].ErrorCode
			switch code {
			case 0, kerr.RequestTimedOut.Code, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code, kerr.KafkaStorageError.Code:
			default:
				t.Errorf("a produce while the volume server is stopped: %v, not the storage's retriable error", kerr.ErrorForCode(code))
			}
			if code == 0 {
				answered["acknowledged"]++
			} else {
				answered[kerr.ErrorForCode(code).(*kerr.Error).Message]++
			}
		}
		peak = max(peak, rssOf(g.cmd.Process.Pid))
		time.Sleep(time.Second)
	}
	c.procs["volume"].signal(syscall.SIGCONT)
	resumed = true
	t.Logf("SIGCONT volume after %v; produce requests answered meanwhile: %v; gateway RSS peak %d MiB", time.Since(paused).Round(time.Second), answered, peak>>20)
	if peak > 1<<30 {
		t.Errorf("the gateway's RSS reached %d MiB while the volume server was stopped", peak>>20)
	}
	acks.progress(t, 2, 300, "the volume server going on")
	stopLoad()
	t.Logf("%d records acknowledged, %d failed; longest time without an acknowledgement %v", acks.count(), acks.failed, acks.longestGap())
	checkAcknowledged(t, g.addr, topic, acks, map[int32]bool{0: true})
}
