package protocol

// Broker-side schema validation, as Confluent Server's
// confluent.key.schema.validation and confluent.value.schema.validation:
// on a topic that turns it on, each record's key or value must begin with
// the magic byte 0 and a 4-byte schema id that the schema registry has
// registered under the subject the topic's subject name strategy names
// (null passes: a tombstone carries no schema); the batch is refused with
// INVALID_RECORD otherwise, each bad record named.

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// The subject name strategies, as Confluent's serializers name them.
const (
	TopicNameStrategy       = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
	RecordNameStrategy      = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
	TopicRecordNameStrategy = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
)

// subjectStrategy accepts a strategy by its class name or short name.
func subjectStrategy(v string) error {
	if strategyOf(v) == "" {
		return fmt.Errorf("%s is not TopicNameStrategy, RecordNameStrategy or TopicRecordNameStrategy", v)
	}
	return nil
}

// strategyOf is a strategy's short name, "" for none.
func strategyOf(v string) string {
	short := v[strings.LastIndex(v, ".")+1:]
	switch short {
	case "TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy":
		if short == v || v == "io.confluent.kafka.serializers.subject."+short {
			return short
		}
	}
	return ""
}

// schemaCheck returns why a record of the topic fails its schema
// validation (""; it passes), or nil when the topic validates nothing.
func (h *Handler) schemaCheck(info storage.TopicInfo) func(r *record.Record) string {
	keys, values := info.Configs["confluent.key.schema.validation"] == "true", info.Configs["confluent.value.schema.validation"] == "true"
	if !keys && !values {
		return nil
	}
	strategy := func(name string) string {
		if v, ok := info.Configs[name]; ok {
			return strategyOf(v)
		}
		return "TopicNameStrategy"
	}
	keyStrategy, valueStrategy := strategy("confluent.key.subject.name.strategy"), strategy("confluent.value.subject.name.strategy")
	check := func(what string, b []byte, strategy string) string {
		if b == nil {
			return ""
		}
		if len(b) < 5 || b[0] != 0 {
			return fmt.Sprintf("its %s has no schema id (the magic byte 0 and 4 bytes)", what)
		}
		if h.cfg.Schemas == nil {
			return fmt.Sprintf("its %s's schema id cannot be checked: this gateway serves no schema registry", what)
		}
		id := int(int32(binary.BigEndian.Uint32(b[1:5])))
		var subject string
		switch strategy {
		case "TopicNameStrategy":
			subject = info.Name + "-" + what
		default:
			name, ok := h.cfg.Schemas.RecordName(id)
			if !ok {
				return fmt.Sprintf("its %s's schema id %d is not a registered record schema", what, id)
			}
			subject = name
			if strategy == "TopicRecordNameStrategy" {
				subject = info.Name + "-" + name
			}
		}
		if !h.cfg.Schemas.SubjectHasID(subject, id) {
			return fmt.Sprintf("its %s's schema id %d is not registered under subject %s", what, id, subject)
		}
		return ""
	}
	return func(r *record.Record) string {
		if keys {
			if why := check("key", r.Key, keyStrategy); why != "" {
				return why
			}
		}
		if values {
			return check("value", r.Value, valueStrategy)
		}
		return ""
	}
}
