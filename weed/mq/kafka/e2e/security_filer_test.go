package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
)

// An outsider who can reach the filer's HTTP port (the package's cluster
// has no JWT on filer reads, as most clusters) reads every file under the
// gateways' state directory, with SASL and the authorizer on and users,
// a delegation token and ACLs made by the suite. No string found there
// logs in as the gateways' own user (a super user) or as the
// administrator, and no file holds SCRAM credentials in the clear.
func TestFilerHoldsNoCredential(t *testing.T) {
	// A user and a token of its own, so that there is something to find.
	m := secureModes[1] // SASL_PLAINTEXT, as the administrator
	adm, err := kgo.NewClient(m.franzOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	up := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations = "filer-reader-victim", 2, 4096
	u.Salt = []byte("0123456789abcdef")
	u.SaltedPassword = make([]byte, 64)
	up.Upsertions = append(up.Upsertions, u)
	if _, err := up.RequestWith(ctxT(t), adm); err != nil {
		t.Fatal(err)
	}
	tok := kmsg.NewPtrCreateDelegationTokenRequest()
	tok.MaxLifetimeMillis = -1
	if resp, err := tok.RequestWith(ctxT(t), adm); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("create a delegation token: %v %+v", err, resp)
	}

	files := readFilerTree(t, "http://127.0.0.1:"+strconv.Itoa(cluster.filerPort), "/etc/kafka-gateway")
	t.Logf("read %d files under /etc/kafka-gateway over the filer's HTTP API", len(files))
	candidates := map[string]bool{}
	token := regexp.MustCompile(`[A-Za-z0-9+/=_.:-]{8,200}`)
	for path, data := range files {
		if strings.Contains(string(data), `"storedKey"`) || strings.Contains(string(data), `"serverKey"`) {
			t.Errorf("%s holds SCRAM credentials in the clear", path)
		}
		if strings.HasSuffix(path, "/gateway.secret") {
			t.Errorf("%s is there", path)
		}
		if !utf8.Valid(data) {
			continue
		}
		if s := strings.TrimSpace(string(data)); len(s) > 0 && len(s) <= 256 {
			candidates[s] = true
		}
		var v any
		if json.Unmarshal(data, &v) == nil {
			jsonStrings(v, func(s string) {
				if len(s) >= 8 && len(s) <= 256 {
					candidates[s] = true
				}
			})
			continue
		}
		for _, s := range token.FindAllString(string(data), 200) {
			candidates[s] = true
		}
	}
	// The logins are checked to work: the administrator's password logs
	// in (it is nowhere in the filer), another does not.
	login := func(user, password string) bool {
		cl, err := kgo.NewClient(kgo.SeedBrokers(m.addr()), kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism()),
			kgo.RequestRetries(0), kgo.DialTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
		return err == nil
	}
	if !login(adminUser, adminPassword) || login(adminUser, adminPassword+"x") {
		t.Fatal("the login check does not tell a password from another")
	}
	list := make(chan string)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pw := range list {
				for _, user := range []string{protocol.GatewayUser, adminUser, "filer-reader-victim"} {
					if login(user, pw) {
						mu.Lock()
						t.Errorf("%q, read from the filer, logs in as %s", pw, user)
						mu.Unlock()
					}
				}
			}
		}()
	}
	for pw := range candidates {
		list <- pw
	}
	close(list)
	wg.Wait()
	t.Logf("%d strings from the filer tried as passwords of %s, %s and a user: none logs in", len(candidates), protocol.GatewayUser, adminUser)
}

// jsonStrings calls fn with every string of a decoded JSON value, keys
// too.
func jsonStrings(v any, fn func(string)) {
	switch v := v.(type) {
	case string:
		fn(v)
	case []any:
		for _, e := range v {
			jsonStrings(e, fn)
		}
	case map[string]any:
		for k, e := range v {
			fn(k)
			jsonStrings(e, fn)
		}
	}
}

// readFilerTree reads every file under dir through the filer's HTTP API
// at base, as anyone who reaches the port can; files of more than 1 MiB
// (the write-ahead log's) are left out.
func readFilerTree(t *testing.T, base, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	get := func(u string, accept string) ([]byte, int) {
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return body, resp.StatusCode
	}
	var walk func(dir string)
	walk = func(dir string) {
		last := ""
		for {
			body, code := get(base+dir+"/?limit=1000&lastFileName="+url.QueryEscape(last), "application/json")
			if code != http.StatusOK {
				t.Fatalf("list %s: %d %s", dir, code, body)
			}
			var listing struct {
				Entries []struct {
					FullPath string
					Mode     uint32
					FileSize int64
				}
				LastFileName          string
				ShouldDisplayLoadMore bool
			}
			if err := json.Unmarshal(body, &listing); err != nil {
				t.Fatalf("list %s: %v", dir, err)
			}
			for _, e := range listing.Entries {
				switch {
				case os.FileMode(e.Mode).IsDir():
					walk(e.FullPath)
				case e.FileSize <= 1<<20:
					data, code := get(base+e.FullPath, "")
					if code != http.StatusOK {
						t.Fatalf("read %s: %d", e.FullPath, code)
					}
					out[e.FullPath] = data
				}
			}
			if !listing.ShouldDisplayLoadMore || listing.LastFileName == "" {
				return
			}
			last = listing.LastFileName
		}
	}
	walk(dir)
	if len(out) == 0 {
		t.Fatalf("no file under %s", dir)
	}
	return out
}
