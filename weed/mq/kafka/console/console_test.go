package console_test

// The console served by a node over the in-memory storage, driven over
// HTTP as a browser drives it (its forms, its cookie): logins, the
// topics' list, the browser with its search and masks, the groups' lag
// and a reset. The e2e package drives it in Chromium against SeaweedFS.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/node"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage/storagetest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/waitfor"
)

type consoleNode struct {
	kafka, console string
	node           *node.Node
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startNode(t testing.TB, mod func(*node.Config)) *consoleNode {
	t.Helper()
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte("admin:admin-secret\nbob:bob-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kafka := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cn := &consoleNode{kafka: kafka, console: "http://127.0.0.1:" + strconv.Itoa(freePort(t))}
	cfg := node.Defaults()
	cfg.Storage = storagetest.NewStorage()
	cfg.IP, cfg.NodeID, cfg.DefaultPartitions, cfg.RegistryListeners = "127.0.0.1", 1, 1, "none"
	cfg.GroupInitialDelayMs = 50
	cfg.Listeners = "PLAINTEXT://" + kafka + ",SASL_PLAINTEXT://127.0.0.1:" + strconv.Itoa(freePort(t))
	cfg.SASLMechanisms, cfg.SASLUsersFile = "SCRAM-SHA-512,PLAIN", users
	cfg.Authorizer, cfg.SuperUsers, cfg.AllowIfNoACL = true, "User:ANONYMOUS;User:admin", true
	cfg.ConsoleListeners = cn.console
	cfg.ConsoleReadOnly = false
	cfg.ConsoleMask = "^masked-=ssn"
	if mod != nil {
		mod(&cfg)
	}
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	cn.node = n
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		n.Close(ctx) //nolint:errcheck
	})
	return cn
}

// browser is an HTTP client that keeps the console's cookie.
type browser struct {
	t    testing.TB
	base string
	cl   *http.Client
}

func newBrowser(t testing.TB, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, cl: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.cl.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (b *browser) post(path string, form url.Values) (int, string) {
	b.t.Helper()
	resp, err := b.cl.PostForm(b.base+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// addedNote is the line of the diff that adds the field note.
var addedNote = regexp.MustCompile(`<span class="add">&#43; +&#34;name&#34;: &#34;note&#34;`)

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// csrf is the form token of the page at path.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	_, body := b.get(path)
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("no form token on %s", path)
	}
	return m[1]
}

func (b *browser) login(user, password string) (int, string) {
	return b.post("/login", url.Values{"user": {user}, "password": {password}, "to": {"/"}})
}

// waitFor polls until cond holds.
func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	waitfor.Until(t, 30*time.Second, what, cond)
}

// rows counts the elements with the attribute name="value" in body.
func rows(body, attr string) int { return strings.Count(body, attr) }

