package command

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// soakSample is the gateway's footprint at one moment of a soak.
type soakSample struct {
	at         time.Duration
	rss        float64 // bytes
	goroutines float64
	entries    int // filer entries under the gateway's state and its topics
}

// runSoak keeps a changing load on the endpoint for d: every cycle a new
// topic with a producer and a consumer group, the oldest of more than three
// topics deleted with its group. Every minute it samples the gateway's RSS
// and goroutines (its /metrics at monitor), the resident memory of all
// SeaweedFS processes on this machine (programs whose path contains procs) and
// the filer's entry count
// under /etc/kafka-gateway and /topics/kafka (filer's HTTP at filer), and
// reports how they moved after the first 10 minutes.
func runSoak(ctx context.Context, conn func(...kgo.Opt) []kgo.Opt, d time.Duration, monitor, filer string, rate, size int, procs string) bool {
	admin, err := kgo.NewClient(conn()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return false
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	producer, err := kgo.NewClient(conn(kgo.ProducerLinger(5 * time.Millisecond))...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return false
	}
	defer producer.Close()

	type live struct {
		topic, group string
		consumer     *kgo.Client
		done         chan struct{}
	}
	var (
		mu                     sync.Mutex
		topics                 []*live
		produced, failed, read atomic.Int64
		created, deleted       int
	)
	value := make([]byte, size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	stop := time.Now().Add(d)
	sctx, cancel := context.WithDeadline(ctx, stop)
	defer cancel()

	// The producer spreads -rate records a second over the live topics.
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		per := max(rate/100, 1)
		for i := 0; sctx.Err() == nil; {
			<-tick.C
			mu.Lock()
			names := make([]string, 0, len(topics))
			for _, l := range topics {
				names = append(names, l.topic)
			}
			mu.Unlock()
			if len(names) == 0 {
				continue
			}
			for j := 0; j < per; j++ {
				i++
				producer.Produce(sctx, &kgo.Record{Topic: names[i%len(names)], Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Add(1)
					} else {
						produced.Add(1)
					}
				})
			}
		}
	}()

	var samples []soakSample
	start := time.Now()
	sample := func() {
		s := soakSample{at: time.Since(start).Round(time.Second)}
		s.rss, s.goroutines = gatewayMetrics(monitor)
		s.entries = filerEntries(filer, "/etc/kafka-gateway", 6) + filerEntries(filer, "/topics/kafka", 1)
		samples = append(samples, s)
		mu.Lock()
		n := len(topics)
		mu.Unlock()
		all := int64(0)
		for _, v := range processMemory(procs) {
			all += v
		}
		fmt.Printf("%8v  rss %6.1f MiB (all SeaweedFS processes %6.1f MiB)  goroutines %5.0f  filer entries %6d  | topics live %d, created %d, deleted %d; records produced %d (failed %d), consumed %d\n",
			s.at, s.rss/(1<<20), float64(all)/(1<<20), s.goroutines, s.entries, n, created, deleted, produced.Load(), failed.Load(), read.Load())
	}
	sample()
	cycle := time.NewTicker(30 * time.Second)
	defer cycle.Stop()
	every := time.NewTicker(time.Minute)
	defer every.Stop()
	for n := 0; ; n++ {
		l := &live{topic: fmt.Sprintf("soak-%d-%d", start.Unix(), n), group: fmt.Sprintf("soak-group-%d-%d", start.Unix(), n), done: make(chan struct{})}
		if _, err := adm.CreateTopic(sctx, 3, 1, nil, l.topic); err == nil {
			created++
			if l.consumer, err = kgo.NewClient(conn(kgo.ConsumeTopics(l.topic), kgo.ConsumerGroup(l.group), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...); err == nil {
				go func() {
					defer close(l.done)
					for sctx.Err() == nil {
						fs := l.consumer.PollFetches(sctx)
						if fs.IsClientClosed() {
							return
						}
						read.Add(int64(fs.NumRecords()))
					}
				}()
				mu.Lock()
				topics = append(topics, l)
				mu.Unlock()
			}
		}
		mu.Lock()
		var old *live
		if len(topics) > 3 {
			old, topics = topics[0], topics[1:]
		}
		mu.Unlock()
		if old != nil {
			old.consumer.Close() // leaves the group, committing
			<-old.done
			dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
			if _, err := adm.DeleteGroups(dctx, old.group); err != nil {
				fmt.Fprintf(os.Stderr, "delete group %s: %v\n", old.group, err)
			}
			if _, err := adm.DeleteTopics(dctx, old.topic); err == nil {
				deleted++
			}
			dcancel()
		}
	wait:
		for {
			select {
			case <-sctx.Done():
				break wait
			case <-every.C:
				sample()
			case <-cycle.C:
				break wait
			}
		}
		if sctx.Err() != nil {
			break
		}
	}
	sample()
	mu.Lock()
	for _, l := range topics {
		l.consumer.Close()
	}
	mu.Unlock()

	// Growth after the first 10 minutes (the heap and caches settle).
	var base *soakSample
	for i := range samples {
		if samples[i].at >= 10*time.Minute {
			base = &samples[i]
			break
		}
	}
	last := samples[len(samples)-1]
	fmt.Printf("soak of %v: %d topics created and %d deleted with their groups, %d records produced (%d failed), %d consumed\n",
		d, created, deleted, produced.Load(), failed.Load(), read.Load())
	fmt.Printf("start: rss %.1f MiB, goroutines %.0f, filer entries %d; end: rss %.1f MiB, goroutines %.0f, filer entries %d\n",
		samples[0].rss/(1<<20), samples[0].goroutines, samples[0].entries, last.rss/(1<<20), last.goroutines, last.entries)
	if base != nil && base.rss > 0 {
		fmt.Printf("RSS after %v: %.1f MiB; at the end: %.1f MiB (%+.1f%%)\n", base.at, base.rss/(1<<20), last.rss/(1<<20), 100*(last.rss-base.rss)/base.rss)
	}
	return true
}

// gatewayMetrics reads the gateway's resident memory and goroutines from
// its /metrics (0 if unreachable).
func gatewayMetrics(monitor string) (rss, goroutines float64) {
	if monitor == "" {
		return 0, 0
	}
	resp, err := http.Get(strings.TrimSuffix(monitor, "/") + "/metrics")
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		switch name {
		case "process_resident_memory_bytes":
			rss, _ = strconv.ParseFloat(v, 64)
		case "go_goroutines":
			goroutines, _ = strconv.ParseFloat(v, 64)
		}
	}
	return rss, goroutines
}

// filerEntries counts the entries under dir, depth levels down, through
// the filer's HTTP listing (0 if unreachable).
func filerEntries(filer, dir string, depth int) int {
	if filer == "" || depth == 0 {
		return 0
	}
	n, last := 0, ""
	for {
		u := "http://" + filer + (&url.URL{Path: dir + "/"}).EscapedPath() + "?limit=1000&lastFileName=" + url.QueryEscape(last)
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return n
		}
		var listing struct {
			Entries []struct {
				FullPath string
				Mode     uint32
			}
			ShouldDisplayLoadMore bool
			LastFileName          string
		}
		err = json.NewDecoder(resp.Body).Decode(&listing)
		resp.Body.Close()
		if err != nil {
			return n
		}
		for _, e := range listing.Entries {
			n++
			if e.Mode&(1<<31) != 0 {
				n += filerEntries(filer, e.FullPath, depth-1)
			}
		}
		if !listing.ShouldDisplayLoadMore || listing.LastFileName == "" {
			return n
		}
		last = listing.LastFileName
	}
}
