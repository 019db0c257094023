package e2e

// Moving from Apache Kafka with MirrorMaker 2, as docs/moving-from-kafka.md
// tells a user to: Kafka 4.4 is the source, the package's
// gateway the target, MirrorMaker 2 (connect-mirror 4.3.1, dedicated mode,
// the Maven module java/mirrormaker) runs between them.

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// mm2Excluded are the topic configs MirrorMaker 2 does not sync by default
// (its DefaultConfigPropertyFilter's config.properties.exclude).
var mm2Excluded = map[string]bool{
	"follower.replication.throttled.replicas": true,
	"leader.replication.throttled.replicas":   true,
	"message.timestamp.difference.max.ms":     true,
	"message.timestamp.type":                  true,
	"unclean.leader.election.enable":          true,
	"min.insync.replicas":                     true,
}

// TestMirrorMakerFromKafka: a topic of 3 partitions on Apache Kafka with
// configs of its own (retention.ms, retention.bytes, max.message.bytes,
// cleanup.policy, segment.bytes), 3,000 keyed records with headers, and a
// group that read partition 0 to its end and the others in part,
// committed and left; the group was tried on the gateway before (another
// topic's offset committed there), so it is there without members.
// MirrorMaker 2 with the identity replication policy and
// sync.group.offsets.enabled runs until every record is on the gateway, a
// config changed on Kafka meanwhile is synced, and the group's offsets are
// translated. Then, as a user checks before moving clients: the topic has
// its 3 partitions and every config MirrorMaker syncs has Kafka's value
// (every config Kafka describes is one the gateway knows); each partition
// holds the same records (offset, key, value, headers, timestamp) in the
// same order; the group has its offsets on the gateway, within the bound
// of checkTranslated. Producers then write to the gateway, and a member of
// the group there, resuming from those offsets, reads every record from
// where the group stopped on Kafka on, again only those the translation
// left before it.
func TestMirrorMakerFromKafka(t *testing.T) {
	t.Parallel() // on the shared gateway, touching only what it makes: beside the others at the end
	g := gw
	k := startApacheKafka(t)
	src, err := kgo.NewClient(kgo.SeedBrokers(k.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := kgo.NewClient(kgo.SeedBrokers(g.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	srcAdm, dstAdm := kadm.NewClient(src), kadm.NewClient(dst)

	topic, group := newTopic(t), newTopic(t)+"-group"
	const partitions, records = 3, 3000
	configs := map[string]string{
		"cleanup.policy":    "compact,delete", // keys are unique: compaction keeps every record
		"retention.ms":      "1209600000",     // 14 days
		"retention.bytes":   "1073741824",
		"max.message.bytes": "2097152",
		"segment.bytes":     "16777216",
	}
	set := map[string]*string{}
	for k, v := range configs {
		set[k] = kadm.StringPtr(v)
	}
	created, err := srcAdm.CreateTopic(ctxT(t), partitions, 1, set, topic)
	if err != nil || created.Err != nil {
		t.Fatalf("create %s on Kafka: %v %v", topic, err, created.Err)
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	recs := make([]*kgo.Record, records)
	for i := range recs {
		recs[i] = &kgo.Record{
			Topic: topic, Key: fmt.Appendf(nil, "key-%d", i), Value: fmt.Appendf(nil, "value-%d", i),
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
			Headers:   []kgo.RecordHeader{{Key: "n", Value: []byte(strconv.Itoa(i))}, {Key: "n", Value: nil}},
		}
	}
	if err := src.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatalf("produce to Kafka: %v", err)
	}
	source := readTopic(t, src, topic, partitions)
	ends := map[int32]int64{}
	for p, rs := range source {
		ends[p] = int64(len(rs))
		if len(rs) < 100 {
			t.Fatalf("partition %d has %d records: too few to consume part of", p, len(rs))
		}
	}

	// The group consumes partition 0 to its end and about two thirds of
	// the others on Kafka, commits where it stopped, and leaves.
	upstream := consumePart(t, k.addr, group, topic, ends)
	t.Logf("on Kafka: end offsets %v, group %s committed %v", ends, group, upstream)

	// The group was tried on the gateway already: a member consumed
	// another topic there, committed and left. Empty, without members,
	// the group is one MirrorMaker syncs (it leaves alone groups with
	// members on the target).
	trial := topic + "-trial"
	tryGroup(t, dst, group, trial)

	start := time.Now()
	if n := runJavaTests(t, "java/mirrormaker", "-Dtest=MigrationTest", "-Dmigration.source="+k.addr,
		"-Dmigration.target="+g.addr, "-Dmigration.topic="+topic, "-Dmigration.group="+group); n != 1 {
		t.Fatalf("%d tests of MigrationTest ran, want 1", n)
	}
	t.Logf("MirrorMaker 2 mirrored the topic, its configs and the group's offsets in %v", time.Since(start).Round(time.Second))

	// The topic, as kafka-topics --describe shows it.
	details, err := dstAdm.ListTopics(ctxT(t), topic)
	if err != nil || details[topic].Err != nil {
		t.Fatalf("describe %s on the gateway: %v %v", topic, err, details[topic].Err)
	}
	if n := len(details[topic].Partitions); n != partitions {
		t.Errorf("%s has %d partitions on the gateway, want %d", topic, n, partitions)
	}

	checkSyncedConfigs(t, srcAdm, dstAdm, topic)

	// Every record, in each partition's order, as it is on Kafka.
	mirrored := readTopic(t, dst, topic, partitions)
	for p := int32(0); p < partitions; p++ {
		if d := diffMirrored(source[p], mirrored[p]); d != "" {
			t.Errorf("partition %d on the gateway: %s", p, d)
		}
	}

	// The group's offsets, translated by MirrorMaker.
	fetched, err := dstAdm.FetchOffsets(ctxT(t), group)
	if err != nil {
		t.Fatalf("group %s's offsets on the gateway: %v", group, err)
	}
	if o, ok := fetched.Lookup(trial, 0); !ok || o.At != 1 {
		t.Errorf("group %s's offset of %s, committed on the gateway before: %+v, want 1", group, trial, o)
	}
	downstream := map[int32]int64{}
	for p := int32(0); p < partitions; p++ {
		o, ok := fetched.Lookup(topic, p)
		if !ok || o.Err != nil {
			t.Fatalf("group %s has no committed offset of %s/%d on the gateway: %+v", group, topic, p, o)
		}
		downstream[p] = o.At
	}
	t.Logf("on the gateway: group %s committed %v", group, downstream)
	checkTranslated(t, src, upstream, downstream, ends, topic)

	// Producers move to the gateway and write on; a member of the group
	// on the gateway resumes from the translated offsets: it misses
	// nothing from where the group stopped on Kafka, and what it reads
	// again is [downstream, upstream).
	pcl, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	want, newEnds := map[int32][]*kgo.Record{}, map[int32]int64{}
	for p := int32(0); p < partitions; p++ {
		want[p] = source[p][downstream[p]:]
		for i := range 10 {
			r := &kgo.Record{Topic: topic, Partition: p, Key: fmt.Appendf(nil, "after-%d-%d", p, i), Value: []byte("written to the gateway"),
				Timestamp: time.Now().Truncate(time.Millisecond)}
			if err := pcl.ProduceSync(ctxT(t), r).FirstErr(); err != nil {
				t.Fatalf("produce to the gateway: %v", err)
			}
			want[p] = append(want[p], r) // r.Offset is set by the produce
		}
		newEnds[p] = ends[p] + 10
	}
	resumed := resumeGroup(t, g.addr, group, topic, newEnds)
	for p := int32(0); p < partitions; p++ {
		if d := diffMirrored(want[p], resumed[p]); d != "" {
			t.Errorf("partition %d, read by the member resumed at %d: %s", p, downstream[p], d)
		}
		t.Logf("partition %d: resumed at %d, read %d records again (the group stopped at %d on Kafka, of %d)", p, downstream[p], upstream[p]-downstream[p], upstream[p], ends[p])
	}
}

// consumePart has a member of group consume topic on Kafka, partition 0
// to its end and the others to about two thirds (ends are their end
// offsets), commit there and leave the group; it returns the committed
// offsets.
func consumePart(t *testing.T, addr, group, topic string, ends map[int32]int64) map[int32]int64 {
	t.Helper()
	stop := map[int32]int64{}
	for p, end := range ends {
		stop[p] = end*2/3 + 7 // not a round number: seldom one of MirrorMaker's offset syncs
	}
	stop[0] = ends[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	reached := map[int32]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for len(reached) < len(ends) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("group %s on Kafka: only partitions %v reached %v: %v", group, reached, stop, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= stop[r.Partition] {
				reached[r.Partition] = true
			}
		})
	}
	commit := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for p, o := range stop {
		commit[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	var commitErr error
	cl.CommitOffsetsSync(ctx, commit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		for _, tp := range resp.Topics {
			for _, pp := range tp.Partitions {
				if pp.ErrorCode != 0 && commitErr == nil {
					commitErr = fmt.Errorf("partition %d: error code %d", pp.Partition, pp.ErrorCode)
				}
			}
		}
	})
	if commitErr != nil {
		t.Fatalf("group %s commits on Kafka: %v", group, commitErr)
	}
	cl.Close() // leaves the group
	return stop
}

// tryGroup has a member of group consume topic, a new topic of one
// record, on the gateway, commit and leave; the group is then empty.
func tryGroup(t *testing.T, cl *kgo.Client, group, topic string) {
	t.Helper()
	createTopicVia(t, cl, topic, 1, nil)
	produceSync(t, cl, &kgo.Record{Topic: topic, Value: []byte("tried")})
	addr := cl.OptValue(kgo.SeedBrokers).([]string)
	member, err := kgo.NewClient(kgo.SeedBrokers(addr...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for n := 0; n == 0; {
		fs := member.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("group %s on the gateway read nothing of %s: %v", group, topic, err)
		}
		n = fs.NumRecords()
	}
	if err := member.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("group %s commits on the gateway: %v", group, err)
	}
	member.Close() // leaves the group
	adm := kadm.NewClient(cl)
	eventually(t, 30*time.Second, "group "+group+" empty on the gateway", func() error {
		described, err := adm.DescribeGroups(ctxT(t), group)
		if err != nil {
			return err
		}
		if d := described[group]; d.State != "Empty" {
			return fmt.Errorf("state %s, %d members", d.State, len(d.Members))
		}
		return nil
	})
}

// resumeGroup has a member of group consume topic on the gateway from the
// group's committed offsets (from the end if it had none: a missing offset
// shows as records not read) until each partition's end (ends).
func resumeGroup(t *testing.T, addr, group, topic string, ends map[int32]int64) map[int32][]*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int32][]*kgo.Record{}
	done := func() bool {
		for p, end := range ends {
			if rs := got[p]; len(rs) == 0 || rs[len(rs)-1].Offset+1 < end {
				return false
			}
		}
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for !done() {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("the group's member on the gateway read %v of %v: %v", lastOffsets(got), ends, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], r) })
	}
	return got
}

