package e2e

// A topic link from Apache Kafka 4.4 (started from Maven Central's jars)
// into a gateway cluster of its own (-cluster.name), driven with
// `weed mq.kafka.link` as a user would: a compacted topic the source's
// cleaner has cleaned, a topic of committed and aborted transactions, one
// written by an idempotent producer, and the source's _schemas. Every
// record is at the offset it has on Kafka; a group that consumed half on
// Kafka resumes on the gateway exactly where it was; the source stopped
// for 30 s is reported and caught up with; after promotion the Kafka
// producer's sequence goes on on the gateway.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/link"
)

func TestLinkFromKafka(t *testing.T) {
	t.Parallel() // Kafka and a gateway cluster of its own; on the suite's gateway, topics of its own
	began := time.Now()
	step := func(what string) { t.Logf("%5.1fs %s", time.Since(began).Seconds(), what) }
	k := startApacheKafka(t)
	step("Apache Kafka started")
	consolePort, err := freePort(false)
	if err != nil {
		t.Fatal(err)
	}
	console := "http://127.0.0.1:" + strconv.Itoa(consolePort)
	g, err := startNamedGateway("link", cluster.master, 0, "-cluster.name=linked", "-console.listeners="+console,
		"-link.refresh.ms=500", "-link.sync.interval.ms=1000")
	if err != nil {
		t.Fatal(err)
	}
	defer g.stop()
	src := clientAt(t, k.addr)
	dst := clientAt(t, g.addr)
	srcAdm, dstAdm := kadm.NewClient(src), kadm.NewClient(dst)

	// The source: a compacted topic, cleaned by Kafka's cleaner (gaps in
	// its offsets), one of transactions committed and aborted, one of an
	// idempotent producer, and a schema in _schemas.
	compact, small, ratio := "compact", "100", "0.01"
	createTopicVia(t, src, "lk-compacted", 1, map[string]*string{"cleanup.policy": &compact, "segment.ms": &small, "min.cleanable.dirty.ratio": &ratio})
	createTopicVia(t, src, "lk-txn", 2, nil)
	retention := "86400000"
	createTopicVia(t, src, "lk-idem", 3, map[string]*string{"retention.ms": &retention})
	createTopicVia(t, src, "_schemas", 1, map[string]*string{"cleanup.policy": &compact})
	for round := 0; round < 5; round++ {
		var recs []*kgo.Record
		for i := 0; i < 40; i++ {
			recs = append(recs, &kgo.Record{Topic: "lk-compacted", Key: []byte(fmt.Sprintf("k%d", i%8)), Value: []byte(fmt.Sprintf("v%d-%d", round, i))})
		}
		produceSync(t, src, recs...)
		time.Sleep(300 * time.Millisecond) // segment.ms: the next round rolls a segment
	}
	eventually(t, 90*time.Second, "Kafka's cleaner to compact lk-compacted", func() error {
		produceSync(t, src, &kgo.Record{Topic: "lk-compacted", Key: []byte("roll"), Value: []byte("r")})
		if n := len(readAll(t, src, "lk-compacted", 0, false)); n >= 200 {
			return fmt.Errorf("%d records still", n)
		}
		return nil
	})

	step("compacted by Kafka")
	tx := txnProducerAt(t, k.addr, "lk-tx")
	for i := 0; i < 5; i++ {
		txnBegin(t, tx)
		var recs []*kgo.Record
		for j := 0; j < 20; j++ {
			recs = append(recs, &kgo.Record{Topic: "lk-txn", Partition: int32(j % 2), Value: []byte(fmt.Sprintf("t%d-%d", i, j))})
		}
		produceSync(t, tx, recs...)
		commit := kgo.TryCommit
		if i%2 == 1 {
			commit = kgo.TryAbort
		}
		if err := tx.EndTransaction(ctxT(t), commit); err != nil {
			t.Fatal(err)
		}
	}

	idem := clientAt(t, k.addr, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	produceKeyed := func(from, n int) {
		var recs []*kgo.Record
		for i := from; i < from+n; i++ {
			recs = append(recs, &kgo.Record{Topic: "lk-idem", Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte(fmt.Sprintf("value-%d", i)),
				Headers: []kgo.RecordHeader{{Key: "n", Value: []byte(strconv.Itoa(i))}}})
		}
		produceSync(t, idem, recs...)
	}
	produceKeyed(0, 3000)
	schemaKey := `{"keytype":"SCHEMA","subject":"lk-idem-value","version":1,"magic":1}`
	schemaValue := `{"subject":"lk-idem-value","version":1,"id":42,"schema":"\"string\"","deleted":false}`
	produceSync(t, src, &kgo.Record{Topic: "_schemas", Key: []byte(schemaKey), Value: []byte(schemaValue)})

	step("transactions and idempotent records on Kafka")
	// A Java transactional producer on Kafka (LinkPromotionTest, which
	// goes on against the gateway once promoted).
	if n := runJavaTests(t, "java/link", "-Dlink.phase=source", "-Dkafka.bootstrap="+k.addr); n != 1 {
		t.Fatalf("%d Java tests ran, want 1", n)
	}

	step("the Java producer on Kafka")
	// A group consumes about half of lk-idem on Kafka, commits and leaves.
	consumedOnKafka := consumeAndCommit(t, k.addr, "lk-group", "lk-idem", 1500)
	committed, err := srcAdm.FetchOffsets(ctxT(t), "lk-group")
	if err != nil {
		t.Fatal(err)
	}

	// An ACL of a mirrored topic, which the link copies (-acls).
	acl := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "lk-idem", kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:lk-reader", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
	acl.Creations = append(acl.Creations, c)
	if resp, err := acl.RequestWith(ctxT(t), src); err != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("an ACL on Kafka: %v %+v", err, resp)
	}

	// The link, made with the command a user runs.
	linkCmd(t, console, "create", "-name=from-kafka", "-source="+k.addr, "-topics=lk-.*|_schemas", "-groups=lk-.*", "-acls")
	waitCaughtUp(t, console, "from-kafka", 5, srcAdm)

	// A mirror takes no produce.
	err = dst.ProduceSync(ctxT(t), &kgo.Record{Topic: "lk-idem", Value: []byte("refused")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("produce to a mirror topic: %v, want INVALID_REQUEST", err)
	}

	step("the link caught up")
	// The source stopped for 30 s: reported, then caught up with.
	produceKeyed(3000, 500)
	waitCaughtUp(t, console, "from-kafka", 5, srcAdm)
	k.proc.signal(syscall.SIGSTOP)
	stopped := time.Now()
	reported := false
	for time.Since(stopped) < 30*time.Second {
		if l := getLink(t, console, "from-kafka"); l.Status != nil && l.Status.State == link.StateUnreachable {
			reported = true
		}
		time.Sleep(time.Second)
	}
	k.proc.signal(syscall.SIGCONT)
	if !reported {
		t.Errorf("the source stopped for 30 s was not reported (state %q)", getLink(t, console, "from-kafka").Status.State)
	}
	produceKeyed(3500, 500)
	waitCaughtUp(t, console, "from-kafka", 5, srcAdm)

	step("the outage reported and caught up with")
	// Every record at the same offset on both sides, gaps included.
	for _, tp := range []struct {
		topic      string
		partitions int32
	}{{"lk-compacted", 1}, {"lk-txn", 2}, {"lk-idem", 3}, {"_schemas", 1}} {
		for p := int32(0); p < tp.partitions; p++ {
			for _, committedOnly := range []bool{false, true} {
				want, got := readAll(t, src, tp.topic, p, committedOnly), readAll(t, dst, tp.topic, p, committedOnly)
				if d := diffRecords(want, got); d != "" {
					t.Errorf("%s/%d (read_committed %v): %s", tp.topic, p, committedOnly, d)
				}
			}
		}
	}
	if offs := offsetsOf(readAll(t, dst, "lk-compacted", 0, false)); !hasGap(offs) {
		t.Errorf("lk-compacted's offsets on the gateway have no gap: %v", offs)
	}
	aborted := 0
	for p := int32(0); p < 2; p++ {
		aborted += len(readAll(t, dst, "lk-txn", p, false)) - len(readAll(t, dst, "lk-txn", p, true))
	}
	if aborted != 40 {
		t.Errorf("%d aborted records read_uncommitted only on the gateway, want 40", aborted)
	}

	step("records compared")
	// The group's offsets, copied, and the group resumes exactly there.
	mine, err := dstAdm.FetchOffsets(ctxT(t), "lk-group")
	if err != nil {
		t.Fatal(err)
	}
	committed.Each(func(o kadm.OffsetResponse) {
		if got, ok := mine.Lookup(o.Topic, o.Partition); !ok || got.At != o.At {
			t.Errorf("lk-group's offset of %s/%d on the gateway: %+v, want %d", o.Topic, o.Partition, got, o.At)
		}
	})
	seen := map[string]bool{}
	for _, r := range consumedOnKafka {
		seen[string(r.Key)] = true
	}
	resumed := consumeAndCommit(t, g.addr, "lk-group", "lk-idem", 4000-len(consumedOnKafka))
	first := map[int32]int64{}
	for _, r := range resumed {
		if seen[string(r.Key)] {
			t.Fatalf("%s read on Kafka was read again on the gateway", r.Key)
		}
		seen[string(r.Key)] = true
		if _, ok := first[r.Partition]; !ok {
			first[r.Partition] = r.Offset
		}
	}
	if len(seen) != 4000 {
		t.Errorf("%d of 4000 records read across the cutover", len(seen))
	}
	for p, at := range first {
		if o, _ := committed.Lookup("lk-idem", p); o.At != at {
			t.Errorf("lk-group resumed partition %d at %d, committed on Kafka at %d", p, at, o.At)
		}
	}

	// The ACL, copied.
	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.ResourceType, describe.ResourceName = kmsg.ACLResourceTypeTopic, kmsg.StringPtr("lk-idem")
	describe.ResourcePatternType, describe.Operation, describe.PermissionType = kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	eventually(t, 30*time.Second, "lk-idem's ACL copied", func() error {
		resp, err := describe.RequestWith(ctxT(t), dst)
		if err != nil {
			return err
		}
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				if a.Principal == "User:lk-reader" && a.Operation == kmsg.ACLOperationRead {
					return nil
				}
			}
		}
		return fmt.Errorf("not on the gateway: %+v", resp.Resources)
	})

	// The schema, under its id.
	if body := httpGet(t, g.registry+"/schemas/ids/42"); !strings.Contains(body, `\"string\"`) {
		t.Errorf("schema 42 on the gateway: %s", body)
	}

	step("the group resumed, the ACL and schema copied")
	// Promotion: the topics become writable; the Kafka producer's
	// sequence goes on, and the gateway's producer ids are past its.
	described, err := srcAdm.DescribeProducers(ctxT(t), kadm.TopicsSet{"lk-idem": {0: {}, 1: {}, 2: {}}})
	if err != nil {
		t.Fatal(err)
	}
	kafkaTxn, err := srcAdm.DescribeTransactions(ctxT(t), "lk-java-tx")
	if err != nil {
		t.Fatal(err)
	}
	linkCmd(t, console, "promote", "-name=from-kafka")
	eventually(t, time.Minute, "the link's topics promoted", func() error {
		l := getLink(t, console, "from-kafka")
		for name, ts := range l.Status.Topics {
			if ts.State != link.StatePromoted {
				return fmt.Errorf("%s is %s", name, ts.State)
			}
		}
		return nil
	})
	time.Sleep(time.Second) // every gateway read the promotion (-link.refresh.ms)
	maxSource := int64(-1)
	described.EachPartition(func(p kadm.DescribedProducersPartition) {
		for _, d := range p.ActiveProducers {
			maxSource = max(maxSource, d.ProducerID)
			resp := produceRaw(t, dst, "lk-idem", p.Partition, idempotentBatch(d.ProducerID, d.ProducerEpoch, d.LastSequence+1, "after promotion"))
			expectCode(t, fmt.Sprintf("the Kafka producer's next batch on partition %d", p.Partition), resp.ErrorCode, nil)
			resp = produceRaw(t, dst, "lk-idem", p.Partition, idempotentBatch(d.ProducerID, d.ProducerEpoch, d.LastSequence+5, "a gap"))
			expectCode(t, fmt.Sprintf("a sequence gap on partition %d", p.Partition), resp.ErrorCode, kerr.OutOfOrderSequenceNumber)
		}
	})
	if maxSource < 0 {
		t.Fatal("Kafka describes no producer of lk-idem")
	}
	fresh := clientAt(t, g.addr)
	r := &kgo.Record{Topic: "lk-idem", Value: []byte("a gateway producer")}
	if err := fresh.ProduceSync(ctxT(t), r).FirstErr(); err != nil {
		t.Fatalf("produce once promoted: %v", err)
	}
	ours, err := dstAdm.DescribeProducers(ctxT(t), kadm.TopicsSet{"lk-idem": {r.Partition: {}}})
	if err != nil {
		t.Fatal(err)
	}
	ours.EachPartition(func(p kadm.DescribedProducersPartition) {
		for _, d := range p.ActiveProducers {
			if d.ProducerID <= maxSource && d.LastSequence == 0 {
				t.Errorf("a producer of the gateway got id %d, not past Kafka's %d", d.ProducerID, maxSource)
			}
		}
	})
	if n := runJavaTests(t, "java/link", "-Dlink.phase=gateway", "-Dkafka.bootstrap="+g.addr); n != 1 {
		t.Errorf("%d Java tests ran, want 1", n)
	}
	// The transactional id went on as Kafka's producer, its epoch raised.
	gatewayTxn, err := dstAdm.DescribeTransactions(ctxT(t), "lk-java-tx")
	if err != nil {
		t.Fatal(err)
	}
	theirs, mineNow := kafkaTxn["lk-java-tx"], gatewayTxn["lk-java-tx"]
	if mineNow.ProducerID != theirs.ProducerID || mineNow.ProducerEpoch <= theirs.ProducerEpoch {
		t.Errorf("lk-java-tx on the gateway: producer %d epoch %d; on Kafka %d epoch %d", mineNow.ProducerID, mineNow.ProducerEpoch, theirs.ProducerID, theirs.ProducerEpoch)
	}
	step("promoted; the Java producer went on")
	if out := linkCmd(t, console, "list"); !strings.Contains(out, "promoted") {
		t.Errorf("weed mq.kafka.link list:\n%s", out)
	}
	if m := httpGet(t, g.monitor+"/metrics"); !strings.Contains(m, `SeaweedFS_kafka_link_records_total{link="from-kafka"`) {
		t.Error("no link_records_total on /metrics")
	}
	linkCmd(t, console, "delete", "-name=from-kafka")

	step("the link deleted")
	// Another gateway cluster as a source: the suite's.
	createTopic(t, "lg-from-gateway", 2, nil)
	var recs []*kgo.Record
	for i := 0; i < 300; i++ {
		recs = append(recs, &kgo.Record{Topic: "lg-from-gateway", Partition: int32(i % 2), Key: []byte(strconv.Itoa(i)), Value: []byte("from the suite's gateway")})
	}
	suite := clientAt(t, gw.addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, suite, recs...)
	linkCmd(t, console, "create", "-name=from-gateway", "-source="+gw.addr, "-topics=lg-.*")
	waitCaughtUp(t, console, "from-gateway", 1, kadm.NewClient(suite))
	for p := int32(0); p < 2; p++ {
		if d := diffRecords(readAll(t, suite, "lg-from-gateway", p, false), readAll(t, dst, "lg-from-gateway", p, false)); d != "" {
			t.Errorf("lg-from-gateway/%d: %s", p, d)
		}
	}
	linkCmd(t, console, "delete", "-name=from-gateway")
}

