package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/golang-jwt/jwt/v5"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// A wrong password gets SASL_AUTHENTICATION_FAILED, with franz-go, sarama
// and librdkafka alike, and nothing is produced.
func TestSASLWrongPassword(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	for _, m := range secureModes[:2] {
		m.password = "wrong"
		cl, err := kgo.NewClient(append(m.franzOpts(), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1))...)
		if err != nil {
			t.Fatal(err)
		}
		err = cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("must not land")}).FirstErr()
		cl.Close()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: franz-go produce: %v, want SASL_AUTHENTICATION_FAILED", m.name, err)
		}
		cfg := m.saramaConfig()
		cfg.Metadata.Retry.Max = 0
		if _, err := sarama.NewClient([]string{m.addr()}, cfg); !errors.Is(err, sarama.ErrSASLAuthenticationFailed) &&
			!strings.Contains(fmt.Sprint(err), "SASL Authentication failed") {
			t.Errorf("%s: sarama: %v, want SASL authentication failed", m.name, err)
		}
	}
	out := kcatFails(t, secureModes[0].addr(), "-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location="+creds.caFile,
		"-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username="+adminUser, "-X", "sasl.password=wrong", "-L", "-m", "5")
	if !strings.Contains(out, "SASL authentication error") {
		t.Errorf("kcat with a wrong password:\n%s", out)
	}
	offs := listEnd(t, topic, 0)
	if offs != 0 {
		t.Fatalf("the partition's end is %d after refused logins, want 0", offs)
	}
}

// franz-go logs in with OAUTHBEARER tokens signed by the JWKS's key, and
// re-authenticates (KIP-368) when a short-lived token's session ends;
// librdkafka logs in with its unsecured token (-sasl.oauthbearer.unsecured).
// A token signed by another key, or expired, is refused.
func TestOAuthBearer(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	tokens := 0
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.secure["SASL_SSL"]), kgo.DialTLSConfig(creds.tlsConfig(false)),
		kgo.DefaultProduceTopic(topic),
		kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			tokens++
			return oauth.Auth{Token: creds.token(t, "svc", 6*time.Second)}, nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Past the first token's end, the connection goes on with a new one.
	time.Sleep(8 * time.Second)
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if tokens < 2 {
		t.Fatalf("franz-go asked for %d tokens: no re-authentication", tokens)
	}

	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	forged := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"sub": "svc", "exp": time.Now().Add(time.Hour).Unix()})
	forged.Header["kid"] = "e2e"
	forgedToken, _ := forged.SignedString(other)
	for what, token := range map[string]string{"another key": forgedToken, "expired": creds.token(t, "svc", -time.Hour)} {
		bad, err := kgo.NewClient(kgo.SeedBrokers(gw.secure["SASL_PLAINTEXT"]), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1),
			kgo.SASL(oauth.Auth{Token: token}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		err = bad.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("must not land")}).FirstErr()
		bad.Close()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("a token signed by %s: %v, want SASL_AUTHENTICATION_FAILED", what, err)
		}
	}

	// librdkafka with its own unsecured token.
	t.Run("librdkafka", func(t *testing.T) {
		topic := newTopic(t)
		createTopic(t, topic, 1, nil)
		librdkafkaWith(t, map[string]string{"bootstrap.servers": gw.secure["SASL_PLAINTEXT"], "security.protocol": "SASL_PLAINTEXT",
			"sasl.mechanisms": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true", "sasl.oauthbearer.config": "principal=svc"}, topic)
	})
	var got []string
	for _, r := range consumeN(t, topic, 2) {
		got = append(got, string(r.Value))
	}
	checkValues(t, "franz-go over PLAINTEXT", got, []string{"before", "after"})
}

// franz-go's own kgo suite runs its SCRAM and OAUTHBEARER tests against the
// gateway: TestSCRAMAuth (SCRAM-SHA-512 as the administrator),
// TestSCRAMAuthBadCredentials and TestOAuthAuth (an unsecured token, and an
// expired one refused with invalid_token, as Kafka's default validator).
func TestFranzGoSASLSuite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-v",
		"-run", "^(TestSCRAMAuth|TestSCRAMAuthBadCredentials|TestOAuthAuth)$", "github.com/twmb/franz-go/pkg/kgo")
	cmd.Env = append(os.Environ(),
		"KGO_SEEDS="+gw.addr,
		"KGO_TEST_SCRAM_SEEDS="+gw.secure["SASL_PLAINTEXT"],
		"KGO_TEST_SCRAM="+adminUser+":"+adminPassword+":512",
		"KGO_TEST_OAUTH_SEEDS="+gw.secure["SASL_PLAINTEXT"],
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kgo suite: %v\n%s", err, out)
	}
	for _, name := range []string{"TestSCRAMAuth", "TestSCRAMAuthBadCredentials", "TestOAuthAuth"} {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass:\n%s", name, out)
		}
	}
}

// franz-go's kgo suite tests that failed against the gateway before it
// returned batches compressed as produced and listed the internal topics:
// TestConsumeMaxDecompressBatchBytes and TestPooling (compressed fetches),
// TestConsumeRegex (__consumer_offsets in Metadata).
func TestFranzGoSuiteFetches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	names := []string{"TestConsumeMaxDecompressBatchBytes", "TestPooling", "TestConsumeRegex"}
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-v",
		"-run", "^("+strings.Join(names, "|")+")$", "github.com/twmb/franz-go/pkg/kgo")
	cmd.Env = append(os.Environ(), "KGO_SEEDS="+gw.addr, "KGO_TEST_RF=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kgo suite: %v\n%s", err, out)
	}
	for _, name := range names {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass:\n%s", name, out)
		}
	}
}
