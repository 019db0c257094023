package protocol_test

// Helpers of the in-process API tests: a gateway with the options an API
// needs (an authorizer, a SASL listener, users), raw requests at exact
// versions over TCP, and the few steps of the group and transaction
// protocols the tests of several APIs take.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/brokerconfig"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/feature"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/gateway"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/quota"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/sasl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage/storagetest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/telemetry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/txn"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/waitfor"
)

// gatewayOptions are what a test's gateway has besides inProcessGateway's
// defaults (3 partitions, auto-creation, cluster id "in-process").
type gatewayOptions struct {
	// authorizer turns ACLs on: a principal may do only what acls allow
	// (or everything, if a super user).
	authorizer   bool
	superUsers   []string
	allowIfNoACL bool
	acls         []acl.Binding
	// sasl adds a SASL_PLAINTEXT listener with PLAIN and SCRAM logins of
	// users (name: password).
	sasl  bool
	users map[string]string
	// tokens turns delegation tokens on, with these options (their
	// Files are the gateway's).
	tokens *user.TokenOptions
	// quotaWindow is quota.window.size of the client quotas (11 samples;
	// 0: Kafka's second).
	quotaWindow time.Duration
	// maxReauth is connections.max.reauth.ms (0: sessions do not end).
	maxReauth    time.Duration
	noAutoCreate bool
	// shareSessions is group.share.max.share.sessions (0: the default).
	shareSessions int
	// classicTxns finalizes transaction.version 0, not 2 (the gateway's
	// default): clients keep the classic transaction protocol.
	classicTxns bool
	// cluster, if set, is the cluster of gateways the gateway is one of
	// (node 0); its self member gets the gateway's address once bound.
	cluster *fakeCluster
	// consumerSession is group.consumer.session.timeout.ms of consumer
	// groups (KIP-848; default Kafka's 45 s).
	consumerSession time.Duration
	// streamsStandbys is group.streams.num.standby.replicas.
	streamsStandbys int
	// assignors is group.consumer.assignors (default uniform, range).
	assignors []string
}

// testGateway is a running in-process gateway and what it runs on.
type testGateway struct {
	addr          string // the PLAINTEXT listener: principal User:ANONYMOUS
	saslAddr      string // the SASL_PLAINTEXT listener, with sasl
	backend       *storagetest.Backend
	groups        *group.Coordinator
	txns          *txn.Coordinator
	authz         *acl.Authorizer
	users         *user.Store
	tokens        *user.Tokens // with tokens
	quotas        *quota.Store
	clientMetrics *telemetry.Manager
	features      *feature.Store
	// shares keeps the share groups' share-partitions and configs.
	shares        *share.Store
	shareConfigs  *share.Configs
	brokerConfigs *brokerconfig.Store
}

var saslListener = regexp.MustCompile(`SASL_PLAINTEXT://(\S+)`)

