package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
)

func subscription(topics ...string) string {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = topics
	return string(meta.AppendTo(nil))
}

func offsetsOf(t *testing.T, c *Coordinator, group string) offset.Topics {
	t.Helper()
	got, e := c.FetchOffsets(context.Background(), group, nil)
	if e != nil {
		t.Fatal(e)
	}
	return got
}

// Committed offsets expire as Kafka's offsets.retention.minutes says, and
// a group left empty without offsets goes too: they were kept forever, and
// every group ever seen stayed in the filer and in each listing.
func TestOffsetsExpire(t *testing.T) {
	files := filerfstest.New()
	c := newCoordinator(t, files)
	ctx := context.Background()
	day := 24 * time.Hour

	// A group that only commits: each offset a retention after its commit.
	if e := c.CommitOffsets(ctx, "simple", Committer{Generation: -1}, offset.Topics{"t": {0: {Offset: 7}, 1: {Offset: 9}}}); e != nil {
		t.Fatal(e)
	}
	c.ExpireOffsets(time.Now().Add(6 * day))
	if got := offsetsOf(t, c, "simple"); len(got["t"]) != 2 {
		t.Fatalf("offsets 6 days after their commit: %v", got)
	}
	c.ExpireOffsets(time.Now().Add(8 * day))
	if got := offsetsOf(t, c, "simple"); len(got) != 0 {
		t.Fatalf("offsets 8 days after their commit: %v", got)
	}
	if d := c.Describe(ctx, "simple", 6); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("the emptied group is still there: %v %s", kerr.ErrorForCode(d.ErrorCode), d.State)
	}
	if listed, _ := c.List(ctx); len(listed) != 0 {
		t.Fatalf("listed after expiry: %v", listed)
	}

	// A consumer group with a member subscribed to t keeps t's offsets
	// however old; u's, which no member subscribes to, expire.
	j := &joiner{c: c, group: "live", session: 5000, meta: subscription("t")}
	jr := j.join(t)
	if s := j.sync(t, jr.Generation, map[string]string{j.id: ""}); s.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(s.ErrorCode))
	}
	member := Committer{Generation: jr.Generation, MemberID: j.id}
	if e := c.CommitOffsets(ctx, "live", member, offset.Topics{"t": {0: {Offset: 5}}, "u": {0: {Offset: 6}}}); e != nil {
		t.Fatal(e)
	}
	// An offset committed a month ago, while the group had members.
	monthAgo := time.Now().Add(-30 * day).UnixMilli()
	if err := <-c.opts.Store.Commit("live", offset.Topics{"t": {1: {Offset: 3, CommitTime: monthAgo}}}); err != nil {
		t.Fatal(err)
	}
	c.ExpireOffsets(time.Now().Add(8 * day))
	if got := offsetsOf(t, c, "live"); len(got["t"]) != 2 || got["u"] != nil {
		t.Fatalf("a stable group's offsets after 8 days: %v", got)
	}

	// Once it is empty, its offsets are kept for the retention from then
	// on, however old their commits, also across a restart.
	if _, e := c.LeaveGroup(ctx, "live", []Leaving{{MemberID: j.id}}); e != nil {
		t.Fatal(e)
	}
	if d := c.Describe(ctx, "live", 5); d.State != string(Empty) {
		t.Fatalf("after the last member left: %s", d.State)
	}
	// A restart: the first coordinator stops (saving the group as it
	// left it: the leave's save may still be under way when LeaveGroup
	// answers), another loads it.
	c.Close()
	c2 := newCoordinator(t, files)
	c2.ExpireOffsets(time.Now().Add(time.Hour))
	if got := offsetsOf(t, c2, "live"); len(got["t"]) != 2 {
		t.Fatalf("offsets an hour after the group emptied: %v", got)
	}
	c2.ExpireOffsets(time.Now().Add(8 * day))
	if got := offsetsOf(t, c2, "live"); len(got) != 0 {
		t.Fatalf("offsets 8 days after the group emptied: %v", got)
	}
	if d := c2.Describe(ctx, "live", 6); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("the emptied group is still there: %v", kerr.ErrorForCode(d.ErrorCode))
	}
}
