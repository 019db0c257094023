package protocol_test

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// clock is a test's clock for the token store.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// tokenGateway is a gateway with delegation tokens whose clock the test
// moves, an hour between renewals and two hours of max lifetime; alice,
// bob and carol log in with PLAIN.
func tokenGateway(t *testing.T, authorizer bool) (*testGateway, *clock) {
	clk := &clock{now: time.Now().Truncate(time.Millisecond)} // sessions end at the token's expiry by the real clock
	g := startGateway(t, gatewayOptions{sasl: true, authorizer: authorizer,
		users:  map[string]string{"alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw"},
		tokens: &user.TokenOptions{Secret: "cluster-secret", RenewTime: time.Hour, MaxLifetime: 2 * time.Hour, Now: clk.Now}})
	return g, clk
}

// as is a connection of a user logged in with PLAIN on the SASL listener.
func (g *testGateway) as(t *testing.T, name string) *rawConn {
	t.Helper()
	c := dial(t, g.saslAddr)
	if r := c.loginPlain(name, name+"-pw", 1); r.ErrorCode != 0 {
		t.Fatalf("%s's login: %s", name, errName(r.ErrorCode))
	}
	return c
}

func createToken(t *testing.T, c *rawConn, version int16, maxLifetime time.Duration, renewers ...string) *kmsg.CreateDelegationTokenResponse {
	t.Helper()
	req := kmsg.NewPtrCreateDelegationTokenRequest()
	req.MaxLifetimeMillis = maxLifetime.Milliseconds()
	if maxLifetime == 0 {
		req.MaxLifetimeMillis = -1
	}
	for _, r := range renewers {
		rn := kmsg.NewCreateDelegationTokenRequestRenewer()
		rn.PrincipalType, rn.PrincipalName = "User", r
		req.Renewers = append(req.Renewers, rn)
	}
	return c.do(req, version).(*kmsg.CreateDelegationTokenResponse)
}

func renewToken(c *rawConn, hmac []byte, period time.Duration) *kmsg.RenewDelegationTokenResponse {
	req := kmsg.NewPtrRenewDelegationTokenRequest()
	req.HMAC, req.RenewTimeMillis = hmac, period.Milliseconds()
	return c.do(req, 2).(*kmsg.RenewDelegationTokenResponse)
}

func expireToken(c *rawConn, hmac []byte, period time.Duration) *kmsg.ExpireDelegationTokenResponse {
	req := kmsg.NewPtrExpireDelegationTokenRequest()
	req.HMAC, req.ExpiryPeriodMillis = hmac, period.Milliseconds()
	return c.do(req, 2).(*kmsg.ExpireDelegationTokenResponse)
}

// describeTokens describes the tokens of owners (nil: every token) and
// returns their ids.
func describeTokens(t *testing.T, c *rawConn, owners ...string) []string {
	t.Helper()
	req := kmsg.NewPtrDescribeDelegationTokenRequest()
	if owners != nil {
		req.Owners = []kmsg.DescribeDelegationTokenRequestOwner{}
	}
	for _, o := range owners {
		ro := kmsg.NewDescribeDelegationTokenRequestOwner()
		ro.PrincipalType, ro.PrincipalName = "User", o
		req.Owners = append(req.Owners, ro)
	}
	resp := c.do(req, 3).(*kmsg.DescribeDelegationTokenResponse)
	code(t, "DescribeDelegationToken", resp.ErrorCode, nil)
	var ids []string
	for _, d := range resp.TokenDetails {
		ids = append(ids, d.TokenID)
	}
	return ids
}

// tokenClient is a franz-go client logging in with a token (SCRAM with
// tokenauth=true).
func tokenClient(t *testing.T, g *testGateway, id string, hmac []byte, opts ...kgo.Opt) *kgo.Client {
	auth := scram.Auth{User: id, Pass: user.Password(hmac), IsToken: true}
	return client(t, g.saslAddr, append(opts, kgo.SASL(auth.AsSha512Mechanism()), kgo.RequestRetries(0))...)
}