// readTopic reads every record of a topic's partitions, from the start to
// the end offsets they have now.
func readTopic(t *testing.T, cl *kgo.Client, topic string, partitions int32) map[int32][]*kgo.Record {
	t.Helper()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	at := map[int32]kgo.Offset{}
	want := map[int32]int64{}
	for p := int32(0); p < partitions; p++ {
		o, ok := ends.Lookup(topic, p)
		if !ok || o.Err != nil {
			t.Fatalf("end offset of %s/%d: %+v", topic, p, o)
		}
		at[p], want[p] = kgo.NewOffset().AtStart(), o.Offset
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: at}))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := map[int32][]*kgo.Record{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		complete := true
		for p, end := range want {
			if rs := got[p]; end > 0 && (len(rs) == 0 || rs[len(rs)-1].Offset+1 < end) {
				complete = false
			}
		}
		if complete {
			return got
		}
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s: %v of %v: %v", topic, lastOffsets(got), want, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], r) })
	}
}

// diffMirrored describes the first difference between two runs of a
// partition's records (offset, key, value, headers, timestamp), "" if none.
func diffMirrored(want, got []*kgo.Record) string {
	for i := range min(len(want), len(got)) {
		w, g := want[i], got[i]
		switch {
		case w.Offset != g.Offset:
			return fmt.Sprintf("record %d is at offset %d, want %d", i, g.Offset, w.Offset)
		case string(w.Key) != string(g.Key) || string(w.Value) != string(g.Value):
			return fmt.Sprintf("offset %d holds %q=%q, want %q=%q", w.Offset, g.Key, g.Value, w.Key, w.Value)
		case !w.Timestamp.Equal(g.Timestamp):
			return fmt.Sprintf("offset %d has timestamp %v, want %v", w.Offset, g.Timestamp, w.Timestamp)
		case !slices.EqualFunc(w.Headers, g.Headers, func(a, b kgo.RecordHeader) bool {
			return a.Key == b.Key && string(a.Value) == string(b.Value) && (a.Value == nil) == (b.Value == nil)
		}):
			return fmt.Sprintf("offset %d has headers %v, want %v", w.Offset, g.Headers, w.Headers)
		}
	}
	if len(want) != len(got) {
		return fmt.Sprintf("%d records, want %d", len(got), len(want))
	}
	return ""
}