// startGateway starts a gateway on 127.0.0.1 port 0 over the in-memory
// backend with real group and transaction coordinators; it stops with the
// test.
func startGateway(t *testing.T, o gatewayOptions) *testGateway {
	t.Helper()
	ctx := ctxFor(t)
	g := &testGateway{backend: storagetest.New()}
	files := protocol.NewMemFiles()
	limits := share.DefaultLimits
	limits.MinSessionTimeout, limits.MinHeartbeatInterval, limits.MinLockDuration = 100*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond
	g.shareConfigs = share.NewConfigs(files, limits)
	g.shares = share.NewStore(files, g.shareConfigs)
	g.groups = group.New(group.Options{Store: offset.NewStore(files), InitialRebalanceDelay: 50 * time.Millisecond, MinSessionTimeout: 100 * time.Millisecond,
		ShareConfigs: g.shareConfigs, ShareStates: g.shares,
		Topics: protocol.GroupTopics(g.backend), TopicRefresh: 50 * time.Millisecond,
		ConsumerSessionTimeout: o.consumerSession, ConsumerHeartbeatInterval: time.Second, ConsumerAssignors: o.assignors,
		StreamsHeartbeatInterval: time.Second, StreamsInitialDelay: -1, StreamsNumStandbyReplicas: o.streamsStandbys,
		TopicVisible: func(principal, host, topic string) bool {
			return g.authz == nil || g.authz.Authorize(principal, host, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, topic)
		}})
	g.groups.Start()
	g.txns = txn.New(txn.Options{Files: files, Log: g.backend, Groups: g.groups})
	g.txns.Start()
	sealer := user.NewSealer([]byte("the in-process tests' cluster secret"))
	g.users = user.NewStore(files, sealer)
	for name, password := range o.users {
		if err := g.users.SetPassword(ctx, name, password); err != nil {
			t.Fatal(err)
		}
	}
	opts := gateway.Options{Listen: "127.0.0.1:0", Backend: g.backend, Groups: g.groups, Txns: g.txns,
		Config: protocol.Config{Shares: g.shares, Users: g.users, DefaultPartitions: 3, AutoCreateTopics: !o.noAutoCreate,
			ClusterID: func() string { return "in-process" }, TransactionVersion: 2, ShareSessionSlots: o.shareSessions}}
	if o.classicTxns {
		opts.TransactionVersion = 0
	}
	if o.cluster != nil {
		opts.Cluster = o.cluster
	}
	if o.authorizer {
		g.authz = acl.New(acl.Options{Files: files, SuperUsers: o.superUsers, AllowIfNoACL: o.allowIfNoACL})
		if err := g.authz.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		g.allow(t, o.acls...)
		opts.Authorizer = g.authz
	}
	g.quotas = quota.New(quota.Options{Files: files, Window: o.quotaWindow})
	if err := g.quotas.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	opts.Quotas = g.quotas
	g.clientMetrics = telemetry.New(telemetry.Options{Files: files})
	if err := g.clientMetrics.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	opts.ClientMetrics = g.clientMetrics
	tv := int16(2)
	if o.classicTxns {
		tv = 0
	}
	g.features = feature.New(files, map[string]int16{feature.Group: 1, feature.Share: 1, feature.Streams: 1, feature.Transaction: tv})
	opts.Features = g.features
	g.brokerConfigs = brokerconfig.New(files, 0)
	opts.BrokerConfigs = g.brokerConfigs
	g.backend.TopicDefaults = g.brokerConfigs.TopicDefaults
	if o.tokens != nil {
		to := *o.tokens
		to.Files, to.Sealer = files, sealer
		g.tokens = user.NewTokens(to)
		opts.Tokens = g.tokens
	}
	if o.sasl {
		cfg := sasl.Config{Mechanisms: []string{sasl.Plain, sasl.ScramSHA256, sasl.ScramSHA512}, Users: g.users}
		if g.tokens != nil {
			cfg.Tokens = g.tokens
		}
		auth, err := sasl.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		opts.SASL, opts.MaxReauth = auth, o.maxReauth
		opts.Listeners = []gateway.Listener{{Name: gateway.Plaintext, Bind: "127.0.0.1:0"}, {Name: gateway.SASLPlaintext, Bind: "127.0.0.1:0"}}
	}
	srv, err := gateway.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve() //nolint:errcheck // ends with Close
	t.Cleanup(func() {
		srv.Close()
		g.txns.Close()
		g.groups.Close()
		g.shares.Close()
	})
	g.addr = srv.Addr().String()
	if o.cluster != nil {
		host, port, _ := net.SplitHostPort(g.addr)
		p, _ := strconv.Atoi(port)
		o.cluster.setSelf(membership.Member{NodeID: 0, Host: host, Port: int32(p)})
	}
	if o.sasl {
		m := saslListener.FindStringSubmatch(srv.Listeners())
		if m == nil {
			t.Fatalf("no SASL listener in %s", srv.Listeners())
		}
		g.saslAddr = m[1]
	}
	for {
		if _, kerrr := g.txns.List(); kerrr == nil {
			return g
		}
		if ctx.Err() != nil {
			t.Fatal("the transaction coordinator did not load")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fakeCluster is a cluster of gateways as membership would see it: this
// gateway (node 0), another one (node 1, never dialled), the controller,
// and who owns what with which epoch (owners; unknown keys: no gateway
// known).
type fakeCluster struct {
	mu         sync.Mutex
	self       membership.Member
	other      membership.Member
	controller int32
	owners     map[string]fakeOwner
}

type fakeOwner struct {
	node  int32
	epoch int64
}

func newFakeCluster(controller int32, owners map[string]fakeOwner) *fakeCluster {
	return &fakeCluster{other: membership.Member{NodeID: 1, Host: "10.0.0.1", Port: 19092}, controller: controller, owners: owners}
}

func (c *fakeCluster) setSelf(m membership.Member) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.self = m
}

func (c *fakeCluster) Members() []membership.Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return []membership.Member{c.self, c.other}
}

func (c *fakeCluster) Controller() int32 { return c.controller }

// Epoch is the view's epoch, as membership.Membership tells it.
func (c *fakeCluster) Epoch() int64 { return 7 }

func (c *fakeCluster) Owner(key string) (membership.Member, int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.owners[key]
	switch {
	case !ok:
		return membership.Member{}, 0, false
	case o.node == 0:
		return c.self, o.epoch, true
	}
	return c.other, o.epoch, true
}

// allow creates ACL bindings.
func (g *testGateway) allow(t *testing.T, bs ...acl.Binding) {
	t.Helper()
	if len(bs) == 0 {
		return
	}
	for i, err := range g.authz.Create(ctxFor(t), bs) {
		if err != nil {
			t.Fatalf("ACL %+v: %v", bs[i], err)
		}
	}
}

// revoke deletes ACL bindings.
func (g *testGateway) revoke(t *testing.T, bs ...acl.Binding) {
	t.Helper()
	var fs []acl.Filter
	for _, b := range bs {
		fs = append(fs, acl.Filter{ResourceType: b.ResourceType, ResourceName: &b.ResourceName, PatternType: b.PatternType,
			Principal: &b.Principal, Host: &b.Host, Operation: b.Operation, Permission: b.Permission})
	}
	deleted, errs := g.authz.Delete(ctxFor(t), fs)
	for i := range fs {
		if errs[i] != nil || len(deleted[i]) != 1 {
			t.Fatalf("revoking %+v: %v, %d deleted", bs[i], errs[i], len(deleted[i]))
		}
	}
}

// binding is an ALLOW of op on a literal resource for principal, from any
// host; deny makes it a DENY.
func binding(principal string, op acl.Operation, rt acl.ResourceType, name string) acl.Binding {
	return acl.Binding{ResourceType: rt, ResourceName: name, PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: principal, Host: "*", Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

func deny(b acl.Binding) acl.Binding {
	b.Permission = kmsg.ACLPermissionTypeDeny
	return b
}

// anonymous is the principal of the PLAINTEXT listener's connections.
const anonymous = "User:ANONYMOUS"

// internal reports whether a topic is one of Kafka's internal ones
// (__consumer_offsets, __transaction_state), which the gateway lists beside
// the backend's: the tests of listings leave them out.
func internal(topic string) bool { return strings.HasPrefix(topic, "__") }

// topic creates a topic in the backend, with configs.
func (g *testGateway) topic(t *testing.T, name string, partitions int32, configs map[string]string) storage.TopicInfo {
	t.Helper()
	info, err := g.backend.CreateTopic(context.Background(), storage.TopicSpec{Name: name, Partitions: partitions, Configs: configs})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// write appends values to a partition, each record's timestamp its index
// plus ts0 (milliseconds).
func (g *testGateway) write(t *testing.T, topic string, partition int32, ts0 int64, values ...string) int64 {
	t.Helper()
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{Value: []byte(v), Timestamp: ts0 + int64(i)}
	}
	app := g.backend.Append(context.Background(), topic, partition, recs, true)
	<-app.Done
	if app.Err != nil {
		t.Fatal(app.Err)
	}
	return app.Base
}

// rawConn is a client connection that sends requests at exact versions, as
// no client library does: it checks that each answer is exactly a response
// of the request's version.
type rawConn struct {
	t    *testing.T
	nc   net.Conn
	corr int32
	f    *kmsg.RequestFormatter
}

func dial(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-client"))}
}

// sendFrame writes req at version; with patched >= 0 the header says that
// version instead (one the codec may not know).
func (c *rawConn) sendFrame(req kmsg.Request, version, patched int16) error {
	req.SetVersion(version)
	c.corr++
	frame := c.f.AppendRequest(nil, req, c.corr)
	if patched >= 0 {
		binary.BigEndian.PutUint16(frame[6:], uint16(patched))
	}
	c.nc.SetDeadline(time.Now().Add(15 * time.Second)) //nolint:errcheck // a closed conn fails the write
	_, err := c.nc.Write(frame)
	return err
}

func (c *rawConn) readFrame() ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.nc, body); err != nil {
		return nil, err
	}
	if len(body) < 4 {
		return nil, fmt.Errorf("a frame of %d bytes", len(body))
	}
	if id := int32(binary.BigEndian.Uint32(body)); id != c.corr {
		return nil, fmt.Errorf("correlation id %d, want %d", id, c.corr)
	}
	return body[4:], nil
}

// send sends req at version and returns its answer, decoded at that
// version; an error if the answer is anything but a response of that
// version, every byte of it (the header's tags included).
func (c *rawConn) send(req kmsg.Request, version int16) (kmsg.Response, error) {
	if err := c.sendFrame(req, version, -1); err != nil {
		return nil, err
	}
	body, err := c.readFrame()
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		if body, err = protocol.SkipHeaderTags(body); err != nil {
			return nil, fmt.Errorf("%s v%d response header: %w", kmsg.NameForKey(req.Key()), version, err)
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%s v%d response: %w", kmsg.NameForKey(req.Key()), version, err)
	}
	if again := resp.AppendTo(nil); !bytes.Equal(again, body) {
		return nil, fmt.Errorf("%s v%d response: %d bytes, of which a v%d response is %d", kmsg.NameForKey(req.Key()), version, len(body), version, len(again))
	}
	return resp, nil
}

// do is send, failing the test on an error.
func (c *rawConn) do(req kmsg.Request, version int16) kmsg.Response {
	c.t.Helper()
	resp, err := c.send(req, version)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// roundTrip sends one request at version on a connection of its own.
func roundTrip(t *testing.T, addr string, req kmsg.Request, version int16) kmsg.Response {
	t.Helper()
	return dial(t, addr).do(req, version)
}

// loginPlain logs the connection in with PLAIN: SaslHandshake v1, then
// SaslAuthenticate at version.
func (c *rawConn) loginPlain(user, password string, version int16) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	if resp := c.do(hs, 1).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
		c.t.Fatalf("SaslHandshake PLAIN: %s", errName(resp.ErrorCode))
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("\x00" + user + "\x00" + password)
	return c.do(auth, version).(*kmsg.SASLAuthenticateResponse)
}

// bare sends a SASL message in a bare frame, as after a v0 SaslHandshake,
// and reads the bare answer.
func (c *rawConn) bare(msg []byte) ([]byte, error) {
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(msg)))
	c.nc.SetDeadline(time.Now().Add(5 * time.Second)) //nolint:errcheck // a closed conn fails the write
	if _, err := c.nc.Write(append(frame, msg...)); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	answer := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c.nc, answer)
	return answer, err
}

