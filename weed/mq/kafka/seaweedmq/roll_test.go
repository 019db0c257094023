package seaweedmq

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/mq/topic"
	"github.com/seaweedfs/seaweedfs/weed/operation"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
)

func TestRollingOf(t *testing.T) {
	r := rollingOf(map[string]string{"segment.bytes": "1048576", "segment.ms": "500", "segment.jitter.ms": "100"})
	if r.bytes != 1<<20 || r.age != 500*time.Millisecond || r.jitter != 100*time.Millisecond {
		t.Fatalf("rolling %+v", r)
	}
	if got := rollingOf(nil); got != defaultRolling {
		t.Fatalf("no settings: %+v, want Kafka's defaults", got)
	}
	if got := r.flushBytes(); got != 1<<20 {
		t.Fatalf("flush at %d bytes, want segment.bytes", got)
	}
	if got := defaultRolling.flushBytes(); got != maxTailBytes {
		t.Fatalf("flush at %d bytes by default, want %d", got, maxTailBytes)
	}
	if got := defaultRolling.flushAge("d", 0); got != tailFlushAge {
		t.Fatalf("flush age %v by default, want %v", got, tailFlushAge)
	}
	// The jitter takes a share of segment.ms, fixed per segment, and
	// differs between segments.
	seen := map[time.Duration]bool{}
	for first := range int64(50) {
		age := r.flushAge("/topics/kafka/t/v/0000-0001", first)
		if age <= 400*time.Millisecond || age > 500*time.Millisecond {
			t.Fatalf("flush age %v with segment.ms 500 and jitter 100", age)
		}
		if again := r.flushAge("/topics/kafka/t/v/0000-0001", first); again != age {
			t.Fatalf("flush age %v, then %v, for one segment", age, again)
		}
		seen[age] = true
	}
	if len(seen) < 10 {
		t.Fatalf("%d distinct jitters over 50 segments", len(seen))
	}
}

func TestRollName(t *testing.T) {
	for _, c := range []struct{ newest, want string }{
		{"2026-12-07-19-10-27", "2026-12-07-19-10-27.000001"},
		{"2026-12-07-19-10-27.000001", "2026-12-07-19-10-27.000002"},
		{"2026-12-07-19-10-27.000099", "2026-12-07-19-10-27.000100"},
	} {
		got := rollName(c.newest)
		if got != c.want {
			t.Fatalf("after %s: %s, want %s", c.newest, got, c.want)
		}
		if got <= c.newest || got >= "2026-12-07-19-10-28" {
			t.Fatalf("%s does not sort after %s and before the next second", got, c.newest)
		}
		// The cleaner and SeaweedMQ's tools read a segment's time from
		// its name: the sequence reads as a fraction of its second.
		named, err := time.Parse(topic.TIME_FORMAT, got)
		if err != nil || named.Unix() != time.Date(2026, 12, 7, 19, 10, 27, 0, time.UTC).Unix() {
			t.Fatalf("%s parses as %v (%v)", got, named, err)
		}
	}
}

func TestSplitTail(t *testing.T) {
	var batches []*tailBatch
	for i := range 10 {
		batches = append(batches, &tailBatch{base: int64(i), n: 1, recs: make([]byte, 100-(4+1+10))})
	}
	segs := splitTail(batches, 250) // two batches a segment
	if len(segs) != 5 {
		t.Fatalf("%d segments, want 5", len(segs))
	}
	for i, s := range segs {
		if len(s) != 2 || s[0].base != int64(2*i) {
			t.Fatalf("segment %d: %d batches from %d", i, len(s), s[0].base)
		}
	}
	// A batch larger than segment.bytes is a segment of its own.
	big := []*tailBatch{{base: 0, n: 1, recs: make([]byte, 1000)}, {base: 1, n: 1, recs: make([]byte, 10)}}
	if segs := splitTail(big, 250); len(segs) != 2 || len(segs[0]) != 1 {
		t.Fatalf("a batch over segment.bytes: %d segments", len(segs))
	}
	if segs := splitTail(batches, defaultRolling.bytes); len(segs) != 1 {
		t.Fatalf("%d segments with the default segment.bytes, want 1", len(segs))
	}
}

