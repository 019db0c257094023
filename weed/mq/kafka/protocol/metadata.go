package protocol

// Metadata, versions 0-13.
//
// The brokers are the cluster's live gateways; each partition's leader is
// the gateway that owns it, and its leader epoch the epoch of the
// membership view since which that gateway has led it, so every gateway
// gives the same answer and the epoch grows when the leader changes. An
// absent topic list (v1+) or an empty one (v0) means every topic, which is
// what segmentio/kafka-go's Writer sends.
// Topics are auto-created with -default-partitions when the request allows it
// (always before v4) and the gateway is configured to.
//
// Kafka's internal topics, __consumer_offsets and __transaction_state, are
// listed with IsInternal set, 50 partitions each and a topic id derived
// from the name (see internal_topics.go); no SeaweedMQ topic is behind them.
// Each of their partitions is led, like any partition, by the gateway that
// owns it (membership.PartitionKey). Unlike Kafka, that gateway is not the
// coordinator of the groups or transactional ids that hash to the
// partition: coordinators are chosen by the group or transactional id
// itself (FindCoordinator), and no client needs the two to agree. Kafka
// creates them on first use; here they are always listed.

import (
	"context"
	"hash/fnv"
	"maps"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

func init() { register(kmsg.Metadata, 0, 13, (*Handler).handleMetadata) }

func (h *Handler) handleMetadata(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.SetVersion(r.Version)

	for _, m := range h.brokers() {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID = m.NodeID
		b.Host, b.Port = m.Endpoint(r.Listener)
		b.Rack = rackOf(m)
		resp.Brokers = append(resp.Brokers, b)
	}
	id := h.cfg.ClusterID()
	resp.ClusterID = &id
	resp.ControllerID = h.cluster.Controller()

	if r.Version >= 8 && r.Version <= 10 {
		resp.AuthorizedOperations = h.authorizedOperations(r, req.IncludeClusterAuthorizedOperations, kmsg.ACLResourceTypeCluster, acl.ClusterName)
	}
	// Topics it creates count against the client's
	// controller_mutation_rate, as Kafka counts them: never refused, the
	// client throttled for them (KIP-599).
	quota := h.mutations(r, math.MaxInt16)
	h.metadataTopics(ctx, r, req, resp, quota)
	quota.done(resp)
	if req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			if t := &resp.Topics[i]; t.ErrorCode == 0 && t.Topic != nil {
				t.AuthorizedOperations = h.authorizedOperations(r, true, kmsg.ACLResourceTypeTopic, *t.Topic)
			}
		}
	}
	return now(resp)
}

// metadataTopics fills in the topics of a Metadata answer: every topic the
// principal may describe, or those named, each with its error
// (TOPIC_AUTHORIZATION_FAILED for one it may not describe, whether it
// exists or not).
func (h *Handler) metadataTopics(ctx context.Context, r *Request, req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse, quota *mutations) {
	ids := h.gateways() // the replicas' candidates, once for every topic
	all := req.Topics == nil || (r.Version == 0 && len(req.Topics) == 0)
	if all {
		topics, err := h.backend.ListTopics(ctx)
		if err != nil {
			// A client asking for all topics cannot be told which
			// failed; an empty cluster view makes it retry.
			return
		}
		for _, t := range topics {
			if h.allowedTopic(r, kmsg.ACLOperationDescribe, t.Name) {
				resp.Topics = append(resp.Topics, h.topicMetadata(t, ids))
			}
		}
		return
	}

	autoCreate := h.cfg.AutoCreateTopics && (r.Version < 4 || req.AllowAutoTopicCreation)
	var byID map[[16]byte]storage.TopicInfo
	for _, rt := range req.Topics {
		if rt.Topic == nil || *rt.Topic == "" {
			// Lookup by topic id (v10+).
			if byID == nil {
				byID = map[[16]byte]storage.TopicInfo{}
				if topics, err := h.backend.ListTopics(ctx); err == nil {
					for _, t := range topics {
						byID[t.ID] = t
					}
				}
			}
			if t, ok := byID[rt.TopicID]; ok && h.allowedTopic(r, kmsg.ACLOperationDescribe, t.Name) {
				resp.Topics = append(resp.Topics, h.topicMetadata(t, ids))
			} else if ok {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, mt)
			} else {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
			}
			continue
		}
		name := *rt.Topic
		if err := storage.ValidTopicName(name); err != nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = &name
			mt.ErrorCode = err.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if !h.allowedTopic(r, kmsg.ACLOperationDescribe, name) {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = &name
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		t, err := h.describeTopic(ctx, name)
		if autoCreate && kafkaErr(err, nil) == kerr.UnknownTopicOrPartition {
			if !h.allowedCluster(r, kmsg.ACLOperationCreate) && !h.allowedTopic(r, kmsg.ACLOperationCreate, name) {
				err = kerr.TopicAuthorizationFailed // as Kafka: it would be created, but not by this principal
			} else {
				quota.take(h.cfg.DefaultPartitions)
				t, err = h.backend.CreateTopic(ctx, storage.TopicSpec{Name: name, Partitions: h.cfg.DefaultPartitions})
				if kafkaErr(err, nil) == kerr.TopicAlreadyExists { // made by another client meanwhile
					t, err = h.describeTopic(ctx, name)
				}
			}
		}
		if err != nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = &name
			mt.ErrorCode = kafkaErr(err, kerr.LeaderNotAvailable).Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, h.topicMetadata(t, ids))
	}
}

