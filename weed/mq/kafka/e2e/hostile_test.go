package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestHostileClients: a gateway of its own (its budgets of decoded
// records and fetched bytes 128 MiB each, group.max.size 100), with a
// well-behaved idempotent producer and a consumer beside it, under the
// hostile loads of `weed mq.kafka.bench -hostile` for 60 s, all at once:
// zstd batches of 220,000 empty records from 16 connections, 16
// connections sending a request a byte a second, 16 connections fetching
// 55 MiB at a time, 150 members joining one group; then a flood of
// connections. Throughout, the gateway's resident memory stays under
// 1 GiB plus its budgets; every slow sender is cut, members past the cap
// get GROUP_MAX_SIZE_REACHED and connections past the per-address limit
// are closed; the well-behaved producer gets no error and everything it
// was acknowledged is read back. The hostile clients run at the lowest
// CPU priority (nice 19), as if on machines of their own: on this
// machine's cores they would otherwise take CPU from the gateway and the
// SeaweedFS processes, which no gateway can defend against. The latencies
// are logged, not asserted.
func TestHostileClients(t *testing.T) {
	const budget = 128 << 20
	g, err := startNamedGateway("hostile-gateway", cluster.master, 0, "-cluster.name=hostile",
		"-decompression.max.bytes="+strconv.Itoa(budget), "-fetch.response.budget.bytes="+strconv.Itoa(budget),
		"-group.max.size=100", "-max.connections.per.ip=400")
	if err != nil {
		t.Fatal(err)
	}
	defer g.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// The gateway's resident memory, every 200 ms.
	var peak atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if rss := rssOf(g.cmd.Process.Pid); rss > peak.Load() {
				peak.Store(rss)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()

	// The well-behaved producer and consumer.
	topic := "hostile-good"
	adm := newClient(t, kgo.SeedBrokers(g.addr))
	createTopicVia(t, adm, topic, 1, nil)
	var (
		mu      sync.Mutex
		acked   []string
		lat     []time.Duration
		errs    []error
		stopped = make(chan struct{})
		good    sync.WaitGroup
	)
	good.Add(1)
	go func() {
		defer good.Done()
		cl, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Error(err)
			return
		}
		defer cl.Close()
		for i := 0; ; i++ {
			select {
			case <-stopped:
				return
			case <-time.After(20 * time.Millisecond):
			}
			v := fmt.Sprintf("good-%d", i)
			start := time.Now()
			err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr()
			mu.Lock()
			if err != nil {
				errs = append(errs, err)
			} else {
				acked = append(acked, v)
				lat = append(lat, time.Since(start))
			}
			mu.Unlock()
		}
	}()
	consumer := newClient(t, kgo.SeedBrokers(g.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var consumed []string
	good.Add(1)
	go func() {
		defer good.Done()
		for {
			select {
			case <-stopped:
				return
			default:
			}
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			fs := consumer.PollFetches(pctx)
			pcancel()
			fs.EachRecord(func(r *kgo.Record) { consumed = append(consumed, string(r.Value)) })
		}
	}()

	hostile := func(pattern string, d time.Duration, conns int) string {
		out, err := exec.CommandContext(ctx, "nice", "-n", "19", weedBin, "mq.kafka.bench", "-bootstrap="+g.addr, "-hostile="+pattern,
			"-hostile.for="+d.String(), "-hostile.conns="+strconv.Itoa(conns)).CombinedOutput()
		if err != nil {
			t.Errorf("hostile %s: %v\n%s", pattern, err, out)
		}
		t.Logf("%s", strings.TrimSpace(string(out)))
		return string(out)
	}
	outs := map[string]string{}
	var loads sync.WaitGroup
	for _, l := range []struct {
		pattern string
		conns   int
	}{{"empty-zstd", 16}, {"slow", 16}, {"huge-fetch", 16}, {"join-flood", 150}} {
		loads.Add(1)
		go func() {
			defer loads.Done()
			out := hostile(l.pattern, 60*time.Second, l.conns)
			mu.Lock()
			outs[l.pattern] = out
			mu.Unlock()
		}()
	}
	loads.Wait()
	outs["conn-flood"] = hostile("conn-flood", 5*time.Second, 600)
	close(stopped)
	good.Wait()
	close(stopSampling)
	<-sampled

	closedBy := func(out string) int {
		m := regexp.MustCompile(`connections closed by the endpoint: (\d+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no count of closed connections in %q", out)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	if n := closedBy(outs["slow"]); n != 16 {
		t.Errorf("slow senders: %d of 16 cut", n)
	}
	if !regexp.MustCompile(`answers: .*OK \d+`).MatchString(outs["empty-zstd"]) {
		t.Errorf("valid batches of empty records, which Kafka takes: %s", outs["empty-zstd"])
	}
	if !strings.Contains(outs["join-flood"], "GROUP_MAX_SIZE_REACHED") {
		t.Errorf("150 members joining a group of at most 100: %s", outs["join-flood"])
	}
	if n := closedBy(outs["conn-flood"]); n < 150 { // about 200, less the others' connections
		t.Errorf("600 connections from one address past its limit of 400: %d closed", n)
	}
	limit := int64(1<<30 + 2*budget + 512<<20) // 1 GiB, the two budgets and the request bytes held (-max.request.bytes' queue)
	if p := peak.Load(); p == 0 || p > limit {
		t.Errorf("the gateway's resident memory peaked at %d MiB (limit %d MiB)", p>>20, limit>>20)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, err := range errs {
		t.Errorf("the well-behaved producer got %v", err)
	}
	if len(acked) < 100 {
		t.Fatalf("the well-behaved producer had %d records acknowledged in 65 s", len(acked))
	}
	// Everything acknowledged is read back.
	rest := consumeN(t, topic, len(acked), kgo.SeedBrokers(g.addr))
	seen := map[string]bool{}
	for _, r := range rest {
		seen[string(r.Value)] = true
	}
	for _, v := range acked {
		if !seen[v] {
			t.Errorf("acknowledged record %s not read back", v)
		}
	}
	slices.Sort(lat)
	t.Logf("peak RSS %d MiB; the well-behaved producer: %d records, p50 %v, p99 %v, max %v; its consumer read %d during the loads",
		peak.Load()>>20, len(acked), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1], len(consumed))
}

// rssOf is a process's resident memory in bytes (0 if it cannot be read).
func rssOf(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
