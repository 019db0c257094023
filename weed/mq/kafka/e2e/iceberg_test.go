package e2e

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/iceberg"
)

// icebergRow is a row of a key_value table as iceberg_read.py prints it.
type icebergRow struct {
	P  int32      `json:"p"`
	O  int64      `json:"o"`
	TS int64      `json:"ts"`
	K  *string    `json:"k"`
	V  *string    `json:"v"`
	H  [][]string `json:"h"`
}

// readIcebergTable reads the topic's table with pyiceberg, waiting up to
// wait for it to have want rows; it returns the rows by partition/offset
// and the current snapshot's summary.
func readIcebergTable(t *testing.T, topic string, want int, wait time.Duration) (map[string]icebergRow, map[string]string) {
	t.Helper()
	return readIcebergTableAt(t, lake, topic, want, wait)
}

// readIcebergTableAt reads the table from l's catalog.
func readIcebergTableAt(t *testing.T, l *lakeProc, topic string, want int, wait time.Duration) (map[string]icebergRow, map[string]string) {
	t.Helper()
	py := pythonE2E(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "testdata/iceberg_read.py", l.catalog, l.s3, iceberg.Namespace+"."+iceberg.TableName(topic),
		strconv.Itoa(want), strconv.Itoa(int(wait.Seconds())))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("iceberg_read.py: %v\n%s", err, out)
	}
	rows := map[string]icebergRow{}
	var summary map[string]string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if strings.HasPrefix(string(line), `{"summary"`) {
			var s struct{ Summary map[string]string }
			if err := json.Unmarshal(line, &s); err != nil {
				t.Fatal(err)
			}
			summary = s.Summary
			continue
		}
		var r icebergRow
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		key := fmt.Sprintf("%d/%d", r.P, r.O)
		if _, dup := rows[key]; dup {
			t.Errorf("row %s twice in the table", key)
		}
		rows[key] = r
	}
	return rows, summary
}

func hexOrNil(b []byte) *string {
	if b == nil {
		return nil
	}
	s := hex.EncodeToString(b)
	return &s
}