// topicMetadata is a topic as Metadata answers it, with the live gateways
// ids.
func (h *Handler) topicMetadata(t storage.TopicInfo, ids gatewaySet) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = internalTopic(t.Name)
	for p := int32(0); p < t.Partitions; p++ {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p
		leader, epoch, ok := h.partitionLeader(t.Name, p)
		if !ok {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
			mp.Leader, mp.LeaderEpoch = -1, -1
			mt.Partitions = append(mt.Partitions, mp)
			continue
		}
		mp.Leader = leader
		mp.LeaderEpoch = epoch
		mp.Replicas = ids.replicas(t.Name, p, leader, t.ReplicationFactor)
		mp.ISR = mp.Replicas
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// gatewaySet is the live gateways as Metadata, DescribeTopicPartitions
// and Fetch place partitions' replicas on them.
type gatewaySet struct {
	ids   []int32            // in order
	racks map[string][]int32 // the gateways of each rack, in order
	rack  map[int32]string   // each gateway's rack
}

// gateways returns the live gateways; their racks only where other
// gateways' partitions are read (Config.Replicas).
func (h *Handler) gateways() gatewaySet {
	ms := h.brokers()
	gs := gatewaySet{ids: make([]int32, len(ms))}
	for i, m := range ms {
		gs.ids[i] = m.NodeID
		if m.Rack != "" && h.cfg.Replicas != nil {
			if gs.racks == nil {
				gs.racks, gs.rack = map[string][]int32{}, map[int32]string{}
			}
			gs.racks[m.Rack] = append(gs.racks[m.Rack], m.NodeID)
			gs.rack[m.NodeID] = m.Rack
		}
	}
	slices.Sort(gs.ids)
	for _, in := range gs.racks {
		slices.Sort(in)
	}
	return gs
}

// replicas are a partition's replicas as Metadata and
// DescribeTopicPartitions list them: its leader, then the live gateways
// after it by node id, as many as the topic's replication factor (or all
// there are). They are what a gateway can honestly call a replica: any of
// them leads the partition with every acknowledged record once the leader
// is gone (the records are SeaweedFS's, with the factor's copies; the
// write-ahead log is read by the next leader), so each is in sync. Where
// gateways have racks, each other rack's reader of the partition follows:
// a client moves to a preferred read replica only among the replicas it
// knows (KIP-392).
func (gs gatewaySet) replicas(topic string, partition, leader int32, factor int16) []int32 {
	out := []int32{leader}
	ids := gs.ids
	at, _ := slices.BinarySearch(ids, leader)
	for i := 0; i < len(ids) && len(out) < int(factor); i++ {
		if id := ids[(at+i)%len(ids)]; id != leader {
			out = append(out, id)
		}
	}
	if len(gs.racks) == 0 {
		return out
	}
	for _, rack := range slices.Sorted(maps.Keys(gs.racks)) {
		if id := gs.reader(topic, partition, leader, rack); id >= 0 && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// reader is the gateway of rack that serves a partition's reads for that
// rack's consumers, spread over the rack's gateways by the partition's
// key: -1 if the leader is in that rack (it serves them), or no gateway
// is.
func (gs gatewaySet) reader(topic string, partition, leader int32, rack string) int32 {
	in := gs.racks[rack]
	if rack == "" || len(in) == 0 || gs.rack[leader] == rack {
		return -1
	}
	sum := fnv.New32a()
	sum.Write([]byte(membership.PartitionKey(topic, partition)))
	return in[sum.Sum32()%uint32(len(in))]
}

// partitionLeader returns the node id of the gateway that leads a
// partition and its leader epoch; ok is false while no gateway is known.
// Its replicas are gatewaySet.replicas: see there.
func (h *Handler) partitionLeader(topic string, partition int32) (leader, epoch int32, ok bool) {
	m, e, ok := h.cluster.Owner(membership.PartitionKey(topic, partition))
	if !ok {
		return -1, -1, false
	}
	return m.NodeID, int32(e), true
}
