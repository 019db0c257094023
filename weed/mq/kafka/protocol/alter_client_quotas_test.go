package protocol_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

func strp(s string) *string { return &s }

// alterQuotas sets (or removes, value < 0) a key of one entity, "user",
// "client-id" or both, nil names the defaults.
func alterQuotas(t *testing.T, c *rawConn, version int16, validateOnly bool, key string, value float64, entity ...kmsg.AlterClientQuotasRequestEntryEntity) *kmsg.AlterClientQuotasResponse {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.ValidateOnly = validateOnly
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity = entity
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = key, value, value < 0
	e.Ops = append(e.Ops, op)
	req.Entries = append(req.Entries, e)
	return c.do(req, version).(*kmsg.AlterClientQuotasResponse)
}

func quotaEntity(typ string, name *string) kmsg.AlterClientQuotasRequestEntryEntity {
	e := kmsg.NewAlterClientQuotasRequestEntryEntity()
	e.Type, e.Name = typ, name
	return e
}

func describeQuotas(t *testing.T, c *rawConn, version int16, strict bool, components ...kmsg.DescribeClientQuotasRequestComponent) *kmsg.DescribeClientQuotasResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Strict, req.Components = strict, components
	return c.do(req, version).(*kmsg.DescribeClientQuotasResponse)
}

func quotaFilter(typ string, match kmsg.QuotasMatchType, name *string) kmsg.DescribeClientQuotasRequestComponent {
	f := kmsg.NewDescribeClientQuotasRequestComponent()
	f.EntityType, f.MatchType, f.Match = typ, match, name
	return f
}

// AlterClientQuotas and DescribeClientQuotas v0-1, as kafka-configs.sh
// uses them: quotas of users, client ids, both and their defaults set,
// described by filter, removed; Kafka's refusals; validate_only.
func TestClientQuotasAdmin(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrAlterClientQuotasRequest(), 0, 1)
	servesVersions(t, g.addr, kmsg.NewPtrDescribeClientQuotasRequest(), 0, 1)
	c := dial(t, g.addr)
	for v := int16(0); v <= 1; v++ {
		r := alterQuotas(t, c, v, false, "producer_byte_rate", 1024, quotaEntity("user", strp("alice")))
		code(t, "alice's producer_byte_rate", r.Entries[0].ErrorCode, nil)
		d := describeQuotas(t, c, v, false, quotaFilter("user", 0, strp("alice")))
		if code(t, "describe", d.ErrorCode, nil); len(d.Entries) != 1 || d.Entries[0].Values[0].Key != "producer_byte_rate" || d.Entries[0].Values[0].Value != 1024 {
			t.Fatalf("v%d: described %+v", v, d.Entries)
		}
	}
	code(t, "alice's default client", alterQuotas(t, c, 1, false, "consumer_byte_rate", 2048, quotaEntity("user", strp("alice")), quotaEntity("client-id", nil)).Entries[0].ErrorCode, nil)
	code(t, "the default user", alterQuotas(t, c, 1, false, "request_percentage", 12.5, quotaEntity("user", nil)).Entries[0].ErrorCode, nil)
	code(t, "an ip", alterQuotas(t, c, 1, false, "connection_creation_rate", 10, quotaEntity("ip", strp("10.0.0.1"))).Entries[0].ErrorCode, nil)

	for _, tc := range []struct {
		what       string
		strict     bool
		components []kmsg.DescribeClientQuotasRequestComponent
		want       int
	}{
		{"every entity", false, nil, 4},
		{"any user", false, []kmsg.DescribeClientQuotasRequestComponent{quotaFilter("user", 2, nil)}, 3},
		{"any user, strictly", true, []kmsg.DescribeClientQuotasRequestComponent{quotaFilter("user", 2, nil)}, 2},
		{"the default user", false, []kmsg.DescribeClientQuotasRequestComponent{quotaFilter("user", 1, nil)}, 1},
		{"alice with any client", true, []kmsg.DescribeClientQuotasRequestComponent{quotaFilter("user", 0, strp("alice")), quotaFilter("client-id", 2, nil)}, 1},
		{"ips", false, []kmsg.DescribeClientQuotasRequestComponent{quotaFilter("ip", 2, nil)}, 1},
	} {
		d := describeQuotas(t, c, 1, tc.strict, tc.components...)
		if code(t, tc.what, d.ErrorCode, nil); len(d.Entries) != tc.want {
			t.Errorf("%s: %d entries, want %d", tc.what, len(d.Entries), tc.want)
		}
	}
	d := describeQuotas(t, c, 1, true, quotaFilter("user", 0, strp("alice")), quotaFilter("client-id", 1, nil))
	if len(d.Entries) != 1 || len(d.Entries[0].Entity) != 2 || d.Entries[0].Values[0].Value != 2048 {
		t.Fatalf("alice's default client: %+v", d.Entries)
	}
	for _, e := range d.Entries[0].Entity {
		if (e.Type == "client-id") != (e.Name == nil) {
			t.Errorf("entity component %s %v", e.Type, e.Name)
		}
	}

	// Kafka's refusals.
	for _, tc := range []struct {
		what   string
		key    string
		value  float64
		entity []kmsg.AlterClientQuotasRequestEntryEntity
	}{
		{"an unknown key", "bytes_per_fortnight", 1, []kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity("user", strp("bob"))}},
		{"a fractional byte rate", "producer_byte_rate", 10.5, []kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity("user", strp("bob"))}},
		{"a rate of 0", "producer_byte_rate", 0, []kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity("user", strp("bob"))}},
		{"an ip with a user", "connection_creation_rate", 1, []kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity("ip", nil), quotaEntity("user", nil)}},
		{"a byte rate of an ip", "producer_byte_rate", 1, []kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity("ip", nil)}},
		{"an unknown entity type", "producer_byte_rate", 1, []kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity("group", strp("g"))}},
		{"no entity", "producer_byte_rate", 1, nil},
		{"a user twice", "producer_byte_rate", 1, []kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity("user", nil), quotaEntity("user", strp("bob"))}},
	} {
		r := alterQuotas(t, c, 1, false, tc.key, tc.value, tc.entity...)
		if code(t, tc.what, r.Entries[0].ErrorCode, kerr.InvalidRequest); r.Entries[0].ErrorMessage == nil {
			t.Errorf("%s: no message", tc.what)
		}
	}
	d = describeQuotas(t, c, 1, false, quotaFilter("user", 2, nil), quotaFilter("user", 1, nil))
	code(t, "a filter naming user twice", d.ErrorCode, kerr.InvalidRequest)
	if len(describeQuotas(t, c, 1, false, quotaFilter("user", 0, strp("bob"))).Entries) != 0 {
		t.Error("a refused alteration set a quota")
	}

	// validate_only changes nothing; removing the last key removes the entity.
	code(t, "validate only", alterQuotas(t, c, 1, true, "producer_byte_rate", 5, quotaEntity("user", strp("carol"))).Entries[0].ErrorCode, nil)
	if got := describeQuotas(t, c, 1, false, quotaFilter("user", 0, strp("carol"))).Entries; got == nil || len(got) != 0 {
		t.Errorf("validate_only set a quota, or none found is null (an error to Kafka's clients): %v", got)
	}
	code(t, "remove", alterQuotas(t, c, 1, false, "producer_byte_rate", -1, quotaEntity("user", strp("alice"))).Entries[0].ErrorCode, nil)
	if got := describeQuotas(t, c, 1, false, quotaFilter("user", 0, strp("alice"))).Entries; len(got) != 1 || len(got[0].Entity) != 2 {
		t.Errorf("after the removal, alice's quotas: %+v", got)
	}
}