// A topic with iceberg.mode=key_value is the table kafka.<topic> in
// SeaweedFS's Iceberg catalog: pyiceberg reads every acknowledged record
// once, with its partition, offset, timestamp, key, value (null ones
// null) and headers, within iceberg.target.lag.ms and 30 s; records of an
// aborted transaction are not in it, a committed transaction's are; a
// second round of records continues from the offsets the first commit
// recorded in its snapshot summary, with nothing twice.
func TestIcebergTable(t *testing.T) {
	t.Parallel() // light and alone in what it touches: beside the others of its kind, at the end
	topic := newTopic(t)
	mode, lag, spec := "key_value", "1000", "(day(timestamp), partition)"
	createTopic(t, topic, 3, map[string]*string{"iceberg.mode": &mode, "iceberg.target.lag.ms": &lag, "iceberg.partition.spec": &spec})
	cl := newClient(t, kgo.DefaultProduceTopic(topic))
	want := map[string]icebergRow{}
	produce := func(from, n int) {
		var recs []*kgo.Record
		for i := from; i < from+n; i++ {
			r := &kgo.Record{Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte(fmt.Sprintf("value-%d", i)), Partition: int32(i % 3)}
			if i%10 == 0 {
				r.Value = nil // a tombstone
			}
			if i%4 == 0 {
				r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte(strconv.Itoa(i))}, {Key: "empty"}}
			}
			recs = append(recs, r)
		}
		produceSync(t, cl, recs...)
		for _, r := range recs {
			row := icebergRow{P: r.Partition, O: r.Offset, TS: r.Timestamp.UnixMilli(), K: hexOrNil(r.Key), V: hexOrNil(r.Value)}
			for _, h := range r.Headers {
				v := hexOrNil(h.Value)
				if v == nil {
					row.H = append(row.H, []string{h.Key, ""})
				} else {
					row.H = append(row.H, []string{h.Key, *v})
				}
			}
			want[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = row
		}
	}
	produce(0, 150)

	// A transaction aborted (its records never in the table) and one
	// committed (its records in it).
	for _, commit := range []bool{false, true} {
		txn := newClient(t, kgo.DefaultProduceTopic(topic), kgo.TransactionalID(newTopic(t)+"-txn"))
		ctx := ctxT(t)
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := range 6 {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("txn-%v-%d", commit, i)), Value: []byte("in a transaction"), Partition: int32(i % 3)})
		}
		if err := txn.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		if commit {
			for _, r := range recs {
				want[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = icebergRow{P: r.Partition, O: r.Offset, TS: r.Timestamp.UnixMilli(), K: hexOrNil(r.Key), V: hexOrNil(r.Value)}
			}
		}
	}

	check := func(round string) map[string]string {
		start := time.Now()
		rows, summary := readIcebergTable(t, topic, len(want), 31*time.Second)
		t.Logf("%s: %d rows read %v after the last record", round, len(rows), time.Since(start).Round(time.Millisecond))
		for key, w := range want {
			got, ok := rows[key]
			if !ok {
				t.Errorf("%s: record %s not in the table", round, key)
				continue
			}
			if !equalRows(got, w) {
				t.Errorf("%s: row %s is %+v, want %+v", round, key, got, w)
			}
		}
		for key := range rows {
			if _, ok := want[key]; !ok {
				t.Errorf("%s: row %s in the table was never acknowledged as committed (an aborted transaction's?)", round, key)
			}
		}
		return summary
	}
	summary := check("first round")
	if t.Failed() {
		return
	}
	if got := icebergProps(t, topic).Spec; !slices.EqualFunc(got, [][]string{{"timestamp_day", "day"}, {"partition", "identity"}}, slices.Equal) {
		t.Errorf("the table is partitioned by %v, want day(timestamp), partition", got)
	}
	produce(1000, 90)
	summary = check("second round")
	// The summary has the next offset of each partition: the end of each.
	var offsets map[string]int64
	if err := json.Unmarshal([]byte(summary["kafka.offsets"]), &offsets); err != nil {
		t.Fatalf("the snapshot summary's kafka.offsets %q: %v", summary["kafka.offsets"], err)
	}
	ends := map[string]int64{}
	for _, w := range want {
		p := strconv.Itoa(int(w.P))
		ends[p] = max(ends[p], w.O+1)
	}
	for p, end := range ends {
		// A transaction's marker follows its last record: the next offset
		// is past it when a partition ends with a transaction.
		if offsets[p] < end {
			t.Errorf("partition %s: kafka.offsets says %d, its last row is at %d", p, offsets[p], end-1)
		}
	}

	// Maintenance (every 3 s in the suite) expires the snapshots the
	// table's properties say to (here all but the last), and the next
	// round continues from the offsets the table's properties keep.
	props := icebergProps(t, topic, "history.expire.max-snapshot-age-ms=1", "history.expire.min-snapshots-to-keep=1")
	if props.Properties["kafka.offsets"] != summary["kafka.offsets"] {
		t.Errorf("the table's property kafka.offsets %q, its snapshot's %q", props.Properties["kafka.offsets"], summary["kafka.offsets"])
	}
	// The Parquet settings the gateway gives its tables, which the files
	// are written with (and a user may change).
	for k, v := range map[string]string{"write.parquet.compression-codec": "zstd", "write.parquet.compression-level": "1",
		"write.parquet.dict-encoding-enabled.column.value": "false"} {
		if props.Properties[k] != v {
			t.Errorf("the table's property %s is %q, want %q", k, props.Properties[k], v)
		}
	}
	eventually(t, 30*time.Second, "the table's old snapshots expired", func() error {
		if n := icebergProps(t, topic).Snapshots; n != 1 {
			return fmt.Errorf("%d snapshots", n)
		}
		return nil
	})
	produce(2000, 60)
	check("after expiry")
}

type tableProps struct {
	Properties map[string]string
	Snapshots  int
	Spec       [][]string
}