// The four APIs at every version, and who may use them: not a PLAINTEXT
// connection, not a gateway without delegation.token.secret.key.
func TestDelegationTokenVersions(t *testing.T) {
	g, _ := tokenGateway(t, false)
	servesVersions(t, g.addr, kmsg.NewPtrCreateDelegationTokenRequest(), 0, 3)
	servesVersions(t, g.addr, kmsg.NewPtrRenewDelegationTokenRequest(), 0, 2)
	servesVersions(t, g.addr, kmsg.NewPtrExpireDelegationTokenRequest(), 0, 2)
	servesVersions(t, g.addr, kmsg.NewPtrDescribeDelegationTokenRequest(), 0, 3)
	for v := int16(0); v <= 3; v++ {
		r := createToken(t, g.as(t, "alice"), v, 0)
		code(t, "create", r.ErrorCode, nil)
		if r.PrincipalType != "User" || r.PrincipalName != "alice" || r.TokenID == "" || len(r.HMAC) != 64 {
			t.Errorf("v%d: owner %s:%s, id %q, %d bytes of HMAC", v, r.PrincipalType, r.PrincipalName, r.TokenID, len(r.HMAC))
		}
		if v >= 3 && (r.TokenRequesterPrincipalType != "User" || r.TokenRequesterPrincipalName != "alice") {
			t.Errorf("v3: requester %s:%s", r.TokenRequesterPrincipalType, r.TokenRequesterPrincipalName)
		}
		req := kmsg.NewPtrDescribeDelegationTokenRequest()
		d := g.as(t, "alice").do(req, min(v, 3)).(*kmsg.DescribeDelegationTokenResponse)
		if code(t, "describe", d.ErrorCode, nil); len(d.TokenDetails) != int(v)+1 {
			t.Errorf("v%d: %d tokens described, want %d", v, len(d.TokenDetails), v+1)
		}
	}
	for v := int16(0); v <= 2; v++ {
		tok := createToken(t, g.as(t, "alice"), 3, 0)
		rq := kmsg.NewPtrRenewDelegationTokenRequest()
		rq.HMAC, rq.RenewTimeMillis = tok.HMAC, -1
		code(t, "renew", g.as(t, "alice").do(rq, v).(*kmsg.RenewDelegationTokenResponse).ErrorCode, nil)
		eq := kmsg.NewPtrExpireDelegationTokenRequest()
		eq.HMAC, eq.ExpiryPeriodMillis = tok.HMAC, -1
		code(t, "expire", g.as(t, "alice").do(eq, v).(*kmsg.ExpireDelegationTokenResponse).ErrorCode, nil)
	}

	// PLAINTEXT: not allowed, as in Kafka.
	plain := dial(t, g.addr)
	code(t, "create on PLAINTEXT", createToken(t, plain, 3, 0).ErrorCode, kerr.DelegationTokenRequestNotAllowed)
	code(t, "renew on PLAINTEXT", renewToken(plain, []byte("x"), -time.Millisecond).ErrorCode, kerr.DelegationTokenRequestNotAllowed)
	code(t, "expire on PLAINTEXT", expireToken(plain, []byte("x"), -time.Millisecond).ErrorCode, kerr.DelegationTokenRequestNotAllowed)
	d := plain.do(kmsg.NewPtrDescribeDelegationTokenRequest(), 3).(*kmsg.DescribeDelegationTokenResponse)
	code(t, "describe on PLAINTEXT", d.ErrorCode, kerr.DelegationTokenRequestNotAllowed)

	// No secret: disabled.
	off := startGateway(t, gatewayOptions{sasl: true, users: map[string]string{"alice": "alice-pw"}})
	c := off.as(t, "alice")
	code(t, "create without a secret", createToken(t, c, 3, 0).ErrorCode, kerr.DelegationTokenAuthDisabled)
	code(t, "renew without a secret", renewToken(c, []byte("x"), -time.Millisecond).ErrorCode, kerr.DelegationTokenAuthDisabled)
	d = c.do(kmsg.NewPtrDescribeDelegationTokenRequest(), 3).(*kmsg.DescribeDelegationTokenResponse)
	code(t, "describe without a secret", d.ErrorCode, kerr.DelegationTokenAuthDisabled)
}

