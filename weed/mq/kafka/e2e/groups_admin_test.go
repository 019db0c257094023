package e2e

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestGroupAdmin: ListGroups (with state filters), DescribeGroups, lag,
// OffsetDelete and DeleteGroups on an active group, an empty one and an
// unknown one.
func TestGroupAdmin(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 4, nil)
	counts := []int{10, 20, 30, 0}
	var recs []*kgo.Record
	for p, n := range counts {
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(fmt.Sprintf("p%d-%d", p, i))})
		}
	}
	produceSync(t, newClient(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), recs...)
	adm := kadm.NewClient(newClient(t))
	ctx := ctxT(t)
	active, empty, unknown := topic+"-active", topic+"-empty", topic+"-unknown"

	// An active group: one member owns all four partitions and commits two
	// of them.
	const clientID = "e2e-admin-member"
	mcl, closeMember := groupClient(t, clientID, active, topic, kgo.Balancers(kgo.RangeBalancer()))
	eventually(t, 30*time.Second, "member assigned", func() error {
		d, err := describe(ctx, adm, active)
		if err != nil {
			return err
		}
		if d.State != "Stable" || len(d.Members) != 1 || len(assignedTo(d.Members[0], topic)) != 4 {
			return fmt.Errorf("state %q, members %+v", d.State, d.Members)
		}
		return nil
	})
	var commitErr error
	mcl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: {0: {Epoch: -1, Offset: 4}, 1: {Epoch: -1, Offset: 20}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			commitErr = err
			if resp == nil {
				return
			}
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
						commitErr = fmt.Errorf("partition %d: %w", rp.Partition, err)
					}
				}
			}
		})
	if commitErr != nil {
		t.Fatalf("member's commit: %v", commitErr)
	}

	d, err := describe(ctx, adm, active)
	if err != nil {
		t.Fatal(err)
	}
	if d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "range" || len(d.Members) != 1 {
		t.Fatalf("described %+v", d)
	}
	dm := d.Members[0]
	memberID, _ := mcl.GroupMetadata()
	if dm.MemberID != memberID || dm.ClientID != clientID || dm.ClientHost == "" || dm.InstanceID != nil {
		t.Errorf("member %q client %q host %q instance %v; want member %q client %q", dm.MemberID, dm.ClientID, dm.ClientHost, dm.InstanceID, memberID, clientID)
	}
	if join, ok := dm.Join.AsConsumer(); !ok || !slices.Equal(join.Topics, []string{topic}) {
		t.Errorf("member joined for %+v", dm.Join)
	}
	if got := assignedTo(dm, topic); !slices.Equal(got, []int32{0, 1, 2, 3}) {
		t.Errorf("member assigned %v", got)
	}

	// Lag is the high watermark minus the commit; with no commit, the
	// whole partition.
	checkLag := func(want map[int32]int64, commits map[int32]int64, withMember bool) {
		t.Helper()
		lags, err := adm.Lag(ctx, active)
		if err != nil {
			t.Fatal(err)
		}
		l := lags[active]
		if err := l.Error(); err != nil {
			t.Fatal(err)
		}
		var total int64
		for p, w := range want {
			gl, ok := l.Lag.Lookup(topic, p)
			switch {
			case !ok || gl.Err != nil:
				t.Errorf("partition %d: no lag (%v)", p, gl.Err)
			case gl.Lag != w || gl.End.Offset != int64(counts[p]) || gl.Commit.At != commits[p]:
				t.Errorf("partition %d: lag %d (end %d, commit %d), want %d (end %d, commit %d)", p, gl.Lag, gl.End.Offset, gl.Commit.At, w, counts[p], commits[p])
			case withMember && (gl.Member == nil || gl.Member.ClientID != clientID):
				t.Errorf("partition %d: lag of member %+v", p, gl.Member)
			case !withMember && gl.Member != nil:
				t.Errorf("partition %d: lag of member %+v in an empty group", p, gl.Member)
			}
			total += w
		}
		if got := l.Lag.Total(); got != total {
			t.Errorf("total lag %d, want %d", got, total)
		}
	}
	checkLag(map[int32]int64{0: 6, 1: 0, 2: 30, 3: 0}, map[int32]int64{0: 4, 1: 20, 2: -1, 3: -1}, true)

	// An empty group, made by commits from outside any group.
	var offsets kadm.Offsets
	offsets.AddOffset(topic, 0, 5, -1)
	offsets.AddOffset(topic, 1, 7, -1)
	if err := adm.CommitAllOffsets(ctx, empty, offsets); err != nil {
		t.Fatal(err)
	}

	// ListGroups, all and by state.
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := listed[active]; !ok || g.ProtocolType != "consumer" || g.State != "Stable" {
		t.Errorf("ListGroups: %s listed %v as %+v", active, ok, g)
	}
	if g, ok := listed[empty]; !ok || g.State != "Empty" {
		t.Errorf("ListGroups: %s listed %v as %+v", empty, ok, g)
	}
	for state, want := range map[string]string{"Stable": active, "Empty": empty} {
		listed, err := adm.ListGroups(ctx, state)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range []string{active, empty} {
			if _, ok := listed[g]; ok != (g == want) {
				t.Errorf("ListGroups(%s) lists %s: %v", state, g, ok)
			}
		}
	}

	// OffsetDelete: refused for a topic the group consumes, done in an
	// empty group.
	del, err := adm.DeleteOffsets(ctx, active, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := del.Lookup(topic, 0); !errors.Is(e, kerr.GroupSubscribedToTopic) {
		t.Errorf("OffsetDelete in the active group: %v, want GROUP_SUBSCRIBED_TO_TOPIC", e)
	}
	del, err = adm.DeleteOffsets(ctx, empty, kadm.TopicsSet{topic: {1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := del.Lookup(topic, 1); !ok || e != nil {
		t.Errorf("OffsetDelete in the empty group: %v (answered %v)", e, ok)
	}
	if got, err := committed(ctx, adm, empty, topic); err != nil || !maps.Equal(got, map[int32]int64{0: 5}) {
		t.Errorf("empty group after OffsetDelete: %v %v, want partition 0 at 5", got, err)
	}
	if got, err := committed(ctx, adm, active, topic); err != nil || !maps.Equal(got, map[int32]int64{0: 4, 1: 20}) {
		t.Errorf("active group after a refused OffsetDelete: %v %v", got, err)
	}

	// DeleteGroups: not while a member is in, yes when empty, and an
	// unknown group is not found.
	dr, err := adm.DeleteGroups(ctx, active, empty, unknown)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(dr[active].Err, kerr.NonEmptyGroup) {
		t.Errorf("delete active group: %v, want NON_EMPTY_GROUP", dr[active].Err)
	}
	if dr[empty].Err != nil {
		t.Errorf("delete empty group: %v", dr[empty].Err)
	}
	if !errors.Is(dr[unknown].Err, kerr.GroupIDNotFound) {
		t.Errorf("delete unknown group: %v, want GROUP_ID_NOT_FOUND", dr[unknown].Err)
	}
	if got, err := committed(ctx, adm, empty, topic); err != nil || len(got) != 0 {
		t.Errorf("deleted group's commits: %v %v", got, err)
	}
	if listed, err := adm.ListGroups(ctx); err != nil || listed[empty].Group != "" {
		t.Errorf("deleted group still listed: %v %+v", err, listed[empty])
	}

	// The member leaves: the group is Empty, its lag is the same (kadm
	// counts every partition of a committed topic, uncommitted ones from
	// offset 0) with no member named, and it can be deleted.
	closeMember()
	eventually(t, 30*time.Second, "active group empty", func() error {
		d, err := describe(ctx, adm, active)
		if err != nil {
			return err
		}
		if d.State != "Empty" || len(d.Members) != 0 {
			return fmt.Errorf("state %q with %d members", d.State, len(d.Members))
		}
		return nil
	})
	checkLag(map[int32]int64{0: 6, 1: 0, 2: 30, 3: 0}, map[int32]int64{0: 4, 1: 20, 2: -1, 3: -1}, false)
	if _, err := adm.DeleteGroup(ctx, active); err != nil {
		t.Fatalf("delete group once empty: %v", err)
	}
	if got, err := committed(ctx, adm, active, topic); err != nil || len(got) != 0 {
		t.Errorf("deleted group's commits: %v %v", got, err)
	}
	if d, err := describe(ctx, adm, active); !errors.Is(err, kerr.GroupIDNotFound) && (err != nil || d.State != "Dead") {
		t.Errorf("deleted group described: %+v %v, want Dead or GROUP_ID_NOT_FOUND", d, err)
	}
}

// TestGroupSimpleCommit: commits from a consumer outside any group
// (generation -1, no member id) to a group nobody joined, read back with
// their metadata and leader epochs, and where a group member starts.
func TestGroupSimpleCommit(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 2, nil)
	var recs []*kgo.Record
	for i := 0; i < 8; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprintf("p0-%d", i))})
	}
	for i := 0; i < 2; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 1, Value: []byte(fmt.Sprintf("p1-%d", i))})
	}
	produceSync(t, newClient(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), recs...)
	group := topic + "-simple"
	adm := kadm.NewClient(newClient(t))
	ctx := ctxT(t)
	commit := func(os ...kadm.Offset) {
		t.Helper()
		var offsets kadm.Offsets
		for _, o := range os {
			offsets.Add(o)
		}
		resp, err := adm.CommitOffsets(ctx, group, offsets)
		if err != nil {
			t.Fatal(err)
		}
		if err := resp.Error(); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want ...kadm.Offset) {
		t.Helper()
		got, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || len(got[topic]) != len(want) {
			t.Fatalf("fetched %+v, want %+v", got, want)
		}
		for _, w := range want {
			o, _ := got.Lookup(topic, w.Partition)
			if o.Err != nil || o.At != w.At || o.LeaderEpoch != w.LeaderEpoch || o.Metadata != w.Metadata {
				t.Errorf("partition %d: offset %d epoch %d metadata %q (%v), want %d epoch %d metadata %q",
					w.Partition, o.At, o.LeaderEpoch, o.Metadata, o.Err, w.At, w.LeaderEpoch, w.Metadata)
			}
		}
	}

	p0 := kadm.Offset{Topic: topic, Partition: 0, At: 3, LeaderEpoch: 2, Metadata: "checkpoint a"}
	p1 := kadm.Offset{Topic: topic, Partition: 1, At: 0, LeaderEpoch: -1}
	commit(p0, p1)
	check(p0, p1)
	// A later commit replaces one partition's.
	p0 = kadm.Offset{Topic: topic, Partition: 0, At: 5, LeaderEpoch: -1}
	commit(p0)
	check(p0, p1)

	// Nobody joined: the group exists for its offsets, Empty.
	d, err := describe(ctx, adm, group)
	if err != nil || d.State != "Empty" || len(d.Members) != 0 {
		t.Errorf("described %+v %v, want Empty with no members", d, err)
	}
	if listed, err := adm.ListGroups(ctx, "Empty"); err != nil || listed[group].Group != group {
		t.Errorf("ListGroups(Empty) lists %s: %v %v", group, listed[group], err)
	}

	// A group member starts where the commits say.
	cl, done := groupClient(t, "resumer", group, topic)
	next := map[int32]int64{0: 5, 1: 0}
	for _, r := range pollN(t, cl, 5) {
		if r.Offset != next[r.Partition] {
			t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
		}
		next[r.Partition]++
	}
	done()

	// Unknown topics and partitions: by name (OffsetCommit v9), by id (v10).
	v9 := kversion.Stable()
	v9.SetMaxKeyVersion(int16(kmsg.OffsetCommit), 9)
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = group, -1, ""
	for _, tp := range []struct {
		topic     string
		partition int32
	}{{topic + "-missing", 0}, {topic, 7}} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = tp.topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = tp.partition, 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, newClient(t, kgo.MaxVersions(v9)))
	if err != nil {
		t.Fatal(err)
	}
	if req.Version != 9 || len(resp.Topics) != 2 {
		t.Fatalf("OffsetCommit v%d answered %d topics", req.Version, len(resp.Topics))
	}
	for _, rt := range resp.Topics {
		if len(rt.Partitions) != 1 || rt.Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("commit to %s: %+v, want UNKNOWN_TOPIC_OR_PARTITION", rt.Topic, rt.Partitions)
		}
	}
	byID := kmsg.NewPtrOffsetCommitRequest()
	byID.Group, byID.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = topic+"-missing", [16]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = 1
	rt.Partitions = append(rt.Partitions, rp)
	byID.Topics = append(byID.Topics, rt)
	resp, err = byID.RequestWith(ctx, newClient(t))
	if err != nil {
		t.Fatal(err)
	}
	want := kerr.UnknownTopicOrPartition
	if byID.Version >= 10 {
		want = kerr.UnknownTopicID
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != want.Code {
		t.Errorf("OffsetCommit v%d to an unknown topic id: %+v, want %v", byID.Version, resp.Topics, want)
	}
	// Nothing of those was stored.
	check(p0, p1)
}

