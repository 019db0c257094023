package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"
)

// TestSecuredCluster: a SeaweedFS secured as production clusters are
// (securedSeaweedFS: gRPC mutual TLS everywhere, JWT on volume and filer
// reads and writes, HTTPS), its master, volume server, filer and MQ broker
// each a process, and two gateways given the same security.toml. A gateway
// without the cluster's certificate stops at once, naming the section to
// set. Under an idempotent and a plain acks=all load, the gateway leading
// the idempotent partition is SIGKILLed (one gateway reaches the volume
// servers directly, the other through the filer's proxy): the other
// recovers its records
// from the write-ahead log (chunks read with the read JWT over HTTPS), and
// every acknowledged record is read back at its offset, the idempotent
// producer's once each. Then every codec, a consumer group, a transaction,
// the schema registry, an Iceberg table and the log cleaner work on the
// survivor.
func TestSecuredCluster(t *testing.T) {
	t.Parallel() // alone on a cluster of its own: beside the others, at the end
	sec := makeSecuredSeaweedFS(t, filepath.Join(work, t.Name()+"-security"))
	c := startSplitClusterWith(t, splitOptions{brokers: 1, global: sec.global()})

	// Without a certificate: the masters close its plaintext dial, and
	// the gateway stops with what to set, rather than retrying for ever.
	t.Run("without certificates", func(t *testing.T) {
		empty := filepath.Join(work, t.Name()+"-no-security")
		if err := os.MkdirAll(empty, 0o700); err != nil {
			t.Fatal(err)
		}
		port, err := freePort(false)
		if err != nil {
			t.Fatal(err)
		}
		logPath := filepath.Join(work, "secured-plaintext-gateway.log")
		p, err := startProc("secured-plaintext-gateway", logPath, "-config_dir="+empty, "mq.kafka.gateway",
			"-ip=127.0.0.1", "-port="+strconv.Itoa(port), "-master="+c.master)
		if err != nil {
			t.Fatal(err)
		}
		defer p.stop()
		select {
		case <-p.done:
		case <-time.After(90 * time.Second):
			dumpLog(logPath)
			t.Fatal("a gateway without the cluster's certificate still runs after 90 s")
		}
		out, _ := os.ReadFile(logPath)
		i := strings.Index(string(out), "security.toml does not match the cluster")
		if i < 0 || !strings.Contains(string(out[i:]), "[grpc.client] cert and key") {
			dumpLog(logPath)
			t.Fatal("the gateway stopped without naming [grpc.client]")
		}
		line, _, _ := strings.Cut(string(out[i:]), "\n")
		t.Logf("the gateway without a certificate: %s", line)
	})

	l, err := startLakeAt("secured-s3", "127.0.0.1:"+strconv.Itoa(c.ports["filer"]), sec.global())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.stop)
	// The second gateway reads and writes every chunk through the
	// filer (-volumeServerAccess=filerProxy), with the filer's tokens.
	var gws [2]*gatewayProc
	for i := range gws {
		name := fmt.Sprintf("secured-gateway%d", i+1)
		var extra []string
		if i == 1 {
			extra = append(extra, "-volumeServerAccess=filerProxy")
		}
		if gws[i], err = startGatewayWith(name, c.master, 0, l, sec.global(), extra...); err != nil {
			dumpLog(filepath.Join(work, name+".log"))
			t.Fatal(err)
		}
		g := gws[i]
		t.Cleanup(func() {
			g.stop()
			if t.Failed() {
				dumpLog(g.log)
			}
		})
	}
	startLine, _ := os.ReadFile(gws[0].log)
	for _, want := range []string{"gRPC mutual TLS with the certificate of [grpc.client]", "volume reads signed (jwt.signing.read)", "HTTPS to volume servers and filers"} {
		if !strings.Contains(string(startLine), want) {
			t.Errorf("the gateway's startup line does not say %q", want)
		}
	}
	seeds := []string{gws[0].addr, gws[1].addr}
	waitGateways(t, seeds)

	topic := createTopicAt(t, seeds, 2)
	acks, stopLoad := mixedLoad(t, seeds, topic, 30000)
	acks.progress(t, 2, 300, "the start")
	victim, survivor := 0, 1
	if leaderAddr(t, gws[0].addr, topic, 0) == gws[1].addr {
		victim, survivor = 1, 0
	}
	// The tail of the last seconds is in the write-ahead log only (its
	// segments are written every 5 s): the survivor must read the log.
	t.Logf("SIGKILL gateway %s (leads partition 0)", gws[victim].addr)
	gws[victim].kill()
	acks.progress(t, 2, 300, "the gateway's death")
	stopLoad()
	t.Logf("%d records acknowledged, %d failed; longest time without an acknowledgement %v", acks.count(), acks.failed, acks.longestGap())
	g := gws[survivor]
	checkAcknowledged(t, g.addr, topic, acks, map[int32]bool{0: true})
	if out, _ := os.ReadFile(g.log); !strings.Contains(string(out), "back from the write-ahead logs") {
		t.Errorf("the survivor read no record back from the killed gateway's write-ahead log")
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(g.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// Every codec, written and read back.
	for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		topic := createTopicAt(t, []string{g.addr}, 1)
		p, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := range 200 {
			want = append(want, fmt.Sprintf("codec-%d-%s", i, strings.Repeat("v", i%50)))
			p.Produce(ctxT(t), &kgo.Record{Value: []byte(want[i])}, nil)
		}
		if err := p.Flush(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		p.Close()
		got := consumeN(t, topic, len(want), kgo.SeedBrokers(g.addr))
		for i, r := range got {
			if string(r.Value) != want[i] || r.Offset != int64(i) {
				t.Fatalf("codec %v: offset %d holds %q, want %q at %d", codec, r.Offset, r.Value, want[i], i)
			}
		}
	}

	// A consumer group reads the load's plain partition and commits.
	group := "secured-group-" + topic
	member, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for read < 100 {
		fs := member.PollFetches(ctxT(t))
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		read += fs.NumRecords()
	}
	if err := member.CommitUncommittedOffsets(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	member.Close()
	offsets, err := adm.FetchOffsets(ctxT(t), group)
	if err != nil || offsets.Error() != nil {
		t.Fatalf("the group's offsets: %v %v", err, offsets.Error())
	}
	if n := len(offsets.Sorted()); n == 0 {
		t.Fatal("the group committed nothing")
	}

	// A transaction, read committed.
	txTopic := createTopicAt(t, []string{g.addr}, 1)
	tx, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.TransactionalID("secured-"+txTopic), kgo.DefaultProduceTopic(txTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := tx.ProduceSync(ctxT(t), &kgo.Record{Value: []byte(fmt.Sprintf("txn-%d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.EndTransaction(ctxT(t), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	got := consumeN(t, txTopic, 10, kgo.SeedBrokers(g.addr), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	for i, r := range got {
		if want := fmt.Sprintf("txn-%d", i); string(r.Value) != want {
			t.Fatalf("read committed: %q at %d, want %q", r.Value, r.Offset, want)
		}
	}

	// The schema registry keeps a schema and gives it back.
	reg, err := sr.NewClient(sr.URLs(g.registry))
	if err != nil {
		t.Fatal(err)
	}
	const schema = `{"type":"record","name":"Secured","fields":[{"name":"id","type":"long"}]}`
	var ss sr.SubjectSchema
	eventually(t, time.Minute, "the registry takes a schema", func() error {
		ss, err = reg.CreateSchema(ctxT(t), topic+"-value", sr.Schema{Schema: schema, Type: sr.TypeAvro})
		return err
	})
	back, err := reg.SchemaByID(ctxT(t), ss.ID)
	if err != nil || !strings.Contains(back.Schema, `"Secured"`) {
		t.Fatalf("schema %d: %v %q", ss.ID, err, back.Schema)
	}

	// An Iceberg table of a topic, written through the secured cluster.
	tableTopic := newTopic(t)
	mode, lag := "key_value", "1000"
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"iceberg.mode": &mode, "iceberg.target.lag.ms": &lag}, tableTopic); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		produceSync(t, cl, &kgo.Record{Topic: tableTopic, Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprintf("row-%d", i))})
	}
	rows, _ := readIcebergTableAt(t, l, tableTopic, 20, 2*time.Minute)
	for i := range 20 {
		r, ok := rows[fmt.Sprintf("0/%d", i)]
		want := hexOrNil([]byte(fmt.Sprintf("row-%d", i)))
		if !ok || r.V == nil || *r.V != *want {
			t.Fatalf("row 0/%d: %+v, want the value %s", i, r, *want)
		}
	}

	// A compacted topic: the log cleaner reads the segments (with the
	// read token) and writes the cleaned ones (with the write token).
	compacted := newTopic(t)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact"),
		"min.cleanable.dirty.ratio": kmsg.StringPtr("0.01")}, compacted); err != nil {
		t.Fatal(err)
	}
	load := &keyedLoad{topic: compacted, keys: 200, newest: map[string][]byte{}}
	load.produce(t, cl, 20)
	ticking(t, compacted, kgo.SeedBrokers(g.addr))
	eventually(t, 3*time.Minute, "the log cleaner to compact the topic", func() error {
		v := readCompacted(t, compacted, kgo.SeedBrokers(g.addr))
		load.check(t, v, false)
		for key := range load.newest {
			if n := v.perKey[key]; n > 3 {
				return fmt.Errorf("%d records read, %d of key %s", v.total, n, key)
			}
		}
		return nil
	})

	// The filer's HTTP port asks for TLS and a token: an outsider with a
	// certificate but no token reads nothing of the topic.
	hc := sec.httpClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/topics/kafka/%s/", c.ports["filer"], topic), nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the filer served the topic's directory without a token: %s %.200s", resp.Status, body)
	}
}