func lastOffsets(got map[int32][]*kgo.Record) map[int32]int64 {
	out := map[int32]int64{}
	for p, rs := range got {
		if len(rs) > 0 {
			out[p] = rs[len(rs)-1].Offset
		}
	}
	return out
}

// checkSyncedConfigs compares the topic's configs on the gateway with
// Kafka's: every config Kafka describes is one the gateway describes too
// (so that MirrorMaker's IncrementalAlterConfigs, which sets or deletes
// each of them, is taken), and each one set on Kafka that MirrorMaker
// syncs has Kafka's value, set on the topic.
func checkSyncedConfigs(t *testing.T, srcAdm, dstAdm *kadm.Client, topic string) {
	t.Helper()
	describe := func(adm *kadm.Client) map[string]kadm.Config {
		rcs, err := adm.DescribeTopicConfigs(ctxT(t), topic)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rcs.On(topic, nil)
		if err != nil || rc.Err != nil {
			t.Fatalf("describe configs of %s: %v %v", topic, err, rc.Err)
		}
		out := map[string]kadm.Config{}
		for _, c := range rc.Configs {
			out[c.Key] = c
		}
		return out
	}
	kafka, gateway := describe(srcAdm), describe(dstAdm)
	synced := 0
	for name, kc := range kafka {
		gc, ok := gateway[name]
		if !ok {
			t.Errorf("config %s: Kafka describes it, the gateway does not know it", name)
			continue
		}
		if kc.Source != kmsg.ConfigSourceDynamicTopicConfig || mm2Excluded[name] {
			continue
		}
		synced++
		if gc.MaybeValue() != kc.MaybeValue() || gc.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("config %s on the gateway: %q (%v), want Kafka's %q set on the topic", name, gc.MaybeValue(), gc.Source, kc.MaybeValue())
		}
	}
	if synced < 5 {
		t.Errorf("%d configs set on Kafka's topic, want the 5 the test set", synced)
	}
}

