package protocol

// DeleteTopics, versions 1-6. Version 6 names topics by name or by id.
// The internal topics are not deleted (see internal_topics.go):
// TOPIC_DELETION_DISABLED, INVALID_REQUEST before v3 (Kafka's codes when
// deletion is off).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"
)

func init() { register(kmsg.DeleteTopics, 1, 6, (*Handler).handleDeleteTopics) }

func (h *Handler) handleDeleteTopics(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	targets := req.Topics
	if r.Version < 6 {
		targets = nil
		for i := range req.TopicNames {
			targets = append(targets, kmsg.DeleteTopicsRequestTopic{Topic: &req.TopicNames[i]})
		}
	}
	quota := h.mutations(r, 5)
	for _, rt := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var name string
		if rt.Topic != nil && *rt.Topic != "" {
			name = *rt.Topic
		} else {
			info, err := h.backend.TopicByID(ctx, rt.TopicID)
			if err != nil {
				st.ErrorCode = kafkaErr(err, kerr.RequestTimedOut).Code
				resp.Topics = append(resp.Topics, st)
				continue
			}
			name = info.Name
			st.Topic = &info.Name
		}
		if !h.allowedTopic(r, kmsg.ACLOperationDelete, name) {
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
		} else if e := knownName(name); e != nil {
			st.ErrorCode = e.Code
		} else if internalTopic(name) && r.Version < 3 {
			st.ErrorCode = kerr.InvalidRequest.Code
		} else if !h.deletionAllowed(ctx, name, quota) {
			st.ErrorCode = kerr.ThrottlingQuotaExceeded.Code
			msg := throttleMessage
			st.ErrorMessage = &msg
		} else if err := h.backend.DeleteTopic(ctx, name); err != nil {
			st.ErrorCode = kafkaErr(err, kerr.RequestTimedOut).Code
			msg := err.Error()
			st.ErrorMessage = &msg
		} else if h.shares != nil {
			// The topic is gone; share state left behind is ignored (it
			// names the old topic's id), so a failure here only leaves
			// files for the next deletion of the name to remove.
			if err := h.shares.TopicDeleted(ctx, name); err != nil {
				glog.Warningf("kafka gateway: share state of deleted topic %s: %v", name, err)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	quota.done(resp)
	return now(resp)
}

// deletionAllowed takes a topic's partitions from the client's controller
// mutation quota, if it has one; a topic that cannot be described is left
// to the deletion to answer for.
func (h *Handler) deletionAllowed(ctx context.Context, name string, quota *mutations) bool {
	if !quota.applies() {
		return true
	}
	info, err := h.describeTopic(ctx, name)
	if err != nil {
		return true
	}
	return quota.take(info.Partitions)
}
