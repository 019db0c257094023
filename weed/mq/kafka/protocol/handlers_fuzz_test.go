package protocol

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/offset"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage/storagetest"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/telemetry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/txn"
)

// inProcess is a Handler on the in-memory backend with real group and
// transaction coordinators, and topic "t" (3 partitions) holding records.
func inProcess(tb testing.TB) *Handler {
	tb.Helper()
	b := storagetest.New()
	files := filerfstest.New()
	limits := share.DefaultLimits
	limits.MinLockDuration = time.Millisecond
	shareConfigs := share.NewConfigs(files, limits)
	shares := share.NewStore(files, shareConfigs)
	groups := group.New(group.Options{Store: offset.NewStore(files), InitialRebalanceDelay: time.Millisecond,
		Topics: GroupTopics(b), ShareConfigs: shareConfigs, ShareStates: shares})
	txns := txn.New(txn.Options{Files: files, Log: b, Groups: groups})
	txns.Start()
	ctx := context.Background()
	if _, err := b.CreateTopic(ctx, storage.TopicSpec{Name: "t", Partitions: 3}); err != nil {
		tb.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		b.Append(ctx, "t", p, []record.Record{{Key: []byte("k"), Value: []byte("v"), Timestamp: 1}, {Value: []byte("w"), Timestamp: 2}}, true)
	}
	return New(Config{AutoCreateTopics: true, DefaultPartitions: 3, ClusterID: func() string { return "fuzz" }, Shares: shares,
		ClientMetrics: telemetry.New(telemetry.Options{Files: files})}, b, groups, txns)
}

// fuzzSeeds are requests of every served API at each version it serves:
// empty ones, and for the APIs clients use most, ones about topic "t" and
// group "g", which the fuzzer mutates.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	for key := int16(0); key < int16(len(apis)); key++ {
		minV, maxV, ok := Supported(key)
		if !ok {
			continue
		}
		for v := minV; v <= maxV; v++ {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			seeds = append(seeds, requestFrame(req, 1))
		}
	}
	topic := "t"
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MaxBytes = 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	for p := int32(0); p < 3; p++ {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
	}
	fetch.Topics = append(fetch.Topics, ft)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g", "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 0}}}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 1, Timestamp: -1}}}}
	initPID := kmsg.NewPtrInitProducerIDRequest()
	txnID := "x"
	initPID.TransactionalID, initPID.TransactionTimeoutMillis = &txnID, 60000
	// Consumer and share groups' requests about topic "t" (its id is the
	// in-memory backend's, derived from its name).
	tid := storagetest.TopicID("t")
	cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgh.Group, cgh.MemberID, cgh.RebalanceTimeoutMillis, cgh.SubscribedTopicNames = "g2", "m", 1000, []string{"t"}
	cgh.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	sgh := kmsg.NewPtrShareGroupHeartbeatRequest()
	sgh.GroupID, sgh.MemberID, sgh.SubscribedTopicNames = "g3", "m", []string{"t"}
	member, sgroup := "m", "g3"
	sf := kmsg.NewPtrShareFetchRequest()
	sf.GroupID, sf.MemberID, sf.MaxWaitMillis, sf.MaxBytes, sf.MaxRecords, sf.BatchSize = &sgroup, &member, 10, 1<<20, 10, 10
	sf.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: tid, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0,
		AcknowledgementBatches: []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 1, AcknowledgeTypes: []int8{1}}}}}}}
	sa := kmsg.NewPtrShareAcknowledgeRequest()
	sa.GroupID, sa.MemberID, sa.ShareSessionEpoch = &sgroup, &member, 1
	sa.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: tid, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0,
		AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{2}}}}}}}
	for _, req := range []kmsg.Request{produceTo(3, -1, 1000), md, fetch, join, commit, lo, initPID, cgh, sgh, sf, sa} {
		for _, v := range []int16{4, 9, req.MaxVersion()} {
			if _, maxV, _ := Supported(int16(req.Key())); v <= maxV && v <= req.MaxVersion() {
				req.SetVersion(v)
				seeds = append(seeds, requestFrame(req, 7))
			}
		}
	}
	return seeds
}

var fuzzHandler struct {
	once sync.Once
	h    *Handler
}

// FuzzHandlers runs arbitrary requests of every API through the real
// handlers: each is answered (or refused with an error, as a connection
// closes), its response encodes, and nothing panics or hangs.
func FuzzHandlers(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		fuzzHandler.once.Do(func() { fuzzHandler.h = inProcess(t) })
		r, err := Decode(frame)
		if err != nil {
			return
		}
		r.Principal, r.ClientHost, r.Listener = "User:ANONYMOUS", "127.0.0.1", "PLAINTEXT"
		// Long polls and rebalances end with the context: no input may
		// hold a handler past it.
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		done := make(chan struct{})
		var resp kmsg.Response
		go func() {
			defer close(done)
			resp, err = fuzzHandler.h.Handle(ctx, r)()
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s v%d not answered 10 s after its context ended", kmsg.NameForKey(r.Key), r.Version)
		}
		if err != nil || resp == nil {
			return // the connection closes, or (acks=0) nothing is sent
		}
		if resp.Key() != r.Key {
			t.Fatalf("%s answered with %s", kmsg.NameForKey(r.Key), kmsg.NameForKey(resp.Key()))
		}
		if resp.GetVersion() != r.Version && !r.versionTooNew {
			t.Fatalf("%s v%d answered in v%d", kmsg.NameForKey(r.Key), r.Version, resp.GetVersion())
		}
		AppendResponse(nil, r.CorrelationID, resp)
	})
}
