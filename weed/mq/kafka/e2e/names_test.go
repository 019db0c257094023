package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic names outside Kafka's rule are refused by every API that takes
// one, and none of them reaches a filer path: a DeleteTopics of
// "../kafka/victim" once deleted the topic "victim", and "../other/x"
// reached other SeaweedMQ namespaces.
func TestTopicNamesNeverReachPaths(t *testing.T) {
	victim := newTopic(t)
	createTopic(t, victim, 1, nil)
	cl := newClient(t)
	produceSync(t, cl, &kgo.Record{Topic: victim, Value: []byte("still here")})

	// A topic of another namespace, and a file beside the gateway's own.
	outsideDir, outsideFile := "/topics/other/"+victim, victim+".json"
	withFilerAt(t, cluster.filerPort, func(ctx context.Context, fc filer_pb.SeaweedFilerClient) error {
		if err := filer.SaveInsideFiler(ctx, fc, outsideDir, "topic.conf", []byte("{}")); err != nil {
			return err
		}
		return filer.SaveInsideFiler(ctx, fc, "/etc/kafka-gateway", outsideFile, []byte("{}"))
	})

	bad := []string{
		"../kafka/" + victim, "../other/" + victim, "../" + outsideFile[:len(outsideFile)-len(".json")],
		"/" + victim, victim + "/..", "a/b", ".", "..", strings.Repeat("a", 250), "naïve", "with space",
	}
	c := dialRaw(t)
	unknown, invalid := kerr.UnknownTopicOrPartition.Code, kerr.InvalidTopicException.Code
	for _, name := range bad {
		check := func(api string, got, want int16) {
			t.Helper()
			if got != want {
				t.Errorf("%s %q: error %v, want %v", api, name, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
			}
		}

		dt := kmsg.NewPtrDeleteTopicsRequest()
		dt.SetVersion(5)
		dt.TopicNames = []string{name}
		check("DeleteTopics v5", c.request(dt).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, unknown)
		dt6 := kmsg.NewPtrDeleteTopicsRequest()
		dt6.SetVersion(6)
		n := name
		dt6.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: &n}}
		check("DeleteTopics v6", c.request(dt6).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, unknown)

		pr := kmsg.NewPtrProduceRequest()
		pr.SetVersion(12)
		pr.Acks, pr.TimeoutMillis = -1, 5000
		pr.Topics = []kmsg.ProduceRequestTopic{{Topic: name, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batchOf([]byte("x"))}}}}
		check("Produce", c.request(pr).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, unknown)

		fr := kmsg.NewPtrFetchRequest()
		fr.SetVersion(12)
		fr.MaxWaitMillis, fr.MaxBytes = 10, 1<<20
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		fr.Topics = []kmsg.FetchRequestTopic{{Topic: name, Partitions: []kmsg.FetchRequestTopicPartition{fp}}}
		check("Fetch", c.request(fr).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode, unknown)

		ac := kmsg.NewPtrAlterConfigsRequest()
		ac.SetVersion(2)
		v := "1000"
		ac.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: name,
			Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: &v}}}}
		check("AlterConfigs", c.request(ac).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode, invalid)

		iac := kmsg.NewPtrIncrementalAlterConfigsRequest()
		iac.SetVersion(1)
		iac.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: name,
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: &v}}}}
		check("IncrementalAlterConfigs", c.request(iac).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode, invalid)

		dc := kmsg.NewPtrDescribeConfigsRequest()
		dc.SetVersion(4)
		dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: name}}
		check("DescribeConfigs", c.request(dc).(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode, invalid)

		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.SetVersion(8)
		oc.Group, oc.Generation = "names-"+victim, -1
		oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: name, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
		check("OffsetCommit", c.request(oc).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, unknown)

		dr := kmsg.NewPtrDeleteRecordsRequest()
		dr.SetVersion(2)
		dr.TimeoutMillis = 5000
		dr.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: name, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: -1}}}}
		check("DeleteRecords", c.request(dr).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode, unknown)

		lo := kmsg.NewPtrListOffsetsRequest()
		lo.SetVersion(8)
		lo.ReplicaID = -1
		lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: name, Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1}}}}
		check("ListOffsets", c.request(lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode, unknown)

		cp := kmsg.NewPtrCreatePartitionsRequest()
		cp.SetVersion(3)
		cp.TimeoutMillis = 5000
		cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: name, Count: 2}}
		check("CreatePartitions", c.request(cp).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode, unknown)

		ct := kmsg.NewPtrCreateTopicsRequest()
		ct.SetVersion(7)
		ct.TimeoutMillis = 5000
		ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: name, NumPartitions: 1, ReplicationFactor: 1}}
		check("CreateTopics", c.request(ct).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode, invalid)

		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(12)
		md.AllowAutoTopicCreation = true
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: &n}}
		check("Metadata", c.request(md).(*kmsg.MetadataResponse).Topics[0].ErrorCode, invalid)
	}

	// Nothing outside was touched: the other namespace's topic, the file
	// beside the gateway's, and the victim with its record.
	withFilerAt(t, cluster.filerPort, func(ctx context.Context, fc filer_pb.SeaweedFilerClient) error {
		for _, p := range [][2]string{{outsideDir, "topic.conf"}, {"/etc/kafka-gateway", outsideFile}, {"/topics/kafka", victim}} {
			if _, err := filer_pb.LookupEntry(ctx, fc, &filer_pb.LookupDirectoryEntryRequest{Directory: p[0], Name: p[1]}); err != nil {
				if errors.Is(err, filer_pb.ErrNotFound) {
					t.Errorf("%s/%s was removed", p[0], p[1])
					continue
				}
				return err
			}
		}
		return nil
	})
	recs := consumeN(t, victim, 1)
	if string(recs[0].Value) != "still here" {
		t.Fatalf("victim's record: %q", recs[0].Value)
	}
}
