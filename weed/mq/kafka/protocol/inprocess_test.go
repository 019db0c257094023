package protocol_test

// In-process tests: a gateway built as the command builds it (a node.Node
// from the flags' defaults: its server and handlers, coordinators,
// membership, leadership checks and forwarding), over the in-memory
// storage, driven by franz-go as an application would drive Kafka. What
// only SeaweedFS can show (durability, restarts, several gateways, every
// client family) is in the e2e package.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/node"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage/storagetest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// inProcess is the node the in-process tests share, as the e2e tests share
// a SeaweedFS: one node per process (its metrics are the process's).
var inProcess struct {
	once sync.Once
	node *node.Node
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if inProcess.node != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := inProcess.node.Close(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "closing the in-process node: %v\n", err)
			code = 1
		}
		cancel()
	}
	os.Exit(code)
}

// inProcessGateway returns the address of a node on 127.0.0.1 over the
// in-memory storage, started on first use, closed once the tests end.
func inProcessGateway(t *testing.T) string {
	t.Helper()
	inProcess.once.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			inProcess.err = err
			return
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		cfg := node.Defaults()
		cfg.Storage = storagetest.NewStorage()
		cfg.IP, cfg.Listeners, cfg.NodeID = "127.0.0.1", "PLAINTEXT://127.0.0.1:"+strconv.Itoa(port), 1
		cfg.DefaultPartitions, cfg.RegistryListeners = 3, "none"
		cfg.GroupInitialDelayMs = 50
		if inProcess.node, inProcess.err = node.New(cfg); inProcess.err == nil {
			inProcess.err = inProcess.node.Start()
		}
	})
	if inProcess.err != nil {
		t.Fatalf("the in-process node: %v", inProcess.err)
	}
	return inProcess.node.Addr()
}

