package quota

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
)

// Two gateways on one filer: a client producing to both is held to its
// quota in all, each gateway counting what the other measured; a gateway
// whose rates stop changing (stopped, cut off) fades from the count, and
// its file goes after a while.
func TestSharedRates(t *testing.T) {
	ctx := context.Background()
	files := filerfstest.New()
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	a := New(Options{Files: files, Now: clock, Node: "1"})
	b := New(Options{Files: files, Now: clock, Node: "2"})
	if err := a.Alter(ctx, Entity{{Type: User, Name: name("alice")}}, []Op{{Key: ProducerByteRate, Value: 1000}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{a, b} {
		if err := s.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// 8,000 bytes on each gateway over the 10 s minimum window: 800 B/s
	// each, within the quota on each alone.
	if d := a.Record(ProducerByteRate, "produce", "User:alice", "x", 8000); d != 0 {
		t.Fatalf("gateway 1 alone: throttled %v", d)
	}
	if d := b.Record(ProducerByteRate, "produce", "User:alice", "y", 8000); d != 0 {
		t.Fatalf("gateway 2 alone: throttled %v", d)
	}
	// They share: the first read of another's file waits for a change
	// (it may be a gateway long gone), the next counts it.
	for range 3 {
		a.share(ctx)
		b.share(ctx)
	}
	// What gateway 2 shares is its average: 8,000 bytes over the 11 s
	// horizon.
	sensor := Sensor{Key: ProducerByteRate, User: "alice", ByUser: true}
	if got := a.remoteRate(sensor); math.Abs(got-8000.0/11) > 0.01 {
		t.Fatalf("gateway 1 reads gateway 2's rate as %v, want %v", got, 8000.0/11)
	}
	// Each gateway served half: each holds alice to half the quota, 500
	// B/s, and throttles its 800 B/s (800.1 − 500) / 500 × 10 s.
	d := a.Record(ProducerByteRate, "produce", "User:alice", "x", 1)
	if d < 6*time.Second || d > 6100*time.Millisecond {
		t.Fatalf("shared: throttled %v, want about 6s", d)
	}
	// After a quiet while (the samples expire; the averages keep the
	// split), a burst is allowed from the share alone: 5,000 bytes on
	// gateway 1, not the 10,000 it would allow by itself.
	now = now.Add(12 * time.Second)
	for range 2 {
		a.share(ctx)
		b.share(ctx)
	}
	if d := a.Record(ProducerByteRate, "produce", "User:alice", "x", 4900); d != 0 {
		t.Fatalf("a burst within the share: throttled %v", d)
	}
	if d := a.Record(ProducerByteRate, "produce", "User:alice", "x", 1000); d == 0 {
		t.Fatal("a burst past the share, within the whole quota, not throttled")
	}
	// Another user on either gateway is not affected.
	if d := b.Record(ProducerByteRate, "produce", "User:bob", "x", 8000); d != 0 {
		t.Errorf("a user without a quota throttled %v", d)
	}
	// Gateway 2 stops sharing (gateway 1 reads its last file at the next
	// share): its rate counts in full for usageStale, then fades as its
	// average would with nothing measured; after three horizons it is a
	// twentieth of what it was.
	now = now.Add(ShareEvery)
	a.share(ctx)
	shared := a.remoteRate(sensor)
	for range 3 {
		now = now.Add(ShareEvery)
		a.share(ctx)
	}
	if got := a.remoteRate(sensor); got != shared {
		t.Errorf("a gateway silent for %v counted %v, want %v", usageStale, got, shared)
	}
	now = now.Add(ShareEvery)
	a.share(ctx)
	if got := a.remoteRate(sensor); got >= shared || got < shared/2 {
		t.Errorf("a gateway silent for %v counted %v of %v: want it fading", usageStale+ShareEvery, got, shared)
	}
	for range 33 {
		now = now.Add(ShareEvery)
		a.share(ctx)
	}
	if got := a.remoteRate(sensor); got > shared/20 {
		t.Errorf("a gateway silent for 37s still counted %v of %v", got, shared)
	}
	now = now.Add(usageForget)
	a.share(ctx)
	files2, _ := files.ListFiles(ctx, UsageDir)
	for _, f := range files2 {
		if f.Name == b.usageName() {
			t.Errorf("a silent gateway's file kept after %v", usageForget)
		}
	}
	// A gateway that closes removes its file.
	a.Close()
	if files2, _ := files.ListFiles(ctx, UsageDir); len(files2) != 0 {
		t.Errorf("files left after every gateway closed: %v", len(files2))
	}
}

// A gateway with no quota'd client writes nothing, and one that has none
// left removes its file.
func TestSharedRatesQuiet(t *testing.T) {
	ctx := context.Background()
	files := filerfstest.New()
	now := time.Unix(1000, 0)
	s := New(Options{Files: files, Now: func() time.Time { return now }, Node: "1"})
	s.share(ctx)
	if fs, _ := files.ListFiles(ctx, UsageDir); len(fs) != 0 {
		t.Fatalf("%d usage files without a quota", len(fs))
	}
	if err := s.Alter(ctx, Entity{{Type: ClientID}}, []Op{{Key: ConsumerByteRate, Value: 1 << 20}}); err != nil {
		t.Fatal(err)
	}
	s.Record(ConsumerByteRate, "fetch", "User:ANONYMOUS", "c", 4096)
	s.share(ctx)
	if fs, _ := files.ListFiles(ctx, UsageDir); len(fs) != 1 {
		t.Fatalf("%d usage files with one client measured, want 1", len(fs))
	}
	now = now.Add(2 * time.Minute) // quiet: its rate is forgotten
	s.share(ctx)
	if fs, _ := files.ListFiles(ctx, UsageDir); len(fs) != 0 {
		t.Fatalf("%d usage files once the client went quiet", len(fs))
	}
}

// A client new to a gateway of three is held to a third of its quota
// until the others have had the time to share their rates of it (a client
// starting on every gateway at once takes one first burst, not three);
// then, served here alone, to all of it.
func TestSharedRatesNewClient(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	s := New(Options{Files: filerfstest.New(), Now: func() time.Time { return now }, Node: "1",
		Gateways: func() int { return 3 }})
	if err := s.Alter(ctx, Entity{{Type: ClientID, Name: name("app")}}, []Op{{Key: ProducerByteRate, Value: 1000}}); err != nil {
		t.Fatal(err)
	}
	// 1000 B/s over the 10 s minimum window: 10,000 bytes at once on a
	// single gateway; a third of that on one of three.
	if d := s.Record(ProducerByteRate, "produce", "User:alice", "app", 3300); d != 0 {
		t.Fatalf("within a third of the first burst: throttled %v", d)
	}
	if d := s.Record(ProducerByteRate, "produce", "User:alice", "app", 100); d == 0 {
		t.Fatal("past a third of the first burst at once: not throttled")
	}
	// No other gateway has said it serves the client: all of it.
	for range 3 {
		now = now.Add(ShareEvery)
		s.share(ctx)
	}
	if d := s.Record(ProducerByteRate, "produce", "User:alice", "app", 3000); d != 0 {
		t.Fatalf("the client alone on this gateway after %v: throttled %v", settle, d)
	}
}

// The shares add up to the whole: a gateway whose own average rises at
// once (a burst) does not take more than the others' last shares leave
// until they have read it and given theirs up; and a client over its
// quota in all, each gateway within its share (the least share kept by a
// gateway that serves little), is throttled by the rates the others
// measure.
func TestSharedRatesWhole(t *testing.T) {
	ctx := context.Background()
	files := filerfstest.New()
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	a := New(Options{Files: files, Now: clock, Node: "1"})
	b := New(Options{Files: files, Now: clock, Node: "2"})
	if err := a.Alter(ctx, Entity{{Type: ClientID, Name: name("app")}}, []Op{{Key: ProducerByteRate, Value: 1000}}); err != nil {
		t.Fatal(err)
	}
	b.Refresh(ctx)
	sensor := Sensor{Key: ProducerByteRate, ClientID: "app", ByClient: true}
	share := func(s *Store) float64 {
		s.ratesMu.Lock()
		defer s.ratesMu.Unlock()
		return s.shares[sensor]
	}
	produce := func(s *Store, n int64) time.Duration { return s.Record(ProducerByteRate, "produce", "", "app", n) }
	produce(a, 4000)
	produce(b, 4000)
	for range 3 {
		a.share(ctx)
		b.share(ctx)
	}
	if sa, sb := share(a), share(b); math.Abs(sa-0.5) > 0.01 || math.Abs(sb-0.5) > 0.01 {
		t.Fatalf("shares of an even split: %.3f and %.3f", sa, sb)
	}
	// A burst on gateway 1: by the averages two thirds of the client is
	// its; gateway 2's last share leaves it half.
	produce(a, 8000)
	a.share(ctx)
	if sa := share(a); math.Abs(sa-0.5) > 0.01 {
		t.Fatalf("gateway 1's share after its burst, before gateway 2 read it: %.3f, want 0.5", sa)
	}
	b.share(ctx)
	a.share(ctx)
	if sa, sb := share(a), share(b); math.Abs(sa-0.75) > 0.01 || math.Abs(sb-0.25) > 0.01 {
		t.Fatalf("shares once both have read the burst: %.3f and %.3f", sa, sb)
	}

	// Another client: 9,500 bytes on gateway 1, 500 on gateway 2 (its
	// share 5%, kept at 10%): 1,000 B/s in all over the 10 s window.
	now = now.Add(time.Minute)
	a.Alter(ctx, Entity{{Type: ClientID, Name: name("other")}}, []Op{{Key: ProducerByteRate, Value: 1000}})
	b.Refresh(ctx)
	other := func(s *Store, n int64) time.Duration { return s.Record(ProducerByteRate, "produce", "", "other", n) }
	other(a, 9500)
	other(b, 500)
	for range 3 {
		a.share(ctx)
		b.share(ctx)
	}
	// 400 bytes more on gateway 2: 90 B/s there, within its 100 B/s;
	// 1,040 B/s in all, throttled (1040 − 1000) / 1000 × 10 s.
	if d := other(b, 400); d < 390*time.Millisecond || d > 410*time.Millisecond {
		t.Errorf("a client over its quota in all, within the share of the gateway: throttled %v, want 400ms", d)
	}
}

// request_percentage: the time worked on requests, in percent of a
// second per second, throttled at most one window.
func TestRequestQuota(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	s := New(Options{Files: filerfstest.New(), Now: func() time.Time { return now }})
	if s.HasRequestQuota("User:alice", "app") {
		t.Fatal("a request quota without one set")
	}
	if err := s.Alter(ctx, Entity{{Type: ClientID, Name: name("app")}}, []Op{{Key: RequestPercentage, Value: 10}}); err != nil {
		t.Fatal(err)
	}
	if !s.HasRequestQuota("User:alice", "app") || s.HasRequestQuota("User:alice", "other") {
		t.Fatal("the request quota applies to the wrong clients")
	}
	// 10% of the 10 s minimum window is 1 s of work.
	if d := s.RecordTime("User:alice", "app", time.Second); d != 0 {
		t.Errorf("at the quota: throttled %v", d)
	}
	// 0.5 s more: 15% against 10%: half the window, bounded by one window.
	if d := s.RecordTime("User:alice", "app", 500*time.Millisecond); d != time.Second {
		t.Errorf("over the quota: throttled %v, want one window (1s)", d)
	}
}

// connection_creation_rate: each IP measured on its own against its quota
// or the default's; a refused connection does not count.
func TestConnectionQuota(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	s := New(Options{Files: filerfstest.New(), Now: func() time.Time { return now }})
	if d := s.Connect("10.0.0.1"); d != 0 {
		t.Fatalf("throttled without a quota: %v", d)
	}
	if err := s.Alter(ctx, Entity{{Type: IP}}, []Op{{Key: ConnectionCreationRate, Value: 2}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Alter(ctx, Entity{{Type: IP, Name: name("10.0.0.2")}}, []Op{{Key: ConnectionCreationRate, Value: 100}}); err != nil {
		t.Fatal(err)
	}
	// 2/s over the 10 s minimum window: 20 connections at once.
	for i := range 20 {
		if d := s.Connect("10.0.0.1"); d != 0 {
			t.Fatalf("connection %d throttled %v", i, d)
		}
	}
	d := s.Connect("10.0.0.1")
	if d <= 0 {
		t.Fatal("the 21st connection at once was not throttled")
	}
	if d2 := s.Connect("10.0.0.1"); d2 != d {
		t.Errorf("a refused connection counted: the next throttled %v, want %v", d2, d)
	}
	// Another IP has its own rate under the default, one its own quota.
	if d := s.Connect("10.0.0.3"); d != 0 {
		t.Errorf("another IP throttled %v", d)
	}
	for i := range 100 {
		if d := s.Connect("10.0.0.2"); d != 0 {
			t.Fatalf("10.0.0.2's connection %d throttled %v under its own quota", i, d)
		}
	}
}

// remoteRate is the average rate the other gateways measure of a sensor, as
// last read.
func (s *Store) remoteRate(sensor Sensor) float64 {
	s.ratesMu.Lock()
	defer s.ratesMu.Unlock()
	return s.remote[sensor].avg
}
