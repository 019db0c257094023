package protocol

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage/storagetest"
)

// sessionGateway is a handler over the in-memory backend with topic "s" of
// parts partitions, each holding one record, keeping slots fetch sessions.
func sessionGateway(t *testing.T, parts int32, slots int) (*Handler, *storagetest.Backend) {
	t.Helper()
	b := storagetest.New()
	ctx := context.Background()
	if _, err := b.CreateTopic(ctx, storage.TopicSpec{Name: "s", Partitions: parts}); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < parts; p++ {
		b.Append(ctx, "s", p, []record.Record{{Value: []byte("v"), Timestamp: 1}}, true)
	}
	return New(Config{FetchSessionSlots: slots}, b, nil, nil), b
}

// sessionFetch is a fetch of session id at epoch naming partitions of "s"
// at offset; MaxWait 0, so it answers at once.
func sessionFetch(version int16, id, epoch int32, offset int64, partitions ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.SessionID, req.SessionEpoch = id, epoch
	req.MaxBytes = 1 << 20
	if len(partitions) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "s"
		for _, p := range partitions {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offset, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func answeredPartitions(resp *kmsg.FetchResponse) []int32 {
	var out []int32
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.Partition)
		}
	}
	return out
}

func fetch(t *testing.T, h *Handler, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	t.Helper()
	return handle(t, h, req).(*kmsg.FetchResponse)
}

// A full fetch opens a session; incremental fetches then name only what
// changed and are answered with the partitions that have news; epochs are
// checked; forgotten partitions are no longer read; epoch -1 closes it.
func TestFetchSessionIncremental(t *testing.T) {
	h, b := sessionGateway(t, 4, 10)
	full := fetch(t, h, sessionFetch(12, 0, 0, 0, 0, 1, 2, 3))
	if full.ErrorCode != 0 || full.SessionID == 0 {
		t.Fatalf("full fetch: error %d, session %d", full.ErrorCode, full.SessionID)
	}
	if got := answeredPartitions(full); len(got) != 4 {
		t.Fatalf("full fetch answered %v", got)
	}
	id := full.SessionID

	// The client moves its offsets past the records it got: it names the
	// partitions with their new offsets; nothing is new, nothing answered.
	inc := fetch(t, h, sessionFetch(12, id, 1, 1, 0, 1, 2, 3))
	if inc.ErrorCode != 0 || inc.SessionID != id || len(answeredPartitions(inc)) != 0 {
		t.Fatalf("incremental fetch with nothing new: error %d, session %d, partitions %v", inc.ErrorCode, inc.SessionID, answeredPartitions(inc))
	}
	// A record arrives in partition 2: the next fetch names nothing and
	// is answered with partition 2 alone, record and new high watermark.
	b.Append(context.Background(), "s", 2, []record.Record{{Value: []byte("new"), Timestamp: 2}}, true)
	inc = fetch(t, h, sessionFetch(12, id, 2, 0))
	if got := answeredPartitions(inc); len(got) != 1 || got[0] != 2 {
		t.Fatalf("after a record in partition 2, answered %v", got)
	}
	sp := inc.Topics[0].Partitions[0]
	if sp.HighWatermark != 2 || len(sp.RecordBatches) == 0 {
		t.Fatalf("partition 2: high watermark %d, %d record bytes", sp.HighWatermark, len(sp.RecordBatches))
	}
	// Told once: not again while nothing changes.
	if got := answeredPartitions(fetch(t, h, sessionFetch(12, id, 3, 2, 2))); len(got) != 0 {
		t.Fatalf("nothing new, answered %v", got)
	}

	// Epochs: a repeated one and an unknown session are refused as Kafka
	// refuses them.
	if resp := fetch(t, h, sessionFetch(12, id, 3, 0)); resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || resp.SessionID != 0 {
		t.Fatalf("stale epoch: error %d, session %d", resp.ErrorCode, resp.SessionID)
	}
	if resp := fetch(t, h, sessionFetch(12, id+1, 1, 0)); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("unknown session: error %d", resp.ErrorCode)
	}

	// Forgotten partitions are not read any more: a record in partition 3
	// after it is forgotten does not show.
	req := sessionFetch(12, id, 4, 0)
	ft := kmsg.NewFetchRequestForgottenTopic()
	ft.Topic, ft.Partitions = "s", []int32{3}
	req.ForgottenTopics = append(req.ForgottenTopics, ft)
	fetch(t, h, req)
	b.Append(context.Background(), "s", 3, []record.Record{{Value: []byte("unseen"), Timestamp: 3}}, true)
	b.Append(context.Background(), "s", 0, []record.Record{{Value: []byte("seen"), Timestamp: 3}}, true)
	if got := answeredPartitions(fetch(t, h, sessionFetch(12, id, 5, 0))); len(got) != 1 || got[0] != 0 {
		t.Fatalf("after forgetting partition 3, answered %v", got)
	}

	// Epoch -1 closes the session (and opens none).
	if resp := fetch(t, h, sessionFetch(12, id, -1, 0, 0)); resp.SessionID != 0 {
		t.Fatalf("closing fetch opened session %d", resp.SessionID)
	}
	if resp := fetch(t, h, sessionFetch(12, id, 6, 0)); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: error %d", resp.ErrorCode)
	}
}