// A topic deleted and created again under its name starts with no
// committed offsets in any group, as in Kafka (it once inherited the old
// topic's, so its consumers skipped records).
func TestRecreatedTopicStartsWithoutOffsets(t *testing.T) {
	topic, group := newTopic(t), newTopic(t)+"-g"
	createTopic(t, topic, 1, nil)
	adm := kadm.NewClient(newClient(t))
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: topic, Partition: 0, At: 5, LeaderEpoch: -1})
	if res, err := adm.CommitOffsets(ctxT(t), group, commit); err != nil || res.Error() != nil {
		t.Fatalf("commit: %v %v", err, res.Error())
	}
	fetched := func() int64 {
		t.Helper()
		res, err := adm.FetchOffsets(ctxT(t), group)
		if err != nil || res.Error() != nil {
			t.Fatalf("fetch: %v %v", err, res.Error())
		}
		if o, ok := res.Lookup(topic, 0); ok {
			return o.At
		}
		return -1
	}
	if got := fetched(); got != 5 {
		t.Fatalf("committed %d, want 5", got)
	}
	if _, err := adm.DeleteTopics(ctxT(t), topic); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the topic is created again", func() error {
		resp, err := adm.CreateTopic(ctxT(t), 1, 1, nil, topic)
		if err != nil {
			return err
		}
		return resp.Err
	})
	if got := fetched(); got != -1 {
		t.Fatalf("the new topic has the old one's offset %d", got)
	}
}