// A token's life as Kafka keeps it: created with the renew time (never
// past the max lifetime asked), renewed by its owner and renewers only,
// never past its max; it logs in as its owner until it is expired; a
// token-authenticated connection may not ask for tokens.
func TestDelegationTokenLifecycle(t *testing.T) {
	g, clk := tokenGateway(t, false)
	g.topic(t, "dt", 1, nil)
	alice := g.as(t, "alice")
	start := clk.Now().UnixMilli()
	tok := createToken(t, alice, 3, 90*time.Minute, "bob")
	code(t, "create", tok.ErrorCode, nil)
	if tok.IssueTimestamp != start || tok.ExpiryTimestamp != start+time.Hour.Milliseconds() || tok.MaxTimestamp != start+(90*time.Minute).Milliseconds() {
		t.Errorf("issued %d, expires %d, max %d; want %d, +1h, +90m", tok.IssueTimestamp, tok.ExpiryTimestamp, tok.MaxTimestamp, start)
	}
	if long := createToken(t, alice, 3, 48*time.Hour); long.MaxTimestamp != start+(2*time.Hour).Milliseconds() {
		t.Errorf("48 h asked: max %d, want the cluster's 2 h", long.MaxTimestamp-start)
	}

	// The token logs in as alice (SCRAM, tokenauth=true) and works.
	cl := tokenClient(t, g, tok.TokenID, tok.HMAC, kgo.DefaultProduceTopic("dt"))
	if err := cl.ProduceSync(ctxFor(t), &kgo.Record{Value: []byte("by token")}).FirstErr(); err != nil {
		t.Fatalf("produce with the token: %v", err)
	}
	// ... but may not ask for tokens itself.
	resp, err := cl.Request(ctxFor(t), kmsg.NewPtrDescribeDelegationTokenRequest())
	if err != nil {
		t.Fatal(err)
	}
	code(t, "describe with a token", resp.(*kmsg.DescribeDelegationTokenResponse).ErrorCode, kerr.DelegationTokenRequestNotAllowed)
	// A wrong HMAC does not log in.
	bad := tokenClient(t, g, tok.TokenID, []byte("not the hmac"))
	if err := bad.Ping(ctxFor(t)); err == nil {
		t.Error("a wrong HMAC logged in")
	}

	// Renewals: carol may not; bob, a renewer, may; never past the max.
	code(t, "carol renews", renewToken(g.as(t, "carol"), tok.HMAC, time.Hour).ErrorCode, kerr.DelegationTokenOwnerMismatch)
	code(t, "an unknown HMAC", renewToken(alice, []byte("unknown"), time.Hour).ErrorCode, kerr.DelegationTokenNotFound)
	clk.advance(50 * time.Minute)
	r := renewToken(g.as(t, "bob"), tok.HMAC, 20*time.Minute)
	if code(t, "bob renews", r.ErrorCode, nil); r.ExpiryTimestamp != clk.Now().UnixMilli()+(20*time.Minute).Milliseconds() {
		t.Errorf("renewed to %d, want now+20m", r.ExpiryTimestamp-clk.Now().UnixMilli())
	}
	clk.advance(15 * time.Minute) // 65 min: past the first expiry, within the renewal
	if err := tokenClient(t, g, tok.TokenID, tok.HMAC).Ping(ctxFor(t)); err != nil {
		t.Errorf("the renewed token does not log in: %v", err)
	}
	r = renewToken(alice, tok.HMAC, -time.Millisecond) // the renew time, an hour, is past the max (90 min)
	if code(t, "alice renews", r.ErrorCode, nil); r.ExpiryTimestamp != tok.MaxTimestamp {
		t.Errorf("renewed to %d, want the max %d", r.ExpiryTimestamp, tok.MaxTimestamp)
	}

	// Past its expiry it neither logs in nor renews.
	clk.advance(26 * time.Minute)
	if err := tokenClient(t, g, tok.TokenID, tok.HMAC).Ping(ctxFor(t)); err == nil {
		t.Error("an expired token logged in")
	}
	code(t, "renew an expired token", renewToken(alice, tok.HMAC, -time.Millisecond).ErrorCode, kerr.DelegationTokenExpired)
	if ids := describeTokens(t, alice, "alice"); len(ids) != 2 {
		t.Errorf("before the sweep: %d of alice's tokens described, want 2 (the expired one too)", len(ids))
	}
	if n, err := g.tokens.Sweep(ctxFor(t)); err != nil || n != 2 {
		t.Errorf("sweep: %d removed, %v; want both of alice's tokens", n, err)
	}
	if ids := describeTokens(t, alice); len(ids) != 0 {
		t.Errorf("after the sweep: %v", ids)
	}

	// Expiring at once removes it: its logins fail.
	tok = createToken(t, alice, 3, 0)
	if err := tokenClient(t, g, tok.TokenID, tok.HMAC).Ping(ctxFor(t)); err != nil {
		t.Fatalf("a new token does not log in: %v", err)
	}
	code(t, "bob expires alice's token", expireToken(g.as(t, "bob"), tok.HMAC, -time.Millisecond).ErrorCode, kerr.DelegationTokenOwnerMismatch)
	e := expireToken(alice, tok.HMAC, 10*time.Minute)
	if code(t, "expire in 10 min", e.ErrorCode, nil); e.ExpiryTimestamp != clk.Now().UnixMilli()+(10*time.Minute).Milliseconds() {
		t.Errorf("expires at now+%d, want now+10m", e.ExpiryTimestamp-clk.Now().UnixMilli())
	}
	e = expireToken(alice, tok.HMAC, -time.Millisecond)
	if code(t, "expire now", e.ErrorCode, nil); e.ExpiryTimestamp != clk.Now().UnixMilli() {
		t.Errorf("expired at %d, want now", e.ExpiryTimestamp)
	}
	if err := tokenClient(t, g, tok.TokenID, tok.HMAC).Ping(ctxFor(t)); err == nil {
		t.Error("an expired token logged in")
	}
	code(t, "renew a removed token", renewToken(alice, tok.HMAC, -time.Millisecond).ErrorCode, kerr.DelegationTokenNotFound)
}

