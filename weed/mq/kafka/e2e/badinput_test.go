package e2e

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestBadFramesCloseTheConnection(t *testing.T) {
	t.Run("oversize frame", func(t *testing.T) {
		c := dialRaw(t)
		c.send([]byte{0x7f, 0xff, 0xff, 0xff, 0, 18, 0, 0})
		c.expectClosed("2 GiB frame")
	})
	t.Run("negative size", func(t *testing.T) {
		c := dialRaw(t)
		c.send([]byte{0xff, 0xff, 0xff, 0xfe})
		c.expectClosed("negative frame size")
	})
	t.Run("truncated header", func(t *testing.T) {
		c := dialRaw(t)
		c.send([]byte{0, 0, 0, 3, 0, 18, 0})
		c.expectClosed("3-byte frame")
	})
	t.Run("unknown api key", func(t *testing.T) {
		c := dialRaw(t)
		c.send(frame(999, 0, 1, false, nil))
		c.expectClosed("api key 999")
	})
	t.Run("unsupported version", func(t *testing.T) {
		c := dialRaw(t)
		c.send(frame(int16(kmsg.Metadata), 99, 1, true, nil))
		c.expectClosed("Metadata v99")
	})
	t.Run("malformed body", func(t *testing.T) {
		c := dialRaw(t)
		// Metadata v1 claiming 1000 topics with no bytes behind.
		c.send(frame(int16(kmsg.Metadata), 1, 1, false, []byte{0, 0, 3, 0xe8}))
		c.expectClosed("malformed Metadata")
	})
	// The gateway still serves everyone else.
	req := kmsg.NewPtrApiVersionsRequest()
	if _, err := req.RequestWith(ctxT(t), newClient(t)); err != nil {
		t.Fatalf("gateway after bad frames: %v", err)
	}
}

// TestApiVersionsTooNew: a version newer than served gets a v0 answer with
// UNSUPPORTED_VERSION and the table, so the client can fall back.
func TestApiVersionsTooNew(t *testing.T) {
	c := dialRaw(t)
	c.send(frame(int16(kmsg.ApiVersions), 127, 42, true, []byte{1, 1, 0}))
	b, err := c.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	if id := int32(binary.BigEndian.Uint32(b)); id != 42 {
		t.Fatalf("correlation id %d", id)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(b[4:]); err != nil {
		t.Fatalf("not a v0 ApiVersions response: %v", err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error code %d, want UNSUPPORTED_VERSION", resp.ErrorCode)
	}
	var produce *kmsg.ApiVersionsResponseApiKey
	for i := range resp.ApiKeys {
		if resp.ApiKeys[i].ApiKey == int16(kmsg.Produce) {
			produce = &resp.ApiKeys[i]
		}
	}
	if produce == nil || produce.MinVersion != 0 || produce.MaxVersion < 9 {
		t.Fatalf("Produce in table: %+v", produce)
	}
}

func TestProduceErrors(t *testing.T) {
	topic := newTopic(t)
	createTopic(t, topic, 1, nil)
	cl := newClient(t)

	good := batchOf([]byte("ok"))
	if p := produceRaw(t, cl, topic, 0, good); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("good batch: error %d base %d", p.ErrorCode, p.BaseOffset)
	}
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)-1] ^= 0xff
	if p := produceRaw(t, cl, topic, 0, corrupt); p.ErrorCode != kerr.CorruptMessage.Code {
		t.Errorf("bad CRC: error %d, want CORRUPT_MESSAGE", p.ErrorCode)
	}
	if p := produceRaw(t, cl, topic, 0, good[:len(good)-5]); p.ErrorCode != kerr.CorruptMessage.Code {
		t.Errorf("truncated batch: error %d, want CORRUPT_MESSAGE", p.ErrorCode)
	}
	oldMagic := bytes.Clone(good)
	oldMagic[16] = 1
	if p := produceRaw(t, cl, topic, 0, oldMagic); p.ErrorCode != kerr.InvalidRecord.Code {
		t.Errorf("magic 1: error %d, want INVALID_RECORD (Kafka 4: Produce v3+ carries magic 2 only)", p.ErrorCode)
	}
	tooBig := batchOf(make([]byte, 1100000))
	if p := produceRaw(t, cl, topic, 0, tooBig); p.ErrorCode != kerr.MessageTooLarge.Code {
		t.Errorf("1.1 MB batch: error %d, want MESSAGE_TOO_LARGE", p.ErrorCode)
	}
	if p := produceRaw(t, cl, topic, 1, good); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("partition 1 of 1: error %d, want UNKNOWN_TOPIC_OR_PARTITION", p.ErrorCode)
	}
	// Produce v13 names topics by id; an unknown one is UNKNOWN_TOPIC_ID.
	if p := produceRaw(t, cl, topic+"-missing", 0, good); p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("unknown topic: error %d, want UNKNOWN_TOPIC_ID", p.ErrorCode)
	}
	// Nothing but the good batch was stored.
	if p := produceRaw(t, cl, topic, 0, good); p.ErrorCode != 0 || p.BaseOffset != 1 {
		t.Fatalf("second good batch: error %d base %d, want offset 1", p.ErrorCode, p.BaseOffset)
	}

	meta := kmsg.NewPtrMetadataRequest()
	name := "bad name!"
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = &name
	meta.Topics = append(meta.Topics, mt)
	resp, err := meta.RequestWith(ctxT(t), cl)
	if err != nil || resp.Topics[0].ErrorCode != kerr.InvalidTopicException.Code {
		t.Errorf("metadata for an invalid name: %v %+v, want INVALID_TOPIC_EXCEPTION", err, resp)
	}
}

// TestLargeRecords sends a 1 MiB record and a 10 MiB produce request.
func TestLargeRecords(t *testing.T) {
	topic := newTopic(t)
	max := "12000000"
	createTopic(t, topic, 10, map[string]*string{"max.message.bytes": &max})
	cl := newClient(t, kgo.ProducerBatchMaxBytes(12000000), kgo.RecordPartitioner(kgo.ManualPartitioner()))

	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	produceSync(t, cl, &kgo.Record{Topic: topic, Partition: 0, Value: big})

	// One request with ten 1 MiB batches, one per partition: 10 MiB.
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID(t, cl, topic)
	for p := int32(0); p < 10; p++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		v := bytes.Repeat([]byte{byte('a' + p)}, 1<<20)
		rp.Records = batchOf(v)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("partition %d: error %d", p.Partition, p.ErrorCode)
		}
	}
	got := consumeN(t, topic, 11, kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(16<<20))
	perPart := map[int32][][]byte{}
	for _, r := range got {
		perPart[r.Partition] = append(perPart[r.Partition], r.Value)
	}
	if len(perPart[0]) != 2 || !bytes.Equal(perPart[0][0], big) {
		t.Fatalf("partition 0: %d records", len(perPart[0]))
	}
	for p := int32(0); p < 10; p++ {
		v := perPart[p][len(perPart[p])-1]
		if len(v) != 1<<20 || v[0] != byte('a'+p) || v[len(v)-1] != byte('a'+p) {
			t.Errorf("partition %d: record of %d bytes", p, len(v))
		}
	}
}
