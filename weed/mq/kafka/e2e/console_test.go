package e2e

// The gateway's web console (-console.listeners) driven in a real headless
// Chromium with chromedp, as an operator uses it: the login page refuses a
// wrong password and takes the administrator's; the cluster page lists the
// gateway; 1,000 topics are searched and paged; records are browsed by
// offset and searched by a header, an Avro value is shown decoded with its
// schema id, and a masked field is neither shown nor searchable; a KIP-848
// consumer group, a classic group and a share group are shown with their
// types, states and lags; a classic group's offsets are reset to a
// timestamp from the browser; and a user denied DESCRIBE on a topic does
// not see it. The gateway runs in a cluster namespace of its own, so that
// its 1,000 topics and groups are not the other tests'. The load times of
// the heaviest pages are logged, not asserted; with CONSOLE_SCREENSHOTS
// set to a directory, screenshots of the main pages are saved there.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"
)

const (
	// consoleStep bounds each browser step: a navigation with the page's
	// load, a query, a click.
	consoleStep = 90 * time.Second
	// consoleBrowseTopic and the others are the console test's topics.
	consoleBrowseTopic = "console-browse"
	consoleAvroTopic   = "console-avro"
	consoleMaskedTopic = "console-masked"
	consoleHiddenTopic = "console-hidden"
	consoleGroupsTopic = "console-groups"
	consoleManyTopics  = 1000
	// consolePerPartition records are in each of console-groups' three
	// partitions.
	consolePerPartition = 100
)

func TestConsole(t *testing.T) {
	t.Parallel() // a gateway and a cluster namespace of its own
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is needed for the console test (the test command installs it): %v", err)
	}
	began := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(began).Seconds(), what) }

	consolePort, err := freePort(false)
	if err != nil {
		t.Fatal(err)
	}
	console := "http://127.0.0.1:" + strconv.Itoa(consolePort)
	g, err := startNamedGateway("console", cluster.master, 0, "-cluster.name=console",
		"-console.listeners="+console, "-console.readonly=false", "-console.mask=^console-masked$=ssn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.stop()
		if t.Failed() {
			dumpLog(filepath.Join(work, "console.log"))
		}
	})
	step("gateway started")

	cl := clientAt(t, g.addr, kgo.ProducerLinger(5*time.Millisecond))
	adm := kadm.NewClient(cl)
	data := consoleSetup(t, cl, adm, g)
	step("topics, records, groups and users made")

	// The three groups of console-groups.
	consoleKIP848(t, g, adm)
	if res, err := adm.CommitOffsets(ctxT(t), "console-classic", consoleOffsets(map[int32]int64{0: 10, 1: 20, 2: 30})); err != nil || res.Error() != nil {
		t.Fatalf("commit console-classic's offsets: %v %v", err, res.Error())
	}
	consoleShare(t, g, cl)
	step("console-kip848, console-classic and console-share consumed")
	// Their lag on /metrics, before the 1,000 groups take the metrics'
	// label values (1,000 groups get one each).
	consoleLagMetrics(t, g)
	step("the groups' lag on /metrics as kafka-consumer-groups.sh and kafka-share-groups.sh show it")
	consoleManyGroups(t, adm)
	step("1,000 classic groups made")

	// The browser.
	p := startConsoleBrowser(t, chromium, console)
	step("chromium started")

	// Not logged in: the login page; a wrong password is refused.
	p.open("/", "body")
	if path := p.path(); path != "/login" {
		p.fail("/ without a session led to %s, want /login", path)
	}
	p.login(adminUser, "not-"+adminPassword)
	if p.count("#login-error") == 0 || p.count("form#login") == 0 {
		p.fail("a wrong password: no #login-error on the login page")
	}
	p.open("/", "body")
	if path := p.path(); path != "/login" {
		p.fail("after a wrong password / led to %s, want /login: a session was made", path)
	}

	// The administrator: the cluster page.
	p.login(adminUser, adminPassword)
	if path := p.path(); path != "/" {
		p.fail("the administrator's login led to %s, want /", path)
	}
	p.wait("#gateways")
	if n := p.count("#gateways tr[data-node]"); n != 1 {
		p.fail("#gateways lists %d gateways, want 1", n)
	}
	if p.count("#features") == 0 {
		p.fail("no #features on the cluster page")
	}
	p.screenshot("cluster.png")
	step("logged in")

	consoleTopics(t, p)
	step("topics searched and paged")
	consoleMessages(t, p, data)
	step("records browsed")
	consoleGroups(t, p)
	step("groups shown")
	consoleReset(t, p, adm, data.base)
	step("console-classic reset to a timestamp")

	p.open("/schemas", "table#subjects")
	if n := p.count(`tr[data-subject="` + consoleAvroTopic + `-value"]`); n != 1 {
		p.fail("the schemas page shows the subject %s-value %d times, want 1", consoleAvroTopic, n)
	}
	p.screenshot("schemas.png")

	// The heaviest pages' load times, with the administrator's session.
	for _, pg := range []struct{ path, sel string }{
		{"/topics", "table#topics"},
		{"/groups/console-g-0001", "table#group-offsets"},
		{"/groups", "table#groups"},
	} {
		var took []time.Duration
		for range 5 {
			start := time.Now()
			p.open(pg.path, pg.sel)
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		t.Logf("console page %s: median %d ms, max %d ms", pg.path, took[len(took)/2].Milliseconds(), took[len(took)-1].Milliseconds())
	}

	// bob, denied DESCRIBE on console-hidden, does not see it.
	p.open("/", "#logout-submit")
	p.click("#logout-submit")
	p.open("/", "body")
	if path := p.path(); path != "/login" {
		p.fail("after logging out / led to %s, want /login", path)
	}
	eventually(t, 30*time.Second, "bob logs in", func() error {
		p.login("bob", "bob-secret")
		if path := p.path(); path != "/" {
			return fmt.Errorf("bob's login led to %s: %.300s", path, p.text("body"))
		}
		return nil
	})
	// bob's first view of the groups measures every group's lag (1,000
	// groups): the heaviest page the console serves.
	start := time.Now()
	p.open("/groups", "table#groups")
	t.Logf("console page /groups, a session's first view (every group's lag measured): %d ms", time.Since(start).Milliseconds())
	p.open("/topics?q="+consoleHiddenTopic, "#topics-total")
	if n := p.count(`tr[data-topic="` + consoleHiddenTopic + `"]`); n != 0 {
		p.fail("bob sees %s", consoleHiddenTopic)
	}
	if total := p.text("#topics-total"); total != "0" {
		p.fail("bob's search for %s: #topics-total %q, want 0", consoleHiddenTopic, total)
	}
	p.open("/topics?q="+consoleBrowseTopic, "table#topics")
	if n := p.count(`table#topics tr[data-topic="` + consoleBrowseTopic + `"]`); n != 1 {
		p.fail("bob's search for %s shows %d rows of it, want 1", consoleBrowseTopic, n)
	}
	step("bob does not see console-hidden")
}

