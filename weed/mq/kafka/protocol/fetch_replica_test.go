package protocol

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage/storagetest"
)

// racks is a cluster of gateways with racks: this one is node 0.
type racks []membership.Member

func (c racks) Members() []membership.Member { return c }
func (c racks) Controller() int32            { return 0 }
func (c racks) Owner(string) (membership.Member, int64, bool) {
	return c[0], 1, true
}

// leading answers NOT_LEADER_OR_FOLLOWER for the partitions not in led.
type leading struct {
	*storagetest.Backend
	led map[int32]bool
}

func (b leading) ReadBatches(ctx context.Context, topic string, partition int32, offset int64, maxBytes int) (storage.ReadResult, error) {
	if !b.led[partition] {
		return storage.ReadResult{}, kerr.NotLeaderForPartition
	}
	return b.Backend.ReadBatches(ctx, topic, partition, offset, maxBytes)
}

func (b leading) Offsets(ctx context.Context, topic string, partition int32) (storage.Offsets, error) {
	if !b.led[partition] {
		return storage.Offsets{}, kerr.NotLeaderForPartition
	}
	return b.Backend.Offsets(ctx, topic, partition)
}

// replicaFrom is a follower's reads as cluster.Replica makes them: what
// the in-memory backend holds stands for the segments and the leader.
type replicaFrom struct {
	h     *Handler
	b     *storagetest.Backend
	tail  int64 // offsets from here are the leader's tail, not in segments
	asked []ReplicaFetch
}

func (r *replicaFrom) ReadReplica(ctx context.Context, f ReplicaFetch) (ReplicaRead, error) {
	r.asked = append(r.asked, f)
	if f.Offset >= r.tail {
		res, err := r.b.ReadBatches(ctx, f.Topic, f.Partition, f.Offset, f.MaxBytes)
		if err != nil {
			return ReplicaRead{}, err
		}
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, res.HighWatermark, res.LogStart
		sp.RecordBatches = r.h.appendBatches(&record.Builder{}, nil, f.TopicID, f.Partition, res.Records, record.CodecNone)
		return ReplicaRead{Leader: &sp}, nil
	}
	res, err := r.b.ReadBatches(ctx, f.Topic, f.Partition, f.Offset, f.MaxBytes)
	if err != nil {
		return ReplicaRead{}, err
	}
	keepBelow(&res, r.tail)
	txns, err := r.b.Transactions(ctx, f.Topic, f.Partition, f.Offset, res.HighWatermark)
	if err != nil {
		return ReplicaRead{}, err
	}
	lso := res.HighWatermark
	if txns.FirstUnstable >= 0 {
		lso = txns.FirstUnstable
	}
	return ReplicaRead{Result: res, LastStable: lso, Aborted: txns.Aborted}, nil
}