// checkTranslated checks the group's offsets on the gateway (downstream)
// against those on Kafka (upstream), of partitions whose end offsets are
// ends. MirrorMaker 2 translates an offset u with the newest offset sync
// (u', d') it holds at or below u: to d' if u' = u, else to d'+1, never
// further (it cannot know how many more records were mirrored). Its
// offset syncs are the records of mm2-offset-syncs.gateway.internal on
// Kafka, one every offset.lag.max (100) records at best (fewer while its
// producer has 10 unanswered), and one for the last record mirrored at
// each offset flush; it holds them sparser the further behind the newest
// they are. A topic mirrored into a new one has d' = u'. So the bound
// asserted: every downstream offset is at most upstream (no record is
// skipped) and is what one of the offset syncs at or below upstream
// gives, so that the records read again are those between that sync and
// where the group stopped, as MirrorMaker's translation allows; where
// the group had read a partition to its end, it is that end (the sync of
// the last record: nothing is read again).
func checkTranslated(t *testing.T, src *kgo.Client, upstream, downstream, ends map[int32]int64, topic string) {
	t.Helper()
	syncs := offsetSyncs(t, src, "mm2-offset-syncs.gateway.internal", topic)
	for p, u := range upstream {
		d := downstream[p]
		if d > u {
			t.Errorf("partition %d: the gateway's committed offset %d is past Kafka's %d: records %d to %d would be skipped", p, d, u, u, d-1)
			continue
		}
		if u == ends[p] && d != u {
			t.Errorf("partition %d: the group read it to its end, %d, on Kafka, and resumes at %d on the gateway", p, u, d)
		}
		possible := []int64{}
		for _, s := range syncs[p] {
			if s.upstream <= u {
				if s.upstream == u {
					possible = append(possible, s.downstream)
				} else {
					possible = append(possible, s.downstream+1)
				}
			}
		}
		t.Logf("partition %d: offset syncs %v", p, syncs[p])
		if !slices.Contains(possible, d) {
			t.Errorf("partition %d: the gateway's committed offset %d is none MirrorMaker's offset syncs at or below %d give (%v)", p, d, u, possible)
		}
	}
}

type offsetSync struct{ upstream, downstream int64 }

// offsetSyncs reads MirrorMaker's offset syncs of a topic, by partition,
// from its syncs topic: keys are the topic (a 2-byte length and the name)
// and the partition (4 bytes), values the upstream and downstream offsets
// (8 bytes each), big-endian.
func offsetSyncs(t *testing.T, cl *kgo.Client, syncsTopic, topic string) map[int32][]offsetSync {
	t.Helper()
	out := map[int32][]offsetSync{}
	for _, r := range readTopic(t, cl, syncsTopic, 1)[0] {
		k, v := r.Key, r.Value
		if len(k) < 2 || len(v) != 16 {
			t.Fatalf("offset sync at %d: key %x, value %x", r.Offset, k, v)
		}
		n := int(binary.BigEndian.Uint16(k))
		if len(k) != 2+n+4 {
			t.Fatalf("offset sync at %d: key %x", r.Offset, k)
		}
		if string(k[2:2+n]) != topic {
			continue
		}
		p := int32(binary.BigEndian.Uint32(k[2+n:]))
		out[p] = append(out[p], offsetSync{int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))})
	}
	return out
}