// consoleData is what the console test wrote.
type consoleData struct {
	// base is the timestamp of console-groups' first records: record i of
	// each partition is at base+i ms.
	base time.Time
	// schemaID is console-avro-value's, of the payments in console-avro.
	schemaID int
	payments []consolePayment
}

type consolePayment struct {
	ID     string  `avro:"id"`
	Amount float64 `avro:"amount"`
}

// consoleSetup makes the topics, records, classic groups and user of the
// console test.
func consoleSetup(t *testing.T, cl *kgo.Client, adm *kadm.Client, g *gatewayProc) consoleData {
	t.Helper()
	// 1,000 topics of one partition, 100 a request.
	var many []string
	for i := range consoleManyTopics {
		many = append(many, fmt.Sprintf("console-t-%04d", i))
	}
	for i := 0; i < len(many); i += 100 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		res, err := adm.CreateTopics(ctx, 1, 1, nil, many[i:min(i+100, len(many))]...)
		cancel()
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatalf("create console-t-%04d..: %v", i, err)
		}
	}
	for topic, partitions := range map[string]int32{consoleBrowseTopic: 1, consoleAvroTopic: 1, consoleMaskedTopic: 1, consoleHiddenTopic: 1, consoleGroupsTopic: 3} {
		createTopicVia(t, cl, topic, partitions, nil)
	}

	// console-browse: k-<i>/v-<i> with a header trace, needle-7f3a on 37.
	var recs []*kgo.Record
	for i := range 50 {
		trace := fmt.Sprintf("id-%d", i)
		if i == 37 {
			trace = "needle-7f3a"
		}
		recs = append(recs, &kgo.Record{Topic: consoleBrowseTopic, Key: []byte(fmt.Sprintf("k-%d", i)), Value: []byte(fmt.Sprintf("v-%d", i)),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte(trace)}}})
	}
	produceSync(t, cl, recs...)
	for i, r := range recs {
		if r.Offset != int64(i) {
			t.Fatalf("%s record %d at offset %d", consoleBrowseTopic, i, r.Offset)
		}
	}

	// console-avro: three Payments in Confluent's wire format.
	data := consoleAvroRecords(t, cl, g)

	// console-masked: JSON values whose ssn the console masks.
	recs = nil
	for i := range 5 {
		recs = append(recs, &kgo.Record{Topic: consoleMaskedTopic, Value: []byte(fmt.Sprintf(`{"name":"n%d","ssn":"ssn-secret-%d"}`, i, i))})
	}
	produceSync(t, cl, recs...)

	// console-groups: 100 records a partition, record i at base+i ms.
	data.base = time.Now().Add(-time.Hour).Truncate(time.Second)
	base := data.base
	manual := clientAt(t, g.addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	recs = nil
	for p := range int32(3) {
		for i := range consolePerPartition {
			recs = append(recs, &kgo.Record{Topic: consoleGroupsTopic, Partition: p, Timestamp: base.Add(time.Duration(i) * time.Millisecond),
				Key: []byte(fmt.Sprintf("k-%d", i)), Value: []byte(fmt.Sprintf("g-%d-%d", p, i))})
		}
	}
	produceSync(t, manual, recs...)
	for i, r := range recs {
		if r.Offset != int64(i%consolePerPartition) {
			t.Fatalf("%s record %s at %d/%d", consoleGroupsTopic, r.Value, r.Partition, r.Offset)
		}
	}
	// The gateway itself maps base+50 to offset 50 on every partition.
	listed, err := adm.ListOffsetsAfterMilli(ctxT(t), base.UnixMilli()+50, consoleGroupsTopic)
	if err != nil {
		t.Fatal(err)
	}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != 50 {
			t.Fatalf("the offset of %d/%d: %d (%v), want 50", base.UnixMilli()+50, o.Partition, o.Offset, o.Err)
		}
	})

	// bob, denied DESCRIBE on console-hidden.
	if res, err := adm.AlterUserSCRAMs(ctxT(t), nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-secret"}}); err != nil || res["bob"].Err != nil {
		t.Fatalf("create bob: %v %+v", err, res)
	}
	acl := kadm.NewACLs().Topics(consoleHiddenTopic).ResourcePatternType(kadm.ACLPatternLiteral).
		Deny("User:bob").DenyHosts().Operations(kadm.OpDescribe, kadm.OpAll)
	res, err := adm.CreateACLs(ctxT(t), acl)
	if err != nil {
		t.Fatalf("deny bob %s: %v", consoleHiddenTopic, err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("deny bob %s: %v", consoleHiddenTopic, r.Err)
		}
	}
	return data
}

