package protocol

// ShareGroupDescribe, version 1 (KIP-932): share groups with their epochs,
// the simple assignor and their members, each with its subscription and
// assignment. Another type of group, or none, is GROUP_ID_NOT_FOUND.
// Needs Describe on the group; a group assigned a topic the principal may
// not describe is TOPIC_AUTHORIZATION_FAILED, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ShareGroupDescribe, 1, 1, (*Handler).handleShareGroupDescribe) }

func (h *Handler) handleShareGroupDescribe(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.ShareGroupDescribeRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
		for _, name := range req.GroupIDs {
			var d kmsg.ShareGroupDescribeResponseGroup
			if !h.allowedGroup(r, kmsg.ACLOperationDescribe, name) {
				d = kmsg.NewShareGroupDescribeResponseGroup()
				d.GroupID, d.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
			} else {
				d = h.groups.DescribeShare(ctx, name)
				if d.ErrorCode == 0 && !h.describesShareTopics(r, d) {
					msg := "The group has described topic(s) that the client is not authorized to describe."
					d = kmsg.NewShareGroupDescribeResponseGroup()
					d.GroupID, d.ErrorCode, d.ErrorMessage = name, kerr.TopicAuthorizationFailed.Code, &msg
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

func (h *Handler) describesShareTopics(r *Request, d kmsg.ShareGroupDescribeResponseGroup) bool {
	for _, m := range d.Members {
		for _, t := range m.Assignment.TopicPartitions {
			if !h.allowedTopic(r, kmsg.ACLOperationDescribe, t.Topic) {
				return false
			}
		}
	}
	return true
}