// Who sees and makes whose tokens, by Kafka's ACLs: owners, requesters and
// renewers see theirs; DESCRIBE on the token or DESCRIBE_TOKENS on its
// owner shows it to others; a token for another owner needs CREATE_TOKENS
// on that owner; renewers must be users.
func TestDelegationTokenACLs(t *testing.T) {
	g, _ := tokenGateway(t, true)
	alice, carol := g.as(t, "alice"), g.as(t, "carol")
	tok := createToken(t, alice, 3, 0, "bob")
	other := createToken(t, carol, 3, 0)
	if ids := describeTokens(t, alice); len(ids) != 1 || ids[0] != tok.TokenID {
		t.Errorf("alice sees %v, want her token only", ids)
	}
	if ids := describeTokens(t, g.as(t, "bob"), "alice"); len(ids) != 1 {
		t.Errorf("bob, a renewer, sees %v of alice's", ids)
	}
	if ids := describeTokens(t, carol, "alice"); len(ids) != 0 {
		t.Errorf("carol sees %v of alice's without an ACL", ids)
	}
	if ids := describeTokens(t, alice, []string{}...); len(ids) != 0 {
		t.Errorf("an empty owner list describes %v", ids)
	}
	g.allow(t, binding("User:carol", kmsg.ACLOperationDescribeTokens, kmsg.ACLResourceTypeUser, "User:alice"))
	if ids := describeTokens(t, carol); len(ids) != 2 {
		t.Errorf("carol with DESCRIBE_TOKENS on alice sees %v, want both", ids)
	}
	g.allow(t, binding("User:bob", kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeDelegationToken, other.TokenID))
	if ids := describeTokens(t, g.as(t, "bob")); len(ids) != 2 {
		t.Errorf("bob with DESCRIBE on carol's token sees %v, want both", ids)
	}

	// For another owner (v3): CREATE_TOKENS on that user.
	req := kmsg.NewPtrCreateDelegationTokenRequest()
	typ, name := "User", "bob"
	req.OwnerPrincipalType, req.OwnerPrincipalName, req.MaxLifetimeMillis = &typ, &name, -1
	code(t, "alice for bob", alice.do(req, 3).(*kmsg.CreateDelegationTokenResponse).ErrorCode, kerr.DelegationTokenAuthorizationFailed)
	g.allow(t, binding("User:alice", kmsg.ACLOperationCreateTokens, kmsg.ACLResourceTypeUser, "User:bob"))
	r := alice.do(req, 3).(*kmsg.CreateDelegationTokenResponse)
	if code(t, "alice for bob, allowed", r.ErrorCode, nil); r.PrincipalName != "bob" || r.TokenRequesterPrincipalName != "alice" {
		t.Errorf("owner %s, requester %s; want bob, alice", r.PrincipalName, r.TokenRequesterPrincipalName)
	}
	// alice, the requester, may renew bob's token.
	code(t, "the requester renews", renewToken(alice, r.HMAC, -time.Millisecond).ErrorCode, nil)

	bad := kmsg.NewPtrCreateDelegationTokenRequest()
	rn := kmsg.NewCreateDelegationTokenRequestRenewer()
	rn.PrincipalType, rn.PrincipalName = "Group", "ops"
	bad.Renewers, bad.MaxLifetimeMillis = append(bad.Renewers, rn), -1
	code(t, "a Group renewer", alice.do(bad, 3).(*kmsg.CreateDelegationTokenResponse).ErrorCode, kerr.InvalidPrincipalType)
}
