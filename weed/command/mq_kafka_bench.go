package command

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/gateway"

	swcommand "github.com/seaweedfs/seaweedfs/weed/command"
)

type kafkaBenchOptions struct {
	bootstrap    *string
	topic        *string
	configs      *string
	partitions   *int
	records      *int
	size         *int
	acks         *string
	timeout      *time.Duration
	backlog      *bool
	inflight     *int
	idempotent   *bool
	rate         *int
	linger       *time.Duration
	sync         *bool
	producers    *int
	vary         *bool
	maxBuffer    *int
	soak         *time.Duration
	churn        *int
	churnProcs   *string
	hostile      *string
	hostileFor   *time.Duration
	hostileConns *int
	monitor      *string
	filer        *string

	tlsCA         *string
	saslMechanism *string
	saslUser      *string
	saslPassword  *string
}

var kafkaBenchOpts kafkaBenchOptions

// MqKafkaBench is `weed mq.kafka.bench`, a bounded load against any Kafka
// endpoint.
var MqKafkaBench = &swcommand.Command{
	UsageLine: "mq.kafka.bench -bootstrap=host:port [-records=1000000] [-size=100] [-partitions=1]",
	Short:     "measure produce and consume speed of a Kafka endpoint",
	Long: `Measure produce and consume speed of a Kafka endpoint (this gateway or any
Kafka broker) with franz-go.

It creates a fresh topic, produces -records records of -size bytes over
-partitions partitions while a consumer reads them as they arrive, then reads
the whole topic again from offset 0 with a new consumer (the backlog read).
Progress is printed every second; at the end it prints records/s, MB/s and
the produce (send to ack) and end-to-end (send to consume) latency
percentiles. The load is bounded by -records and -timeout.

  -bootstrap   host:port of the endpoint (default 127.0.0.1:9092)
  -topic       topic to use (default: a new name per run)
  -topic.configs  configs of the topic it creates, name=value,... (for
               instance iceberg.mode=key_value)
  -partitions  partitions of the topic (default 1)
  -records     records to produce (default 1000000)
  -size        value size in bytes (default 100)
  -acks        all, 1 or 0 (default all)
  -timeout     give up after this long (default 5m)
  -backlog     also read the topic again from offset 0 (default true)
  -inflight    produce requests in flight per broker (default 5; franz-go's
               own default is 1)
  -idempotent  produce as an idempotent producer (acks=all; franz-go then
               sends one request per broker at a time, -inflight is ignored)
  -rate        records offered per second, spread evenly (default 0: as fast
               as the producer takes them); for latency at a given load
  -linger      the producer's linger (default 5ms; 0 sends each record as
               soon as a request can go)
  -sync        produce one record at a time, each after the previous one's
               acknowledgement (a synchronous producer: Java's send().get(),
               sarama's SyncProducer); reports acknowledgements per second
  -producers   with -sync: this many goroutines produce at once through the
               one client (default 1)
  -vary        value sizes drawn at random from 0 to -size
  -maxbufferedbytes  the producer's MaxBufferedBytes (default 0: franz-go's)
  -tls.ca      connect with TLS, trusting the PEM certificates of this file
  -sasl.mechanism  log in with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, as
               -sasl.user with -sasl.password
  -soak        instead of the above, a changing load for this long: every
               30 s a new topic (3 partitions) with a consumer group reading
               it, the oldest of more than three deleted with its group,
               -rate records a second (default 1000) of -size bytes spread
               over the live topics; every minute the gateway's RSS and
               goroutines (-monitor=http://host:metricsPort) and the filer's
               entries under /etc/kafka-gateway and /topics/kafka
               (-filer=host:port) are printed, and the growth after the
               first 10 minutes at the end
  -churn       instead of the above, topics created and deleted: this many
               topics of -partitions partitions, -records records of -size
               bytes written to each partition, nine tenths of them
               deleted, a fifth created again under their names and
               written; the resident memory of every SeaweedFS process on
               this machine (programs whose path contains -churn.procs, default
               weed: gateway, MQ broker, filer, volume server, master) is
               printed every 50 topics created and 100 deleted, and how the
               total moved while the last ones were created

  -hostile     instead of the above, a hostile client against a gateway on
               this machine only (127.0.0.0/8, ::1), for -hostile.for (default
               1m, at most 10m) over -hostile.conns connections (default 16);
               it prints the answers by error code and the connections the
               gateway closed:
                 empty-zstd  valid zstd batches of 220,000 empty records
                 slow        requests announced as 1 MiB, sent a byte a second
                 conn-flood  that many connections at once, held open
                 huge-fetch  fetches of 55 MiB from a topic of 64 MiB
                 join-flood  that many members joining one classic group

Topics created and deleted (1,000 topics of 4 partitions, 20 records each):

  weed mq.kafka.bench -churn=1000 -partitions=4 -records=20

franz-go's own TestClient_Produce workload (50 goroutines calling
ProduceSync, 20,000 records of up to 1 KB, one partition):

  weed mq.kafka.bench -records=20000 -size=1000 -vary -sync -producers=50 -maxbufferedbytes=5000 -backlog=false

Example:
  weed mq.kafka.bench -bootstrap=127.0.0.1:9092 -records=500000 -size=100
`,
}