// clientAt is a client of the cluster at addr.
func clientAt(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// txnProducerAt is a transactional producer of the cluster at addr.
func txnProducerAt(t *testing.T, addr, id string) *kgo.Client {
	return clientAt(t, addr, kgo.TransactionalID(id), kgo.TransactionTimeout(20*time.Second))
}

// readAll reads a partition from its start to its end (the last stable
// offset with committedOnly), as a consumer sees it.
func readAll(t *testing.T, cl *kgo.Client, topic string, partition int32, committedOnly bool) []*kgo.Record {
	t.Helper()
	ctx := ctxT(t)
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, partition)
	opts := []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}})}
	if committedOnly {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	seeds := cl.OptValue(kgo.SeedBrokers).([]string)
	reader, err := kgo.NewClient(append(opts, kgo.SeedBrokers(seeds...))...)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	var out []*kgo.Record
	// To the end, or until nothing more comes: a partition's last offsets
	// may hold no record a consumer sees (a marker, aborted records, a
	// compacted gap).
	start, idle := time.Now(), 0
	for time.Since(start) < 30*time.Second && end.Offset > 0 && idle < 2 {
		if len(out) > 0 && out[len(out)-1].Offset >= end.Offset-1 {
			break
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := reader.PollFetches(pctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < end.Offset {
				out = append(out, r)
				n++
			}
		})
		switch {
		case n > 0:
			idle = 0
		case len(out) > 0 || time.Since(start) > 5*time.Second:
			idle++
		}
	}
	return out
}