// closed checks that the gateway closes the connection without answering
// what was sent.
func (c *rawConn) closed(what string) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second)) //nolint:errcheck // the read fails anyway
	body, err := c.readFrame()
	var ne net.Error
	switch {
	case err == nil:
		c.t.Fatalf("%s: answered (%d bytes) instead of closing the connection", what, len(body))
	case errors.As(err, &ne) && ne.Timeout():
		c.t.Fatalf("%s: neither answered nor closed within 5 s", what)
	case !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET):
		c.t.Fatalf("%s: %v", what, err)
	}
}

// servesVersions checks that the gateway advertises exactly min-max for
// req's API and, as Kafka, closes the connection of a request of a version
// outside them (no client sends one: it picks from ApiVersions).
func servesVersions(t *testing.T, addr string, req kmsg.Request, min, max int16) {
	t.Helper()
	areq := kmsg.NewPtrApiVersionsRequest()
	areq.ClientSoftwareName, areq.ClientSoftwareVersion = "protocol-test", "1"
	av := roundTrip(t, addr, areq, 3).(*kmsg.ApiVersionsResponse)
	found := false
	for _, k := range av.ApiKeys {
		if k.ApiKey == req.Key() {
			found = true
			if k.MinVersion != min || k.MaxVersion != max {
				t.Errorf("%s: ApiVersions advertises %d-%d, want %d-%d", kmsg.NameForKey(req.Key()), k.MinVersion, k.MaxVersion, min, max)
			}
		}
	}
	if !found {
		t.Fatalf("%s is not in ApiVersions", kmsg.NameForKey(req.Key()))
	}
	outside := []int16{max + 1}
	if min > 0 {
		outside = append(outside, min-1)
	}
	for _, v := range outside {
		c := dial(t, addr)
		encodeAt := v
		if v > req.MaxVersion() {
			encodeAt = req.MaxVersion()
		}
		if err := c.sendFrame(req, encodeAt, v); err != nil {
			t.Fatal(err)
		}
		c.closed(fmt.Sprintf("%s v%d", kmsg.NameForKey(req.Key()), v))
	}
}

