package quota

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
)

func name(n string) *string { return &n }

// Kafka's precedence: the most specific entity with the key set wins, and
// the rate is measured for the entity, defaults standing for each user or
// client id.
func TestQuotaPrecedence(t *testing.T) {
	ctx := context.Background()
	s := New(Options{Files: filerfstest.New()})
	set := func(v float64, cs ...Component) {
		if err := s.Alter(ctx, Entity(cs), []Op{{Key: ProducerByteRate, Value: v}}); err != nil {
			t.Fatal(err)
		}
	}
	u := func(n string) Component { return Component{Type: User, Name: name(n)} }
	c := func(n string) Component { return Component{Type: ClientID, Name: name(n)} }
	du, dc := Component{Type: User}, Component{Type: ClientID}
	set(8, dc)
	set(7, c("app"))
	set(6, du)
	set(5, dc, du)
	set(4, c("app"), du)
	set(3, u("alice"))
	set(2, dc, u("alice"))
	set(1, u("alice"), c("app"))
	for _, tc := range []struct {
		user, client string
		want         float64
		measure      string
	}{
		{"alice", "app", 1, "user=alice,client-id=app"},
		{"alice", "other", 2, "user=alice,client-id=other"},
		{"bob", "app", 4, "user=bob,client-id=app"},
		{"bob", "other", 5, "user=bob,client-id=other"},
	} {
		q, m, ok := s.Quota(ProducerByteRate, tc.user, tc.client)
		if !ok || q != tc.want || m.String() != tc.measure {
			t.Errorf("%s/%s: %v %q %v, want %v %q", tc.user, tc.client, q, m, ok, tc.want, tc.measure)
		}
	}
	// Removing the more specific ones uncovers the others, in order.
	remove := func(cs ...Component) {
		if err := s.Alter(ctx, Entity(cs), []Op{{Key: ProducerByteRate, Remove: true}}); err != nil {
			t.Fatal(err)
		}
	}
	remove(u("alice"), c("app"))
	remove(dc, u("alice"))
	if q, m, _ := s.Quota(ProducerByteRate, "alice", "app"); q != 3 || m.String() != "user=alice" {
		t.Errorf("user=alice: %v %q", q, m)
	}
	remove(u("alice"))
	remove(c("app"), du)
	remove(dc, du)
	if q, m, _ := s.Quota(ProducerByteRate, "alice", "app"); q != 6 || m.String() != "user=alice" {
		t.Errorf("user=<default>: %v %q", q, m)
	}
	remove(du)
	if q, m, _ := s.Quota(ProducerByteRate, "alice", "app"); q != 7 || m.String() != "client-id=app" {
		t.Errorf("client-id=app: %v %q", q, m)
	}
	remove(c("app"))
	if q, m, _ := s.Quota(ProducerByteRate, "alice", "x"); q != 8 || m.String() != "client-id=x" {
		t.Errorf("client-id=<default>: %v %q", q, m)
	}
	if _, _, ok := s.Quota(ConsumerByteRate, "alice", "x"); ok {
		t.Error("a key never set applies")
	}
	// Another store over the same files reads them all.
	files := s.opts.Files
	other := New(Options{Files: files})
	if err := other.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := other.Describe(nil, false); len(got) != 1 || got[0].Values[ProducerByteRate] != 8 {
		t.Errorf("read back: %+v", got)
	}
}