func init() {
	MqKafkaBench.Run = runMqKafkaBench
	f := &MqKafkaBench.Flag
	o := &kafkaBenchOpts
	o.bootstrap = f.String("bootstrap", "127.0.0.1:9092", "host:port of the Kafka endpoint")
	o.topic = f.String("topic", "", "topic to use (default: a new one)")
	o.configs = f.String("topic.configs", "", "configs of the topic created, name=value,...")
	o.partitions = f.Int("partitions", 1, "partitions of the topic")
	o.records = f.Int("records", 1000000, "records to produce")
	o.size = f.Int("size", 100, "value size in bytes")
	o.acks = f.String("acks", "all", "all, 1 or 0")
	o.timeout = f.Duration("timeout", 5*time.Minute, "give up after this long")
	o.backlog = f.Bool("backlog", true, "read the topic again from offset 0 afterwards")
	o.inflight = f.Int("inflight", 5, "produce requests in flight per broker")
	o.idempotent = f.Bool("idempotent", false, "produce as an idempotent producer")
	o.rate = f.Int("rate", 0, "records offered per second (0: as fast as possible)")
	o.linger = f.Duration("linger", 5*time.Millisecond, "producer linger")
	o.sync = f.Bool("sync", false, "produce one record at a time, waiting for each acknowledgement")
	o.producers = f.Int("producers", 1, "with -sync: goroutines producing at once")
	o.vary = f.Bool("vary", false, "value sizes at random from 0 to -size")
	o.tlsCA = f.String("tls.ca", "", "connect with TLS, trusting the PEM certificates of this file")
	o.saslMechanism = f.String("sasl.mechanism", "", "log in with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	o.saslUser = f.String("sasl.user", "", "SASL user")
	o.saslPassword = f.String("sasl.password", "", "SASL password")
	o.soak = f.Duration("soak", 0, "instead: a changing load for this long (topics, producers and groups created and deleted), sampling the gateway's footprint")
	o.monitor = f.String("monitor", "", "with -soak: base URL of the gateway's /metrics (http://host:metricsPort)")
	o.filer = f.String("filer", "", "with -soak: host:port of the filer's HTTP, to count its entries")
	o.maxBuffer = f.Int("maxbufferedbytes", 0, "the producer's MaxBufferedBytes (0: franz-go's default)")
	o.churn = f.Int("churn", 0, "instead: create this many topics of -partitions partitions (-records records each), delete nine tenths, create a fifth again, printing the RSS of the SeaweedFS processes")
	o.hostile = f.String("hostile", "", "instead: a hostile client's load against a gateway on this machine: empty-zstd, slow, conn-flood, huge-fetch or join-flood")
	o.hostileFor = f.Duration("hostile.for", time.Minute, "with -hostile: for this long (at most 10m)")
	o.hostileConns = f.Int("hostile.conns", 16, "with -hostile: connections (members for join-flood)")
	o.churnProcs = f.String("churn.procs", "weed", "with -churn and -soak: the processes whose memory is summed are those whose program path contains this")
}

// latencies collects durations and reports percentiles.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) pct(p float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	sort.Slice(l.d, func(i, j int) bool { return l.d[i] < l.d[j] })
	return l.d[min(len(l.d)-1, int(p*float64(len(l.d))))]
}