// code checks a Kafka error code.
func code(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if want == nil {
		if got != 0 {
			t.Errorf("%s: %s, want no error", what, errName(got))
		}
		return
	}
	if got != want.Code {
		t.Errorf("%s: %v, want %s", what, errName(got), want.Message)
	}
}

// errName names an error code as Kafka does (UNKNOWN_TOPIC_OR_PARTITION).
func errName(c int16) string {
	if c == 0 {
		return "no error"
	}
	var ke *kerr.Error
	if errors.As(kerr.ErrorForCode(c), &ke) {
		return ke.Message
	}
	return fmt.Sprintf("error code %d", c)
}

// The consumer protocol's member metadata subscribed to topics.
func subscription(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

// joinRequest is a consumer's JoinGroup of a group.
func joinRequest(groupID, memberID string, instanceID *string, topics ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.InstanceID = groupID, memberID, instanceID
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 2_000
	req.ProtocolType = "consumer"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: subscription(topics...)}}
	return req
}

// join makes a new member join at version (taking the member id first
// from v4 on, as a client does) and returns its JoinGroup answer.
func join(t *testing.T, c *rawConn, version int16, groupID string, topics ...string) *kmsg.JoinGroupResponse {
	t.Helper()
	resp := c.do(joinRequest(groupID, "", nil, topics...), version).(*kmsg.JoinGroupResponse)
	if version >= 4 {
		if resp.ErrorCode != kerr.MemberIDRequired.Code || resp.MemberID == "" {
			t.Fatalf("JoinGroup v%d without a member id: %s, member id %q; want MEMBER_ID_REQUIRED and an id", version, errName(resp.ErrorCode), resp.MemberID)
		}
		resp = c.do(joinRequest(groupID, resp.MemberID, nil, topics...), version).(*kmsg.JoinGroupResponse)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("JoinGroup v%d: %s", version, errName(resp.ErrorCode))
	}
	return resp
}