// consoleManyGroups makes a classic group of each of the 1,000 topics
// (console-g-NNNN: offset 0 of console-t-NNNN), eight at a time.
func consoleManyGroups(t *testing.T, adm *kadm.Client) {
	t.Helper()
	var many []string
	for i := range consoleManyTopics {
		many = append(many, fmt.Sprintf("console-t-%04d", i))
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	errs := make(chan error, len(many))
	for i, topic := range many {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			group := fmt.Sprintf("console-g-%04d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var offsets kadm.Offsets
			offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 0, LeaderEpoch: -1})
			res, err := adm.CommitOffsets(ctx, group, offsets)
			if err == nil {
				err = res.Error()
			}
			if err != nil {
				errs <- fmt.Errorf("commit of %s: %w", group, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

}

// consoleAvroRecords registers console-avro-value through the gateway's
// registry and produces three Payments in Confluent's wire format.
func consoleAvroRecords(t *testing.T, cl *kgo.Client, g *gatewayProc) consoleData {
	t.Helper()
	const paymentSchema = `{"type":"record","name":"Payment","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"}]}`
	reg, err := sr.NewClient(sr.URLs(g.registry))
	if err != nil {
		t.Fatal(err)
	}
	var ss sr.SubjectSchema
	eventually(t, 60*time.Second, "the registry takes the Payment schema", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ss, err = reg.CreateSchema(ctx, consoleAvroTopic+"-value", sr.Schema{Schema: paymentSchema, Type: sr.TypeAvro})
		return err
	})
	writer := avro.MustParse(paymentSchema)
	var serde sr.Serde
	serde.Register(ss.ID, consolePayment{}, sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(writer, v) }))
	out := consoleData{schemaID: ss.ID, payments: []consolePayment{{"pay-0", 12.5}, {"pay-1", 25.75}, {"pay-2", 99.125}}}
	var recs []*kgo.Record
	for _, pm := range out.payments {
		recs = append(recs, &kgo.Record{Topic: consoleAvroTopic, Value: serde.MustEncode(pm)})
	}
	produceSync(t, cl, recs...)
	return out
}

// consoleOffsets are offsets of console-groups by partition.
func consoleOffsets(at map[int32]int64) kadm.Offsets {
	var offsets kadm.Offsets
	for p, o := range at {
		offsets.Add(kadm.Offset{Topic: consoleGroupsTopic, Partition: p, At: o, LeaderEpoch: -1})
	}
	return offsets
}