func client(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// consume reads n records of the topic from the start.
func consume(t *testing.T, addr, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := client(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	ctx := ctxFor(t)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%d of %d records consumed: %v", len(out), n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// Records come back as they were produced, with every codec: key and value
// (null distinct from empty), headers in order with duplicates, timestamps,
// dense offsets per partition.
func TestInProcessRecordsRoundTrip(t *testing.T) {
	t.Parallel()
	addr := inProcessGateway(t)
	for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		topic := fmt.Sprintf("roundtrip-%d", time.Now().UnixNano())
		cl := client(t, addr, kgo.ProducerBatchCompression(codec), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		var sent []*kgo.Record
		for i := 0; i < 60; i++ {
			r := &kgo.Record{Partition: int32(i % 3), Key: []byte("k" + strconv.Itoa(i)), Value: bytes.Repeat([]byte{byte(i)}, i),
				Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i)),
				Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte("1")}, {Key: "h", Value: nil}, {Key: "x", Value: []byte{}}}}
			switch i % 7 {
			case 0:
				r.Key = nil
			case 1:
				r.Value = nil
			}
			sent = append(sent, r)
		}
		if err := cl.ProduceSync(ctxFor(t), sent...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		got := consume(t, addr, topic, len(sent))
		next := map[int32]int64{}
		byKey := map[string]*kgo.Record{}
		for _, r := range got {
			if r.Offset != next[r.Partition] {
				t.Fatalf("%v: partition %d offset %d, want %d", codec, r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			byKey[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = r
		}
		for i, s := range sent {
			r := byKey[fmt.Sprintf("%d/%d", s.Partition, s.Offset)]
			if r == nil {
				t.Fatalf("%v: record %d not consumed", codec, i)
			}
			if (r.Key == nil) != (s.Key == nil) || !bytes.Equal(r.Key, s.Key) || (r.Value == nil) != (s.Value == nil) || !bytes.Equal(r.Value, s.Value) ||
				!r.Timestamp.Equal(s.Timestamp) || len(r.Headers) != 3 || r.Headers[0].Key != "h" || r.Headers[1].Value != nil || r.Headers[2].Value == nil {
				t.Fatalf("%v: record %d came back as key %q value %d bytes ts %v headers %+v", codec, i, r.Key, len(r.Value), r.Timestamp, r.Headers)
			}
		}
	}
}

// Topics as an administrator sees them: created with partitions and
// configs, listed, offsets by time, records deleted, deleted; errors as
// Kafka names them.
func TestInProcessAdmin(t *testing.T) {
	t.Parallel()
	addr := inProcessGateway(t)
	ctx := ctxFor(t)
	adm := kadm.NewClient(client(t, addr))
	retention := "3600000"
	if _, err := adm.CreateTopic(ctx, 4, 1, map[string]*string{"retention.ms": &retention}, "admin-t"); err != nil {
		t.Fatal(err)
	}
	if resp, _ := adm.CreateTopic(ctx, 4, 1, nil, "admin-t"); !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
		t.Fatalf("creating it again: %v", resp.Err)
	}
	if resp, _ := adm.CreateTopic(ctx, 1, 1, nil, "../bad"); !errors.Is(resp.Err, kerr.InvalidTopicException) {
		t.Fatalf("a bad name: %v", resp.Err)
	}
	details, err := adm.ListTopics(ctx, "admin-t")
	if err != nil || len(details["admin-t"].Partitions) != 4 {
		t.Fatalf("listed: %+v %v", details, err)
	}
	configs, err := adm.DescribeTopicConfigs(ctx, "admin-t")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := configs.On("admin-t", nil); err != nil || func() string {
		for _, kv := range c.Configs {
			if kv.Key == "retention.ms" && kv.Value != nil {
				return *kv.Value
			}
		}
		return ""
	}() != retention {
		t.Fatalf("retention.ms not described as set: %v", err)
	}

	cl := client(t, addr, kgo.DefaultProduceTopic("admin-t"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 10; i++ {
		r := &kgo.Record{Partition: 1, Value: []byte{byte(i)}, Timestamp: time.UnixMilli(1_000_000 + int64(i)*1000)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, "admin-t")
	if o, _ := ends.Lookup("admin-t", 1); err != nil || o.Offset != 10 {
		t.Fatalf("end offset: %+v %v", o, err)
	}
	byTime, err := adm.ListOffsetsAfterMilli(ctx, 1_004_500, "admin-t")
	if o, _ := byTime.Lookup("admin-t", 1); err != nil || o.Offset != 5 {
		t.Fatalf("offset after 1,004,500 ms: %+v %v", o, err)
	}
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: "admin-t", Partition: 1, At: 4})
	if resp, err := adm.DeleteRecords(ctx, del); err != nil || resp.Error() != nil {
		t.Fatalf("delete records: %v %v", err, resp.Error())
	}
	starts, _ := adm.ListStartOffsets(ctx, "admin-t")
	if o, _ := starts.Lookup("admin-t", 1); o.Offset != 4 {
		t.Fatalf("start offset after deleting records: %+v", o)
	}
	reader := client(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"admin-t": {1: kgo.NewOffset().AtStart()}}))
	if fs := reader.PollFetches(ctx); fs.Err() != nil || fs.NumRecords() == 0 || fs.Records()[0].Offset != 4 {
		t.Fatalf("reading after deleting: %v, %d records", fs.Err(), fs.NumRecords())
	}
	if resp, err := adm.DeleteTopics(ctx, "admin-t"); err != nil || resp.Error() != nil {
		t.Fatalf("delete topic: %v %v", err, resp.Error())
	}
	if resp, _ := adm.DeleteTopics(ctx, "admin-t"); !errors.Is(resp.Error(), kerr.UnknownTopicOrPartition) {
		t.Fatalf("deleting it again: %v", resp.Error())
	}
}

// A consumer group of two members shares the partitions, every record is
// consumed once, and its commits are what it consumed.
func TestInProcessGroup(t *testing.T) {
	t.Parallel()
	addr := inProcessGateway(t)
	ctx := ctxFor(t)
	const topic, n = "group-t", 300
	producer := client(t, addr, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := 0; i < n; i++ {
		producer.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, nil)
	}
	if err := producer.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	polling, allSeen := context.WithCancel(ctx)
	defer allSeen()
	for m := 0; m < 2; m++ {
		member := client(t, addr, kgo.ConsumerGroup("g"), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.DisableAutoCommit(), kgo.HeartbeatInterval(100*time.Millisecond))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for polling.Err() == nil {
				fs := member.PollFetches(polling)
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)]++
					mu.Unlock()
				})
				if err := member.CommitUncommittedOffsets(ctx); err != nil {
					t.Errorf("commit: %v", err)
				}
				mu.Lock()
				done := len(seen) >= n
				mu.Unlock()
				if done {
					allSeen() // the other member stops polling too
				}
			}
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		if c := seen[strconv.Itoa(i)]; c != 1 {
			t.Fatalf("record %d consumed %d times", i, c)
		}
	}
	adm := kadm.NewClient(client(t, addr))
	committed, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	ends, _ := adm.ListEndOffsets(ctx, topic)
	total := int64(0)
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := committed.Lookup(topic, o.Partition)
		if o.Offset != n/3 || !ok || c.At != o.Offset {
			t.Errorf("partition %d: committed %+v, end %d", o.Partition, c, o.Offset)
		}
		total += o.Offset
	})
	if total != n {
		t.Fatalf("%d records in the topic", total)
	}
	groups, err := adm.DescribeGroups(ctx, "g")
	if err != nil || groups["g"].State == "" {
		t.Fatalf("describe: %+v %v", groups, err)
	}
}

// Transactions: a committed transaction's records are read read_committed,
// an aborted one's are not, and read_uncommitted sees both.
func TestInProcessTransactions(t *testing.T) {
	t.Parallel()
	addr := inProcessGateway(t)
	ctx := ctxFor(t)
	const topic = "txn-t"
	adm := kadm.NewClient(client(t, addr))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	p := client(t, addr, kgo.TransactionalID("tx-1"), kgo.DefaultProduceTopic(topic))
	for round, commit := range []bool{true, false, true} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%d-%d", round, i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	committed := consume(t, addr, topic, 10, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var values []string
	for _, r := range committed {
		values = append(values, string(r.Value))
	}
	sort.Strings(values)
	for _, v := range values {
		if v[0] == '1' {
			t.Fatalf("read_committed got the aborted transaction's %s", v)
		}
	}
	if len(values) != 10 {
		t.Fatalf("read_committed: %v", values)
	}
	if all := consume(t, addr, topic, 15); len(all) != 15 {
		t.Fatalf("read_uncommitted: %d records", len(all))
	}
	described, err := adm.DescribeTransactions(ctx, "tx-1")
	if err != nil || described["tx-1"].State != "CompleteCommit" {
		t.Fatalf("described: %+v %v", described, err)
	}
}
