package command

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// churnSample is the memory of the cluster's processes at one moment of a
// churn run.
type churnSample struct {
	live  int
	rss   map[string]int64 // by process kind
	total int64
}

// runChurn creates topics topics of partitions partitions and writes
// records records to each partition, deletes nine tenths of them, then
// creates a fifth of them again under their names and writes to them. It
// prints the resident memory of every SeaweedFS process on this machine
// whose program holds procs (gateway, MQ broker, filer, volume server,
// master) after each step of every 50 topics, and at the end how the total
// moved while the last ones were created.
func runChurn(ctx context.Context, conn func(...kgo.Opt) []kgo.Opt, topics, partitions, records, size int, procs string) bool {
	admin, err := kgo.NewClient(conn()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return false
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	producer, err := kgo.NewClient(conn(kgo.ProducerLinger(5*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return false
	}
	defer func() { producer.Close() }()
	value := bytes.Repeat([]byte("c"), size)
	prefix := fmt.Sprintf("churn-%d", time.Now().Unix())
	name := func(i int) string { return fmt.Sprintf("%s-%d", prefix, i) }
	start := time.Now()
	var samples []churnSample
	live := 0
	sample := func(what string) churnSample {
		s := churnSample{live: live, rss: processMemory(procs)}
		kinds := make([]string, 0, len(s.rss))
		for k, v := range s.rss {
			s.total += v
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		var parts []string
		for _, k := range kinds {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, float64(s.rss[k])/(1<<20)))
		}
		fmt.Printf("%8v  %-22s topics live %5d  RSS MiB: %s; total %.0f\n", time.Since(start).Round(time.Second), what, live, strings.Join(parts, ", "), float64(s.total)/(1<<20))
		samples = append(samples, s)
		return s
	}
	// create makes topics from..to-1 and writes to each partition.
	create := func(from, to int, what string) bool {
		for i := from; i < to; i++ {
			if ctx.Err() != nil {
				return false
			}
			if _, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, name(i)); err != nil {
				fmt.Fprintf(os.Stderr, "create %s: %v\n", name(i), err)
				return false
			}
			live++
			var recs []*kgo.Record
			for p := 0; p < partitions; p++ {
				for r := 0; r < records; r++ {
					recs = append(recs, &kgo.Record{Topic: name(i), Partition: int32(p), Value: value})
				}
			}
			if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				fmt.Fprintf(os.Stderr, "produce to %s: %v\n", name(i), err)
				return false
			}
			if (i+1-from)%50 == 0 {
				sample(what)
			}
		}
		return true
	}
	sample("start")
	if !create(0, topics, "created and written") {
		return false
	}
	deleted := topics * 9 / 10
	for i := 0; i < deleted; i++ {
		if _, err := adm.DeleteTopics(ctx, name(i)); err != nil {
			fmt.Fprintf(os.Stderr, "delete %s: %v\n", name(i), err)
			return false
		}
		live--
		if (i+1)%100 == 0 {
			sample("deleted")
		}
	}
	again := topics / 5
	mark := len(samples)
	// A producer that knew the deleted topics would send to their old
	// topic ids (UNKNOWN_TOPIC_ID, as from Kafka): a new one.
	producer.Close()
	if producer, err = kgo.NewClient(conn(kgo.ProducerLinger(5*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return false
	}
	if !create(0, again, "created again") {
		return false
	}
	last := sample("end")
	lo, hi := last.total, last.total
	for _, s := range samples[mark:] {
		lo, hi = min(lo, s.total), max(hi, s.total)
	}
	fmt.Printf("churn: %d topics of %d partitions created and written (%d records each), %d deleted, %d created again in %v\n",
		topics, partitions, records, deleted, again, time.Since(start).Round(time.Second))
	fmt.Printf("RSS of the SeaweedFS processes at the end: %.0f MiB; while the last %d were created: %.0f-%.0f MiB (%.1f%% of the lowest)\n",
		float64(last.total)/(1<<20), again, float64(lo)/(1<<20), float64(hi)/(1<<20), 100*float64(hi-lo)/float64(max(lo, 1)))
	return true
}

// processMemory sums the resident memory of the processes on this machine
// whose program (first word of the command line) contains procs, other
// than this one, by kind: the
// weed subcommand (mq.kafka.gateway, mq.broker, filer, volume, master, ...).
func processMemory(procs string) map[string]int64 {
	out := map[string]int64{}
	if procs == "" {
		return out
	}
	self := os.Getpid()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == self {
			continue
		}
		cmd, err := os.ReadFile(d + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		if !strings.Contains(args[0], procs) {
			continue // not a weed process (a shell or timeout running one)
		}
		kind := ""
		for _, a := range args[1:] {
			if !strings.HasPrefix(a, "-") {
				kind = a
				break
			}
		}
		if kind == "" || kind == "mq.kafka.bench" {
			continue
		}
		status, err := os.ReadFile(d + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				out[kind] += kb << 10
			}
		}
	}
	return out
}