// consoleKIP848 makes console-kip848, a consumer group of the KIP-848
// protocol whose one member consumed console-groups and committed 40
// records of each partition (lag 3*60 = 180), and stays in the group.
func consoleKIP848(t *testing.T, g *gatewayProc, adm *kadm.Client) {
	t.Helper()
	const group = "console-kip848"
	member := clientAt(t, g.addr, kgo.ClientID("console-kip848-member"),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(consoleGroupsTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer(),
		kgo.SessionTimeout(groupSession), kgo.HeartbeatInterval(groupHeartbeat), kgo.RebalanceTimeout(groupRebalance),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(500*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	next := map[int32]int64{}
	for next[0] < 40 || next[1] < 40 || next[2] < 40 {
		fs := member.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s consumed up to %v before the deadline", group, next)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("%s polls %s/%d: %v", group, topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { next[r.Partition] = max(next[r.Partition], r.Offset+1) })
	}
	var commitErr error
	member.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{consoleGroupsTopic: {0: {Epoch: -1, Offset: 40}, 1: {Epoch: -1, Offset: 40}, 2: {Epoch: -1, Offset: 40}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				commitErr = err
				return
			}
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
						commitErr = fmt.Errorf("%s/%d: %w", rt.Topic, rp.Partition, err)
					}
				}
			}
		})
	if commitErr != nil {
		t.Fatalf("%s commits 40/40/40: %v", group, commitErr)
	}
	eventually(t, 30*time.Second, group+"'s commits", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := committed(ctx, adm, group, consoleGroupsTopic)
		if err != nil {
			return err
		}
		if got[0] != 40 || got[1] != 40 || got[2] != 40 || len(got) != 3 {
			return fmt.Errorf("committed %v, want 40 on each partition", got)
		}
		return nil
	})
}

// consoleShare makes console-share, a share group whose one member
// accepted 30 records of console-groups, and stays in the group.
func consoleShare(t *testing.T, g *gatewayProc, cl *kgo.Client) {
	t.Helper()
	const group = "console-share"
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("share.auto.offset.reset of %s: %v", group, err)
	}

	member := clientAt(t, g.addr, kgo.ShareGroup(group), kgo.ConsumeTopics(consoleGroupsTopic), kgo.ClientID("console-share-member"),
		kgo.FetchMaxWait(500*time.Millisecond), kgo.ShareMaxRecords(20))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	accepted := 0
	for accepted < 30 {
		fs := member.PollRecords(ctx, 30-accepted)
		if ctx.Err() != nil {
			t.Fatalf("%s accepted %d of 30 records before the deadline", group, accepted)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("%s polls %s/%d: %v", group, topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			r.Ack(kgo.AckAccept)
			accepted++
		})
	}
	if err := member.FlushAcks(ctx); err != nil {
		t.Fatalf("%s flushes its acknowledgements: %v", group, err)
	}
	// The acknowledgements move the group's start offsets.
	eventually(t, 30*time.Second, group+"'s acknowledgements", func() error {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group,
			Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: consoleGroupsTopic, Partitions: []int32{0, 1, 2}}}}}
		resp, err := req.RequestWith(ctxT(t), cl)
		if err != nil {
			return err
		}
		var starts []int64
		lag, moved := int64(0), false
		for _, rg := range resp.Groups {
			if err := kerr.ErrorForCode(rg.ErrorCode); err != nil {
				return err
			}
			for _, tp := range rg.Topics {
				for _, p := range tp.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						return fmt.Errorf("partition %d: %w", p.Partition, err)
					}
					starts = append(starts, p.StartOffset)
					lag += p.Lag
					moved = moved || p.StartOffset > 0
				}
			}
		}
		if !moved {
			return fmt.Errorf("start offsets %v", starts)
		}
		t.Logf("%s: start offsets %v, lag %d", group, starts, lag)
		return nil
	})
}

// consoleTopics searches the topics by the form and pages through them.
func consoleTopics(t *testing.T, p *consolePage) {
	p.open("/topics", "table#topics")
	if n := p.count("table#topics tr[data-topic]"); n == 0 || n > 100 {
		p.fail("/topics shows %d topics on its first page, want 1 to 100", n)
	}
	p.screenshot("topics.png")

	// The search form, typed into.
	p.wait("form#topic-search input[name=q]")
	p.setValue("form#topic-search input[name=q]", "")
	p.do(chromedp.SendKeys(chromedp.CSS("form#topic-search input[name=q]"), "console-t-0421"))
	p.navigating(chromedp.Submit(chromedp.CSS("form#topic-search input[name=q]")))
	if path := p.path(); path != "/topics" {
		p.fail("the topic search led to %s, want /topics", path)
	}
	p.wait("table#topics")
	rows := p.rows("table#topics tr[data-topic]")
	if len(rows) != 1 || rows[0]["@data-topic"] != "console-t-0421" {
		p.fail("the search for console-t-0421 shows %v, want its row alone", rows)
	}
	for _, cell := range []string{"partitions", "size", "lag"} {
		if _, ok := rows[0][cell]; !ok {
			p.fail("console-t-0421's row has no td.%s: %v", cell, rows[0])
		}
	}
	if rows[0]["partitions"] != "1" {
		p.fail("console-t-0421 has %q partitions, want 1", rows[0]["partitions"])
	}
	if total := p.text("#topics-total"); total != "1" {
		p.fail("the search for console-t-0421: #topics-total %q, want 1", total)
	}

	// 1,000 matches, a page of at most 100.
	p.open("/topics?q=console-t-", "table#topics")
	if total := p.text("#topics-total"); total != strconv.Itoa(consoleManyTopics) {
		p.fail("the search for console-t-: #topics-total %q, want %d", total, consoleManyTopics)
	}
	rows = p.rows("table#topics tr[data-topic]")
	if len(rows) == 0 || len(rows) > 100 {
		p.fail("the search for console-t- shows %d rows, want 1 to 100", len(rows))
	}
	for _, r := range rows {
		if !strings.HasPrefix(r["@data-topic"], "console-t-") {
			p.fail("the search for console-t- shows %s", r["@data-topic"])
		}
	}
	if p.count("a#next-page") == 0 {
		p.fail("the search for console-t- has no a#next-page")
	}

	p.open("/topics?q="+consoleGroupsTopic, "table#topics")
	rows = p.rows(`table#topics tr[data-topic="` + consoleGroupsTopic + `"]`)
	if len(rows) != 1 || rows[0]["partitions"] != "3" {
		p.fail("%s's row: %v, want 3 partitions", consoleGroupsTopic, rows)
	}
}

