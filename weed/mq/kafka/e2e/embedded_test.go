package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// embeddedGateway is the README's run command: a gateway that starts its
// own single-node SeaweedFS in dir.
func startEmbeddedGateway(t *testing.T, dir string, ports []int) *gatewayProc {
	t.Helper()
	g := &gatewayProc{addr: "127.0.0.1:" + strconv.Itoa(ports[0]), port: ports[0],
		monitor: "http://127.0.0.1:" + strconv.Itoa(ports[1])}
	embedded := make([]string, 0, 4)
	for _, p := range ports[2:] {
		embedded = append(embedded, strconv.Itoa(p))
	}
	// The schema registry on a free port, not the run command's 8081.
	registryPort, err := freePort(false)
	if err != nil {
		t.Fatal(err)
	}
	g.registry = "http://127.0.0.1:" + strconv.Itoa(registryPort)
	// Its console (the links' API) too, not the run command's 8080.
	consolePort, err := freePort(false)
	if err != nil {
		t.Fatal(err)
	}
	// Its S3 gateway and Iceberg catalog too, not the run command's 8333
	// and 8181.
	s3Port, err := freePort(true)
	if err != nil {
		t.Fatal(err)
	}
	catalogPort, err := freePort(false)
	if err != nil {
		t.Fatal(err)
	}
	p, err := startProc("embedded", filepath.Join(work, t.Name()+".log"), "-v=1", "mq.kafka.gateway",
		"-ip=127.0.0.1", "-port="+strconv.Itoa(ports[0]), "-metricsPort="+strconv.Itoa(ports[1]),
		"-embedded.dir="+dir, "-embedded.ports="+strings.Join(embedded, ","), "-schema.registry.listeners="+g.registry,
		"-console.listeners=http://127.0.0.1:"+strconv.Itoa(consolePort),
		"-embedded.s3.port="+strconv.Itoa(s3Port), "-embedded.iceberg.port="+strconv.Itoa(catalogPort))
	if err != nil {
		t.Fatal(err)
	}
	g.proc = p
	if err := g.waitReady(150 * time.Second); err != nil {
		g.kill()
		dumpLog(filepath.Join(work, t.Name()+".log"))
		dumpLog(filepath.Join(dir, "seaweedfs.log"))
		t.Fatal(err)
	}
	return g
}

// Ctrl-C of the run command (embedded SeaweedFS) stops it quickly (the
// SeaweedFS processes in the order they depend on one another), and every
// acknowledged record and committed offset is there at the next start. It
// took 16-28 s: `weed server` stopped its volume server before its filer,
// whose metadata-log flush then retried for 15 s, and the gateway waited
// out the consumers' long-polling fetches.
func TestEmbeddedCtrlC(t *testing.T) {
	t.Parallel() // alone on a cluster of its own: beside the others, at the end
	dir := filepath.Join(work, "embedded-data")
	ports := make([]int, 6) // kafka, metrics, master, volume, filer, broker
	for i := range ports {
		p, err := freePort(i >= 2 && i <= 4)
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	g := startEmbeddedGateway(t, dir, ports)
	defer func() { g.kill() }()

	const topic, records = "embedded-ctrlc", 2000
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var batch []*kgo.Record
	for i := 0; i < records; i++ {
		batch = append(batch, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprintf("value-%d", i))})
	}
	if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1234, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, "embedded-group", commit); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	// The run command's schema registry takes a schema.
	const schema = `{"type":"record","name":"Embedded","fields":[{"name":"n","type":"long"}]}`
	reg, err := sr.NewClient(sr.URLs(g.registry))
	if err != nil {
		t.Fatal(err)
	}
	var registered sr.SubjectSchema
	eventually(t, 60*time.Second, "the embedded registry takes a schema", func() error {
		registered, err = reg.CreateSchema(ctx, "embedded-value", sr.Schema{Schema: schema, Type: sr.TypeAvro})
		return err
	})
	// A consumer long-polling at the end of the topic while the gateway
	// stops.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	go consumer.PollFetches(ctx)
	time.Sleep(time.Second)
	cl.Close()

	start := time.Now()
	if err := g.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the run command did not stop within 60 s of Ctrl-C")
	}
	t.Logf("stopped %v after Ctrl-C (exit %v)", time.Since(start).Round(10*time.Millisecond), g.cmd.ProcessState)
	if !g.cmd.ProcessState.Success() {
		t.Errorf("exit status after Ctrl-C: %v", g.cmd.ProcessState)
	}

	g = startEmbeddedGateway(t, dir, ports)
	cl2, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	got := 0
	for got < records && ctx.Err() == nil {
		cl2.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(got) || string(r.Key) != strconv.Itoa(got) || string(r.Value) != fmt.Sprintf("value-%d", got) {
				t.Fatalf("record at %d after the restart: offset %d key %q value %q", got, r.Offset, r.Key, r.Value)
			}
			got++
		})
	}
	if got != records {
		t.Fatalf("%d of %d acknowledged records after the restart", got, records)
	}
	// The schema is served after the restart, under the same id.
	reg2, err := sr.NewClient(sr.URLs(g.registry))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the schema after the restart", func() error {
		got, err := reg2.SchemaByVersion(ctx, "embedded-value", 1)
		if err != nil {
			return err
		}
		if got.ID != registered.ID || got.Schema.Schema != schema {
			t.Fatalf("after the restart: %+v, registered %+v", got, registered)
		}
		return nil
	})
	offs, err := kadm.NewClient(cl2).FetchOffsets(ctx, "embedded-group")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(topic, 0); !ok || o.At != 1234 {
		t.Fatalf("committed offset after the restart: %+v %v", o, ok)
	}
	g.stop()
}