// What Kafka refuses in entities, keys and values, and filters.
func TestQuotaValidation(t *testing.T) {
	for _, tc := range []struct {
		e   Entity
		bad bool
	}{
		{Entity{}, true},
		{Entity{{Type: "group", Name: name("g")}}, true},
		{Entity{{Type: User}, {Type: User, Name: name("a")}}, true},
		{Entity{{Type: IP, Name: name("10.0.0.1")}, {Type: User}}, true},
		{Entity{{Type: IP, Name: name("not-an-ip")}}, true},
		{Entity{{Type: IP}}, false},
		{Entity{{Type: User, Name: name("a")}, {Type: ClientID}}, false},
	} {
		if got := tc.e.Validate(); (got != "") != tc.bad {
			t.Errorf("%v: %q", tc.e, got)
		}
	}
	user := Entity{{Type: User, Name: name("a")}}
	ip := Entity{{Type: IP}}
	for _, tc := range []struct {
		e   Entity
		op  Op
		bad bool
	}{
		{user, Op{Key: ProducerByteRate, Value: 1024}, false},
		{user, Op{Key: ProducerByteRate, Value: 10.5}, true},
		{user, Op{Key: RequestPercentage, Value: 12.5}, false},
		{user, Op{Key: ProducerByteRate, Value: 0}, true},
		{user, Op{Key: ProducerByteRate, Value: math.NaN()}, true},
		{user, Op{Key: "unknown_rate", Value: 1}, true},
		{user, Op{Key: ConnectionCreationRate, Value: 1}, true},
		{ip, Op{Key: ConnectionCreationRate, Value: 10}, false},
		{ip, Op{Key: ProducerByteRate, Value: 10}, true},
		{user, Op{Key: ProducerByteRate, Remove: true}, false},
	} {
		if got := tc.e.ValidateOp(tc.op); (got != "") != tc.bad {
			t.Errorf("%v %+v: %q", tc.e, tc.op, got)
		}
	}
	for _, tc := range []struct {
		fs  []Filter
		bad bool
	}{
		{[]Filter{{Type: User, Match: MatchExact}}, true},
		{[]Filter{{Type: User, Match: MatchAny}, {Type: User, Match: MatchDefault}}, true},
		{[]Filter{{Type: IP, Match: MatchAny}, {Type: ClientID, Match: MatchAny}}, true},
		{[]Filter{{Type: "topic", Match: MatchAny}}, true},
		{[]Filter{{Type: User, Match: MatchExact, Name: name("a")}, {Type: ClientID, Match: MatchDefault}}, false},
	} {
		if got := ValidateFilters(tc.fs); (got != "") != tc.bad {
			t.Errorf("%+v: %q", tc.fs, got)
		}
	}
}