// icebergProps sets properties of a topic's table (name=value) with
// pyiceberg and returns its properties and snapshot count.
func icebergProps(t *testing.T, topic string, set ...string) tableProps {
	t.Helper()
	args := append([]string{"testdata/iceberg_props.py", lake.catalog, lake.s3, iceberg.Namespace + "." + iceberg.TableName(topic)}, set...)
	out, err := exec.Command(pythonE2E(t), args...).Output()
	if err != nil {
		t.Fatalf("iceberg_props.py: %v\n%s", err, out)
	}
	var p tableProps
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	return p
}

func equalRows(a, b icebergRow) bool {
	same := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.P == b.P && a.O == b.O && a.TS == b.TS && same(a.K, b.K) && same(a.V, b.V) &&
		slices.EqualFunc(a.H, b.H, func(x, y []string) bool { return slices.Equal(x, y) })
}

// keepAsTable makes a topic an Iceberg table (key_value) whose partitions
// are committed every 200 ms.
func keepAsTable(t *testing.T, topic string, opts ...kgo.Opt) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, opts...))
	mode, lag := "key_value", "200"
	resps, err := adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Name: "iceberg.mode", Value: &mode}, {Name: "iceberg.target.lag.ms", Value: &lag}}, topic)
	if err != nil || resps[0].Err != nil {
		t.Fatalf("iceberg.mode: %v %v", err, resps)
	}
}

// tableExactlyOnce checks that the topic's table holds every record an
// idempotent producer had acknowledged (produced: values by partition, in
// offset order) once, in offset order, none missing and none more.
func tableExactlyOnce(t *testing.T, topic string, produced map[int32][]string) {
	t.Helper()
	total := 0
	for _, vs := range produced {
		total += len(vs)
	}
	rows, _ := readIcebergTable(t, topic, total, 60*time.Second)
	byPartition := map[int32][]icebergRow{}
	for _, r := range rows {
		byPartition[r.P] = append(byPartition[r.P], r)
	}
	for p, want := range produced {
		got := byPartition[p]
		slices.SortFunc(got, func(a, b icebergRow) int { return int(a.O - b.O) })
		var values []string
		for _, r := range got {
			v, _ := hex.DecodeString(*r.V)
			values = append(values, string(v))
		}
		if !slices.Equal(values, want) {
			t.Errorf("partition %d: the table has %d records, %d acknowledged; first difference: %s", p, len(values), len(want), firstDiff(values, want))
		}
	}
	if len(rows) != total {
		t.Errorf("the table has %d rows, %d records acknowledged", len(rows), total)
	}
}

func firstDiff(got, want []string) string {
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("at %d: %q, want %q", i, g, w)
		}
	}
	return "none"
}