// consoleMessages browses console-browse, console-avro and console-masked.
func consoleMessages(t *testing.T, p *consolePage, data consoleData) {
	messages := func(topic, query string) []map[string]string {
		p.open("/topics/"+topic+"/messages?"+query, "body")
		if path := p.path(); path != "/topics/"+topic+"/messages" {
			p.fail("/topics/%s/messages?%s led to %s", topic, query, path)
		}
		return p.rows("table#messages tr.record")
	}
	// A header searched for.
	rows := messages(consoleBrowseTopic, "partition=0&from=earliest&q=needle-7f3a")
	if len(rows) != 1 {
		p.fail("the search for needle-7f3a shows %d records, want 1: %v", len(rows), rows)
	}
	r := rows[0]
	if r["@data-offset"] != "37" || r["@data-partition"] != "0" || r["value"] != "v-37" || r["key"] != "k-37" ||
		!strings.Contains(r["headers"], "needle-7f3a") {
		p.fail("the search for needle-7f3a shows %v, want offset 37, key k-37, value v-37 with the header", r)
	}
	if _, ok := r["schema"]; !ok {
		p.fail("a record's row has no td.schema: %v", r)
	}
	// From an offset, five records.
	rows = messages(consoleBrowseTopic, "partition=0&from=offset&offset=10&max=5")
	var got []string
	for _, r := range rows {
		got = append(got, r["@data-offset"]+"="+r["value"])
	}
	if want := []string{"10=v-10", "11=v-11", "12=v-12", "13=v-13", "14=v-14"}; !slices.Equal(got, want) {
		p.fail("from offset 10, 5 records: %v, want %v", got, want)
	}

	// Avro, decoded, with its schema id.
	rows = messages(consoleAvroTopic, "partition=0&from=earliest")
	if len(rows) != len(data.payments) {
		p.fail("%s shows %d records, want %d: %v", consoleAvroTopic, len(rows), len(data.payments), rows)
	}
	first := data.payments[0]
	for _, want := range []string{`"id"`, first.ID, `"amount"`, strconv.FormatFloat(first.Amount, 'f', -1, 64)} {
		if !strings.Contains(rows[0]["value"], want) {
			p.fail("%s's first record shows %q, want it decoded with %s", consoleAvroTopic, rows[0]["value"], want)
		}
	}
	if !slices.Contains(strings.Fields(rows[0]["schema"]), strconv.Itoa(data.schemaID)) {
		p.fail("%s's first record's schema %q, want the id %d", consoleAvroTopic, rows[0]["schema"], data.schemaID)
	}
	p.screenshot("messages.png")

	// A masked field: not shown, not searchable.
	rows = messages(consoleMaskedTopic, "partition=0&from=earliest")
	if len(rows) != 5 {
		p.fail("%s shows %d records, want 5", consoleMaskedTopic, len(rows))
	}
	for _, r := range rows {
		if strings.Contains(r["value"], "ssn-secret") || !strings.Contains(r["value"], `"name"`) {
			p.fail("%s shows %q, want its name and no ssn", consoleMaskedTopic, r["value"])
		}
	}
	if rows = messages(consoleMaskedTopic, "partition=0&from=earliest&q=ssn-secret"); len(rows) != 0 {
		p.fail("the search of %s for the masked ssn-secret found %v", consoleMaskedTopic, rows)
	}
	if rows = messages(consoleMaskedTopic, "partition=0&from=earliest&q=n3"); len(rows) != 1 || !strings.Contains(rows[0]["value"], "n3") {
		p.fail("the search of %s for n3 found %v, want the record of n3", consoleMaskedTopic, rows)
	}
}

