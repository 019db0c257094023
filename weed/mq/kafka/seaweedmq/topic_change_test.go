package seaweedmq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/mq_pb"
	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/protobuf/encoding/protojson"
)

// startTopicFiler serves a filer holding topic t, of partitions partitions
// and settings configs, and returns a client of it.
func startTopicFiler(t *testing.T, partitions int32, configs map[string]string) (*Client, *segmentFiler) {
	t.Helper()
	f := &segmentFiler{entries: map[string]*filer_pb.Entry{
		filer.TopicConfFile: topicConfEntry(t, partitions, ""),
		"t.json":            settingsEntry(t, configs, ""),
	}}
	c := startSegmentFiler(t, f)
	c.topics.init()
	c.opts.TopicCacheTTL = time.Hour
	return c, f
}

// topicConfEntry is topic.conf of partitions partitions as a gateway wrote
// it, with version token.
func topicConfEntry(t *testing.T, partitions int32, token string) *filer_pb.Entry {
	t.Helper()
	var buf bytes.Buffer
	if err := filer.ProtoToText(&buf, &mq_pb.ConfigureTopicResponse{BrokerPartitionAssignments: newPartitions(0, partitions, 1)}); err != nil {
		t.Fatal(err)
	}
	return &filer_pb.Entry{Name: filer.TopicConfFile, Content: buf.Bytes(), Attributes: &filer_pb.FuseAttributes{}, Extended: map[string][]byte{versionAttr: []byte(token)}}
}

// settingsEntry is a topic's settings file holding configs, with version
// token.
func settingsEntry(t *testing.T, configs map[string]string, token string) *filer_pb.Entry {
	t.Helper()
	data, err := json.Marshal(topicConfigFile{Configs: configs})
	if err != nil {
		t.Fatal(err)
	}
	return &filer_pb.Entry{Name: "t.json", Content: data, Attributes: &filer_pb.FuseAttributes{}, Extended: map[string][]byte{versionAttr: []byte(token)}}
}

// A change of a topic's settings or partitions is written over the files
// as read: one of another gateway that landed meanwhile (a change slower
// than the 10 s lock, or made after this one's lock expired) stays, and
// this one is made again on what it wrote. Before, the last write replaced
// the other: a setting was lost, or partitions added were taken away
// again, with the records produced to them.
func TestTopicChangesWrittenOverWhatWasRead(t *testing.T) {
	ctx := context.Background()
	c, f := startTopicFiler(t, 1, map[string]string{"retention.ms": "60000"})

	// Another gateway sets max.message.bytes while this one alters
	// cleanup.policy: both stay.
	other := true
	err := c.AlterTopicConfigs(ctx, "t", func(configs map[string]string) error {
		if other {
			other = false
			f.mu.Lock()
			f.entries["t.json"] = settingsEntry(t, map[string]string{"retention.ms": "60000", "max.message.bytes": "2048"}, "other")
			f.mu.Unlock()
		}
		configs["cleanup.policy"] = "compact"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.topics.forget("t")
	e, err := c.readTopic(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.info.Configs; got["max.message.bytes"] != "2048" || got["cleanup.policy"] != "compact" || got["retention.ms"] != "60000" {
		t.Fatalf("settings %v: want the other gateway's change and this one's", got)
	}

	// Another gateway took the topic to 3 partitions while this one takes
	// it to 2: the 3 stay, and this one is refused as Kafka refuses a
	// count below the topic's.
	f.beforeCreate = func(req *filer_pb.CreateEntryRequest) {
		if req.Entry.Name == filer.TopicConfFile && f.beforeCreate != nil {
			f.beforeCreate = nil
			f.entries[filer.TopicConfFile] = topicConfEntry(t, 3, "other-partitions")
		}
	}
	if err := c.CreatePartitions(ctx, "t", 2, false); !errors.Is(err, kerr.InvalidPartitions) {
		t.Fatalf("2 partitions over another gateway's 3: %v, want INVALID_PARTITIONS", err)
	}
	conf := &mq_pb.ConfigureTopicResponse{}
	f.mu.Lock()
	data := f.entries[filer.TopicConfFile].Content
	f.mu.Unlock()
	if err := protojson.Unmarshal(data, conf); err != nil || len(conf.BrokerPartitionAssignments) != 3 {
		t.Fatalf("topic.conf has %d partitions (%v), want the other gateway's 3", len(conf.BrokerPartitionAssignments), err)
	}
	if err := c.CreatePartitions(ctx, "t", 4, false); err != nil {
		t.Fatal(err)
	}
	if e, err := c.readTopic(ctx, "t"); err != nil || e.info.Partitions != 4 {
		t.Fatalf("after adding one: %v partitions (%v), want 4", e, err)
	}
}

// A change that finds the topic's files changed every time it writes them
// gives up after a few tries, the files as the others wrote them, rather
// than asking the filer without end.
func TestTopicChangeGivesUpOnFilesChangingAllTheTime(t *testing.T) {
	c, f := startTopicFiler(t, 1, map[string]string{"retention.ms": "60000"})
	tries := 0
	f.beforeCreate = func(req *filer_pb.CreateEntryRequest) {
		if req.Entry.Name == "t.json" {
			tries++
			f.entries["t.json"] = settingsEntry(t, map[string]string{"retention.ms": "60000"}, fmt.Sprintf("other-%d", tries))
		}
	}
	err := c.AlterTopicConfigs(context.Background(), "t", func(configs map[string]string) error {
		configs["cleanup.policy"] = "compact"
		return nil
	})
	if !errors.Is(err, filerfs.ErrChanged) || tries != 5 {
		t.Fatalf("after %d writes refused: %v, want filerfs.ErrChanged after 5", tries, err)
	}
}