// Only a principal with ALTER_CONFIGS (DESCRIBE_CONFIGS) on the cluster
// alters (describes) quotas.
func TestClientQuotasAuthorization(t *testing.T) {
	g := startGateway(t, gatewayOptions{sasl: true, authorizer: true, users: map[string]string{"alice": "alice-pw", "bob": "bob-pw"},
		acls: []acl.Binding{
			binding("User:alice", kmsg.ACLOperationAlterConfigs, kmsg.ACLResourceTypeCluster, acl.ClusterName),
		}})
	alice, bob := g.as(t, "alice"), g.as(t, "bob")
	code(t, "alice alters", alterQuotas(t, alice, 1, false, "producer_byte_rate", 1000, quotaEntity("user", nil)).Entries[0].ErrorCode, nil)
	code(t, "alice describes (AlterConfigs implies DescribeConfigs)", describeQuotas(t, alice, 1, false).ErrorCode, nil)
	code(t, "bob alters", alterQuotas(t, bob, 1, false, "producer_byte_rate", 1000, quotaEntity("user", nil)).Entries[0].ErrorCode, kerr.ClusterAuthorizationFailed)
	d := describeQuotas(t, bob, 1, false)
	if code(t, "bob describes", d.ErrorCode, kerr.ClusterAuthorizationFailed); len(d.Entries) != 0 {
		t.Errorf("bob sees %d entries", len(d.Entries))
	}
}