// Describe's filters: exact, default and any names, strict or not.
func TestQuotaDescribe(t *testing.T) {
	ctx := context.Background()
	s := New(Options{Files: filerfstest.New()})
	for _, e := range []Entity{
		{{Type: User, Name: name("alice")}},
		{{Type: User}},
		{{Type: User, Name: name("alice")}, {Type: ClientID, Name: name("app")}},
		{{Type: ClientID}},
	} {
		if err := s.Alter(ctx, e, []Op{{Key: ConsumerByteRate, Value: 100}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		fs     []Filter
		strict bool
		want   int
	}{
		{nil, false, 4},
		{nil, true, 0},
		{[]Filter{{Type: User, Match: MatchAny}}, false, 3},
		{[]Filter{{Type: User, Match: MatchAny}}, true, 2},
		{[]Filter{{Type: User, Match: MatchExact, Name: name("alice")}}, false, 2},
		{[]Filter{{Type: User, Match: MatchDefault}}, false, 1},
		{[]Filter{{Type: ClientID, Match: MatchAny}}, true, 1},
	} {
		if got := s.Describe(tc.fs, tc.strict); len(got) != tc.want {
			t.Errorf("%+v strict %v: %d entries, want %d", tc.fs, tc.strict, len(got), tc.want)
		}
	}
}

// The throttle of a client over its quota is Kafka's: (rate - quota) /
// quota × the window the rate is measured over; a first burst is spread
// over samples-1 windows.
func TestQuotaThrottle(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	s := New(Options{Files: filerfstest.New(), Now: func() time.Time { return now }})
	if err := s.Alter(ctx, Entity{{Type: ClientID, Name: name("app")}}, []Op{{Key: ProducerByteRate, Value: 1000}}); err != nil {
		t.Fatal(err)
	}
	if d := s.Record(ProducerByteRate, "produce", "User:alice", "other", 1<<30); d != 0 {
		t.Errorf("a client without a quota throttled %v", d)
	}
	// 10,000 bytes over the minimum window of 10 s: exactly the quota.
	if d := s.Record(ProducerByteRate, "produce", "User:alice", "app", 10_000); d != 0 {
		t.Errorf("at the quota: throttled %v", d)
	}
	// 10,000 more: 2,000 B/s over 10 s, throttled 10 s.
	if d := s.Record(ProducerByteRate, "produce", "User:alice", "app", 10_000); d != 10*time.Second {
		t.Errorf("twice the quota: throttled %v, want 10s", d)
	}
	// 12 s later the samples have expired: nothing owed.
	now = now.Add(12 * time.Second)
	if d := s.Record(ProducerByteRate, "produce", "User:bob", "app", 5_000); d != 0 {
		t.Errorf("after the window: throttled %v", d)
	}
	// The throttle is bounded by the whole window.
	if d := s.Record(ProducerByteRate, "produce", "User:bob", "app", 1<<30); d != 11*time.Second {
		t.Errorf("far over: throttled %v, want the window's 11s", d)
	}
	now = now.Add(time.Minute)
	s.dropQuiet()
	if len(s.rates) != 0 {
		t.Errorf("%d rates kept of quiet clients", len(s.rates))
	}
}

// What a produce or fetch pays for quotas: the lookup alone when no quota
// applies (the common case), and the lookup, the rate and the throttle
// when one does.
func BenchmarkRecord(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		set  bool
	}{{"no quotas", false}, {"a client's quota", true}} {
		b.Run(tc.name, func(b *testing.B) {
			s := New(Options{Files: filerfstest.New()})
			if tc.set {
				if err := s.Alter(ctx, Entity{{Type: ClientID, Name: name("app")}}, []Op{{Key: ProducerByteRate, Value: 1 << 40}}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				s.Record(ProducerByteRate, "produce", "User:alice", "app", 16<<10)
			}
		})
	}
}

// controller_mutation_rate as KIP-599's token bucket: a window of samples'
// worth at once, then strict requests refused until the bucket is back at
// 0 and permissive ones taken with a throttle; the debt is not forgotten.
func TestMutationBucket(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	s := New(Options{Files: filerfstest.New(), Now: func() time.Time { return now }})
	if ok, d := s.Mutate("User:alice", "admin", 1000, true); !ok || d != 0 {
		t.Fatalf("without a quota: %v %v", ok, d)
	}
	if err := s.Alter(ctx, Entity{{Type: User, Name: name("alice")}}, []Op{{Key: ControllerMutationRate, Value: 2}}); err != nil {
		t.Fatal(err)
	}
	// The bucket holds 2/s × 11 s = 22.
	if ok, d := s.Mutate("User:alice", "admin", 20, true); !ok || d != 0 {
		t.Fatalf("20 of 22: %v %v", ok, d)
	}
	if ok, d := s.Mutate("User:alice", "admin", 10, true); !ok || d != 0 {
		t.Fatalf("10 more, into debt (-8): %v %v", ok, d)
	}
	if ok, d := s.Mutate("User:alice", "other", 1, true); ok || d != 4*time.Second {
		t.Fatalf("strict, in debt: %v %v, want refused for 4s", ok, d)
	}
	if ok, d := s.Mutate("User:alice", "admin", 2, false); !ok || d != 5*time.Second {
		t.Fatalf("permissive, in debt: %v %v, want taken with 5s", ok, d)
	}
	now = now.Add(5 * time.Second) // back at 0
	if ok, _ := s.Mutate("User:alice", "admin", 1, true); !ok {
		t.Fatal("refused at 0")
	}
	if ok, _ := s.Mutate("User:bob", "admin", 1, true); !ok {
		t.Fatal("bob is not alice")
	}
	// A deep debt outlives the sweep.
	now = now.Add(time.Second) // at 1
	if ok, _ := s.Mutate("User:alice", "admin", 100, true); !ok {
		t.Fatal("refused at 1")
	}
	now = now.Add(30 * time.Second) // -99 + 60
	s.dropQuiet()
	if ok, d := s.Mutate("User:alice", "admin", 1, true); ok || d != 19500*time.Millisecond {
		t.Errorf("a debt of 39 after 30 s: %v %v", ok, d)
	}
}

// Two gateways altering one entity's quotas at once, each a quota of its
// own: both stay (before, the second write replaced the first's).
func TestQuotaAltersOnTwoGatewaysBothStay(t *testing.T) {
	ctx := context.Background()
	files := filerfstest.New()
	here, there := New(Options{Files: files}), New(Options{Files: files})
	e := Entity{{Type: User, Name: name("alice")}}
	files.BeforeNextWriteIf(func() {
		if err := there.Alter(ctx, e, []Op{{Key: ConsumerByteRate, Value: 2048}}); err != nil {
			t.Error(err)
		}
	})
	if err := here.Alter(ctx, e, []Op{{Key: ProducerByteRate, Value: 1024}}); err != nil {
		t.Fatal(err)
	}
	if err := here.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	got := here.Describe(nil, false)
	if len(got) != 1 || got[0].Values[ProducerByteRate] != 1024 || got[0].Values[ConsumerByteRate] != 2048 {
		t.Fatalf("quotas %+v, want both", got)
	}
}
