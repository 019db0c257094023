package protocol

// ConsumerGroupDescribe, versions 0-1: consumer groups (KIP-848) with
// their epochs, assignor and members, each with its subscription, its
// current assignment and its target (v1: member type 1, consumer). A
// classic group, or none, is GROUP_ID_NOT_FOUND (admin clients then ask
// DescribeGroups). Needs Describe on the group; a group whose members
// subscribe to or are assigned a topic the principal may not describe is
// TOPIC_AUTHORIZATION_FAILED, as in Kafka 4.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ConsumerGroupDescribe, 0, 1, (*Handler).handleConsumerGroupDescribe) }

func (h *Handler) handleConsumerGroupDescribe(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.ConsumerGroupDescribeRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		for _, name := range req.Groups {
			var d kmsg.ConsumerGroupDescribeResponseGroup
			if !h.allowedGroup(r, kmsg.ACLOperationDescribe, name) {
				d = kmsg.NewConsumerGroupDescribeResponseGroup()
				d.Group, d.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
			} else {
				d = h.groups.DescribeConsumer(ctx, name)
				if d.ErrorCode == 0 && !h.describesTopicsOf(r, d) {
					d = kmsg.NewConsumerGroupDescribeResponseGroup()
					d.Group, d.ErrorCode = name, kerr.TopicAuthorizationFailed.Code
				}
			}
			if req.IncludeAuthorizedOperations {
				d.AuthorizedOperations = h.authorizedOperations(r, true, kmsg.ACLResourceTypeGroup, name)
			}
			resp.Groups = append(resp.Groups, d)
		}
		return resp, nil
	}
}

// describesTopicsOf reports whether the principal may describe every topic
// the group's members subscribe to or are assigned.
func (h *Handler) describesTopicsOf(r *Request, d kmsg.ConsumerGroupDescribeResponseGroup) bool {
	for _, m := range d.Members {
		topics := append([]string(nil), m.SubscribedTopics...)
		for _, a := range [][]kmsg.AssignmentTopicPartition{m.Assignment.TopicPartitions, m.TargetAssignment.TopicPartitions} {
			for _, t := range a {
				topics = append(topics, t.Topic)
			}
		}
		for _, t := range topics {
			if !h.allowedTopic(r, kmsg.ACLOperationDescribe, t) {
				return false
			}
		}
	}
	return true
}