func runMqKafkaBench(cmd *swcommand.Command, args []string) bool {
	o := &kafkaBenchOpts
	ctx, cancel := context.WithTimeout(context.Background(), *o.timeout)
	defer cancel()
	seeds := strings.Split(*o.bootstrap, ",")
	security, err := benchSecurity(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return false
	}
	// conn are the options that reach the endpoint, for each client.
	conn := func(more ...kgo.Opt) []kgo.Opt {
		return append(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, security...), more...)
	}
	if *o.hostile != "" {
		return runHostile(seeds[0], *o.hostile, *o.hostileFor, *o.hostileConns)
	}
	if *o.churn > 0 {
		return runChurn(ctx, conn, *o.churn, *o.partitions, *o.records, *o.size, *o.churnProcs)
	}
	if *o.soak > 0 {
		cancel()
		ctx, cancel = context.WithTimeout(context.Background(), *o.soak+5*time.Minute)
		defer cancel()
		rate := *o.rate
		if rate == 0 {
			rate = 1000
		}
		return runSoak(ctx, conn, *o.soak, *o.monitor, *o.filer, rate, *o.size, *o.churnProcs)
	}
	topic := *o.topic
	if topic == "" {
		topic = fmt.Sprintf("bench-%d", time.Now().UnixNano())
	}
	n := *o.records

	admin, err := kgo.NewClient(conn()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return false
	}
	defer admin.Close()
	configs := map[string]*string{}
	for _, kv := range strings.Split(*o.configs, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "-topic.configs: %q is not name=value\n", kv)
			return false
		}
		configs[name] = &value
	}
	// A -topic that exists is written as it is.
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, int32(*o.partitions), 1, configs, topic); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		fmt.Fprintf(os.Stderr, "create topic %s: %v\n", topic, err)
		return false
	}

	acks := kgo.AllISRAcks()
	switch *o.acks {
	case "1":
		acks = kgo.LeaderAck()
	case "0":
		acks = kgo.NoAck()
	}
	popts := conn(kgo.RequiredAcks(acks),
		kgo.ProducerLinger(*o.linger), kgo.MaxBufferedRecords(100000), kgo.ProducerBatchMaxBytes(1<<20))
	if *o.maxBuffer > 0 {
		popts = append(popts, kgo.MaxBufferedBytes(*o.maxBuffer))
	}
	if *o.idempotent {
		popts = append(popts, kgo.RequiredAcks(kgo.AllISRAcks()))
	} else {
		popts = append(popts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(*o.inflight))
	}
	producer, err := kgo.NewClient(popts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return false
	}
	defer producer.Close()
	consumer, err := kgo.NewClient(conn(kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return false
	}
	defer consumer.Close()

	var produced, acked, failed, consumed atomic.Int64
	var prodLat, e2eLat latencies
	value := make([]byte, *o.size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}

	consumeDone := make(chan struct{})
	go func() {
		defer close(consumeDone)
		for consumed.Load() < int64(n) && ctx.Err() == nil {
			fetches := consumer.PollFetches(ctx)
			now := time.Now()
			fetches.EachRecord(func(r *kgo.Record) {
				e2eLat.add(now.Sub(r.Timestamp))
				consumed.Add(1)
			})
		}
	}()

	stopProgress := progress(func() string {
		return fmt.Sprintf("produced %d, acked %d, consumed %d", produced.Load(), acked.Load(), consumed.Load())
	})
	start := time.Now()
	var wg sync.WaitGroup
	valueOf := func(i int) []byte {
		if *o.vary {
			return value[:(i*7919)%len(value)]
		}
		return value
	}
	if *o.sync {
		var next atomic.Int64
		for w := 0; w < max(1, *o.producers); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					i := int(next.Add(1)) - 1
					if i >= n {
						return
					}
					if *o.rate > 0 {
						if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(*o.rate))); d > 0 {
							time.Sleep(d)
						}
					}
					sent := time.Now()
					err := producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: valueOf(i), Timestamp: sent}).FirstErr()
					if err != nil {
						failed.Add(1)
					} else {
						prodLat.add(time.Since(sent))
						acked.Add(1)
					}
					produced.Add(1)
				}
			}()
		}
	}
	for i := 0; i < n && ctx.Err() == nil && !*o.sync; i++ {
		if *o.rate > 0 {
			due := start.Add(time.Duration(i) * time.Second / time.Duration(*o.rate))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		sent := time.Now()
		wg.Add(1)
		producer.Produce(ctx, &kgo.Record{Topic: topic, Value: valueOf(i), Timestamp: sent}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				failed.Add(1)
				return
			}
			prodLat.add(time.Since(sent))
			acked.Add(1)
		})
		produced.Add(1)
	}
	wg.Wait()
	prodElapsed := time.Since(start)
	<-consumeDone
	e2eElapsed := time.Since(start)
	stopProgress()

	mb := float64(*o.size) / 1e6
	mode := ""
	switch {
	case *o.sync:
		mode = fmt.Sprintf(", one record at a time from each of %d producers", max(1, *o.producers))
	case *o.rate > 0:
		mode = fmt.Sprintf(", %d records/s offered", *o.rate)
	}
	fmt.Printf("topic %s, %d partitions, %d records of %d bytes, acks=%s, linger %v%s\n", topic, *o.partitions, n, *o.size, *o.acks, *o.linger, mode)
	fmt.Printf("produce:  %d acked, %d failed in %v: %.0f records/s, %.1f MB/s; latency p50 %v p99 %v\n",
		acked.Load(), failed.Load(), prodElapsed.Round(time.Millisecond), float64(acked.Load())/prodElapsed.Seconds(),
		float64(acked.Load())*mb/prodElapsed.Seconds(), prodLat.pct(0.50).Round(time.Microsecond), prodLat.pct(0.99).Round(time.Microsecond))
	fmt.Printf("consume:  %d records while producing, in %v; end-to-end latency p50 %v p99 %v\n",
		consumed.Load(), e2eElapsed.Round(time.Millisecond), e2eLat.pct(0.50).Round(time.Microsecond), e2eLat.pct(0.99).Round(time.Microsecond))

	if *o.backlog && ctx.Err() == nil {
		reader, err := kgo.NewClient(conn(kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(16<<20))...)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return false
		}
		defer reader.Close()
		var read atomic.Int64
		stop := progress(func() string { return fmt.Sprintf("backlog read %d", read.Load()) })
		start := time.Now()
		for read.Load() < acked.Load() && ctx.Err() == nil {
			fetches := reader.PollFetches(ctx)
			read.Add(int64(fetches.NumRecords()))
		}
		elapsed := time.Since(start)
		stop()
		fmt.Printf("backlog:  %d records from offset 0 in %v: %.0f records/s, %.1f MB/s\n",
			read.Load(), elapsed.Round(time.Millisecond), float64(read.Load())/elapsed.Seconds(), float64(read.Load())*mb/elapsed.Seconds())
	}
	if ctx.Err() != nil {
		fmt.Fprintf(os.Stderr, "stopped by -timeout %v\n", *o.timeout)
		return false
	}
	return failed.Load() == 0
}

// progress prints a status line every second until the returned func is
// called.
func progress(status func() string) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(os.Stderr, "  %s\n", status())
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// benchSecurity are the client options of -tls.ca and -sasl.*.
func benchSecurity(o *kafkaBenchOptions) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if *o.tlsCA != "" {
		pool, err := gateway.ReadCAs(*o.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("-tls.ca: %w", err)
		}
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	}
	switch *o.saslMechanism {
	case "":
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: *o.saslUser, Pass: *o.saslPassword}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: *o.saslUser, Pass: *o.saslPassword}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: *o.saslUser, Pass: *o.saslPassword}.AsSha512Mechanism()))
	default:
		return nil, fmt.Errorf("-sasl.mechanism %q: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", *o.saslMechanism)
	}
	return opts, nil
}
