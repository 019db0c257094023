package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
)

// TestTwoClustersOneFiler: two Kafka clusters (-cluster.name alpha and
// beta) beside the package's default one, on the same SeaweedFS. A topic
// of the same name in each holds each cluster's own records; a user and
// an ACL made in one are not in the other; neither lists the other's
// topics; their topics are in SeaweedMQ namespaces of their own. A
// gateway restarted with its masters spelt another way reports the same
// cluster id.
func TestTwoClustersOneFiler(t *testing.T) {
	t.Parallel() // on the shared cluster, touching only its own clusters: beside the others at the end
	start := func(name, master string, port int) *gatewayProc {
		g, err := startNamedGateway("cluster-"+name, master, port, "-cluster.name="+name)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	alpha, beta := start("alpha", cluster.master, 0), start("beta", cluster.master, 0)
	defer func() { alpha.stop(); beta.stop() }()
	client := func(g *gatewayProc, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(g.addr)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	topic := newTopic(t)
	for _, g := range []*gatewayProc{alpha, beta} {
		if _, err := kadm.NewClient(client(g)).CreateTopic(ctxT(t), 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	for name, g := range map[string]*gatewayProc{"alpha": alpha, "beta": beta} {
		p := client(g, kgo.DefaultProduceTopic(topic))
		for i := range 20 {
			produceSync(t, p, &kgo.Record{Value: []byte(fmt.Sprintf("%s-%d", name, i))})
		}
	}
	for name, g := range map[string]*gatewayProc{"alpha": alpha, "beta": beta} {
		got := consumeN(t, topic, 20, kgo.SeedBrokers(g.addr))
		for i, r := range got {
			if want := fmt.Sprintf("%s-%d", name, i); string(r.Value) != want || r.Offset != int64(i) {
				t.Fatalf("%s: offset %d holds %q, want %q at %d", name, r.Offset, r.Value, want, i)
			}
		}
		if end := listEndVia(t, client(g), topic, 0); end != 20 {
			t.Errorf("%s: the topic ends at %d, want 20 (its own records only)", name, end)
		}
	}
	// The default cluster does not know the topic; alpha does not list
	// the default cluster's topics.
	if listed, err := kadm.NewClient(client(gw)).ListTopics(ctxT(t), topic); err != nil || listed.Has(topic) {
		t.Errorf("the default cluster lists %s: %v", topic, err)
	}
	defaultTopic := newTopic(t) + "-default"
	createTopic(t, defaultTopic, 1, nil)
	if listed, err := kadm.NewClient(client(alpha)).ListTopics(ctxT(t)); err != nil || listed.Has(defaultTopic) {
		t.Errorf("alpha lists the default cluster's %s: %v", defaultTopic, err)
	}
	withFilerAt(t, cluster.filerPort, func(ctx context.Context, fc filer_pb.SeaweedFilerClient) error {
		for _, ns := range []string{"kafka_alpha", "kafka_beta"} {
			if _, err := filer_pb.LookupEntry(ctx, fc, &filer_pb.LookupDirectoryEntryRequest{Directory: "/topics/" + ns, Name: topic}); err != nil {
				t.Errorf("/topics/%s/%s: %v", ns, topic, err)
			}
		}
		return nil
	})

	// A user made in alpha logs in to alpha only; an ACL made in alpha
	// is not beta's.
	adminClient := func(g *gatewayProc) *kgo.Client {
		return client(g, kgo.SeedBrokers(g.secure["SASL_PLAINTEXT"]), kgo.SASL(plain.Auth{User: adminUser, Pass: adminPassword}.AsMechanism()))
	}
	admin := func(g *gatewayProc) *kadm.Client { return kadm.NewClient(adminClient(g)) }
	const carol, carolPassword = "carol", "carol-secret"
	if res, err := admin(alpha).AlterUserSCRAMs(ctxT(t), nil, []kadm.UpsertSCRAM{{User: carol, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: carolPassword}}); err != nil || res[carol].Err != nil {
		t.Fatalf("carol in alpha: %v %v", err, res)
	}
	login := func(g *gatewayProc) error {
		cl := client(g, kgo.SeedBrokers(g.secure["SASL_PLAINTEXT"]), kgo.SASL(plain.Auth{User: carol, Pass: carolPassword}.AsMechanism()), kgo.RequestRetries(0))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	if err := login(alpha); err != nil {
		t.Errorf("carol logs in to alpha: %v", err)
	}
	if err := login(beta); err == nil {
		t.Error("carol, a user of alpha, logs in to beta")
	}
	acl := kadm.NewACLs().Allow("User:" + carol).Topics(topic).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := admin(alpha).CreateACLs(ctxT(t), acl); err != nil || res[0].Err != nil {
		t.Fatalf("an ACL in alpha: %v %v", err, res)
	}
	described := func(g *gatewayProc) int {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType, req.Principal = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny, kmsg.StringPtr("User:"+carol)
		resp, err := req.RequestWith(ctxT(t), adminClient(g))
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("describe ACLs: %v %v", err, resp)
		}
		n := 0
		for _, r := range resp.Resources {
			n += len(r.ACLs)
		}
		return n
	}
	if a, b := described(alpha), described(beta); a != 1 || b != 0 {
		t.Errorf("carol's ACLs: %d in alpha, %d in beta; want 1 and 0", a, b)
	}

	// The cluster id is kept: alpha restarted with its master spelt
	// another way says the same.
	id := func(g *gatewayProc) string {
		md, err := kadm.NewClient(client(g)).BrokerMetadata(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		return md.Cluster
	}
	before, betaID := id(alpha), id(beta)
	if before == betaID || before == "" {
		t.Errorf("alpha's and beta's cluster ids: %q, %q", before, betaID)
	}
	alpha.stop()
	port := cluster.masterPort
	alpha = start("alpha", "localhost:"+strconv.Itoa(port), alpha.port)
	if after := id(alpha); after != before {
		t.Errorf("alpha's cluster id was %q, is %q with -master=localhost:%d", before, after, port)
	}
	if got := consumeN(t, topic, 20, kgo.SeedBrokers(alpha.addr)); !strings.HasPrefix(string(got[0].Value), "alpha-") {
		t.Errorf("alpha after its restart holds %q", got[0].Value)
	}
}
