package protocol

// CreatePartitions, versions 0-3. A topic grows as in Kafka: its partitions
// keep their records and offsets, the new ones start empty (the backend
// gives each partition a place of its own, whatever the count), and
// clients' key-to-partition mapping changes with the count as in Kafka.
// The checks and messages are Kafka's: UNKNOWN_TOPIC_OR_PARTITION,
// INVALID_PARTITIONS for a count that does not grow the topic (or is more
// than a topic may have), INVALID_REPLICA_ASSIGNMENT for an assignment
// whose size is not the number of new partitions or that names a broker
// that is not a gateway of the cluster, THROTTLING_QUOTA_EXCEEDED never.
// validate_only checks and changes nothing.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.CreatePartitions, 0, 3, (*Handler).handleCreatePartitions) }

func (h *Handler) handleCreatePartitions(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		seen := map[string]int{}
		for _, rt := range req.Topics {
			seen[rt.Topic]++
		}
		quota := h.mutations(r, 3)
		for _, rt := range req.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic = rt.Topic
			code, msg := h.createPartitions(ctx, r, &rt, seen[rt.Topic] > 1, req.ValidateOnly, quota)
			st.ErrorCode = code
			if msg != "" {
				st.ErrorMessage = &msg
			}
			resp.Topics = append(resp.Topics, st)
		}
		quota.done(resp)
		return resp, nil
	}
}

// createPartitions grows one topic, returning the error code and message.
func (h *Handler) createPartitions(ctx context.Context, r *Request, rt *kmsg.CreatePartitionsRequestTopic, duplicate, validateOnly bool, quota *mutations) (int16, string) {
	if duplicate {
		return kerr.InvalidRequest.Code, "Duplicate topic in request."
	}
	info, e := h.authorizedTopic(ctx, r, kmsg.ACLOperationAlter, rt.Topic)
	switch {
	case e != nil:
		return e.Code, ""
	case rt.Count < info.Partitions:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic currently has %d partitions, which is higher than the requested %d.", info.Partitions, rt.Count)
	case rt.Count == info.Partitions:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic already has %d partitions.", info.Partitions)
	}
	if rt.Assignment != nil {
		if added := rt.Count - info.Partitions; int32(len(rt.Assignment)) != added {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Increasing the number of partitions by %d but %d assignments provided.", added, len(rt.Assignment))
		}
		lists := make([][]int32, len(rt.Assignment))
		for i, a := range rt.Assignment {
			lists[i] = a.Replicas
		}
		if msg := h.badAssignment(lists); msg != "" {
			return kerr.InvalidReplicaAssignment.Code, msg
		}
	}
	if !validateOnly && !quota.take(rt.Count-info.Partitions) {
		return kerr.ThrottlingQuotaExceeded.Code, throttleMessage
	}
	if err := h.backend.CreatePartitions(ctx, info.Name, rt.Count, validateOnly); err != nil {
		code := kafkaErr(err, kerr.KafkaStorageError)
		msg := ""
		if errors.Is(err, kerr.InvalidPartitions) {
			msg = err.Error()
		}
		return code.Code, msg
	}
	return 0, ""
}

// badAssignment checks manual replica assignments (one replica list per
// partition) as Kafka does: each partition has replicas, all the same
// number, no broker twice, every broker a live gateway. It returns why
// they are refused, "" if they are not. Accepted, they change nothing: a
// partition's leader is the gateway the cluster's ownership gives it, and
// its records are replicated by SeaweedFS.
func (h *Handler) badAssignment(lists [][]int32) string {
	nodes := map[int32]bool{}
	for _, b := range h.brokers() {
		nodes[b.NodeID] = true
	}
	for _, replicas := range lists {
		if len(replicas) == 0 {
			return "The manual partition assignment includes a partition with no replicas."
		}
		if len(replicas) != len(lists[0]) {
			return "All partitions in the manual partition assignment must have the same number of replicas."
		}
		seen := map[int32]bool{}
		for _, id := range replicas {
			if !nodes[id] {
				return fmt.Sprintf("Unknown broker id %d in the manual partition assignment.", id)
			}
			if seen[id] {
				return fmt.Sprintf("Broker %d appears more than once in a partition's replicas.", id)
			}
			seen[id] = true
		}
	}
	return ""
}
