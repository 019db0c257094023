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
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/node"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage/storagetest"
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
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
	})
	b := newBrowser(t, cn.console)
	waitFor(t, "the cluster page", func() error {
		code, body := b.get("/")
		if code != 200 || !strings.Contains(body, `id="gateways"`) {
			return fmt.Errorf("%d", code)
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