// consoleGroups checks the groups' list and the pages of console-kip848,
// console-classic and console-share.
func consoleGroups(t *testing.T, p *consolePage) {
	types := []string{"classic", "consumer", "share", "streams"}
	p.open("/groups?q=console-", "table#groups")
	rows := p.rows("table#groups tr[data-group]")
	if len(rows) == 0 {
		p.fail("/groups?q=console- lists no group")
	}
	for _, r := range rows {
		if !strings.HasPrefix(r["@data-group"], "console-") || !slices.Contains(types, r["type"]) {
			p.fail("/groups?q=console- lists %v", r)
		}
		if _, ok := r["lag"]; !ok {
			p.fail("/groups?q=console- lists %s without a td.lag", r["@data-group"])
		}
	}
	for _, want := range []struct{ group, typ, lag string }{
		{"console-kip848", "consumer", "180"}, {"console-classic", "classic", "240"}, {"console-share", "share", ""}, {"console-g-0421", "classic", "0"},
	} {
		eventually(t, 30*time.Second, want.group+" in the list of groups", func() error {
			p.open("/groups?q="+want.group, "body")
			rows := p.rows(`table#groups tr[data-group="` + want.group + `"]`)
			if len(rows) != 1 || rows[0]["type"] != want.typ || (want.lag != "" && rows[0]["lag"] != want.lag) {
				return fmt.Errorf("its rows: %v, want one of type %s, lag %q", rows, want.typ, want.lag)
			}
			return nil
		})
	}

	// The group pages.
	type offsetRow struct{ committed, end, lag int64 }
	groupPage := func(group, typ, state string, lag int64, offsets map[int32]offsetRow) {
		eventually(t, 30*time.Second, group+"'s page", func() error {
			p.open("/groups/"+group, "#group-lag")
			if got := p.text("#group-type"); got != typ {
				return fmt.Errorf("#group-type %q, want %s", got, typ)
			}
			if got := p.text("#group-state"); !strings.EqualFold(got, state) {
				return fmt.Errorf("#group-state %q, want %s", got, state)
			}
			if got := p.text("#group-lag"); got != strconv.FormatInt(lag, 10) {
				return fmt.Errorf("#group-lag %q, want %d", got, lag)
			}
			got := map[int32]offsetRow{}
			for _, r := range p.rows("table#group-offsets tr[data-topic][data-partition]") {
				if r["@data-topic"] != consoleGroupsTopic {
					return fmt.Errorf("an offset of %s", r["@data-topic"])
				}
				part, err1 := strconv.ParseInt(r["@data-partition"], 10, 32)
				committed, err2 := strconv.ParseInt(r["committed"], 10, 64)
				end, err3 := strconv.ParseInt(r["end"], 10, 64)
				lag, err4 := strconv.ParseInt(r["lag"], 10, 64)
				if err := errors.Join(err1, err2, err3, err4); err != nil {
					return fmt.Errorf("the offsets' row %v: %w", r, err)
				}
				got[int32(part)] = offsetRow{committed, end, lag}
			}
			if fmt.Sprint(got) != fmt.Sprint(offsets) {
				return fmt.Errorf("offsets (committed, end, lag by partition) %v, want %v", got, offsets)
			}
			return nil
		})
	}
	const end = consolePerPartition
	groupPage("console-kip848", "consumer", "Stable", 3*(end-40), map[int32]offsetRow{0: {40, end, end - 40}, 1: {40, end, end - 40}, 2: {40, end, end - 40}})
	p.screenshot("group.png")
	groupPage("console-classic", "classic", "Empty", 240, map[int32]offsetRow{0: {10, end, 90}, 1: {20, end, 80}, 2: {30, end, 70}})

	// A share group's lag depends on its acknowledgements.
	eventually(t, 30*time.Second, "console-share's page", func() error {
		p.open("/groups/console-share", "#group-lag")
		if got := p.text("#group-type"); got != "share" {
			return fmt.Errorf("#group-type %q, want share", got)
		}
		if got := p.text("#group-state"); got == "" {
			return errors.New("no #group-state")
		}
		got := p.text("#group-lag")
		if lag, err := strconv.ParseInt(got, 10, 64); err != nil || lag < 0 || lag > 3*end {
			return fmt.Errorf("#group-lag %q, want 0 to %d", got, 3*end)
		}
		t.Logf("console-share: state %s, lag %s", p.text("#group-state"), got)
		return nil
	})
}