// Segments written within one second join the newest segment's file while
// it stays within segment.bytes, and roll to a file of their own past it,
// or at once when the topic's segment.ms is shorter than the flusher's
// writes; a segment an MQ broker wrote is never joined.
func TestSegmentsRoll(t *testing.T) {
	const dir = "/topics/kafka/t/v/0000-0001"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A second well ahead: every write's own name sorts before it.
	second := time.Now().Add(time.Hour).UTC().Format(topic.TIME_FORMAT)
	files := func(f *segmentFiler) string {
		f.mu.Lock()
		defer f.mu.Unlock()
		var names []string
		for name := range f.entries {
			names = append(names, name)
		}
		sort.Strings(names)
		for i, name := range names {
			names[i] = strings.TrimPrefix(name, second) + ":" + strconv.Itoa(len(f.entries[name].Chunks))
		}
		return strings.Join(names, " ")
	}
	write := func(c *Client, r rolling, first int64) {
		t.Helper()
		err := c.saveSegment(ctx, dir, r, first, first+9, time.Now().UnixNano(), "1,"+strconv.Itoa(int(first)), &operation.UploadResult{Size: 100})
		if err != nil {
			t.Fatalf("segment from %d: %v", first, err)
		}
	}

	start := func(f *segmentFiler) *Client {
		c := startSegmentFiler(t, f)
		c.segs.knowEnd(segment{entry: f.entries[second]}.key(dir), 10)
		return c
	}

	f := &segmentFiler{entries: map[string]*filer_pb.Entry{second: segmentEntry(second, 0, 9, "1,a")}}
	c := start(f)
	r := rolling{bytes: 250, age: time.Hour}
	for first := int64(10); first < 60; first += 10 {
		write(c, r, first)
	}
	// 100 bytes a segment, 250 a file: two segments a file.
	if got, want := files(f), ":2 .000001:2 .000002:2"; got != want {
		t.Fatalf("segment files %q, want %q", got, want)
	}

	f = &segmentFiler{entries: map[string]*filer_pb.Entry{second: segmentEntry(second, 0, 9, "1,a")}}
	c = start(f)
	r = rolling{bytes: 1 << 30, age: 500 * time.Millisecond}
	for first := int64(10); first < 40; first += 10 {
		write(c, r, first)
	}
	if got, want := files(f), ":1 .000001:1 .000002:1 .000003:1"; got != want {
		t.Fatalf("segment.ms 500: segment files %q, want %q", got, want)
	}

	// The newest segment an MQ broker's, after a gateway's.
	earlier := time.Now().UTC().Format(topic.TIME_FORMAT)
	broker := segmentEntry(second, 10, 19, "1,b")
	delete(broker.Extended, gatewaySegmentAttr)
	f = &segmentFiler{entries: map[string]*filer_pb.Entry{earlier: segmentEntry(earlier, 0, 9, "1,a"), second: broker}}
	c = startSegmentFiler(t, f)
	c.segs.knowEnd(segment{entry: f.entries[earlier]}.key(dir), 10)
	c.segs.knowEnd(segment{entry: broker}.key(dir), 20)
	write(c, defaultRolling, 20)
	delete(f.entries, earlier)
	if got, want := files(f), ":1 .000001:1"; got != want {
		t.Fatalf("after a broker's segment: files %q, want %q", got, want)
	}

	// By default, as before, a write in the newest segment's second
	// joins it.
	f = &segmentFiler{entries: map[string]*filer_pb.Entry{second: segmentEntry(second, 0, 9, "1,a")}}
	c = start(f)
	write(c, defaultRolling, 10)
	write(c, defaultRolling, 20)
	if got, want := files(f), ":3"; got != want {
		t.Fatalf("default settings: files %q, want %q", got, want)
	}
}
