package e2e

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's ACLs, made with kadm as the administrator, decide what bob may do
// on every gateway of the cluster, and survive a restart: without Write his
// batch gets TOPIC_AUTHORIZATION_FAILED and nothing of it is stored;
// without Describe a topic is not in his Metadata; a DENY wins; prefixed
// patterns, groups, transactional ids and the cluster resource are
// checked as Kafka checks them.
func TestACLs(t *testing.T) {
	base := newTopic(t)
	readOnly, hidden, prefix, denied := base+"-read", base+"-hidden", base+"-w-", base+"-deny"
	writable := prefix + "x"
	for _, topic := range []string{readOnly, hidden, writable, denied} {
		createTopic(t, topic, 1, nil)
	}
	bob, bobPassword := "bob-"+base, "bob-secret"
	group, otherGroup, otherTxn := base+"-g", base+"-g-other", base+"-txn-other"

	admin, err := kgo.NewClient(secureModes[0].franzOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	if res, err := adm.AlterUserSCRAMs(ctxT(t), nil, []kadm.UpsertSCRAM{{User: bob, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: bobPassword}}); err != nil || res[bob].Err != nil {
		t.Fatalf("create %s: %v %+v", bob, err, res)
	}
	P := "User:" + bob
	builders := []*kadm.ACLBuilder{
		kadm.NewACLs().Topics(readOnly).Allow(P).Operations(kadm.OpRead),
		kadm.NewACLs().Topics(hidden).Allow("User:carol").Operations(kadm.OpDescribe),
		kadm.NewACLs().Topics(prefix).ResourcePatternType(kadm.ACLPatternPrefixed).Allow(P).Operations(kadm.OpWrite),
		kadm.NewACLs().Topics(denied).Allow(P).Operations(kadm.OpAll),
		kadm.NewACLs().Topics(denied).Deny(P).Operations(kadm.OpWrite),
		kadm.NewACLs().Groups(group).Allow(P).Operations(kadm.OpRead),
		kadm.NewACLs().Groups(otherGroup).Allow("User:carol").Operations(kadm.OpRead),
		kadm.NewACLs().TransactionalIDs(otherTxn).Allow("User:carol").Operations(kadm.OpWrite),
		kadm.NewACLs().Clusters().Allow("User:carol").Operations(kadm.OpDescribe),
	}
	t.Cleanup(func() {
		cl, err := kgo.NewClient(secureModes[0].franzOpts()...)
		if err != nil {
			t.Error(err)
			return
		}
		defer cl.Close()
		for _, b := range builders {
			if _, err := kadm.NewClient(cl).DeleteACLs(ctxT(t), b.AllowHosts().DenyHosts()); err != nil {
				t.Errorf("delete ACLs: %v", err)
			}
		}
	})
	for _, b := range builders {
		res, err := adm.CreateACLs(ctxT(t), b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("create ACL %+v: %v %s", r, r.Err, r.ErrMessage)
			}
		}
	}
	// countACLs is how many ACLs of bob's DescribeAcls lists, as whom.
	countACLs := func(cl *kgo.Client) (int, int16) {
		t.Helper()
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType, req.Principal = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny, &P
		resp, err := req.RequestWith(ctxT(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range resp.Resources {
			n += len(r.ACLs)
		}
		return n, resp.ErrorCode
	}
	if n, code := countACLs(admin); n != 5 || code != 0 {
		t.Fatalf("bob's ACLs: %d (error %v), want 5", n, kerr.ErrorForCode(code))
	}

	bobAt := func(addr string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(secureMode{mechanism: "SCRAM-SHA-256", user: bob, password: bobPassword}.franzSASL()),
			kgo.RecordRetries(1), kgo.UnknownTopicRetries(1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	cl := bobAt(gw.secure["SASL_PLAINTEXT"])
	plain := newClient(t)
	// produceAt sends one batch to a topic straight to the gateway bob is
	// connected to, and returns its error code.
	// The topics' ids, asked once: plain's metadata later names the
	// second gateway this test stops, and a request of plain's may go to
	// it (that refused dial was the failure this test saw now and then
	// after the restart).
	ids := map[string][16]byte{}
	produceAt := func(cl *kgo.Client, topic string) int16 {
		t.Helper()
		if _, ok := ids[topic]; !ok {
			ids[topic] = topicID(t, plain, topic)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		// franz-go sends the newest version: v13 names topics by id.
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, TopicID: ids[topic], Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batchOf([]byte("by bob"))}}}}
		resp, err := cl.SeedBrokers()[0].Request(ctxT(t), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}

	// Write: refused without it, nothing stored; allowed by a prefix;
	// a DENY wins over All.
	expectCode(t, "produce to "+readOnly, produceAt(cl, readOnly), kerr.TopicAuthorizationFailed)
	expectCode(t, "produce to "+denied, produceAt(cl, denied), kerr.TopicAuthorizationFailed)
	if end := listEnd(t, readOnly, 0); end != 0 {
		t.Fatalf("%s holds %d records after a refused batch", readOnly, end)
	}
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: writable, Value: []byte("by bob")}).FirstErr(); err != nil {
		t.Fatalf("bob produces to %s (prefixed Write): %v", writable, err)
	}

	// Describe: Metadata leaves out what bob may not describe, and
	// refuses it by name.
	md := kmsg.NewPtrMetadataRequest()
	md.IncludeTopicAuthorizedOperations = true
	mresp, err := md.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, mt := range mresp.Topics {
		listed = append(listed, *mt.Topic)
		if *mt.Topic == readOnly && mt.AuthorizedOperations != 1<<kmsg.ACLOperationRead|1<<kmsg.ACLOperationDescribe {
			t.Errorf("bob's operations on %s: %b", readOnly, mt.AuthorizedOperations)
		}
	}
	if slices.Contains(listed, hidden) || !slices.Contains(listed, readOnly) || !slices.Contains(listed, writable) {
		t.Fatalf("bob's Metadata lists %v", listed)
	}
	named := kmsg.NewPtrMetadataRequest()
	h := hidden
	named.Topics = []kmsg.MetadataRequestTopic{{Topic: &h}}
	if nresp, err := named.RequestWith(ctxT(t), cl); err != nil || nresp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("Metadata of %s by name: %v %+v", hidden, err, nresp)
	}

	// Read with a group bob may read.
	produceSync(t, newClient(t), &kgo.Record{Topic: readOnly, Value: []byte("for bob")})
	consumer, err := kgo.NewClient(kgo.SeedBrokers(gw.secure["SASL_PLAINTEXT"]), kgo.SASL(secureMode{mechanism: "SCRAM-SHA-256", user: bob, password: bobPassword}.franzSASL()),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(readOnly), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	fs := consumer.PollRecords(ctxT(t), 1)
	if err := fs.Err(); err != nil || fs.NumRecords() != 1 || string(fs.Records()[0].Value) != "for bob" {
		t.Fatalf("bob consumes %s in %s: %v, %d records", readOnly, group, err, fs.NumRecords())
	}
	if err := consumer.CommitUncommittedOffsets(ctxT(t)); err != nil {
		t.Fatalf("bob commits in %s: %v", group, err)
	}
	consumer.Close()

	// A group, a transactional id and the cluster that bob has no ACL on,
	// while others do.
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = otherGroup, 10000, 10000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
	if resp, err := cl.SeedBrokers()[0].Request(ctxT(t), join); err != nil || resp.(*kmsg.JoinGroupResponse).ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("JoinGroup %s: %v %+v", otherGroup, err, resp)
	}
	initReq := kmsg.NewPtrInitProducerIDRequest()
	initReq.TransactionalID, initReq.TransactionTimeoutMillis = &otherTxn, 10000
	if resp, err := cl.SeedBrokers()[0].Request(ctxT(t), initReq); err != nil || resp.(*kmsg.InitProducerIDResponse).ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("InitProducerId %s: %v %+v", otherTxn, err, resp)
	}
	if res, err := kadm.NewClient(cl).CreateACLs(ctxT(t), kadm.NewACLs().Topics(readOnly).Allow(P).Operations(kadm.OpWrite)); err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("bob grants himself Write: %v %+v", err, res)
	}
	if _, code := countACLs(cl); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("bob lists the ACLs: %v", kerr.ErrorForCode(code))
	}

	// Every gateway of the cluster applies them.
	other, err := startNamedGateway("acl-gateway", cluster.master, 0)
	if err != nil {
		t.Fatal(err)
	}
	otherBob := bobAt(other.secure["SASL_PLAINTEXT"])
	expectCode(t, "produce to "+readOnly+" on another gateway", produceAt(otherBob, readOnly), kerr.TopicAuthorizationFailed)
	// A change on one is seen by the other within seconds.
	if res, err := adm.DeleteACLs(ctxT(t), kadm.NewACLs().Topics(denied).Deny(P).DenyHosts().Operations(kadm.OpWrite)); err != nil || len(res) != 1 || len(res[0].Deleted) != 1 {
		t.Fatalf("delete the DENY: %v %+v", err, res)
	}
	eventually(t, 15*time.Second, "the other gateway sees the deleted DENY", func() error {
		if code := produceAt(otherBob, denied); code == kerr.TopicAuthorizationFailed.Code {
			return kerr.TopicAuthorizationFailed
		}
		return nil
	})
	other.stop()

	// They survive a restart.
	restartGateway(t)
	cl = bobAt(gw.secure["SASL_PLAINTEXT"])
	expectCode(t, "produce to "+readOnly+" after a restart", produceAt(cl, readOnly), kerr.TopicAuthorizationFailed)
	admin2, err := kgo.NewClient(secureModes[0].franzOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer admin2.Close()
	if n, code := countACLs(admin2); n != 4 || code != 0 {
		t.Fatalf("bob's ACLs after a restart: %d (error %v), want 4", n, kerr.ErrorForCode(code))
	}
}