// consoleReset resets console-classic's offsets of console-groups to the
// timestamp of offset 50 with the group page's form.
func consoleReset(t *testing.T, p *consolePage, adm *kadm.Client, base time.Time) {
	p.open("/groups/console-classic", "form#reset")
	to := "form#reset select[name=to]"
	var options []string
	if err := p.eval(`Array.from(document.querySelectorAll(`+jsString(to+" option")+`)).map(o => o.value)`, &options); err != nil {
		p.fail("the reset form's options: %v", err)
	}
	for _, want := range []string{"earliest", "latest", "timestamp", "offset"} {
		if !slices.Contains(options, want) {
			p.fail("the reset form's select[name=to] offers %v, want %s among them", options, want)
		}
	}
	p.setValue(to, "timestamp")
	for name, value := range map[string]string{"topic": consoleGroupsTopic, "partition": "", "timestamp": strconv.FormatInt(base.UnixMilli()+50, 10)} {
		p.setValue("form#reset input[name="+name+"]", value)
	}
	p.click("#reset-submit")
	p.wait("#reset-result")
	t.Logf("the reset: %s", p.text("#reset-result"))
	eventually(t, 30*time.Second, "console-classic's offsets reset to 50", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := committed(ctx, adm, "console-classic", consoleGroupsTopic)
		if err != nil {
			return err
		}
		if got[0] != 50 || got[1] != 50 || got[2] != 50 || len(got) != 3 {
			return fmt.Errorf("committed %v, want 50 on each partition", got)
		}
		return nil
	})
	eventually(t, 30*time.Second, "console-classic's page after the reset", func() error {
		p.open("/groups/console-classic", "#group-lag")
		if got := p.text("#group-lag"); got != "150" {
			return fmt.Errorf("#group-lag %q, want 150", got)
		}
		return nil
	})
}

// consolePage is the browser's one tab on the console at base.
type consolePage struct {
	t    *testing.T
	ctx  context.Context
	base string
}

// startConsoleBrowser starts a headless Chromium (its output in
// chromium.log) with one tab, closed when the test ends.
func startConsoleBrowser(t *testing.T, chromium, base string) *consolePage {
	t.Helper()
	out, err := os.Create(filepath.Join(work, "chromium.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1000), chromedp.CombinedOutput(out))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelTab)
	// The first Run starts the browser, which lives as long as the context
	// of that Run: it has no timeout of its own, the watchdog ends it.
	watchdog := time.AfterFunc(consoleStep, cancelTab)
	err = chromedp.Do(tab)
	if !watchdog.Stop() || err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	// A confirm() or alert() of the console is accepted.
	dialogs := chromedp.Events(tab, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			chromedp.Call(tab, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true}) //nolint:errcheck // the step waiting on it fails
		}
	}()
	return &consolePage{t: t, ctx: tab, base: base}
}

// step is a context for one browser step.
func (p *consolePage) step() (context.Context, context.CancelFunc) {
	return context.WithTimeout(p.ctx, consoleStep)
}

// do runs actions as one step.
func (p *consolePage) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := p.step()
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.fail("%v", err)
	}
}

// navigating runs actions that load a page, and waits for it.
func (p *consolePage) navigating(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := p.step()
	defer cancel()
	if _, err := chromedp.RunResponse(ctx, actions...); err != nil {
		p.fail("a page load: %v", err)
	}
}

// open loads path and waits for sel.
func (p *consolePage) open(path, sel string) {
	p.t.Helper()
	ctx, cancel := p.step()
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(p.base+path)); err != nil {
		p.t.Fatalf("load %s: %v", path, err)
	}
	p.wait(sel)
}

// wait waits for sel on the page.
func (p *consolePage) wait(sel string) {
	p.t.Helper()
	ctx, cancel := p.step()
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(sel))); err != nil {
		p.fail("no %s: %v", sel, err)
	}
}

// click clicks sel, shown first if it is in a closed <details>, and waits
// for the page it leads to.
func (p *consolePage) click(sel string) {
	p.t.Helper()
	p.wait(sel)
	var shown bool
	if err := p.eval(`(() => { const e = document.querySelector(`+jsString(sel)+`);
		for (let d = e.closest("details"); d !== null; d = d.parentElement && d.parentElement.closest("details")) d.open = true;
		e.scrollIntoView({block: "center"}); return true; })()`, &shown); err != nil {
		p.fail("show %s: %v", sel, err)
	}
	p.navigating(chromedp.Click(chromedp.CSS(sel)))
}

// setValue sets the value of the form field sel, as chromedp.SetValue
// does (with the events input and change), but also to "": chromedp
// passes an empty value to the page as undefined.
func (p *consolePage) setValue(sel, value string) {
	p.t.Helper()
	if value != "" {
		p.do(chromedp.SetValue(chromedp.CSS(sel), value))
		return
	}
	p.wait(sel)
	var got string
	if err := p.eval(`(() => { const e = document.querySelector(`+jsString(sel)+`); e.value = "";
		e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true})); return e.value; })()`, &got); err != nil || got != "" {
		p.fail("clear %s: %q %v", sel, got, err)
	}
}

// login fills the login form and submits it.
func (p *consolePage) login(user, password string) {
	p.t.Helper()
	p.open("/login", "form#login")
	p.setValue("form#login input[name=user]", user)
	p.setValue("form#login input[name=password]", password)
	p.click("#login-submit")
}

