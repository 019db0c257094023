package protocol

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// An array of Kafka's 1,000,000 elements is read; one more and the request
// does not parse (its connection is closed).
func TestRequestArrayLimit(t *testing.T) {
	for _, n := range []int{MaxArrayElements, MaxArrayElements + 1} {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version = 1
		req.TopicNames = make([]string, n)
		r, err := Decode(requestFrame(req, 1))
		if n <= MaxArrayElements {
			if err != nil {
				t.Fatalf("%d elements: %v", n, err)
			}
			if got := len(r.Body.(*kmsg.DeleteTopicsRequest).TopicNames); got != n {
				t.Fatalf("%d elements read as %d", n, got)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "array of 1000001 elements") {
			t.Fatalf("%d elements: err %v, want the array limit", n, err)
		}
	}
}

// A tag section of Kafka's 10,000 tagged fields is read, in the body and
// nested in an array element; one more and the request does not parse.
func TestRequestTaggedFieldLimit(t *testing.T) {
	tags := func(n int) kmsg.Tags {
		var t kmsg.Tags
		for i := range n {
			t.Set(uint32(100+i), nil)
		}
		return t
	}
	for _, n := range []int{MaxTaggedFields, MaxTaggedFields + 1} {
		top := kmsg.NewPtrApiVersionsRequest()
		top.Version = 3
		top.ClientSoftwareName, top.ClientSoftwareVersion = "t", "1"
		top.UnknownTags = tags(n)

		nested := kmsg.NewPtrMetadataRequest()
		nested.Version = 12
		topic := kmsg.NewMetadataRequestTopic()
		topic.Topic = kmsg.StringPtr("t")
		topic.UnknownTags = tags(n)
		nested.Topics = []kmsg.MetadataRequestTopic{topic}

		for _, req := range []kmsg.Request{top, nested} {
			_, err := Decode(requestFrame(req, 1))
			if n <= MaxTaggedFields && err != nil {
				t.Fatalf("%s with %d tags: %v", kmsg.NameForKey(req.Key()), n, err)
			}
			if n > MaxTaggedFields && (err == nil || !strings.Contains(err.Error(), "10001 tagged fields")) {
				t.Fatalf("%s with %d tags: err %v, want the tag limit", kmsg.NameForKey(req.Key()), n, err)
			}
		}
	}
}

// The request header's own tag section has the same limit.
func TestRequestHeaderTaggedFieldLimit(t *testing.T) {
	for _, n := range []uint64{MaxTaggedFields, MaxTaggedFields + 1} {
		// Metadata v12: key, version, correlation id, client id, then
		// the header's tags, each an empty field, and an empty body.
		b := []byte{0, 3, 0, 12, 0, 0, 0, 1, 0xff, 0xff}
		b = binary.AppendUvarint(b, n)
		for i := range n {
			b = binary.AppendUvarint(b, 100+i)
			b = append(b, 0)
		}
		b = append(b, 1, 0, 0, 0) // topics: [], no auto-create, no authorized operations, no tags
		_, err := Decode(b)
		if n <= MaxTaggedFields && err != nil {
			t.Fatalf("%d header tags: %v", n, err)
		}
		if n > MaxTaggedFields && (err == nil || !strings.Contains(err.Error(), "10001 tagged fields")) {
			t.Fatalf("%d header tags: err %v, want the tag limit", n, err)
		}
	}
}

func BenchmarkCheckRequestLimits(b *testing.B) {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	for range 4 {
		topic := kmsg.NewProduceRequestTopic()
		topic.Topic = "t"
		for p := range int32(8) {
			part := kmsg.NewProduceRequestTopicPartition()
			part.Partition, part.Records = p, make([]byte, 16<<10)
			topic.Partitions = append(topic.Partitions, part)
		}
		req.Topics = append(req.Topics, topic)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := checkRequestLimits(req, 512<<10); err != nil {
			b.Fatal(err)
		}
	}
}