func TestConsoleInProcess(t *testing.T) {
	cn := startNode(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(cn.kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waitFor(t, "topics created", func() error {
		_, err := adm.CreateTopics(ctx, 1, 1, nil, "browse", "masked-people", "hidden", "lagged")
		if err != nil {
			return err
		}
		td, err := adm.ListTopics(ctx, "browse", "masked-people", "hidden", "lagged")
		if err != nil {
			return err
		}
		return td.Error()
	})
	var recs []*kgo.Record
	for i := range 20 {
		r := &kgo.Record{Topic: "browse", Key: []byte(fmt.Sprintf("k-%d", i)), Value: []byte(fmt.Sprintf("v-%d", i)),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte(fmt.Sprintf("id-%d", i))}}}
		if i == 13 {
			r.Headers[0].Value = []byte("needle-42")
		}
		recs = append(recs, r)
	}
	for i := range 3 {
		recs = append(recs, &kgo.Record{Topic: "masked-people", Value: []byte(fmt.Sprintf(`{"name":"n%d","ssn":"secret-%d"}`, i, i))})
	}
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "lagged", Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "lagged", Partition: 0, At: 4, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "lagging-group", offsets); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, cn.console)
	// Not logged in: the login page; a wrong password is refused.
	if code, body := b.get("/topics"); code != 200 || !strings.Contains(body, `id="login"`) {
		t.Fatalf("GET /topics without a login: %d, no login form", code)
	}
	if code, body := b.login("admin", "wrong"); code != http.StatusUnauthorized || !strings.Contains(body, `id="login-error"`) {
		t.Fatalf("a wrong password: %d", code)
	}
	if code, body := b.get("/"); code != 200 || !strings.Contains(body, `id="login"`) {
		t.Fatal("a wrong password made a session")
	}
	if code, body := b.login("admin", "admin-secret"); code != 200 || !strings.Contains(body, `id="gateways"`) || !strings.Contains(body, `data-node="1"`) {
		t.Fatalf("login as admin: %d\n%s", code, body)
	}

	// The topics' list, searched.
	code, body := b.get("/topics?q=brow")
	if code != 200 || rows(body, `data-topic="browse"`) != 1 || rows(body, `data-topic=`) != 1 || !strings.Contains(body, `id="topics-total">1<`) {
		t.Fatalf("topics holding brow: %d\n%s", code, body)
	}

	// Browse, searching a header's value.
	code, body = b.get("/topics/browse/messages?partition=0&from=earliest&q=needle-42")
	if code != 200 || rows(body, `class="record"`) != 1 || !strings.Contains(body, `data-offset="13"`) || !strings.Contains(body, ">v-13<") {
		t.Fatalf("the record whose header holds needle-42: %d\n%s", code, body)
	}
	code, body = b.get("/topics/browse/messages?partition=0&from=offset&offset=5&max=3")
	if code != 200 || rows(body, `class="record"`) != 3 || !strings.Contains(body, `data-offset="5"`) || !strings.Contains(body, `data-offset="7"`) || strings.Contains(body, `data-offset="8"`) {
		t.Fatalf("3 records from offset 5: %d\n%s", code, body)
	}
	// Exports, as JSON.
	code, body = b.get("/topics/browse/messages?partition=0&from=offset&offset=5&max=2&format=json")
	if code != 200 || !strings.Contains(body, `"offset": 5`) || !strings.Contains(body, `"value": "v-5"`) {
		t.Fatalf("the JSON export: %d\n%s", code, body)
	}

	// Masks: not shown, not found, not exported.
	code, body = b.get("/topics/masked-people/messages?partition=0&from=earliest")
	if code != 200 || rows(body, `class="record"`) != 3 || strings.Contains(body, "secret-") || !strings.Contains(body, "****") {
		t.Fatalf("a masked topic: %d\n%s", code, body)
	}
	if _, body = b.get("/topics/masked-people/messages?partition=0&from=earliest&q=secret-1"); rows(body, `class="record"`) != 0 {
		t.Fatal("a search found a masked field")
	}
	if _, body = b.get("/topics/masked-people/messages?partition=0&from=earliest&format=csv"); strings.Contains(body, "secret-") {
		t.Fatal("an export holds a masked field")
	}

	// A group's lag, then a reset to an offset.
	code, body = b.get("/groups/lagging-group")
	if code != 200 || !strings.Contains(body, `id="group-type">classic<`) || !strings.Contains(body, `id="group-lag">6<`) {
		t.Fatalf("the group's page: %d\n%s", code, body)
	}
	token := b.csrf("/groups/lagging-group")
	code, body = b.post("/groups/lagging-group/reset", url.Values{"csrf": {token}, "topic": {"lagged"}, "to": {"offset"}, "offset": {"8"}})
	if code != 200 || !strings.Contains(body, `id="reset-result"`) || !strings.Contains(body, `id="group-lag">2<`) {
		t.Fatalf("the reset: %d\n%s", code, body)
	}
	fetched, err := adm.FetchOffsets(ctx, "lagging-group")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := fetched.Lookup("lagged", 0); o.At != 8 {
		t.Fatalf("committed after the reset: %d, want 8", o.At)
	}
	// A change without the form's token is refused.
	if code, _ := b.post("/groups/lagging-group/reset", url.Values{"topic": {"lagged"}, "to": {"earliest"}}); code != http.StatusForbidden {
		t.Fatalf("a reset without the token: %d", code)
	}

	// bob may not describe hidden: the console does not show it.
	if _, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("hidden").Deny("User:bob").Operations(kadm.OpDescribe, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)); err != nil {
		t.Fatal(err)
	}
	bob := newBrowser(t, cn.console)
	if code, _ := bob.login("bob", "bob-secret"); code != 200 {
		t.Fatalf("bob's login: %d", code)
	}
	waitFor(t, "hidden hidden from bob", func() error {
		_, body := bob.get("/topics?q=hidden")
		if rows(body, `data-topic="hidden"`) != 0 {
			return fmt.Errorf("bob sees hidden")
		}
		return nil
	})
	if _, body := bob.get("/topics?q=browse"); rows(body, `data-topic="browse"`) != 1 {
		t.Fatal("bob does not see browse")
	}
	if code, _ := bob.get("/topics/hidden/messages?partition=0&from=earliest"); code == 200 {
		t.Fatal("bob browses hidden")
	}
}