// eval evaluates a JavaScript expression into v (by JSON).
func (p *consolePage) eval(expr string, v any) error {
	ctx, cancel := p.step()
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr))
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// count is the number of elements sel matches.
func (p *consolePage) count(sel string) int {
	p.t.Helper()
	var n int
	if err := p.eval(`document.querySelectorAll(`+jsString(sel)+`).length`, &n); err != nil {
		p.fail("count %s: %v", sel, err)
	}
	return n
}

// text is the trimmed text of the first element sel matches.
func (p *consolePage) text(sel string) string {
	p.t.Helper()
	var s *string
	if err := p.eval(`(() => { const e = document.querySelector(`+jsString(sel)+`); return e === null ? null : e.textContent.trim(); })()`, &s); err != nil {
		p.fail("the text of %s: %v", sel, err)
	}
	if s == nil {
		p.fail("no %s", sel)
	}
	return *s
}

// rows are the elements sel matches, each as its attributes ("@name")
// and the trimmed text of its cells by class.
func (p *consolePage) rows(sel string) []map[string]string {
	p.t.Helper()
	var rows []map[string]string
	if err := p.eval(`Array.from(document.querySelectorAll(`+jsString(sel)+`)).map(r => {
		const o = {};
		for (const a of r.getAttributeNames()) o["@" + a] = r.getAttribute(a);
		for (const c of r.querySelectorAll("td[class], th[class]")) for (const k of c.classList) o[k] = c.textContent.trim();
		return o;
	})`, &rows); err != nil {
		p.fail("the rows %s: %v", sel, err)
	}
	return rows
}

// path is the path of the page shown.
func (p *consolePage) path() string {
	p.t.Helper()
	ctx, cancel := p.step()
	defer cancel()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		p.t.Fatalf("the location: %v", err)
	}
	u, err := url.Parse(loc)
	if err != nil {
		p.t.Fatalf("the location %q: %v", loc, err)
	}
	return u.Path
}

// screenshot saves a PNG of the window (1400×1000) to
// $CONSOLE_SCREENSHOTS/name, if set.
func (p *consolePage) screenshot(name string) {
	p.t.Helper()
	dir := os.Getenv("CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	ctx, cancel := p.step()
	defer cancel()
	img, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), img, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// fail ends the test with the page's location and the start of its text.
func (p *consolePage) fail(format string, args ...any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 1500) : ""`))
	p.t.Fatalf("%s\n(page %s:\n%s)", fmt.Sprintf(format, args...), loc, body)
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// consoleLagMetrics checks the gateway's lag gauges of the three groups
// of console-groups, one of each kind, against what Kafka's own tools
// show of them: kafka-consumer-groups.sh --describe (the KIP-848 and
// the classic group) and kafka-share-groups.sh --describe (the share
// group), and against the records consumed (180 and 240).
func consoleLagMetrics(t *testing.T, g *gatewayProc) {
	t.Helper()
	cp := kafkaClasspath(t)
	for _, c := range []struct {
		group, tool string
		want        int64 // -1: what the tool shows
	}{
		{"console-kip848", "consumer.group.ConsumerGroupCommand", 180},
		{"console-classic", "consumer.group.ConsumerGroupCommand", 240},
		{"console-share", "consumer.group.ShareGroupCommand", -1},
	} {
		eventually(t, 60*time.Second, c.group+"'s lag on /metrics as the tool shows it", func() error {
			tool, err := toolLag(cp, g.addr, c.tool, c.group)
			if err != nil {
				return err
			}
			got, ok := metricValue(scrapeFrom(t, g), "kafka_consumergroup_lag_sum", map[string]string{"consumergroup": c.group, "topic": consoleGroupsTopic})
			switch {
			case !ok:
				return fmt.Errorf("no kafka_consumergroup_lag_sum of %s", c.group)
			case int64(got) != tool:
				return fmt.Errorf("/metrics: %v, %s: %d", got, c.tool, tool)
			case c.want >= 0 && tool != c.want:
				return fmt.Errorf("lag %d, want %d", tool, c.want)
			}
			t.Logf("%s: lag %d on /metrics and in %s", c.group, tool, c.tool)
			return nil
		})
	}
}

// toolLag runs one of Kafka 4.4's group commands with --describe and sums
// its LAG column.
func toolLag(classpath, addr, tool, group string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "java", "-cp", classpath, "org.apache.kafka.tools."+tool,
		"--bootstrap-server", addr, "--describe", "--group", group).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s: %v\n%s", tool, err, out)
	}
	col, rows := -1, 0
	var sum int64
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if col < 0 {
			if i := slices.Index(fields, "LAG"); i >= 0 && slices.Contains(fields, "GROUP") {
				col = i
			}
			continue
		}
		if len(fields) <= col || fields[0] != group {
			continue
		}
		n, err := strconv.ParseInt(fields[col], 10, 64)
		if err != nil {
			continue // "-": no commit on that partition
		}
		sum += n
		rows++
	}
	if rows == 0 {
		return 0, fmt.Errorf("%s shows no lag of %s:\n%s", tool, group, out)
	}
	return sum, nil
}