// syncRequest is a SyncGroup of a member; a leader's carries assignments
// (member id: assignment).
func syncRequest(groupID, memberID string, generation int32, assignments map[string][]byte) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = groupID, memberID, generation
	for id, a := range assignments {
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: a})
	}
	return req
}

// stableMember makes a group of one member stable and returns the member
// id and its generation.
func stableMember(t *testing.T, addr, groupID string, topics ...string) (*rawConn, string, int32) {
	t.Helper()
	c := dial(t, addr)
	j := join(t, c, 5, groupID, topics...)
	s := c.do(syncRequest(groupID, j.MemberID, j.Generation, map[string][]byte{j.MemberID: []byte("mine")}), 3).(*kmsg.SyncGroupResponse)
	if s.ErrorCode != 0 || string(s.MemberAssignment) != "mine" {
		t.Fatalf("SyncGroup of the leader: %s, assignment %q", errName(s.ErrorCode), s.MemberAssignment)
	}
	return c, j.MemberID, j.Generation
}

// describeGroup is a group as DescribeGroups v5 shows it.
func describeGroup(t *testing.T, addr, id string) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{id}
	resp := roundTrip(t, addr, req, 5).(*kmsg.DescribeGroupsResponse)
	if len(resp.Groups) != 1 {
		t.Fatalf("DescribeGroups %s: %d groups", id, len(resp.Groups))
	}
	return resp.Groups[0]
}

