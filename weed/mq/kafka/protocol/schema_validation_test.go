package protocol

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/registry"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// registerSchema puts a schema under a subject's version with an id, as a
// _schemas record read by the gateway.
func registerSchema(t *testing.T, st *registry.State, offset int64, subject string, version, id int, schema string) {
	t.Helper()
	key := fmt.Sprintf(`{"keytype":"SCHEMA","subject":%q,"version":%d,"magic":1}`, subject, version)
	value := fmt.Sprintf(`{"subject":%q,"version":%d,"id":%d,"schema":%q,"deleted":false}`, subject, version, id, schema)
	if err := st.Apply(offset, []byte(key), []byte(value)); err != nil {
		t.Fatal(err)
	}
}

// withID is a value in Confluent's wire format: the magic byte, the id,
// the payload.
func withID(id int, payload string) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), payload...)
}

// Broker-side schema validation (confluent.value.schema.validation): a
// record whose value has no schema id, or an id not registered under the
// subject its strategy names, is refused with INVALID_RECORD and named;
// registered ones and null values are stored; a topic without validation
// takes anything.
func TestProduceSchemaValidation(t *testing.T) {
	h, b := testHandler(t, nil)
	st := registry.NewState()
	h.cfg.Schemas = st
	registerSchema(t, st, 0, "sv-value", 1, 7, `"string"`)
	registerSchema(t, st, 1, "shop.Order", 1, 9, `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"}]}`)
	registerSchema(t, st, 2, "svr-shop.Order", 1, 9, `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"}]}`)
	ctx := context.Background()
	b.CreateTopic(ctx, storage.TopicSpec{Name: "sv", Partitions: 1, Configs: map[string]string{"confluent.value.schema.validation": "true"}})
	b.CreateTopic(ctx, storage.TopicSpec{Name: "svr", Partitions: 1, Configs: map[string]string{"confluent.value.schema.validation": "true",
		"confluent.value.subject.name.strategy": RecordNameStrategy}})
	b.CreateTopic(ctx, storage.TopicSpec{Name: "plain", Partitions: 1})
	batch := func(values ...[]byte) []byte {
		var rb record.Builder
		rb.Reset(0)
		for _, v := range values {
			rb.Add(&record.Record{Key: []byte("k"), Value: v, Timestamp: 1})
		}
		return rb.AppendTo(nil)
	}
	produce := func(topic string, values ...[]byte) kmsg.ProduceResponseTopicPartition {
		return exchange(t, h, anonymous, produceReq(topic, [16]byte{}, map[int32][]byte{0: batch(values...)}), 12).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}

	p := produce("sv", withID(7, "a"), []byte("no id"), withID(8, "b"), nil, []byte{0, 0})
	wantCode(t, "a batch with bad records", p.ErrorCode, kerr.InvalidRecord)
	var at []int32
	for _, e := range p.ErrorRecords {
		at = append(at, e.RelativeOffset)
	}
	if !slices.Equal(at, []int32{1, 2, 4}) {
		t.Fatalf("records refused at %v, want 1, 2 and 4", at)
	}
	if m := *p.ErrorRecords[1].ErrorMessage; !strings.Contains(m, "schema id 8 is not registered under subject sv-value") {
		t.Errorf("the unknown id's message: %s", m)
	}
	if m := *p.ErrorRecords[0].ErrorMessage; !strings.Contains(m, "has no schema id") {
		t.Errorf("the message of a value without an id: %s", m)
	}
	if got := values(t, b, "sv", 0); len(got) != 0 {
		t.Fatalf("a refused batch was written: %q", got)
	}
	wantCode(t, "registered ids and a null value", produce("sv", withID(7, "a"), nil, withID(7, "c")).ErrorCode, nil)
	if got := values(t, b, "sv", 0); len(got) != 3 {
		t.Fatalf("stored %d records, want 3", len(got))
	}
	// Id 9 is registered, but not under sv-value.
	wantCode(t, "an id of another subject", produce("sv", withID(9, "x")).ErrorCode, kerr.InvalidRecord)

	// RecordNameStrategy: the subject is the schema's record name.
	wantCode(t, "a record schema under its name", produce("svr", withID(9, "x")).ErrorCode, nil)
	p = produce("svr", withID(7, "x"))
	wantCode(t, "a schema that is not a record", p.ErrorCode, kerr.InvalidRecord)

	// No validation: anything.
	wantCode(t, "a topic without validation", produce("plain", []byte("no id"), withID(99, "x")).ErrorCode, nil)

	// Without a registry, a validating topic takes nothing with an id.
	h.cfg.Schemas = nil
	p = produce("sv", withID(7, "a"))
	wantCode(t, "without a registry", p.ErrorCode, kerr.InvalidRecord)
	if m := *p.ErrorRecords[0].ErrorMessage; !strings.Contains(m, "serves no schema registry") {
		t.Errorf("without a registry: %s", m)
	}
}

// The strategy configs take Confluent's class names and short names.
func TestSubjectStrategyConfig(t *testing.T) {
	for _, v := range []string{TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy, "TopicNameStrategy", "RecordNameStrategy"} {
		if err := subjectStrategy(v); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	for _, v := range []string{"", "Topic", "com.example.TopicNameStrategy", "io.confluent.kafka.serializers.subject.Nope"} {
		if err := subjectStrategy(v); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
}