// rackHandler is a handler of node 0 in rack self, beside nodes 1 and 2
// in rack "b" and node 3 in rack "c", leading partition 0 of topic "rk"
// (three partitions) and no other.
func rackHandler(t *testing.T, self string) (*Handler, *storagetest.Backend, *replicaFrom) {
	h, b := testHandler(t, nil, func(m *storagetest.Backend) storage.Backend { return leading{m, map[int32]bool{0: true}} })
	h.cluster = racks{{NodeID: 0, Host: "127.0.0.1", Port: 9092, Rack: self}, {NodeID: 1, Host: "127.0.0.1", Port: 9093, Rack: "b"},
		{NodeID: 2, Host: "127.0.0.1", Port: 9094, Rack: "b"}, {NodeID: 3, Host: "127.0.0.1", Port: 9095, Rack: "c"}}
	rf := &replicaFrom{h: h, b: b, tail: 1 << 62}
	h.cfg.Replicas = rf
	if _, err := b.CreateTopic(context.Background(), storage.TopicSpec{Name: "rk", Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	return h, b, rf
}

// A consumer's fetch v11+ to the leader of a partition names a gateway of
// the consumer's rack (client.rack, or a client id's "zone="), always the
// same for the partition, with no records; a consumer of the leader's
// rack, of a rack no gateway is in, or of Fetch v10 is read from as ever.
func TestFetchPreferredReadReplica(t *testing.T) {
	h, b, _ := rackHandler(t, "a")
	appendValues(t, b, "rk", 0, nil, "r0", "r1", "r2")
	info, err := b.DescribeTopic(context.Background(), "rk")
	if err != nil {
		t.Fatal(err)
	}
	fetchRack := func(rack, clientID string, v int16) kmsg.FetchResponseTopicPartition {
		req := fetchReq("rk", info.ID, map[int32]int64{0: 0})
		req.Rack = rack
		return fetched(t, exchangeFrom(t, h, anonymous, clientID, req, v))[0]
	}
	p := fetchRack("b", "", 12)
	if p.PreferredReadReplica != 1 && p.PreferredReadReplica != 2 || len(p.RecordBatches) != 0 || p.HighWatermark != 3 || p.ErrorCode != 0 {
		t.Fatalf("rack b: preferred replica %d, %d record bytes, high watermark %d, %v", p.PreferredReadReplica, len(p.RecordBatches), p.HighWatermark, kerr.ErrorForCode(p.ErrorCode))
	}
	want := p.PreferredReadReplica
	for _, v := range []int16{11, 13, 15, 18} {
		if got := fetchRack("b", "", v).PreferredReadReplica; got != want {
			t.Errorf("v%d: preferred replica %d, then %d", v, want, got)
		}
	}
	if got := fetchRack("", "billing, zone=b", 12).PreferredReadReplica; got != want {
		t.Errorf("client id zone=b: preferred replica %d, want %d", got, want)
	}
	if got := fetchRack("", "zone=c", 12).PreferredReadReplica; got != 3 {
		t.Errorf("client id zone=c: preferred replica %d, want 3", got)
	}
	for _, c := range []struct {
		rack, clientID string
		v              int16
	}{{"a", "", 12}, {"d", "", 12}, {"", "", 12}, {"", "app-zone=b", 12}, {"", "zone=b", 10}} {
		p := fetchRack(c.rack, c.clientID, c.v)
		if _, offsets := batchesOf(t, p.RecordBatches); p.PreferredReadReplica != -1 || len(offsets) != 3 {
			t.Errorf("rack %q, client id %q, v%d: preferred replica %d, %d records", c.rack, c.clientID, c.v, p.PreferredReadReplica, len(offsets))
		}
	}
	// Metadata lists each rack's reader among the replicas: a client
	// moves only to a replica it knows.
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("rk")
	mreq.Topics = append(mreq.Topics, mt)
	md := exchange(t, h, anonymous, mreq, 12).(*kmsg.MetadataResponse)
	if got := md.Topics[0].Partitions[0].Replicas; !slices.Equal(got, []int32{0, want, 3}) || !slices.Equal(md.Topics[0].Partitions[0].ISR, got) {
		t.Errorf("partition 0's replicas %v, ISR %v; want the leader, rack b's reader %d and rack c's 3", got, md.Topics[0].Partitions[0].ISR, want)
	}
	// read_committed: the leader's last stable offset with the replica.
	appendValues(t, b, "rk", 0, &record.TxnMark{ProducerID: 7, Epoch: 1, Control: record.NotControl}, "open")
	req := fetchReq("rk", [16]byte{}, map[int32]int64{0: 0})
	req.Rack, req.IsolationLevel = "b", 1
	if p := fetched(t, exchange(t, h, anonymous, req, 12))[0]; p.PreferredReadReplica != want || p.LastStableOffset != 3 || p.HighWatermark != 4 {
		t.Errorf("read_committed: preferred replica %d, last stable %d, high watermark %d", p.PreferredReadReplica, p.LastStableOffset, p.HighWatermark)
	}
}

// A gateway of rack b serves its rack's consumers the partitions others
// lead: from the segments up to the leader's last stable offset with the
// aborted transactions among them, past the segments the leader's tail.
// Consumers of other racks get NOT_LEADER_OR_FOLLOWER, as before.
func TestFetchFollower(t *testing.T) {
	h, b, rf := rackHandler(t, "b")
	ctx := context.Background()
	appendValues(t, b, "rk", 1, nil, "before")
	appendValues(t, b, "rk", 1, &record.TxnMark{ProducerID: 9, Epoch: 2, Control: record.NotControl}, "aborted-1", "aborted-2")
	if err := b.WriteMarker(ctx, "rk", 1, storage.Marker{ProducerID: 9, Epoch: 2}); err != nil {
		t.Fatal(err)
	}
	appendValues(t, b, "rk", 1, nil, "after")                                                                  // offset 4
	appendValues(t, b, "rk", 1, &record.TxnMark{ProducerID: 11, Epoch: 1, Control: record.NotControl}, "open") // 5
	follow := func(rack string, offset int64, committed bool) kmsg.FetchResponseTopicPartition {
		req := fetchReq("rk", [16]byte{}, map[int32]int64{1: offset})
		req.Rack = rack
		if committed {
			req.IsolationLevel = 1
		}
		return fetched(t, exchange(t, h, anonymous, req, 12))[1]
	}
	p := follow("b", 0, true)
	batches, offsets := batchesOf(t, p.RecordBatches)
	if p.ErrorCode != 0 || p.HighWatermark != 6 || p.LastStableOffset != 5 || !slices.Equal(offsets, []int64{0, 1, 2, 3, 4}) {
		t.Fatalf("read_committed from rack b: %v, high watermark %d, last stable %d, offsets %v", kerr.ErrorForCode(p.ErrorCode), p.HighWatermark, p.LastStableOffset, offsets)
	}
	if len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != 9 || p.AbortedTransactions[0].FirstOffset != 1 {
		t.Errorf("aborted transactions %+v, want producer 9 from offset 1", p.AbortedTransactions)
	}
	if len(batches) != 4 || batches[1].attrs&record.AttrTransactional == 0 || batches[2].attrs&record.AttrControl == 0 {
		t.Errorf("%d batches; the transaction's and the marker's attributes %x", len(batches), batches[1].attrs)
	}
	if _, offsets := batchesOf(t, follow("b", 0, false).RecordBatches); !slices.Equal(offsets, []int64{0, 1, 2, 3, 4, 5}) {
		t.Errorf("read_uncommitted from rack b: offsets %v", offsets)
	}
	if p := follow("b", 7, false); p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Errorf("past the leader's high watermark: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	// Past the segments, the leader's answer.
	rf.tail = 4
	if p := follow("b", 4, false); !slices.Equal(func() []int64 { _, o := batchesOf(t, p.RecordBatches); return o }(), []int64{4, 5}) || p.HighWatermark != 6 {
		t.Errorf("the leader's tail: %+v", p)
	}
	if last := rf.asked[len(rf.asked)-1]; last.Topic != "rk" || last.Partition != 1 || last.Offset != 4 || last.MaxBytes != 1<<20 || last.ReadCommitted {
		t.Errorf("asked the replica reader %+v", last)
	}
	for _, rack := range []string{"a", "c", ""} {
		if p := follow(rack, 0, false); p.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Errorf("rack %q: %v, want NOT_LEADER_OR_FOLLOWER", rack, kerr.ErrorForCode(p.ErrorCode))
		}
	}
}

// A gateway's fetch (ReplicaID, with ClusterAction) of a partition's max
// bytes 0 asks its leader for the offsets only: high watermark, last
// stable offset, log start and the aborted transactions from the offset
// on. The same fetch of a principal without ClusterAction is a consumer's.
func TestFetchReplicaOffsets(t *testing.T) {
	h, b, _ := rackHandler(t, "a")
	ctx := context.Background()
	appendValues(t, b, "rk", 0, nil, "zero")
	appendValues(t, b, "rk", 0, &record.TxnMark{ProducerID: 5, Epoch: 0, Control: record.NotControl}, "x")
	if err := b.WriteMarker(ctx, "rk", 0, storage.Marker{ProducerID: 5}); err != nil {
		t.Fatal(err)
	}
	appendValues(t, b, "rk", 0, &record.TxnMark{ProducerID: 6, Epoch: 0, Control: record.NotControl}, "open")
	info, err := b.DescribeTopic(ctx, "rk")
	if err != nil {
		t.Fatal(err)
	}
	offsetsOnly := func(v int16, offset int64) kmsg.FetchResponseTopicPartition {
		req := fetchReq("rk", info.ID, map[int32]int64{0: offset})
		req.Topics[0].Partitions[0].PartitionMaxBytes = 0
		req.ReplicaID, req.ReplicaState.ID = 2, 2
		return fetched(t, exchange(t, h, anonymous, req, v))[0]
	}
	for _, v := range []int16{12, 15} {
		p := offsetsOnly(v, 0)
		if len(p.RecordBatches) != 0 || p.HighWatermark != 4 || p.LastStableOffset != 3 || p.LogStartOffset != 0 || p.ErrorCode != 0 {
			t.Fatalf("v%d offsets only: %d record bytes, high watermark %d, last stable %d, log start %d, %v", v, len(p.RecordBatches), p.HighWatermark, p.LastStableOffset, p.LogStartOffset, kerr.ErrorForCode(p.ErrorCode))
		}
		if len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != 5 || p.AbortedTransactions[0].FirstOffset != 1 {
			t.Errorf("v%d aborted transactions %+v", v, p.AbortedTransactions)
		}
	}
	if p := offsetsOnly(12, 3); len(p.AbortedTransactions) != 0 {
		t.Errorf("from offset 3, past the aborted transaction: %+v", p.AbortedTransactions)
	}
	// Without ClusterAction: a consumer's fetch, which gets the first
	// batch (KIP-74).
	authz := acl.New(acl.Options{Files: NewMemFiles(), AllowIfNoACL: true})
	if err := authz.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for i, err := range authz.Create(ctx, []acl.Binding{{ResourceType: kmsg.ACLResourceTypeCluster, ResourceName: acl.ClusterName,
		PatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: anonymous, Host: "*", Operation: kmsg.ACLOperationClusterAction, Permission: kmsg.ACLPermissionTypeDeny}}) {
		if err != nil {
			t.Fatal(i, err)
		}
	}
	h.cfg.Authorizer = authz
	if p := offsetsOnly(12, 0); len(p.RecordBatches) == 0 {
		t.Errorf("a replica id without ClusterAction was answered as a gateway")
	}
}

func TestClientZone(t *testing.T) {
	for id, want := range map[string]string{"": "", "app": "", "app,zone=eu-1a": "eu-1a", "zone=b": "b", "a, zone=c ,x": "c", "zone=": "", "myzone=b": "", "app,ws_az=b": ""} {
		if got := ClientZone(id); got != want {
			t.Errorf("ClientZone(%q) = %q, want %q", id, got, want)
		}
	}
}