// offsetCommit commits offsets of a topic's partitions for a group, as a
// member of generation (-1 and no member id: a group-less consumer).
func offsetCommit(groupID string, generation int32, memberID, topic string, offsets map[int32]int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = groupID, generation, memberID
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for _, p := range slices.Sorted(maps.Keys(offsets)) {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, offsets[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// committed is a group's committed offsets of a topic's partitions, as
// OffsetFetch v5 answers them (-1: none).
func committed(t *testing.T, addr, groupID, topic string, partitions ...int32) []int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = groupID
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: partitions}}
	resp := roundTrip(t, addr, req, 5).(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 {
		t.Fatalf("OffsetFetch %s: %s, %d topics", groupID, errName(resp.ErrorCode), len(resp.Topics))
	}
	var out []int64
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("OffsetFetch %s %s/%d: %s", groupID, topic, p.Partition, errName(p.ErrorCode))
		}
		out = append(out, p.Offset)
	}
	return out
}

// transactional is a transactional producer, as its requests name it.
type transactional struct {
	id    string
	pid   int64
	epoch int16
}

// initTxn gives a transactional id its producer id and epoch.
func initTxn(t *testing.T, addr, id string) transactional {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = &id, 60_000
	resp := roundTrip(t, addr, req, 4).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("InitProducerId %s: %s", id, errName(resp.ErrorCode))
	}
	return transactional{id, resp.ProducerID, resp.ProducerEpoch}
}

// addPartitions adds a topic's partitions to the producer's transaction
// (AddPartitionsToTxn v3) and returns each partition's code.
func (p transactional) addPartitions(t *testing.T, addr, topic string, partitions ...int32) []int16 {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = p.id, p.pid, p.epoch
	req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: partitions}}
	resp := roundTrip(t, addr, req, 3).(*kmsg.AddPartitionsToTxnResponse)
	var codes []int16
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			codes = append(codes, rp.ErrorCode)
		}
	}
	return codes
}

// endTxn commits or aborts the producer's transaction (EndTxn v3).
func (p transactional) end(t *testing.T, addr string, commit bool) int16 {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.id, p.pid, p.epoch, commit
	return roundTrip(t, addr, req, 3).(*kmsg.EndTxnResponse).ErrorCode
}

// txnOffsetCommit is the producer's TxnOffsetCommit of a topic's offsets
// for a group, without naming a member.
func txnOffsetCommit(p transactional, groupID, topic string, offsets map[int32]int64) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = p.id, groupID, p.pid, p.epoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	for _, part := range slices.Sorted(maps.Keys(offsets)) {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = part, offsets[part]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func txnCommitCodes(resp kmsg.Response) []int16 {
	var out []int16
	for _, rt := range resp.(*kmsg.TxnOffsetCommitResponse).Topics {
		for _, p := range rt.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

// addOffsets adds a group to the producer's transaction (AddOffsetsToTxn
// v3).
func (p transactional) addOffsets(t *testing.T, addr, groupID string) int16 {
	t.Helper()
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = p.id, p.pid, p.epoch, groupID
	return roundTrip(t, addr, req, 3).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
}

// describeTxn is the transactional id's state as DescribeTransactions
// answers it.
func describeTxn(t *testing.T, addr, id string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp := roundTrip(t, addr, req, 0).(*kmsg.DescribeTransactionsResponse)
	if len(resp.TransactionStates) != 1 {
		t.Fatalf("DescribeTransactions %s: %d states", id, len(resp.TransactionStates))
	}
	return resp.TransactionStates[0]
}

// eventually polls cond until it holds or 5 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitfor.True(t, 5*time.Second, what, cond)
}
