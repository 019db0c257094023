package link

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

func testStore() (*Store, *filerfstest.Files) {
	files := filerfstest.New()
	return &Store{Files: files, Sealer: user.NewSealer([]byte("a test cluster's secret"))}, files
}

// The API creates, lists, pauses, promotes and deletes links; the source's
// password is kept sealed in the filer and never shown.
func TestAPI(t *testing.T) {
	store, files := testStore()
	srv := httptest.NewServer(Handler(store, HandlerOptions{}))
	defer srv.Close()
	call := func(method, path string, body any, want int) map[string]any {
		t.Helper()
		var r *bytes.Reader
		if body != nil {
			data, _ := json.Marshal(body)
			r = bytes.NewReader(data)
		} else {
			r = bytes.NewReader(nil)
		}
		req, _ := http.NewRequest(method, srv.URL+path, r)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out any
		json.NewDecoder(resp.Body).Decode(&out) //nolint:errcheck // checked through out
		if resp.StatusCode != want {
			t.Fatalf("%s %s: HTTP %d (%v), want %d", method, path, resp.StatusCode, out, want)
		}
		if m, ok := out.(map[string]any); ok {
			return m
		}
		return map[string]any{"list": out}
	}
	cfg := Config{Name: "from-kafka", Topics: "orders|payments", Groups: ".*",
		Source: Source{Bootstrap: []string{"kafka:9092"}, SecurityProtocol: "SASL_SSL", SASLMechanism: "SCRAM-SHA-512", SASLUser: "mirror", SASLPassword: "s3cret-pass"}}
	call("POST", "/api/links", cfg, http.StatusOK)
	call("POST", "/api/links", cfg, http.StatusConflict)
	bad := cfg
	bad.Name, bad.Topics = "bad", "("
	call("POST", "/api/links", bad, http.StatusBadRequest)
	bad.Name, bad.Topics = "../x", "a"
	call("POST", "/api/links", bad, http.StatusBadRequest)

	raw, err := files.ReadFile(context.Background(), Dir, "from-kafka.json")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("s3cret-pass")) {
		t.Fatalf("the filer holds the source's password in the clear: %s", raw)
	}
	c, _, err := store.Get(context.Background(), "from-kafka")
	if err != nil {
		t.Fatal(err)
	}
	if pw, err := store.password(c); err != nil || pw != "s3cret-pass" {
		t.Fatalf("the sealed password opens to %q, %v", pw, err)
	}
	listed := call("GET", "/api/links", nil, http.StatusOK)
	if data, _ := json.Marshal(listed); bytes.Contains(data, []byte("s3cret")) || bytes.Contains(data, []byte("sealedPassword")) {
		t.Fatalf("the list shows the password: %s", data)
	}
	call("POST", "/api/links/from-kafka/pause", nil, http.StatusOK)
	if c, _, _ := store.Get(context.Background(), "from-kafka"); !c.Paused {
		t.Fatal("not paused")
	}
	call("POST", "/api/links/from-kafka/resume", nil, http.StatusOK)
	call("POST", "/api/links/from-kafka/promote?topic=orders", nil, http.StatusOK)
	call("POST", "/api/links/from-kafka/promote?force=true", nil, http.StatusOK)
	c, _, _ = store.Get(context.Background(), "from-kafka")
	if c.Paused || !c.Promote["*"].Force || c.Promote["orders"].Force || c.Promote["orders"].At == 0 {
		t.Fatalf("after resume and promote: %+v", c)
	}
	call("POST", "/api/links/nope/pause", nil, http.StatusNotFound)
	call("POST", "/api/links/from-kafka/explode", nil, http.StatusNotFound)
	call("DELETE", "/api/links/from-kafka", nil, http.StatusOK)
	call("GET", "/api/links/from-kafka", nil, http.StatusNotFound)
}

// With logins, the API asks for one and decides by the cluster's ACLs:
// reads need DESCRIBE, changes ALTER.
func TestAPILogin(t *testing.T) {
	store, _ := testStore()
	srv := httptest.NewServer(Handler(store, HandlerOptions{
		Authenticate: func(_ context.Context, u, p string) (bool, error) { return p == u+"-pw", nil },
		Authorize: func(principal, _ string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, _ string) bool {
			return typ == kmsg.ACLResourceTypeCluster && (principal == "User:admin" || op == kmsg.ACLOperationDescribe)
		},
	}))
	defer srv.Close()
	do := func(method, user, password string) int {
		req, _ := http.NewRequest(method, srv.URL+"/api/links", strings.NewReader(`{"name":"l","source":{"bootstrap":["k:9092"]},"topics":"t"}`))
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		method, user, password string
		want                   int
	}{
		{"GET", "", "", http.StatusUnauthorized},
		{"GET", "reader", "wrong", http.StatusUnauthorized},
		{"GET", "reader", "reader-pw", http.StatusOK},
		{"POST", "reader", "reader-pw", http.StatusForbidden},
		{"POST", "admin", "admin-pw", http.StatusOK},
	} {
		if got := do(c.method, c.user, c.password); got != c.want {
			t.Errorf("%s as %q: HTTP %d, want %d", c.method, c.user, got, c.want)
		}
	}
}

// A fetched record set is cut into its whole batches: the last, cut short
// by the fetch's size, is left for the next fetch.
func TestSplitBatches(t *testing.T) {
	var w record.Builder
	var data []byte
	for i, n := range []int{3, 1, 2} {
		w.Reset(int64(10 * (i + 1)))
		for j := 0; j < n; j++ {
			w.Add(&record.Record{Value: []byte("v")})
		}
		data = w.AppendTo(data)
	}
	batches, end, err := splitBatches(data[:len(data)-5])
	if err != nil || len(batches) != 2 || end != 21 {
		t.Fatalf("%d batches to %d, %v", len(batches), end, err)
	}
	batches, end, err = splitBatches(data)
	if err != nil || len(batches) != 3 || end != 32 {
		t.Fatalf("%d batches to %d, %v", len(batches), end, err)
	}
	old := append([]byte(nil), data...)
	old[16] = 1
	if _, _, err := splitBatches(old); err == nil {
		t.Fatal("a batch of magic 1 was taken")
	}
}
