package node

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/audit"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage/storagetest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/waitfor"
)

// The audit log of a gateway over the in-memory storage: each audited
// action, performed once, is one event in the audit topic and in the
// audit file, with its actor, its resource and its outcome; a denied
// request is audited as denied; the gateways' own logins are not.
func TestAuditLog(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte("admin:admin-secret\nbob:bob-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "audit.log")
	plain, saslAddr := "127.0.0.1:"+strconv.Itoa(freePort(t)), "127.0.0.1:"+strconv.Itoa(freePort(t))
	registry, console := "http://127.0.0.1:"+strconv.Itoa(freePort(t)), "http://127.0.0.1:"+strconv.Itoa(freePort(t))
	cfg := Defaults()
	cfg.Storage = storagetest.NewStorage()
	cfg.IP, cfg.NodeID, cfg.DefaultPartitions, cfg.GroupInitialDelayMs = "127.0.0.1", 1, 1, 50
	cfg.Listeners = "PLAINTEXT://" + plain + ",SASL_PLAINTEXT://" + saslAddr
	cfg.SASLMechanisms, cfg.SASLUsersFile = "SCRAM-SHA-512", users
	cfg.Authorizer, cfg.SuperUsers, cfg.AllowIfNoACL = true, "User:ANONYMOUS;User:admin", true
	cfg.RegistryListeners, cfg.ConsoleListeners, cfg.ConsoleReadOnly = registry, console, false
	cfg.AuditEnabled, cfg.AuditFile = true, file
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(plain))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	eventuallyT(t, "the gateway serves", func() error {
		_, err := adm.CreateTopic(ctx, 1, 1, nil, "audited")
		return err
	})

	t.Logf("%v serving", time.Now().Format("15:04:05.000"))
	// Administrative changes, as ANONYMOUS (a super user on PLAINTEXT).
	value := "60000"
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: &value}}, "audited"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreatePartitions(ctx, 1, "audited"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("secret").Deny("User:bob").DenyHosts().Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral)); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "carol-secret"}}); err != nil {
		t.Fatal(err)
	}
	rate := 1024.0
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: ptr("noisy")}},
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: rate}}}}); err != nil {
		t.Fatal(err)
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "audited", Partition: 0, At: 0, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "doomed", offsets); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.DeleteGroup(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "short-lived"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.DeleteTopic(ctx, "short-lived"); err != nil {
		t.Fatal(err)
	}

	t.Logf("%v changes made", time.Now().Format("15:04:05.000"))
	// bob logs in, and is denied a topic; a wrong password fails.
	bob, err := kgo.NewClient(kgo.SeedBrokers(saslAddr), kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "secret", Value: []byte("x")}).FirstErr(); err == nil {
		t.Fatal("bob wrote to secret")
	}
	wrong, err := kgo.NewClient(kgo.SeedBrokers(saslAddr), kgo.SASL(scram.Auth{User: "bob", Pass: "not-bob-secret"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	if err := wrong.Ping(ctx); err == nil {
		t.Fatal("a wrong password logged in")
	}
	wrong.Close()

	t.Logf("%v logins", time.Now().Format("15:04:05.000"))
	// A registry write, and a console login and change.
	eventuallyT(t, "the registry takes a schema", func() error {
		resp, err := http.Post(registry+"/subjects/audited-value/versions", "application/vnd.schemaregistry.v1+json",
			strings.NewReader(`{"schema":"{\"type\":\"string\"}"}`))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	})
	jarClient := &http.Client{Jar: newJar(), Timeout: 30 * time.Second}
	resp, err := jarClient.PostForm(console+"/login", url.Values{"user": {"admin"}, "password": {"admin-secret"}})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("console login: %v %v", resp, err)
	}
	resp.Body.Close()

	t.Logf("%v registry and console", time.Now().Format("15:04:05.000"))
	// Every event, in the audit topic and the file.
	type want struct {
		class     int
		operation string
		resource  string
		principal string
		failed    bool
	}
	wants := []want{
		{audit.ClassAPIActivity, "CreateTopics", "audited", "ANONYMOUS", false},
		{audit.ClassAPIActivity, "IncrementalAlterConfigs", "audited", "ANONYMOUS", false},
		{audit.ClassAPIActivity, "CreatePartitions", "audited", "ANONYMOUS", false},
		{audit.ClassAPIActivity, "CreateACLs", "User:bob DENY ALL from * on TOPIC LITERAL:secret", "ANONYMOUS", false},
		{audit.ClassAPIActivity, "AlterUserSCRAMCredentials", "carol", "ANONYMOUS", false},
		{audit.ClassAPIActivity, "AlterClientQuotas", "client-id=noisy", "ANONYMOUS", false},
		{audit.ClassAPIActivity, "DeleteGroups", "doomed", "ANONYMOUS", false},
		{audit.ClassAPIActivity, "DeleteTopics", "short-lived", "ANONYMOUS", false},
		{audit.ClassAuthentication, "Login", "", "bob", false},
		{audit.ClassAuthentication, "Login", "", "", true},
		{audit.ClassAuthorizeSession, "Metadata", "secret", "bob", true}, // the producer asks for its metadata first
		{audit.ClassAPIActivity, "POST /subjects/audited-value/versions", "audited-value", "ANONYMOUS", false},
		{audit.ClassAuthentication, "Login", "", "admin", false},
	}
	check := func(events []audit.Event) error {
		for _, w := range wants {
			found := false
			for _, e := range events {
				if e.ClassUID != w.class || e.API == nil || e.API.Operation != w.operation || e.Actor.User.Name != w.principal || (e.StatusID == 2) != w.failed {
					continue
				}
				if w.resource == "" || (len(e.Resources) > 0 && e.Resources[0].Name == w.resource) {
					found = true
					break
				}
			}
			if !found {
				return fmt.Errorf("no event %+v among %d", w, len(events))
			}
		}
		for _, e := range events {
			if e.Actor.User.Name == "__gateway" {
				return fmt.Errorf("the gateways' own user audited: %+v", e)
			}
			if e.Unmapped.NodeID != 1 || e.Time == 0 || e.TypeUID != e.ClassUID*100+e.ActivityID {
				return fmt.Errorf("an event without its node, time or type: %+v", e)
			}
		}
		return nil
	}
	eventuallyT(t, "every event in the audit topic", func() error {
		events, err := readAuditTopic(ctx, plain, cfg.AuditTopic)
		if err != nil {
			return err
		}
		return check(events)
	})
	eventuallyT(t, "every event in the audit file", func() error {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		var events []audit.Event
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var e audit.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				return fmt.Errorf("a line of the file: %v", err)
			}
			events = append(events, e)
		}
		return check(events)
	})
}

func readAuditTopic(ctx context.Context, addr, topic string) ([]audit.Event, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	end := ends[topic][0].Offset
	var events []audit.Event
	var read int64
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for read < end {
		fs := cl.PollFetches(pctx)
		if pctx.Err() != nil {
			return nil, fmt.Errorf("read %d of %d", read, end)
		}
		for _, r := range fs.Records() {
			var e audit.Event
			if err := json.Unmarshal(r.Value, &e); err != nil {
				return nil, err
			}
			events = append(events, e)
			read = r.Offset + 1
		}
	}
	return events, nil
}

func eventuallyT(t *testing.T, what string, cond func() error) {
	t.Helper()
	waitfor.Until(t, 30*time.Second, what, cond)
}

func newJar() http.CookieJar {
	jar, _ := cookiejar.New(nil)
	return jar
}