// Sessions opened with topic ids (v13+) are used with topic ids only, and
// versions before 7 get no session.
func TestFetchSessionVersions(t *testing.T) {
	h, b := sessionGateway(t, 1, 10)
	info, err := b.DescribeTopic(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if resp := fetch(t, h, sessionFetch(6, 0, 0, 0, 0)); resp.SessionID != 0 {
		t.Fatalf("v6 got session %d", resp.SessionID)
	}
	req := sessionFetch(13, 0, 0, 0, 0)
	req.Topics[0].Topic, req.Topics[0].TopicID = "", info.ID
	resp := fetch(t, h, req)
	if resp.SessionID == 0 || len(answeredPartitions(resp)) != 1 || resp.Topics[0].TopicID != info.ID {
		t.Fatalf("v13 full fetch: session %d, %+v", resp.SessionID, resp.Topics)
	}
	if resp := fetch(t, h, sessionFetch(12, resp.SessionID, 1, 0)); resp.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("a topic-id session used by name: error %d", resp.ErrorCode)
	}
}

// The cache is bounded: past its slots a new session is not opened while
// the others are in use and young; one unused for two minutes gives its
// slot up, as Kafka evicts.
func TestFetchSessionEviction(t *testing.T) {
	h, _ := sessionGateway(t, 2, 2)
	clock := time.Now()
	h.sessions.now = func() time.Time { return clock }
	first := fetch(t, h, sessionFetch(12, 0, 0, 0, 0)).SessionID
	second := fetch(t, h, sessionFetch(12, 0, 0, 0, 0, 1)).SessionID
	if first == 0 || second == 0 || first == second {
		t.Fatalf("sessions %d %d", first, second)
	}
	if third := fetch(t, h, sessionFetch(12, 0, 0, 0, 0, 1)).SessionID; third != 0 {
		t.Fatalf("a third session %d past 2 slots", third)
	}
	clock = clock.Add(time.Minute)
	fetch(t, h, sessionFetch(12, second, 1, 1)) // the second is used
	clock = clock.Add(90 * time.Second)
	third := fetch(t, h, sessionFetch(12, 0, 0, 0, 0))
	if third.SessionID == 0 {
		t.Fatal("no session although one was unused for 2.5 minutes")
	}
	if resp := fetch(t, h, sessionFetch(12, first, 1, 1)); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("the evicted session: error %d", resp.ErrorCode)
	}
	if resp := fetch(t, h, sessionFetch(12, second, 2, 1)); resp.ErrorCode != 0 {
		t.Fatalf("the session in use: error %d", resp.ErrorCode)
	}
}