// A producer and a consumer held to their client id's byte rates by
// throttling (KIP-219: throttle_time_ms, the connection muted) while a
// client without a quota runs at full speed beside them. The quota
// windows are 50 ms (11 samples): the rate, which Kafka's way of measuring
// lets a client reach in bursts of a window's worth, settles within a
// second and is measured over several windows.
func TestClientQuotasThrottle(t *testing.T) {
	g := startGateway(t, gatewayOptions{quotaWindow: 50 * time.Millisecond})
	g.topic(t, "quota-t", 1, nil)
	const rate = 512 << 10
	c := dial(t, g.addr)
	code(t, "slow's producer quota", alterQuotas(t, c, 1, false, "producer_byte_rate", rate, quotaEntity("client-id", strp("slow"))).Entries[0].ErrorCode, nil)
	code(t, "slow's consumer quota", alterQuotas(t, c, 1, false, "consumer_byte_rate", rate, quotaEntity("client-id", strp("slow"))).Entries[0].ErrorCode, nil)

	var throttled atomic.Int64
	hook := throttleHook{&throttled}
	throttleSeconds := func(typ string) float64 {
		return testutil.ToFloat64(metrics.ThrottleSeconds.WithLabelValues(typ, "User:ANONYMOUS"))
	}
	produceBefore, fetchBefore := throttleSeconds("produce"), throttleSeconds("fetch")
	// measure produces as fast as it can for 4 s and returns the value
	// bytes per second of the last 3 (the first settles the rate).
	measure := func(clientID string) float64 {
		cl := client(t, g.addr, kgo.ClientID(clientID), kgo.DefaultProduceTopic("quota-t"), kgo.WithHooks(hook),
			kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerBatchCompression(kgo.NoCompression()),
			// Little waits behind the throttle: the records acknowledged
			// after the count starts were sent after it, but for a few.
			kgo.MaxBufferedRecords(4))
		// Quotas count the bytes on the wire: values that do not
		// compress, sent uncompressed.
		value := make([]byte, 4<<10)
		rand.Read(value)
		var bytes atomic.Int64
		var counting atomic.Bool
		start := time.Now()
		ctx, cancel := context.WithTimeout(ctxFor(t), 4*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		time.AfterFunc(time.Second, func() { counting.Store(true) })
		for ctx.Err() == nil {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err == nil && counting.Load() {
					bytes.Add(int64(len(r.Value)))
				}
			})
		}
		wg.Wait()
		return float64(bytes.Load()) / (time.Since(start) - time.Second).Seconds()
	}
	var slow, fast float64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); slow = measure("slow") }()
	go func() { defer wg.Done(); fast = measure("fast") }()
	wg.Wait()
	t.Logf("produce: slow %.0f B/s (quota %d), fast %.0f B/s", slow, rate, fast)
	// Never more than 10% over the quota; under it, the time a throttled
	// client takes to wake and send again counts against it, more so on
	// a loaded machine (measured 95-97% here), so 80% is the floor.
	if slow > rate*1.1 || slow < rate*0.8 {
		t.Errorf("the producer with a quota of %d B/s ran at %.0f B/s", rate, slow)
	}
	if fast < 4*rate {
		t.Errorf("the producer without a quota ran at %.0f B/s only", fast)
	}
	if throttled.Load() == 0 {
		t.Error("no response carried a throttle time")
	}
	if throttleSeconds("produce") <= produceBefore {
		t.Error("no produce throttle time in SeaweedFS_kafka_throttle_seconds_total")
	}

	// The consumer: its fetches' records over the same rate.
	cl := client(t, g.addr, kgo.ClientID("slow"), kgo.ConsumeTopics("quota-t"), kgo.FetchMaxBytes(16<<10), kgo.FetchMaxPartitionBytes(16<<10))
	var got int64
	start := time.Now()
	var settled time.Time
	for time.Since(start) < 4*time.Second {
		ctx, cancel := context.WithTimeout(ctxFor(t), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			if !settled.IsZero() {
				got += int64(len(r.Value))
			}
		})
		if settled.IsZero() && time.Since(start) > time.Second {
			settled = time.Now()
		}
	}
	consumed := float64(got) / time.Since(settled).Seconds()
	t.Logf("fetch: slow %.0f B/s (quota %d)", consumed, rate)
	if consumed > rate*1.1 || consumed < rate*0.8 {
		t.Errorf("the consumer with a quota of %d B/s read %.0f B/s", rate, consumed)
	}
	if throttleSeconds("fetch") <= fetchBefore {
		t.Error("no fetch throttle time in SeaweedFS_kafka_throttle_seconds_total")
	}
}

// throttleHook counts responses with a throttle time.
type throttleHook struct{ n *atomic.Int64 }

func (h throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, throttle time.Duration, _ bool) {
	if throttle > 0 {
		h.n.Add(1)
	}
}