// diffRecords says how two reads differ: offsets, keys, values, headers,
// timestamps.
func diffRecords(want, got []*kgo.Record) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d records, want %d (offsets %v, want %v)", len(got), len(want), short(offsetsOf(got)), short(offsetsOf(want)))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.Offset != g.Offset || string(w.Key) != string(g.Key) || string(w.Value) != string(g.Value) ||
			!w.Timestamp.Equal(g.Timestamp) || fmt.Sprint(w.Headers) != fmt.Sprint(g.Headers) {
			return fmt.Sprintf("record %d: %d %q=%q %v %v, want %d %q=%q %v %v", i, g.Offset, g.Key, g.Value, g.Timestamp, g.Headers, w.Offset, w.Key, w.Value, w.Timestamp, w.Headers)
		}
	}
	return ""
}

func offsetsOf(rs []*kgo.Record) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.Offset
	}
	return out
}

func short(offs []int64) []int64 {
	if len(offs) > 20 {
		return append(slices.Clone(offs[:10]), offs[len(offs)-10:]...)
	}
	return offs
}

func hasGap(offs []int64) bool {
	for i := 1; i < len(offs); i++ {
		if offs[i] != offs[i-1]+1 {
			return true
		}
	}
	return len(offs) > 0 && offs[0] != 0
}

