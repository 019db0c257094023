package e2e

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kadm creates, lists, changes and deletes SCRAM users; they log in on every
// gateway of the cluster, with SCRAM and with PLAIN, and survive a restart.
func TestSCRAMUsers(t *testing.T) {
	admin := secureModes[0] // SASL_SSL, SCRAM-SHA-512, the -sasl.users administrator
	cl, err := kgo.NewClient(admin.franzOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	name := "bob-" + newTopic(t)

	altered, err := adm.AlterUserSCRAMs(ctxT(t), nil, []kadm.UpsertSCRAM{
		{User: name, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
		{User: name, Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-secret"},
	})
	if err != nil || altered[name].Err != nil {
		t.Fatalf("create %s: %v %v", name, err, altered[name].Err)
	}
	described, err := adm.DescribeUserSCRAMs(ctxT(t), name)
	if err != nil || described[name].Err != nil {
		t.Fatalf("describe: %v %+v", err, described[name])
	}
	iters := map[kadm.ScramMechanism]int32{}
	for _, ci := range described[name].CredInfos {
		iters[ci.Mechanism] = ci.Iterations
	}
	if iters[kadm.ScramSha256] != 4096 || iters[kadm.ScramSha512] != 8192 || len(iters) != 2 {
		t.Fatalf("described %+v", described[name].CredInfos)
	}
	all, err := adm.DescribeUserSCRAMs(ctxT(t))
	if err != nil || all[name].User != name || all[adminUser].User != adminUser {
		t.Fatalf("describe all: %v, %d users", err, len(all))
	}

	login := func(m secureMode) error {
		c, err := kgo.NewClient(m.franzOpts()...)
		if err != nil {
			return err
		}
		defer c.Close()
		return c.Ping(ctxT(t))
	}
	bob := func(listener, mech, password string) secureMode {
		return secureMode{name: mech, listener: listener, mechanism: mech, user: name, password: password}
	}
	for _, m := range []secureMode{bob("SASL_SSL", "SCRAM-SHA-256", "bob-secret"), bob("SASL_SSL", "SCRAM-SHA-512", "bob-secret"),
		bob("SASL_PLAINTEXT", "PLAIN", "bob-secret")} {
		if err := login(m); err != nil {
			t.Fatalf("%s logs in with %s: %v", name, m.mechanism, err)
		}
	}
	if err := login(bob("SASL_SSL", "SCRAM-SHA-256", "bob-wrong")); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a wrong password: %v", err)
	}

	// Kafka's refusals (kadm checks iterations itself; the raw request
	// shows the gateway does too).
	altered, err = adm.AlterUserSCRAMs(ctxT(t), []kadm.DeleteSCRAM{{User: "nobody-" + name, Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || !errors.Is(altered["nobody-"+name].Err, kerr.ResourceNotFound) {
		t.Fatalf("deleting an unknown user: %v %+v", err, altered)
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for i, u := range []struct {
		name  string
		mech  int8
		iters int32
	}{{"weak-" + name, 1, 1000}, {"dup-" + name, 2, 4096}, {"dup-" + name, 2, 4096}, {"odd-" + name, 3, 4096}, {"", 1, 4096}} {
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations = u.name, u.mech, u.iters
		up.Salt, up.SaltedPassword = []byte{byte(i), 1, 2, 3}, make([]byte, 32)
		req.Upsertions = append(req.Upsertions, up)
	}
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*kerr.Error{"weak-" + name: kerr.UnacceptableCredential, "dup-" + name: kerr.DuplicateResource,
		"odd-" + name: kerr.UnsupportedSaslMechanism, "": kerr.UnacceptableCredential}
	for _, r := range resp.Results {
		if r.ErrorCode != want[r.User].Code {
			t.Errorf("upsert %q: %v, want %v", r.User, kerr.ErrorForCode(r.ErrorCode), want[r.User])
		}
	}
	if len(resp.Results) != len(want) {
		t.Errorf("%d results, want %d", len(resp.Results), len(want))
	}
	if d, _ := adm.DescribeUserSCRAMs(ctxT(t), "dup-"+name); !errors.Is(d["dup-"+name].Err, kerr.ResourceNotFound) {
		t.Fatalf("a refused upsertion created the user: %+v", d)
	}
	if d, _ := adm.DescribeUserSCRAMs(ctxT(t), "nobody-"+name); !errors.Is(d["nobody-"+name].Err, kerr.ResourceNotFound) {
		t.Fatalf("describe unknown: %+v", d)
	}

	// Every gateway of the cluster sees the user, and it survives a restart.
	other, err := startNamedGateway("users-gateway", cluster.master, 0)
	if err != nil {
		t.Fatal(err)
	}
	otherBob := bob("SASL_PLAINTEXT", "SCRAM-SHA-512", "bob-secret")
	otherBob.listener = "other"
	gw.secure["other"] = other.secure["SASL_PLAINTEXT"]
	err = login(otherBob)
	delete(gw.secure, "other")
	other.stop()
	if err != nil {
		t.Fatalf("%s logs in on another gateway: %v", name, err)
	}
	restartGateway(t)
	if err := login(bob("SASL_SSL", "SCRAM-SHA-512", "bob-secret")); err != nil {
		t.Fatalf("%s logs in after a restart: %v", name, err)
	}

	// Deleting one mechanism leaves the other.
	cl2, err := kgo.NewClient(admin.franzOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	altered, err = kadm.NewClient(cl2).AlterUserSCRAMs(ctxT(t), []kadm.DeleteSCRAM{{User: name, Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || altered[name].Err != nil {
		t.Fatalf("delete SCRAM-SHA-256: %v %+v", err, altered)
	}
	if err := login(bob("SASL_SSL", "SCRAM-SHA-256", "bob-secret")); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("SCRAM-SHA-256 after its deletion: %v", err)
	}
	if err := login(bob("SASL_SSL", "SCRAM-SHA-512", "bob-secret")); err != nil {
		t.Fatalf("SCRAM-SHA-512 after deleting SCRAM-SHA-256: %v", err)
	}
}