// iceberg.mode=value_schema_id_prefix, end to end with
// confluent-kafka-python's AvroSerializer and pyiceberg: the values'
// fields are the table's columns (a field a newer version adds, a column
// null in older rows), the records' metadata in the struct kafka, records
// without a schema id in the dead-letter table with why (see
// testdata/iceberg_avro.py); with value_schema_latest, plain Avro values
// decoded by the subject's latest schema; ProtobufSerializer's values (a
// file's second message, a reference, a Timestamp, an enum, a repeated
// field, a second version adding a field) as columns
// (testdata/iceberg_protobuf.py); JSONSerializer's likewise
// (testdata/iceberg_json.py).
func TestIcebergValueSchema(t *testing.T) {
	t.Parallel() // light and alone in what it touches: beside the others of its kind, at the end
	py := pythonE2E(t)
	topic := newTopic(t)
	mode, lag := "value_schema_id_prefix", "1000"
	createTopic(t, topic, 1, map[string]*string{"iceberg.mode": &mode, "iceberg.target.lag.ms": &lag})
	latestTopic, latestMode := topic+"-latest", "value_schema_latest"
	createTopic(t, latestTopic, 1, map[string]*string{"iceberg.mode": &latestMode, "iceberg.target.lag.ms": &lag})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(script string, args ...string) {
		out, err := exec.CommandContext(ctx, py, append([]string{"testdata/" + script, gw.addr, gw.registry, lake.catalog, lake.s3}, args...)...).CombinedOutput()
		if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	table := func(topic string) string { return iceberg.Namespace + "." + iceberg.TableName(topic) }
	run("iceberg_avro.py", topic, table(topic), iceberg.Namespace+"."+iceberg.DeadLetterTable(topic), latestTopic, table(latestTopic))
	for _, script := range []string{"iceberg_protobuf.py", "iceberg_json.py"} {
		next := topic + "-" + strings.TrimSuffix(strings.TrimPrefix(script, "iceberg_"), ".py")
		createTopic(t, next, 1, map[string]*string{"iceberg.mode": &mode, "iceberg.target.lag.ms": &lag})
		run(script, next, table(next))
	}
}

// TestIcebergGatewayKilledMidCommit: the gateway committing a topic's
// table is SIGKILLed after it has written a commit's data file and before
// the commit: stopped (SIGSTOP) the moment the filer tells of a data file
// new to the table's directory, and killed if the table's current
// snapshot does not have it (else let go on, and its next commit tried).
// The gateway that takes the partition over continues from the offsets
// the table holds: every acknowledged record in the table once, none
// missing, and the killed commit's data file in no snapshot (an orphan,
// for maintenance to remove).
func TestIcebergGatewayKilledMidCommit(t *testing.T) {
	g := threeGateways(t)
	procs := g.all()
	// One partition led by an added gateway: it alone commits the table.
	var topic string
	victim := -1
	for attempt := 0; attempt < 10 && victim < 0; attempt++ {
		name := newTopic(t) + "-" + strconv.Itoa(attempt)
		createTopic(t, name, 1, nil)
		time.Sleep(500 * time.Millisecond)
		_, leaders := leadersFrom(t, procs[0], name)
		if i, _ := g.byAddr(leaders[0]); i > 0 {
			topic, victim = name, i
		}
	}
	if victim < 0 {
		t.Fatal("ten topics, each led by the package's gateway")
	}
	keepAsTable(t, topic)
	cl := newClient(t, kgo.SeedBrokers(g.seeds()...), kgo.ProducerLinger(5*time.Millisecond), kgo.RetryTimeout(2*time.Minute))
	// An idempotent producer sends until the gateway has been killed and
	// started again.
	var produced []string
	stop := make(chan struct{})
	sent := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				sent <- nil
				return
			default:
			}
			v := fmt.Sprintf("p0-%d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr()
			cancel()
			if err != nil {
				sent <- fmt.Errorf("record %s: %w", v, err)
				return
			}
			produced = append(produced, v)
		}
	}()
	caught := killMidCommit(t, g.all()[victim], topic)
	if caught != "" {
		time.Sleep(5 * time.Second)
		if err := g.restart(victim); err != nil {
			t.Error(err)
		}
		time.Sleep(2 * time.Second)
	}
	close(stop)
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if caught == "" {
		t.FailNow()
	}
	tableExactlyOnce(t, topic, map[int32][]string{0: produced})
	location, files := icebergFiles(t, topic)
	stored := tableFiles(location)
	for _, f := range append(files, caught) {
		if !stored[f] {
			t.Errorf("data file %s not in the table's directory, which holds %v", f, stored)
		}
	}
	if slices.Contains(files, caught) {
		t.Errorf("the killed commit's data file %s is in the table", caught)
	}
	t.Logf("killed with %s written, in no snapshot; the table has %d data files, its directory %d", caught, len(files), len(stored))
}

// tableFiles lists the data files in a table's directory as s3:// paths.
func tableFiles(location string) map[string]bool {
	out := map[string]bool{}
	for _, e := range filerTree("http://127.0.0.1:" + strconv.Itoa(cluster.filerPort) + "/buckets/" + strings.TrimPrefix(location, "s3://") + "/data/") {
		if name, _, _ := strings.Cut(e, " ("); strings.HasSuffix(name, ".parquet") {
			out["s3://"+strings.TrimPrefix(name, "/buckets/")] = true
		}
	}
	return out
}