// controller_mutation_rate (KIP-599): CreateTopics v6+, CreatePartitions
// v3+ and DeleteTopics v5+ refuse a topic with THROTTLING_QUOTA_EXCEEDED
// while the client is in debt; older versions do it and throttle. The
// windows are 50 ms (11 samples): at 20 partitions a second the bucket
// holds 11.
func TestControllerMutationQuota(t *testing.T) {
	g := startGateway(t, gatewayOptions{quotaWindow: 50 * time.Millisecond})
	c := dial(t, g.addr)
	code(t, "the quota", alterQuotas(t, c, 1, false, "controller_mutation_rate", 20, quotaEntity("user", strp("ANONYMOUS"))).Entries[0].ErrorCode, nil)
	create := func(version int16, topics ...string) *kmsg.CreateTopicsResponse {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10000
		for _, name := range topics {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 8, -1
			req.Topics = append(req.Topics, rt)
		}
		return c.do(req, version).(*kmsg.CreateTopicsResponse)
	}
	r := create(7, "mq-a", "mq-b", "mq-c") // 11 → 3 → -5, then refused
	for i, want := range []*kerr.Error{nil, nil, kerr.ThrottlingQuotaExceeded} {
		code(t, "strict "+r.Topics[i].Topic, r.Topics[i].ErrorCode, want)
	}
	if r.ThrottleMillis < 100 || r.ThrottleMillis > 250 {
		t.Errorf("throttled %d ms, want the 250 ms until the bucket is back at 0", r.ThrottleMillis)
	}
	if m := r.Topics[2].ErrorMessage; m == nil || *m != "The throttling quota has been exceeded." {
		t.Errorf("message %v", m)
	}
	// Permissive (v5): done, and throttled for the debt. The connection
	// is muted for the first throttle, so the bucket is near 0 again.
	r = create(5, "mq-c", "mq-d")
	code(t, "permissive mq-c", r.Topics[0].ErrorCode, nil)
	code(t, "permissive mq-d", r.Topics[1].ErrorCode, nil)
	if r.ThrottleMillis < 500 {
		t.Errorf("permissive: throttled %d ms, want about 800", r.ThrottleMillis)
	}
	time.Sleep(time.Duration(r.ThrottleMillis)*time.Millisecond + 200*time.Millisecond) // +4 partitions

	// Growing mq-a by 20, more than the bucket holds, leaves it in debt
	// however long the request took to come.
	cp := kmsg.NewPtrCreatePartitionsRequest()
	for _, name := range []string{"mq-a", "mq-b"} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, 28
		cp.Topics = append(cp.Topics, rt)
	}
	cr := c.do(cp, 3).(*kmsg.CreatePartitionsResponse)
	code(t, "grow mq-a", cr.Topics[0].ErrorCode, nil)
	code(t, "grow mq-b, in debt", cr.Topics[1].ErrorCode, kerr.ThrottlingQuotaExceeded)
	if cr.ThrottleMillis <= 0 {
		t.Error("CreatePartitions refused a topic without a throttle")
	}
	time.Sleep(time.Duration(cr.ThrottleMillis)*time.Millisecond + 200*time.Millisecond)

	dt := kmsg.NewPtrDeleteTopicsRequest()
	for _, name := range []string{"mq-a", "mq-c"} { // mq-a has 28 partitions
		n := name
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = &n
		dt.Topics = append(dt.Topics, rt)
	}
	dr := c.do(dt, 6).(*kmsg.DeleteTopicsResponse)
	code(t, "delete mq-a", dr.Topics[0].ErrorCode, nil)
	code(t, "delete mq-c, in debt", dr.Topics[1].ErrorCode, kerr.ThrottlingQuotaExceeded)
	if _, err := g.backend.DescribeTopic(ctxFor(t), "mq-c"); err != nil {
		t.Errorf("mq-c, refused, is gone: %v", err)
	}
}

// Topics Metadata creates count against controller_mutation_rate as
// Kafka counts them: never refused, the client throttled for its debt.
// An auto-creation flood was counted nowhere.
func TestAutoCreationCountsMutations(t *testing.T) {
	g := startGateway(t, gatewayOptions{quotaWindow: 50 * time.Millisecond})
	c := dial(t, g.addr)
	code(t, "the quota", alterQuotas(t, c, 1, false, "controller_mutation_rate", 20, quotaEntity("user", strp("ANONYMOUS"))).Entries[0].ErrorCode, nil)
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	for i := range 20 { // 3 partitions each (the default): 60, the bucket holds 11
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(fmt.Sprintf("auto-mq-%d", i))
		req.Topics = append(req.Topics, rt)
	}
	r := c.do(req, 12).(*kmsg.MetadataResponse)
	for _, mt := range r.Topics {
		code(t, "auto-created "+*mt.Topic, mt.ErrorCode, nil)
	}
	if r.ThrottleMillis < 1000 {
		t.Errorf("60 partitions auto-created at 20 a second: throttled %d ms", r.ThrottleMillis)
	}
}
