package group

// What consumer groups show: ConsumerGroupDescribe, and the member check
// of OffsetFetch v9+.

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describing is the group ConsumerGroupDescribe or ShareGroupDescribe
// describes, loaded, with the names of its topics known; or the error, and
// its message, to answer.
func (c *Coordinator) describing(ctx context.Context, name string) (*group, *kerr.Error, string) {
	if name == "" {
		return nil, kerr.InvalidGroupID, ""
	}
	g, e := c.lookup(ctx, name, false)
	if e != nil {
		return nil, e, ""
	}
	if g == nil {
		return nil, kerr.GroupIDNotFound, fmt.Sprintf("Group %s not found.", name)
	}
	if c.topics.ensure(ctx, name, nil, nil) { // its topics' names, for a group just loaded
		c.topicsChanged()
	}
	return g, nil, ""
}

// DescribeConsumer answers ConsumerGroupDescribe for one group.
func (c *Coordinator) DescribeConsumer(ctx context.Context, name string) kmsg.ConsumerGroupDescribeResponseGroup {
	d := kmsg.NewConsumerGroupDescribeResponseGroup()
	d.Group = name
	fail := func(e *kerr.Error, msg string) kmsg.ConsumerGroupDescribeResponseGroup {
		d.ErrorCode = e.Code
		if msg != "" {
			d.ErrorMessage = &msg
		}
		return d
	}
	g, e, msg := c.describing(ctx, name)
	if e != nil {
		return fail(e, msg)
	}
	type outcome struct {
		d   kmsg.ConsumerGroupDescribeResponseGroup
		msg string
	}
	out, err := call(ctx, g, func() outcome {
		switch {
		case !g.exists():
			return outcome{msg: fmt.Sprintf("Group %s not found.", name)}
		case g.typ() != TypeConsumer:
			return outcome{msg: fmt.Sprintf("Group %s is not a consumer group.", name)}
		}
		cg := g.consumer()
		im := c.topics.current()
		d.State = string(g.state)
		d.Epoch, d.AssignmentEpoch = cg.epoch, cg.assignmentEpoch
		d.AssignorName = g.assignorName()
		for _, id := range slices.Sorted(maps.Keys(cg.members)) {
			m := cg.members[id]
			dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			dm.MemberID, dm.InstanceID, dm.RackID, dm.MemberEpoch = m.id, m.instanceID, m.rackID, m.epoch
			dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
			dm.SubscribedTopics = slices.Clone(m.names)
			if dm.SubscribedTopics == nil {
				dm.SubscribedTopics = []string{}
			}
			regex := m.regex
			dm.SubscribedTopicRegex = &regex
			dm.Assignment = describeAssignment(m.assigned, im)
			dm.TargetAssignment = describeAssignment(m.target, im)
			dm.MemberType = 1 // a consumer-protocol member
			d.Members = append(d.Members, dm)
		}
		return outcome{d: d}
	})
	if err != nil {
		return fail(goneErr(err), "")
	}
	if out.msg != "" {
		return fail(kerr.GroupIDNotFound, out.msg)
	}
	return out.d
}

// CheckFetcher checks the member named by an OffsetFetch v9+: none
// (memberID nil and a negative epoch) is an admin's fetch; otherwise it
// must be a member of the consumer group at its epoch (UNKNOWN_MEMBER_ID,
// STALE_MEMBER_EPOCH). Classic groups, and groups that do not exist, have
// nothing to check, as in Kafka.
func (c *Coordinator) CheckFetcher(ctx context.Context, name string, memberID *string, epoch int32) *kerr.Error {
	if memberID == nil && epoch < 0 {
		return nil
	}
	g, e := c.lookup(ctx, name, false)
	if e != nil {
		return e
	}
	if g == nil {
		return nil
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	e, err := call(ctx, g, func() *kerr.Error {
		if !g.exists() {
			return nil
		}
		if g.typ() == TypeShare {
			return kerr.GroupIDNotFound
		}
		if cg := g.consumer(); cg != nil {
			m := cg.members[id]
			switch {
			case m == nil:
				return kerr.UnknownMemberID
			case m.epoch != epoch:
				return kerr.StaleMemberEpoch
			}
			return nil
		}
		return nil // classic groups do not check it, as Kafka's
	})
	if err != nil {
		return goneErr(err)
	}
	return e
}