// killMidCommit stops p as soon as a data file new to topic's table
// directory appears (the directory of this hour's records, listed over
// and over), and kills it if the table's current snapshot does not have
// the file; else lets it go on and waits for its next commit. It returns
// the data file (s3://...), or "" (and fails the test) when no commit was
// caught in 60 s.
func killMidCommit(t *testing.T, p *gatewayProc, topic string) string {
	var location string
	eventually(t, 60*time.Second, "the table made", func() error {
		if location, _ = icebergFiles(t, topic); location == "" {
			return errors.New("no table yet")
		}
		return nil
	})
	dir := "/buckets/" + strings.TrimPrefix(location, "s3://") + "/data/"
	list := func() []string {
		hour := dir + "timestamp_hour=" + time.Now().UTC().Format("2006-01-02-15")
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(cluster.filerPort)+hour+"/?limit=100000", nil)
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		var listing struct{ Entries []struct{ FullPath string } }
		json.NewDecoder(resp.Body).Decode(&listing) //nolint:errcheck // none yet
		var out []string
		for _, e := range listing.Entries {
			out = append(out, "s3://"+strings.TrimPrefix(e.FullPath, "/buckets/"))
		}
		return out
	}
	seen := map[string]bool{}
	for _, f := range list() {
		seen[f] = true
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		for _, f := range list() {
			if seen[f] {
				continue
			}
			p.signal(syscall.SIGSTOP)
			if _, files := icebergFiles(t, topic); !slices.Contains(files, f) {
				p.kill()
				return f
			}
			p.signal(syscall.SIGCONT)
			t.Logf("%s committed before the stop: the next commit", f)
			for _, f := range list() {
				seen[f] = true
			}
		}
	}
	t.Errorf("no commit of %s caught between its data file and the table's snapshot in 60 s", topic)
	return ""
}

// icebergFiles returns the location of topic's table and the data files
// of its current snapshot.
func icebergFiles(t *testing.T, topic string) (string, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, pythonE2E(t), "testdata/iceberg_read.py", lake.catalog, lake.s3,
		iceberg.Namespace+"."+iceberg.TableName(topic), "0", "0", "files").Output()
	if err != nil {
		t.Fatalf("iceberg_read.py files: %v\n%s", err, out)
	}
	var v struct {
		Location string
		Files    []string
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("iceberg_read.py files: %v\n%s", err, out)
	}
	return v.Location, v.Files
}

// TestIcebergCompaction: a table committed every 200 ms gathers small
// data files; the maintenance (every 3 s in the suite) rewrites them with
// SeaweedFS's own Iceberg compaction into one, every record still in the
// table once, and the commits after it continue from the offsets the
// table keeps. The compaction takes five files or more: five commits make
// exactly one compaction's input whenever the maintenance runs, and the
// two after it stay below it.
func TestIcebergCompaction(t *testing.T) {
	t.Parallel() // light and alone in what it touches: beside the others of its kind, at the end
	topic := newTopic(t)
	mode, lag, spec := "key_value", "200", "()"
	createTopic(t, topic, 1, map[string]*string{"iceberg.mode": &mode, "iceberg.target.lag.ms": &lag, "iceberg.partition.spec": &spec})
	cl := newClient(t, kgo.DefaultProduceTopic(topic))
	var values []string
	produce := func(batches int) {
		for b := 0; b < batches; b++ {
			var recs []*kgo.Record
			for range 10 {
				v := fmt.Sprintf("v%d", len(values))
				values = append(values, v)
				recs = append(recs, &kgo.Record{Value: []byte(v)})
			}
			produceSync(t, cl, recs...)
			// The next batch in another commit.
			want := len(values)
			eventually(t, 30*time.Second, "the batch committed", func() error {
				if rows, _ := readIcebergTable(t, topic, want, 0); len(rows) < want {
					return fmt.Errorf("%d rows of %d", len(rows), want)
				}
				return nil
			})
		}
	}
	produce(5)
	var files []string
	eventually(t, 60*time.Second, "the data files compacted", func() error {
		if _, files = icebergFiles(t, topic); len(files) != 1 {
			return fmt.Errorf("%d data files", len(files))
		}
		return nil
	})
	tableExactlyOnce(t, topic, map[int32][]string{0: values})
	produce(2)
	tableExactlyOnce(t, topic, map[int32][]string{0: values})
	if _, after := icebergFiles(t, topic); !slices.Contains(after, files[0]) || len(after) != 3 {
		t.Errorf("after the compaction and two commits: data files %v, want the compacted %s and two more", after, files[0])
	}
}