// consumeAndCommit reads n records of topic in group on the cluster at
// addr, commits them and leaves the group.
func consumeAndCommit(t *testing.T, addr, group, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	deadline := time.Now().Add(90 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctxT(t), 2*time.Second)
		fs := cl.PollRecords(pctx, n-len(out))
		cancel()
		out = append(out, fs.Records()...)
	}
	if len(out) < n {
		t.Fatalf("%s read %d of %d records of %s", group, len(out), n, topic)
	}
	if err := cl.CommitRecords(ctxT(t), out...); err != nil {
		t.Fatal(err)
	}
	return out
}

// linkCmd runs weed mq.kafka.link against the gateway's API.
func linkCmd(t *testing.T, console, action string, args ...string) string {
	t.Helper()
	out, err := exec.Command(weedBin, append([]string{"mq.kafka.link", action, "-bootstrap=" + console, "-user=" + adminUser, "-password=" + adminPassword}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("weed mq.kafka.link %s %v: %v\n%s", action, args, err, out)
	}
	return string(out)
}

// getLink reads a link through the API.
func getLink(t *testing.T, console, name string) link.Link {
	t.Helper()
	var l link.Link
	req, err := http.NewRequest("GET", console+"/api/links/"+name, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(adminUser, adminPassword)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/links/%s: HTTP %d, %v", name, resp.StatusCode, err)
	}
	return l
}

// waitCaughtUp waits until the link mirrors topics topics, each at the
// end the source has now.
func waitCaughtUp(t *testing.T, console, name string, topics int, src *kadm.Client) {
	t.Helper()
	eventually(t, 2*time.Minute, "link "+name+" to catch up", func() error {
		l := getLink(t, console, name)
		if l.Status == nil {
			return fmt.Errorf("no state yet")
		}
		if l.Status.State != link.StateActive {
			return fmt.Errorf("state %s: %s", l.Status.State, l.Status.Error)
		}
		if len(l.Status.Topics) != topics {
			return fmt.Errorf("%d topics", len(l.Status.Topics))
		}
		for name, ts := range l.Status.Topics {
			ends, err := src.ListEndOffsets(ctxT(t), name)
			if err != nil {
				return err
			}
			if len(ts.Lag) != int(ts.Partitions) {
				return fmt.Errorf("%s: lag of %d partitions of %d (%s)", name, len(ts.Lag), ts.Partitions, ts.Error)
			}
			for p, lag := range ts.Lag {
				end, _ := ends.Lookup(name, p)
				if lag.SourceEnd < end.Offset || lag.Records() > 0 {
					return fmt.Errorf("%s/%d: the mirror is at %d, the source at %d", name, p, lag.MirrorEnd, end.Offset)
				}
			}
		}
		return nil
	})
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}