// Read-only, without logins: the pages are everyone's, changes are
// refused.
func TestConsoleReadOnlyWithoutLogins(t *testing.T) {
	cn := startNode(t, func(c *node.Config) {
		kafka := strings.Split(c.Listeners, ",")[0]
		c.Listeners, c.SASLUsersFile, c.Authorizer, c.ConsoleReadOnly = kafka, "", false, true
		c.Rack = "zone-a"
	})
	b := newBrowser(t, cn.console)
	waitFor(t, "the cluster page", func() error {
		code, body := b.get("/")
		if code != 200 || !strings.Contains(body, `id="gateways"`) || !strings.Contains(body, "<td>zone-a</td>") {
			return fmt.Errorf("%d: the gateway and its rack not shown", code)
		}
		return nil
	})
	if _, body := b.get("/topics"); strings.Contains(body, `id="create-topic"`) {
		t.Fatal("a read-only console offers to create topics")
	}
	if code, _ := b.post("/topics", url.Values{"name": {"x"}}); code != http.StatusForbidden {
		t.Fatalf("a change on a read-only console: %d", code)
	}
}

// The console's changes, each checked with the AdminClient or the
// registry: topics created, altered, grown and deleted; schemas
// registered, compared and deleted; users and ACLs; a link promoted; and
// a streams group shown with its tasks.
func TestConsoleChanges(t *testing.T) {
	registryPort := freePort(t)
	cn := startNode(t, func(c *node.Config) {
		c.RegistryListeners = "http://127.0.0.1:" + strconv.Itoa(registryPort)
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(cn.kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := newBrowser(t, cn.console)
	waitFor(t, "admin's login", func() error {
		if code, _ := b.login("admin", "admin-secret"); code != 200 {
			return fmt.Errorf("%d", code)
		}
		return nil
	})
	form := func(page string, kv ...string) url.Values {
		v := url.Values{"csrf": {b.csrf(page)}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}

	// Topics.
	if code, body := b.post("/topics", form("/topics", "name", "made-here", "partitions", "2", "configs", "cleanup.policy=compact\nretention.ms=60000")); code != 200 || !strings.Contains(body, "Topic made-here created") {
		t.Fatalf("create a topic: %d\n%s", code, body)
	}
	configOf := func(key string) string {
		rc, err := adm.DescribeTopicConfigs(ctx, "made-here")
		if err != nil || len(rc) != 1 {
			t.Fatalf("describe made-here: %v", err)
		}
		for _, c := range rc[0].Configs {
			if c.Key == key && c.Value != nil {
				return *c.Value
			}
		}
		return ""
	}
	if configOf("cleanup.policy") != "compact" || configOf("retention.ms") != "60000" {
		t.Fatalf("made-here's configs: %s %s", configOf("cleanup.policy"), configOf("retention.ms"))
	}
	if code, body := b.post("/topics/made-here/configs", form("/topics/made-here", "key", "retention.ms", "value", "120000")); code != 200 || configOf("retention.ms") != "120000" {
		t.Fatalf("alter retention.ms: %d %s\n%s", code, configOf("retention.ms"), body)
	}
	if code, _ := b.post("/topics/made-here/partitions", form("/topics/made-here", "count", "4")); code != 200 {
		t.Fatalf("grow made-here: %d", code)
	}
	if td, err := adm.ListTopics(ctx, "made-here"); err != nil || len(td["made-here"].Partitions) != 4 {
		t.Fatalf("made-here after growing: %v %v", td, err)
	}
	if code, body := b.post("/topics/made-here/delete", form("/topics/made-here")); code != 200 || !strings.Contains(body, "deleted") {
		t.Fatalf("delete made-here: %d", code)
	}
	waitFor(t, "made-here gone", func() error {
		td, err := adm.ListTopics(ctx, "made-here")
		if err != nil {
			return err
		}
		if d, ok := td["made-here"]; ok && d.Err == nil {
			return fmt.Errorf("still there")
		}
		return nil
	})

	// Schemas: two versions, their diff, a delete.
	v1 := `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}`
	v2 := `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"note","type":"string","default":""}]}`
	for _, sc := range []string{v1, v2} {
		waitFor(t, "a schema registered", func() error {
			code, body := b.post("/schemas", form("/schemas", "subject", "orders-value", "type", "AVRO", "schema", sc))
			if code != 200 || !strings.Contains(body, `id="register-result"`) {
				return fmt.Errorf("%d: %.300s", code, body)
			}
			return nil
		})
	}
	waitFor(t, "the subject's two versions", func() error {
		code, body := b.get("/schemas/orders-value")
		if code != 200 || rows(body, `data-version=`) != 2 || !addedNote.MatchString(body) || strings.Contains(body, `class="del"`) {
			return fmt.Errorf("%d: %s", code, body[strings.Index(body, "<main>"):])
		}
		return nil
	})
	if code, _ := b.post("/schemas/orders-value/config", form("/schemas/orders-value", "compatibility", "FULL")); code != 200 {
		t.Fatalf("set orders-value's compatibility: %d", code)
	}
	waitFor(t, "orders-value FULL", func() error {
		if _, body := b.get("/schemas/orders-value"); !strings.Contains(body, "Compatibility: FULL ·") {
			return fmt.Errorf("not FULL")
		}
		return nil
	})
	if code, _ := b.post("/schemas/orders-value/delete", form("/schemas/orders-value")); code != 200 {
		t.Fatalf("delete orders-value: %d", code)
	}
	waitFor(t, "orders-value deleted", func() error {
		if _, body := b.get("/schemas"); strings.Contains(body, `data-subject="orders-value"`) {
			return fmt.Errorf("still listed")
		}
		return nil
	})

	// Users and ACLs.
	if code, body := b.post("/security/users", form("/security", "user", "carol", "password", "carol-secret", "mechanism", "SCRAM-SHA-256")); code != 200 || !strings.Contains(body, `data-user="carol"`) {
		t.Fatalf("create carol: %d\n%s", code, body)
	}
	if us, err := adm.DescribeUserSCRAMs(ctx, "carol"); err != nil || len(us["carol"].CredInfos) != 1 {
		t.Fatalf("carol's credentials: %v %v", us, err)
	}
	carol := newBrowser(t, cn.console)
	if code, _ := carol.login("carol", "carol-secret"); code != 200 {
		t.Fatalf("carol's login (SCRAM-SHA-256 only): %d", code)
	}
	if code, body := b.post("/security/acls", form("/security", "principal", "carol", "type", "TOPIC", "name", "carols", "pattern", "PREFIXED", "operation", "READ", "permission", "ALLOW")); code != 200 || !strings.Contains(body, "User:carol") {
		t.Fatalf("create carol's ACL: %d\n%s", code, body)
	}
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow("User:carol").AllowHosts().Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed))
	if err != nil || len(described) != 1 || len(described[0].Described) != 1 || described[0].Described[0].Name != "carols" {
		t.Fatalf("carol's ACL: %+v %v", described, err)
	}
	if code, _ := b.post("/security/acls/delete", form("/security", "principal", "User:carol", "host", "*", "type", "TOPIC", "name", "carols", "pattern", "PREFIXED", "operation", "READ", "permission", "ALLOW")); code != 200 {
		t.Fatalf("delete carol's ACL: %d", code)
	}
	if described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow("User:carol").AllowHosts().Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed)); err != nil || len(described[0].Described) != 0 {
		t.Fatalf("carol's ACL after deleting it: %+v %v", described, err)
	}
	if code, _ := b.post("/security/users/delete", form("/security", "user", "carol")); code != 200 {
		t.Fatalf("delete carol: %d", code)
	}
	if us, _ := adm.DescribeUserSCRAMs(ctx, "carol"); len(us["carol"].CredInfos) != 0 {
		t.Fatalf("carol after deleting her: %+v", us)
	}

	// A quota, set and removed.
	if code, body := b.post("/security/quotas", form("/security", "entity", "client-id", "name", "noisy", "key", "producer_byte_rate", "value", "1048576")); code != 200 || !strings.Contains(body, "producer_byte_rate=1048576") {
		t.Fatalf("set a quota: %d\n%s", code, body)
	}
	quotas, err := adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil || len(quotas) != 1 || quotas[0].Values[0].Value != 1048576 {
		t.Fatalf("the quotas: %+v %v", quotas, err)
	}
	if code, _ := b.post("/security/quotas", form("/security", "entity", "client-id", "name", "noisy", "key", "producer_byte_rate", "value", "")); code != 200 {
		t.Fatalf("remove a quota: %d", code)
	}
	if quotas, err := adm.DescribeClientQuotas(ctx, false, nil); err != nil || len(quotas) != 0 {
		t.Fatalf("the quotas after removing it: %+v %v", quotas, err)
	}

	// A group deleted.
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "streams-in", Partition: 0, At: 0, LeaderEpoch: -1})
	waitFor(t, "streams-in", func() error {
		_, err := adm.CreateTopics(ctx, 2, 1, nil, "streams-in")
		if err != nil {
			return err
		}
		_, err = adm.CommitOffsets(ctx, "to-delete", offsets)
		return err
	})
	if code, _ := b.post("/groups/to-delete/delete", form("/groups/to-delete")); code != 200 {
		t.Fatalf("delete a group: %d", code)
	}
	if listed, err := adm.ListGroups(ctx); err != nil || listed["to-delete"].Group != "" {
		t.Fatalf("to-delete after deleting it: %v %v", listed, err)
	}

	// A link (its source unreachable here): listed, and a promotion
	// asked for lands in its config.
	req, _ := http.NewRequest(http.MethodPost, cn.console+"/api/links", strings.NewReader(`{"name":"from-old","source":{"bootstrap":["127.0.0.1:1"]},"topics":"old-.*"}`))
	req.SetBasicAuth("admin", "admin-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("create a link: %v %v", resp, err)
	}
	resp.Body.Close()
	if code, body := b.get("/links"); code != 200 || !strings.Contains(body, `data-link="from-old"`) {
		t.Fatalf("the links page: %d\n%s", code, body)
	}
	if code, body := b.post("/links/from-old/promote", form("/links", "topic", "old-orders")); code != 200 || !strings.Contains(body, `id="link-result"`) {
		t.Fatalf("promote: %d\n%s", code, body)
	}
	req, _ = http.NewRequest(http.MethodGet, cn.console+"/api/links/from-old", nil)
	req.SetBasicAuth("admin", "admin-secret")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"old-orders"`) {
		t.Fatalf("the link after the promotion asked: %s", body)
	}

	// A streams group: its kind and its member's tasks.
	hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis, hb.ProcessID = "app-1", "member-AAAAAAAAAAAAAAAAAA", 0, 30000, ptrTo("process-1")
	hb.ActiveTasks, hb.StandbyTasks, hb.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	sub.SubtopologyID, sub.SourceTopics = "0", []string{"streams-in"}
	top.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{sub}
	hb.Topology = &top
	waitFor(t, "a streams member with its tasks", func() error {
		kr, err := cl.SeedBrokers()[0].Request(ctx, hb)
		if err != nil {
			return err
		}
		resp := kr.(*kmsg.StreamsGroupHeartbeatResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("%w: %s", err, deref(resp.ErrorMessage))
		}
		hb.MemberID, hb.MemberEpoch, hb.Topology = resp.MemberID, resp.MemberEpoch, nil
		if resp.ActiveTasks != nil {
			hb.ActiveTasks = resp.ActiveTasks
		}
		if len(hb.ActiveTasks) == 0 {
			return fmt.Errorf("no task yet")
		}
		return nil
	})
	code, page := b.get("/groups/app-1")
	if code != 200 || !strings.Contains(page, `id="group-type">streams<`) || !strings.Contains(page, "active 0 [0 1]") {
		t.Fatalf("the streams group's page: %d\n%s", code, page)
	}
}

func ptrTo[T any](v T) *T { return &v }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
